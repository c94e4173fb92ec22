"""Serving-engine discovery and parsing (SGLang, vLLM, TGI): processes, argv, environment, libnccl maps.

Owner: the python/nccl probes. Both declare the command `ENGINE_PROCS_SHELL` (id `engine_procs`) with
this exact string, so the runner runs it once per target.

Public API:

* `ENGINE_PROCS_SHELL`                          the read-only discovery command (sections per process)
* `parse_engine_procs(text) -> list[EngineProc]`  its output
* `parse_ps(text) -> list[tuple[int, str]]`      `ps -eo pid,args`
* `parse_cmdline(raw) -> list[str]`              `/proc/<pid>/cmdline` (NUL-separated)
* `parse_environ(raw) -> dict[str, str]`         `/proc/<pid>/environ` (NUL- or newline-separated)
* `parse_compute_apps(text) -> list[ComputeApp]` `nvidia-smi --query-compute-apps=... --format=csv`
* `parse_engine_args(argv) -> EngineConfig | None`  engine kind, TP/PP/DP/EP, graphs, backends
* `main_engine(procs) -> EngineProc | None`      the API-server process among the matches
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from probes.core.errors import ParseError

# Variables worth keeping from an engine's environment; everything else (and every secret) stays behind.
ENV_KEEP = ("NCCL_", "CUDA_", "TORCH_", "PYTORCH_", "VLLM_", "SGLANG_", "SGL_", "FLASHINFER_", "OMP_", "NVIDIA_",
            "LD_PRELOAD", "LD_LIBRARY_PATH", "TRITON_", "TGI_", "HF_HUB_OFFLINE", "MKL_NUM_THREADS")

# Finds engine processes by name (SGLang/vLLM/TGI, including setproctitle'd workers) and by the PIDs
# nvidia-smi reports (host side; inside a container nvidia-smi lists none). Our own shell, whose
# command line contains a marker "@@p..." (this one, the pyenv one), is skipped. Read-only: only /proc reads and echo.
ENGINE_PROCS_SHELL = (
    "apps=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null | tr -d ' '); "
    "n=0; for d in /proc/[0-9]*; do p=${d#/proc/}; "
    "c=$(tr '\\0' ' ' < $d/cmdline 2>/dev/null); [ -n \"$c\" ] || continue; "
    "case \"$c\" in *@@p*) continue;; esac; hit=; "
    "case \"$c\" in *sglang*|*vllm*|*VLLM*|*text-generation-*) hit=1;; esac; "
    "for a in $apps; do [ \"$a\" = \"$p\" ] && hit=1; done; [ -n \"$hit\" ] || continue; "
    "n=$((n+1)); [ $n -le 32 ] || break; "
    "echo \"@@pid $p\"; echo \"@@exe $(readlink $d/exe 2>/dev/null)\"; echo '@@cmdline'; "
    "tr '\\0' '\\n' < $d/cmdline 2>/dev/null; echo; echo '@@environ'; "
    "tr '\\0' '\\n' < $d/environ 2>/dev/null | grep -E '^(NCCL_|CUDA_|TORCH_|PYTORCH_|VLLM_|SGLANG_|SGL_|FLASHINFER_|"
    "OMP_|NVIDIA_|LD_PRELOAD=|LD_LIBRARY_PATH=|TRITON_|TGI_|MKL_NUM_THREADS=)' || echo '@@environ-unreadable'; "
    "echo '@@maps'; grep -o '/[^ ]*libnccl[^ ]*' $d/maps 2>/dev/null | sort -u; echo '@@end'; done; "
    "[ $n -gt 0 ] || echo '@@none'"
)


@dataclass(frozen=True, slots=True)
class EngineProc:
    """One process the discovery command matched."""

    pid: int
    exe: str = ""
    argv: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    env_readable: bool = True
    nccl_libs: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ComputeApp:
    pid: int
    name: str
    used_mib: int | None
    gpu_uuid: str | None


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """What an engine's command line says about performance-relevant settings."""

    kind: str
    """"sglang", "vllm" or "tgi"."""
    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int | None = None
    cuda_graphs_disabled: bool = False
    graph_flag: str | None = None
    """The flag that disabled graphs, e.g. "--disable-cuda-graph", "--enforce-eager"."""
    cuda_graph_max_bs: int | None = None
    attention_backend: str | None = None
    moe_backend: str | None = None
    custom_allreduce_disabled: bool = False
    model: str | None = None
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    speculative: str | None = None


def parse_cmdline(raw: str) -> list[str]:
    """`/proc/<pid>/cmdline` -> argv. NUL-separated (a trailing NUL ends the last arg).

        python3\\0-m\\0sglang.launch_server\\0--tp\\08\\0
    -> ["python3", "-m", "sglang.launch_server", "--tp", "8"]
    """
    if "\0" in raw:
        parts = raw.split("\0")
        if parts and parts[-1] == "":
            parts.pop()
        return parts
    return [ln for ln in raw.splitlines() if ln != ""]


def parse_environ(raw: str) -> dict[str, str]:
    """`/proc/<pid>/environ` (NUL-separated) or `env` output (one per line) -> dict.

        CUDA_VISIBLE_DEVICES=0,1\\0NCCL_P2P_DISABLE=1\\0
    -> {"CUDA_VISIBLE_DEVICES": "0,1", "NCCL_P2P_DISABLE": "1"}
    """
    out: dict[str, str] = {}
    for item in re.split(r"[\0\n]", raw):
        if "=" in item:
            k, v = item.split("=", 1)
            if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
                out.setdefault(k, v)
    return out


def parse_ps(text: str) -> list[tuple[int, str]]:
    """`ps -eo pid,args` -> [(pid, args)] (header skipped).

        PID COMMAND
          1 /sbin/init
       4242 python3 -m sglang.launch_server --model-path /models/GLM-5 --tp 8
    """
    out = []
    for line in text.splitlines():
        m = re.match(r"\s*(\d+)\s+(.*\S)", line)
        if m:
            out.append((int(m.group(1)), m.group(2)))
    return out


def parse_compute_apps(text: str) -> list[ComputeApp]:
    """`nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_uuid --format=csv` -> apps.

        pid, process_name, used_gpu_memory [MiB], gpu_uuid
        4242, /usr/bin/python3, 88012 MiB, GPU-5c1a...
    A header line is optional; "No running processes found" yields [].
    """
    apps = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) < 2 or not cells[0].isdigit():
            continue
        mem = re.match(r"(\d+)", cells[2]) if len(cells) > 2 else None
        apps.append(ComputeApp(pid=int(cells[0]), name=cells[1], used_mib=int(mem.group(1)) if mem else None,
                               gpu_uuid=cells[3] if len(cells) > 3 and cells[3] else None))
    return apps


def parse_engine_procs(text: str) -> list[EngineProc]:
    """Output of `ENGINE_PROCS_SHELL` -> processes (sections `@@pid`..`@@end`; `@@none` = no match).

        @@pid 4242
        @@exe /usr/bin/python3.12
        @@cmdline
        python3
        -m
        sglang.launch_server
        @@environ
        NCCL_DEBUG=WARN
        @@maps
        /usr/lib/python3/dist-packages/nvidia/nccl/lib/libnccl.so.2
        @@end
    """
    procs: list[EngineProc] = []
    cur: dict | None = None
    section = ""
    for line in text.splitlines():
        if line.startswith("@@pid "):
            cur = {"pid": int(line.split()[1]) if line.split()[1:] and line.split()[1].isdigit() else -1,
                   "exe": "", "argv": [], "env": [], "env_readable": True, "maps": []}
            section = ""
        elif cur is None:
            continue
        elif line.startswith("@@exe"):
            cur["exe"] = line[5:].strip()
        elif line in ("@@cmdline", "@@environ", "@@maps"):
            section = line[2:]
        elif line == "@@environ-unreadable":
            cur["env_readable"] = False
        elif line == "@@end":
            procs.append(EngineProc(pid=cur["pid"], exe=cur["exe"], argv=tuple(a for a in cur["argv"] if a != ""),
                                    env=parse_environ("\n".join(cur["env"])), env_readable=cur["env_readable"],
                                    nccl_libs=tuple(dict.fromkeys(m for m in cur["maps"] if m))))
            cur, section = None, ""
        elif section == "cmdline":
            cur["argv"].append(line)
        elif section == "environ":
            cur["env"].append(line)
        elif section == "maps":
            cur["maps"].append(line.strip())
    return procs


# ------------------------------------------------------------------ argument parsing

_SGLANG_MAIN = re.compile(r"(?:^|[/ .])sglang(?:\.launch_server|\.srt\.server|$)|^sglang$")


def engine_kind(argv: list[str] | tuple[str, ...]) -> str | None:
    """"sglang" / "vllm" / "tgi" when argv is an engine's API server (not a worker), else None."""
    joined = " ".join(argv[:4])
    if re.search(r"\bsglang\.launch_server\b|\bsglang\.srt\.entrypoints|(?:^|/)sglang serve\b", joined) or \
            (len(argv) > 1 and argv[1].endswith("/sglang") and "serve" in argv[2:3]):
        return "sglang"
    if re.search(r"\bvllm\.entrypoints\.(?:openai\.)?api_server\b|(?:^|/)vllm serve\b", joined) or \
            (len(argv) > 2 and argv[1].endswith("/vllm") and argv[2] == "serve"):
        return "vllm"
    if re.search(r"text-generation-launcher|text-generation-server", joined):
        return "tgi"
    return None


def _opts(argv: list[str] | tuple[str, ...]) -> dict[str, str]:
    """--flag value / --flag=value / bare --flag ("") -> dict; underscores read as dashes."""
    out: dict[str, str] = {}
    i = 0
    args = list(argv)
    while i < len(args):
        a = args[i]
        if a.startswith("--"):
            name, eq, val = a[2:].partition("=")
            name = name.replace("_", "-")
            if eq:
                out[name] = val
            elif i + 1 < len(args) and not args[i + 1].startswith("--"):
                out[name] = args[i + 1]
                i += 1
            else:
                out[name] = ""
        elif a in ("-tp", "-pp", "-dp", "-ep") and i + 1 < len(args):
            out[a[1:]] = args[i + 1]
            i += 1
        i += 1
    return out


def _int(opts: dict[str, str], *names: str, default: int | None = None) -> int | None:
    for n in names:
        v = opts.get(n)
        if v is not None and re.fullmatch(r"\d+", v.strip()):
            return int(v)
    return default


def _truthy(opts: dict[str, str], name: str) -> bool:
    v = opts.get(name)
    return v is not None and v.lower() not in ("false", "0", "no")


def parse_engine_args(argv: list[str] | tuple[str, ...]) -> EngineConfig | None:
    """Engine argv -> EngineConfig, or None when argv is not a known engine's server.

        python3 -m sglang.launch_server --model-path /models/GLM-5-NVFP4 --tp 8 --disable-cuda-graph
    -> EngineConfig(kind="sglang", tp=8, cuda_graphs_disabled=True, graph_flag="--disable-cuda-graph", ...)
    """
    kind = engine_kind(argv)
    if kind is None:
        return None
    opts = _opts(argv)
    positional_model = None
    if kind == "vllm":  # `vllm serve <model>`
        if "serve" in argv:
            nxt = list(argv)[list(argv).index("serve") + 1:]
            if nxt and not nxt[0].startswith("-"):
                positional_model = nxt[0]
    if kind == "sglang":
        disabled = _truthy(opts, "disable-cuda-graph")
        flag = "--disable-cuda-graph" if disabled else None
        return EngineConfig(
            kind=kind, tp=_int(opts, "tp", "tp-size", "tensor-parallel-size", default=1) or 1,
            pp=_int(opts, "pp", "pp-size", "pipeline-parallel-size", default=1) or 1,
            dp=_int(opts, "dp", "dp-size", "data-parallel-size", default=1) or 1,
            ep=_int(opts, "ep", "ep-size", "expert-parallel-size"),
            cuda_graphs_disabled=disabled, graph_flag=flag, cuda_graph_max_bs=_int(opts, "cuda-graph-max-bs"),
            attention_backend=opts.get("attention-backend") or None,
            moe_backend=opts.get("moe-runner-backend") or opts.get("moe-a2a-backend") or None,
            custom_allreduce_disabled=_truthy(opts, "disable-custom-all-reduce"),
            model=opts.get("model-path") or opts.get("model") or None, quantization=opts.get("quantization") or None,
            kv_cache_dtype=opts.get("kv-cache-dtype") or None,
            speculative=opts.get("speculative-algorithm") or None)
    if kind == "vllm":
        eager = _truthy(opts, "enforce-eager")
        cg = (opts.get("compilation-config") or opts.get("cudagraph-mode") or "")
        none_mode = bool(re.search(r"cudagraph_mode\"?\s*[:=]\s*\"?NONE|^NONE$", cg, re.I))
        flag = "--enforce-eager" if eager else ("cudagraph_mode=NONE" if none_mode else None)
        return EngineConfig(
            kind=kind, tp=_int(opts, "tensor-parallel-size", "tp", default=1) or 1,
            pp=_int(opts, "pipeline-parallel-size", "pp", default=1) or 1,
            dp=_int(opts, "data-parallel-size", "dp", default=1) or 1,
            ep=None if "enable-expert-parallel" not in opts else 0,
            cuda_graphs_disabled=bool(flag), graph_flag=flag,
            attention_backend=opts.get("attention-backend") or None,
            custom_allreduce_disabled=_truthy(opts, "disable-custom-all-reduce"),
            model=opts.get("model") or positional_model, quantization=opts.get("quantization") or None,
            kv_cache_dtype=opts.get("kv-cache-dtype") or None,
            speculative=opts.get("speculative-config") or None)
    # TGI: CUDA graphs are on unless --cuda-graphs 0; tensor parallelism = --num-shard.
    graphs = opts.get("cuda-graphs")
    disabled = graphs is not None and graphs.strip() in ("0", "")
    return EngineConfig(kind=kind, tp=_int(opts, "num-shard", default=1) or 1, cuda_graphs_disabled=disabled,
                        graph_flag="--cuda-graphs 0" if disabled else None, model=opts.get("model-id") or None,
                        quantization=opts.get("quantize") or None)


def main_engine(procs: list[EngineProc]) -> tuple[EngineProc, EngineConfig] | None:
    """The engine's API-server process and its parsed config (the first match), else None."""
    for p in procs:
        cfg = parse_engine_args(p.argv)
        if cfg is not None:
            return p, cfg
    return None


def engine_env(procs: list[EngineProc]) -> tuple[dict[str, str], bool]:
    """The engine's environment (main process first, workers merged in) and whether any was readable."""
    env: dict[str, str] = {}
    readable = False
    found = main_engine(procs)
    ordered = ([found[0]] if found else []) + [p for p in procs if not found or p is not found[0]]
    for p in ordered:
        if p.env_readable:
            readable = True
            for k, v in p.env.items():
                env.setdefault(k, v)
    return env, readable


def split_args(line: str) -> list[str]:
    """A `ps` args string -> argv (shell-style; falls back to whitespace split on odd quoting)."""
    try:
        return shlex.split(line)
    except ValueError:
        return line.split()


def require_sections(text: str) -> None:
    """Raise ParseError when `text` is not `ENGINE_PROCS_SHELL` output at all."""
    if text.strip() and "@@" not in text:
        raise ParseError(f"not engine discovery output: {text.strip()[:80]!r}")
