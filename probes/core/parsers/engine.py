"""Serving-engine discovery and parsing (SGLang, vLLM, TGI): processes, argv, environment, libnccl maps.

Owner: the python/nccl probes. Both declare the command `ENGINE_PROCS_SHELL` (id `engine_procs`) with
this exact string, so the runner runs it once per target.

Public API:

* `ENGINE_PROCS_SHELL`                          the read-only discovery command (sections per process)
* `parse_engine_procs(text) -> list[EngineProc]`  its output (ParseError unless sections or `@@none`)
* `parse_environ(raw) -> dict[str, str]`         `/proc/<pid>/environ` (NUL- or newline-separated)
* `parse_engine_args(argv) -> EngineConfig | None`  engine kind, TP/PP/DP/EP, graphs, backends
* `choose_main(procs, audit_uid, cut)`           THE choice of the engine's API server (owner-aware, issue 29)
* `main_engine(procs) -> (EngineProc, EngineConfig) | None`  the API-server process among the matches
* `summarize_engine(procs) -> EngineSummary`     main process, config and merged environment at once
* `engine_listing_problem(listings, found)`      the shared "could the engine be looked for" gate
* `ENGINE_STATUS_SHELL` / `parse_engine_status`, `ENGINE_LOGS_SHELL` / `parse_engine_logs` / `log_source_labels`
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.parsers.engine_choice import choose_engine
from gpuaudit.probes.core.parsers.engine_lines import (  # the command lines, declared apart (issue 30)
    AS_OWNER_SHELL as AS_OWNER_SHELL,
)
from gpuaudit.probes.core.parsers.engine_lines import (
    ENGINE_LOGS_SHELL as ENGINE_LOGS_SHELL,
)
from gpuaudit.probes.core.parsers.engine_lines import (
    ENGINE_PROCS_SHELL as ENGINE_PROCS_SHELL,
)
from gpuaudit.probes.core.parsers.engine_lines import (
    ENGINE_STATUS_SHELL as ENGINE_STATUS_SHELL,
)
from gpuaudit.probes.core.parsers.engine_lines import (
    ENV_KEEP as ENV_KEEP,
)
from gpuaudit.probes.core.parsers.engine_lines import (
    SCAN_NAMES as SCAN_NAMES,
)
from gpuaudit.probes.core.parsers.engine_lines import (
    choice_source as choice_source,
)
from gpuaudit.probes.core.parsers.engine_lines import (
    embedded_lines as embedded_lines,
)
from gpuaudit.probes.core.parsers.engine_lines import (
    scan_candidates as scan_candidates,
)
from gpuaudit.probes.core.parsers.engine_lines import (
    skip_unless_candidate as skip_unless_candidate,
)
from gpuaudit.probes.core.parsing import cpu_list, parse_once


@dataclass(frozen=True, slots=True)
class EngineProc:
    """One process the discovery command matched."""

    pid: int
    exe: str = ""
    argv: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    env_readable: bool = True
    nccl_libs: tuple[str, ...] = ()
    uid: int | None = None
    """The owner (effective uid, /proc/<pid>/status); None when not read (older listings carry no `@@uid`)."""


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """What an engine's command line says about performance-relevant settings (and what a roofline needs)."""

    kind: str
    """"sglang", "vllm" or "tgi"."""
    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int | None = None
    """Expert-parallel size; vLLM's --enable-expert-parallel means TP x DP; None = no expert parallelism."""
    dp_attention: bool = False
    """SGLang --enable-dp-attention: attention (and its KV cache) data-parallel, not sharded by TP."""
    cuda_graphs_disabled: bool = False
    graph_flag: str | None = None
    """The flag that disabled graphs, e.g. "--disable-cuda-graph", "--enforce-eager"."""
    cuda_graph_max_bs: int | None = None
    cuda_graph_mode: str | None = None
    """vLLM compilation-config cudagraph_mode ("PIECEWISE", "FULL_AND_PIECEWISE", "NONE") when given."""
    attention_backend: str | None = None
    moe_backend: str | None = None
    custom_allreduce_disabled: bool = False
    allreduce_flags: tuple[str, ...] = ()
    """Every all-reduce related flag as given ("--disable-custom-all-reduce", "--enable-mscclpp", ...)."""
    model: str | None = None
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    speculative: str | None = None
    """Speculative decoding / MTP method ("EAGLE", "EAGLE3", "NEXTN", "mtp", ...); None = not configured."""
    speculative_steps: int | None = None
    """Draft depth: SGLang --speculative-num-steps, vLLM num_speculative_tokens."""
    speculative_topk: int | None = None
    speculative_draft_tokens: int | None = None
    """SGLang --speculative-num-draft-tokens (tokens verified per step)."""
    speculative_draft_model: str | None = None
    port: int | None = None
    """The API port: the flag's value, else the engine's default (`port_is_default`)."""
    port_is_default: bool = False


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


def require_sections(text: str, what: str, found: int, *markers: str) -> None:
    """Raise ParseError unless `text` is complete output of one of the `@@`-sectioned commands here.

    "Nothing found" must be proven by the command's `@@none` marker: empty or foreign stdout of a
    successful exit (a shell that died early, a wrapper that printed nothing) is not "no engine".
    `found` is the number of complete sections parsed; `markers` are lines the output always carries.
    """
    lines = {ln.strip() for ln in text.splitlines()}
    if not text.strip():
        raise ParseError(f"empty {what} output (no @@none marker)")
    if "@@" not in text:
        raise ParseError(f"not {what} output: {text.strip()[:80]!r}")
    missing = [m for m in markers if not any(ln.startswith(m) for ln in lines)]
    if missing:
        raise ParseError(f"incomplete {what} output: no {', '.join(missing)} marker")
    if not found and "@@none" not in lines:
        raise ParseError(f"incomplete {what} output: no complete section and no @@none marker")


@parse_once
def parse_engine_procs(text: str) -> list[EngineProc]:
    """Output of `ENGINE_PROCS_SHELL` -> processes (sections `@@pid`..`@@end`; `@@none` = no match).

        @@auditor 0
        @@pid 4242
        @@uid 0
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
    Raises ParseError unless the text holds complete sections or the `@@none` marker.
    """
    procs: list[EngineProc] = []
    cur: dict[str, Any] | None = None
    section = ""
    for line in text.splitlines():
        if line.startswith("@@pid "):
            cur = {
                "pid": int(line.split()[1])
                if line.split()[1:] and line.split()[1].isdigit()
                else -1,
                "exe": "",
                "argv": [],
                "env": [],
                "env_readable": True,
                "maps": [],
                "uid": None,
                "head": True,
            }
            section = ""
        elif cur is None:
            continue
        elif cur.pop("head", False) and line.startswith("@@uid"):
            # only right after @@pid: an argv or exe path line reading "@@uid 0" is no owner
            cur["uid"] = _uid_line(line)
        elif line.startswith("@@exe"):
            cur["exe"] = line[5:].strip()
        elif line in ("@@cmdline", "@@environ", "@@maps"):
            section = line[2:]
        elif line == "@@environ-unreadable":
            cur["env_readable"] = False
        elif line == "@@end":
            procs.append(
                EngineProc(
                    pid=cur["pid"],
                    exe=cur["exe"],
                    argv=tuple(a for a in cur["argv"] if a != ""),
                    env=parse_environ("\n".join(cur["env"])),
                    env_readable=cur["env_readable"],
                    nccl_libs=tuple(dict.fromkeys(m for m in cur["maps"] if m)),
                    uid=cur["uid"],
                )
            )
            cur, section = None, ""
        elif section == "cmdline":
            cur["argv"].append(line)
        elif section == "environ":
            cur["env"].append(line)
        elif section == "maps":
            cur["maps"].append(line.strip())
    require_sections(text, "engine discovery", len(procs))
    return procs


# ------------------------------------------------------------------ argument parsing

_SGLANG_MAIN = re.compile(r"(?:^|[/ .])sglang(?:\.launch_server|\.srt\.server|$)|^sglang$")


def engine_kind(argv: list[str] | tuple[str, ...]) -> str | None:
    """ "sglang" / "vllm" / "tgi" when argv is an engine's API server (not a worker), else None."""
    joined = " ".join(argv[:4])
    if re.search(
        r"\bsglang\.launch_server\b|\bsglang\.srt\.entrypoints|(?:^|/)sglang serve\b", joined
    ) or (len(argv) > 1 and argv[1].endswith("/sglang") and "serve" in argv[2:3]):
        return "sglang"
    if re.search(r"\bvllm\.entrypoints\.(?:openai\.)?api_server\b|(?:^|/)vllm serve\b", joined) or (
        len(argv) > 2 and argv[1].endswith("/vllm") and argv[2] == "serve"
    ):
        return "vllm"
    if re.search(r"text-generation-launcher|text-generation-server", joined):
        return "tgi"
    return None


# Option names read below: an abbreviation argparse accepts (SGLang's "--speculative-algo") resolves to
# the one of them it is a prefix of.
_KNOWN_OPTS = (
    "tp",
    "tp-size",
    "tensor-parallel-size",
    "pp",
    "pp-size",
    "pipeline-parallel-size",
    "dp",
    "dp-size",
    "data-parallel-size",
    "ep",
    "ep-size",
    "expert-parallel-size",
    "enable-ep-moe",
    "enable-expert-parallel",
    "enable-dp-attention",
    "disable-cuda-graph",
    "cuda-graph-max-bs",
    "enforce-eager",
    "compilation-config",
    "cudagraph-mode",
    "attention-backend",
    "moe-runner-backend",
    "moe-a2a-backend",
    "disable-custom-all-reduce",
    "model-path",
    "model",
    "model-id",
    "quantization",
    "quantize",
    "kv-cache-dtype",
    "speculative-algorithm",
    "speculative-num-steps",
    "speculative-eagle-topk",
    "speculative-num-draft-tokens",
    "speculative-draft-model-path",
    "speculative-config",
    "speculative-model",
    "num-speculative-tokens",
    "spec-method",
    "spec-tokens",
    "spec-model",
    "num-shard",
    "cuda-graphs",
    "port",
)
_DEFAULT_PORT = {"sglang": 30000, "vllm": 8000, "tgi": 3000}
_ALLREDUCE_FLAG = re.compile(r"all-?reduce|mscclpp|symm-mem|quick-reduce|custom-ar\b")


def _opts(argv: list[str] | tuple[str, ...]) -> dict[str, str]:
    """--flag value / --flag=value / bare --flag ("") -> dict; underscores read as dashes; abbreviations resolved."""
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
    for name in [n for n in out if n not in _KNOWN_OPTS]:
        full = [k for k in _KNOWN_OPTS if k.startswith(name)]
        if len(full) == 1 and full[0] not in out:
            out[full[0]] = out[name]
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


def _json_opt(opts: dict[str, str], name: str) -> dict[str, Any]:
    """A JSON-valued flag (vLLM --speculative-config, --compilation-config) as a dict; {} when absent or not JSON."""
    try:
        v = json.loads(opts.get(name) or "{}")
    except ValueError:
        return {}
    return v if isinstance(v, dict) else {}


def _port(kind: str, opts: dict[str, str]) -> dict[str, Any]:
    port = _int(opts, "port")
    return {
        "port": port if port is not None else _DEFAULT_PORT.get(kind),
        "port_is_default": port is None,
    }


def _allreduce_flags(opts: dict[str, str]) -> tuple[str, ...]:
    return tuple(
        f"--{k}" + (f" {v}" if v else "") for k, v in opts.items() if _ALLREDUCE_FLAG.search(k)
    )


def _sglang(opts: dict[str, str]) -> EngineConfig:
    disabled = _truthy(opts, "disable-cuda-graph")
    tp = _int(opts, "tp", "tp-size", "tensor-parallel-size", default=1) or 1
    ep = _int(opts, "ep", "ep-size", "expert-parallel-size")
    spec = opts.get("speculative-algorithm") or None
    return EngineConfig(
        kind="sglang",
        tp=tp,
        pp=_int(opts, "pp", "pp-size", "pipeline-parallel-size", default=1) or 1,
        dp=_int(opts, "dp", "dp-size", "data-parallel-size", default=1) or 1,
        ep=ep if ep is not None else (tp if _truthy(opts, "enable-ep-moe") else None),
        dp_attention=_truthy(opts, "enable-dp-attention"),
        cuda_graphs_disabled=disabled,
        graph_flag="--disable-cuda-graph" if disabled else None,
        cuda_graph_max_bs=_int(opts, "cuda-graph-max-bs"),
        attention_backend=opts.get("attention-backend") or None,
        moe_backend=opts.get("moe-runner-backend") or opts.get("moe-a2a-backend") or None,
        custom_allreduce_disabled=_truthy(opts, "disable-custom-all-reduce"),
        allreduce_flags=_allreduce_flags(opts),
        model=opts.get("model-path") or opts.get("model") or None,
        quantization=opts.get("quantization") or None,
        kv_cache_dtype=opts.get("kv-cache-dtype") or None,
        speculative=spec,
        speculative_steps=_int(opts, "speculative-num-steps") if spec else None,
        speculative_topk=_int(opts, "speculative-eagle-topk") if spec else None,
        speculative_draft_tokens=_int(opts, "speculative-num-draft-tokens") if spec else None,
        speculative_draft_model=(opts.get("speculative-draft-model-path") or None)
        if spec
        else None,
        **_port("sglang", opts),
    )


def _vllm_speculative(opts: dict[str, str]) -> dict[str, Any]:
    """--speculative-config JSON, the --spec-* shorthand, or the older --speculative-model/--num-speculative-tokens."""
    cfg = _json_opt(opts, "speculative-config")
    method = cfg.get("method") or opts.get("spec-method") or None
    model = cfg.get("model") or opts.get("spec-model") or opts.get("speculative-model") or None
    steps = cfg.get("num_speculative_tokens")
    steps = steps if isinstance(steps, int) else _int(opts, "spec-tokens", "num-speculative-tokens")
    if not (method or model or steps or opts.get("speculative-config")):
        return {}
    name = str(method) if method else ("draft model" if model else "speculative (method not named)")
    return {
        "speculative": name,
        "speculative_steps": steps,
        "speculative_draft_model": str(model) if model else None,
    }


def _vllm(opts: dict[str, str], argv: list[str] | tuple[str, ...]) -> EngineConfig:
    eager = _truthy(opts, "enforce-eager")
    mode = (
        _json_opt(opts, "compilation-config").get("cudagraph_mode")
        or opts.get("cudagraph-mode")
        or None
    )
    none_mode = (
        bool(
            re.search(
                r"cudagraph_mode\"?\s*[:=]\s*\"?NONE|^NONE$",
                opts.get("compilation-config") or "",
                re.I,
            )
        )
        or str(mode or "").upper() == "NONE"
    )
    flag = "--enforce-eager" if eager else ("cudagraph_mode=NONE" if none_mode else None)
    positional = None
    if "serve" in argv:  # `vllm serve <model>`
        nxt = list(argv)[list(argv).index("serve") + 1 :]
        if nxt and not nxt[0].startswith("-"):
            positional = nxt[0]
    tp = _int(opts, "tensor-parallel-size", "tp", default=1) or 1
    dp = _int(opts, "data-parallel-size", "dp", default=1) or 1
    return EngineConfig(
        kind="vllm",
        tp=tp,
        pp=_int(opts, "pipeline-parallel-size", "pp", default=1) or 1,
        dp=dp,
        ep=tp * dp if _truthy(opts, "enable-expert-parallel") else None,
        cuda_graphs_disabled=bool(flag),
        graph_flag=flag,
        cuda_graph_mode=str(mode) if mode else None,
        attention_backend=opts.get("attention-backend") or None,
        custom_allreduce_disabled=_truthy(opts, "disable-custom-all-reduce"),
        allreduce_flags=_allreduce_flags(opts),
        model=opts.get("model") or positional,
        quantization=opts.get("quantization") or None,
        kv_cache_dtype=opts.get("kv-cache-dtype") or None,
        **_vllm_speculative(opts),
        **_port("vllm", opts),
    )


def _tgi(opts: dict[str, str]) -> EngineConfig:
    # CUDA graphs are on unless --cuda-graphs 0; tensor parallelism = --num-shard.
    graphs = opts.get("cuda-graphs")
    disabled = graphs is not None and graphs.strip() in ("0", "")
    return EngineConfig(
        kind="tgi",
        tp=_int(opts, "num-shard", default=1) or 1,
        cuda_graphs_disabled=disabled,
        graph_flag="--cuda-graphs 0" if disabled else None,
        model=opts.get("model-id") or None,
        quantization=opts.get("quantize") or None,
        **_port("tgi", opts),
    )


def parse_engine_args(argv: list[str] | tuple[str, ...]) -> EngineConfig | None:
    """Engine argv -> EngineConfig, or None when argv is not a known engine's server.

        python3 -m sglang.launch_server --model-path /models/GLM-5-NVFP4 --tp 8 --disable-cuda-graph
    -> EngineConfig(kind="sglang", tp=8, cuda_graphs_disabled=True, graph_flag="--disable-cuda-graph", ...)
    """
    kind = engine_kind(argv)
    if kind is None:
        return None
    opts = _opts(argv)
    if kind == "sglang":
        return _sglang(opts)
    if kind == "vllm":
        return _vllm(opts, argv)
    return _tgi(opts)


def listing_audit(text: str) -> tuple[int | None, bool]:
    """(the auditing user's uid, whether the listing was cut) from `ENGINE_PROCS_SHELL` output: `@@auditor N`
    is its first line and `@@more` its last (an older listing has neither: (None, False))."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    first = lines[0] if lines else ""
    uid = first[10:].strip() if first.startswith("@@auditor ") else ""
    return (int(uid) if uid.isdigit() else None), bool(lines) and lines[-1] == "@@more"


def choose_main(
    procs: list[EngineProc], audit_uid: int | None = None, cut: bool = False
) -> tuple[tuple[EngineProc, EngineConfig] | None, list[EngineProc]]:
    """(the engine's API server and its config, or None; the candidates when which one is ambiguous).

    THE choice of the serving engine (issue 29): `engine_choice.choose_engine`, the rule the engine
    environment reader and the metrics reader run on the target. Under a root audit a root-owned API
    server beats other users' look-alikes; API servers of several other owners are ambiguous."""
    servers = [(p, cfg) for p in procs if (cfg := parse_engine_args(p.argv)) is not None]
    engine, ambiguous = choose_engine(
        [(i, p.uid, "") for i, (p, _cfg) in enumerate(servers)], audit_uid, cut
    )
    return (servers[engine[0][0]] if engine else None), [servers[a[0]][0] for a in ambiguous]


def main_engine(
    procs: list[EngineProc], audit_uid: int | None = None, cut: bool = False
) -> tuple[EngineProc, EngineConfig] | None:
    """The engine's API-server process and its parsed config (`choose_main`), else None (none, or ambiguous)."""
    return choose_main(procs, audit_uid, cut)[0]


def ambiguity(candidates: list[EngineProc], cut: bool = False) -> str:
    """Why no process is "the engine", naming the candidates (pid, owner, kind, model)."""

    def one(p: EngineProc) -> str:
        cfg = parse_engine_args(p.argv)
        what = f"{cfg.kind} {cfg.model or ''}".strip() if cfg else "engine"
        return f"pid {p.pid} uid {'unknown' if p.uid is None else p.uid} ({what})"

    names = "; ".join(one(p) for p in candidates[:8])
    if cut and len({p.uid for p in candidates}) == 1:
        return (
            f"which process is the serving engine is ambiguous: the process listing was cut before a "
            f"root-owned API server was seen, and {names} may be a look-alike: none judged"
        )
    return (
        "which process is the serving engine is ambiguous: API servers of different owners "
        f"({names}): none judged"
    )


def engine_env(
    procs: list[EngineProc], found: tuple[EngineProc, EngineConfig] | None = None
) -> tuple[dict[str, str], bool]:
    """The engine's environment (main process first, workers merged in) and whether any was readable.

    `found` is `main_engine(procs)` when the caller already has it.
    """
    env: dict[str, str] = {}
    readable = False
    found = found if found is not None else main_engine(procs)
    ordered = ([found[0]] if found else []) + [
        p for p in procs if not found or (p is not found[0] and _same_owner(p, found[0]))
    ]
    for p in ordered:
        if p.env_readable:
            readable = True
            for k, v in p.env.items():
                env.setdefault(k, v)
    return env, readable


def _same_owner(p: EngineProc, main: EngineProc) -> bool:
    """A process of the engine (its workers run as its owner); every one when the owners were not read."""
    return main.uid is None or p.uid == main.uid


@dataclass(frozen=True, slots=True)
class EngineSummary:
    """What one target's discovery listing says: the processes, the API server and the merged environment."""

    procs: list[EngineProc]
    main: EngineProc | None = None
    config: EngineConfig | None = None
    env: dict[str, str] = field(default_factory=dict)
    env_readable: bool | None = None
    """None when no process matched; else whether any matched process's environ was readable."""
    nccl_libs: list[str] = field(default_factory=list)
    """Every libnccl file mapped by a process of the engine (its owner's), sorted."""
    ambiguous: str | None = None
    """Why no API server is "the engine" (`choose_main`: several owners), naming them; None = decided."""


def summarize_engine(
    procs: list[EngineProc], audit_uid: int | None = None, cut: bool = False
) -> EngineSummary:
    """`parse_engine_procs` output -> EngineSummary (`choose_main` and engine_env computed once)."""
    found, candidates = choose_main(procs, audit_uid, cut)
    if not procs:
        return EngineSummary(procs=procs)
    if candidates:
        return EngineSummary(procs=procs, ambiguous=ambiguity(candidates, cut))
    if cut and found is None:  # workers fill the listing: "no engine" is not proven
        return EngineSummary(
            procs=procs,
            ambiguous=f"the process listing was cut at {len(procs)} matches before an API server "
            "was seen: the engine is not known",
        )
    env, readable = engine_env(procs, found)
    ours = [p for p in procs if found is None or _same_owner(p, found[0])]
    return EngineSummary(
        procs=procs,
        main=found[0] if found else None,
        config=found[1] if found else None,
        env=env,
        env_readable=readable,
        nccl_libs=sorted({lib for p in ours for lib in p.nccl_libs}),
    )


@parse_once
def serving_engine(text: str) -> EngineSummary:
    """The serving engine of one `engine_procs` listing (its processes, the API server's argv and config, the
    model path, the merged environment), derived once per listing: the python and nccl probes, the combiners and
    the roofline read this one value. Raises ParseError like parse_engine_procs."""
    return summarize_engine(parse_engine_procs(text), *listing_audit(text))


def engine_listing_problem(listings: Mapping[Any, str | None], found: bool) -> str | None:
    """The shared gate for rules about the serving engine: why "no engine" cannot be claimed, or None.

    `listings` maps each target that ran the discovery command (`engine_procs`) to its problem (None = a
    usable listing); `found` is whether any listing found an engine. An engine found anywhere is judged;
    otherwise "no engine" holds only when every listing was usable, and any failed one makes it unknown.
    """
    if found:
        return None
    probs = [f"{role}: {p}" for role, p in listings.items() if p]
    return "; ".join(probs) or None


# ------------------------------------------------------------------ per-process status and NUMA placement


@dataclass(frozen=True, slots=True)
class ProcStatus:
    """One engine process: affinity, memory and where its resident pages live."""

    pid: int
    cmd: str = ""
    cpus: tuple[int, ...] | None = None
    mems: tuple[int, ...] | None = None
    rss_kb: int | None = None
    swap_kb: int | None = None
    threads: int | None = None
    numa_kb: dict[int, int] | None = None
    """NUMA node -> resident kB (from numa_maps); None when numa_maps was unreadable."""
    uid: int | None = None
    """The owner (effective uid); None when not read (older listings carry no `@@uid`)."""

    @property
    def rank(self) -> int | None:
        """Tensor-parallel rank from the process title ("sglang::scheduler_TP3", "VLLM::Worker_TP3") or None."""
        m = re.search(r"(?:_TP|Worker[_-]?|rank[_-]?)(\d+)\b", self.cmd)
        return int(m.group(1)) if m else None


@dataclass(frozen=True, slots=True)
class EngineStatusReport:
    """The engine status listing's extras: the GPU compute apps by host PID and the machine's online CPUs."""

    apps: dict[int, str] = field(default_factory=dict)
    """Host PID -> GPU UUID (nvidia-smi compute apps; empty inside a container)."""
    online: tuple[int, ...] | None = None
    """/sys/devices/system/cpu/online: every CPU of the machine (LXC shows the host's)."""
    procs: list[ProcStatus] = field(default_factory=list)


def _cpus(text: str) -> tuple[int, ...] | None:
    try:
        return tuple(cpu_list(text))
    except ValueError:
        return None


@parse_once
def parse_engine_status(text: str) -> EngineStatusReport:
    """Output of `ENGINE_STATUS_SHELL` -> report (illustrative sample, shape of /proc/<pid>/status lines):

        @@apps
        3122410,GPU-5e0c0a21-6c1d-4f3e-9b7a-00d4c8e2f100
        @@online 0-255
        @@pid 3122410
        @@cmd sglang::scheduler_TP0
        Threads:	212
        Cpus_allowed_list:	0-255
        @@numa
        N0 30212344
        N1 1203332
        @@end
    Raises ParseError unless the text carries `@@apps`, `@@online` and complete sections or `@@none`.
    """
    apps: dict[int, str] = {}
    online = None
    procs: list[ProcStatus] = []
    cur: dict[str, Any] | None = None
    section = ""
    for line in text.splitlines():
        s = line.strip()
        if s == "@@apps":
            section = "apps"
        elif s.startswith("@@online"):
            online = _cpus(s[8:]) if s[8:].strip() else None
            section = ""
        elif s.startswith("@@pid "):
            pid = s.split()[1]
            cur = {"pid": int(pid) if pid.isdigit() else -1, "numa_kb": {}, "head": True}
            section = ""
        elif cur is not None and cur.pop("head", False) and s.startswith("@@uid"):
            # only right after @@pid: a command line printed below cannot set it
            cur["uid"] = _uid_line(s)
        elif section == "apps" and "," in s:
            pid, _, uuid = s.partition(",")
            if pid.isdigit() and uuid:
                apps[int(pid)] = uuid
        elif cur is not None and s == "@@end":
            procs.append(ProcStatus(**cur))
            cur, section = None, ""
        elif cur is not None:
            section = _status_line(cur, s, section)
    require_sections(text, "engine status", len(procs), "@@apps", "@@online")
    return EngineStatusReport(apps=apps, online=online, procs=_engine_owners(procs, text))


def _engine_owners(procs: list[ProcStatus], text: str) -> list[ProcStatus]:
    """The processes of THE engine (issue 29): its API servers chosen by `choose_engine` (under a root audit a
    root-owned one, never a user's look-alike), then every listed process of that owner (its workers). API
    servers of several owners raise ParseError naming them; no API server or no owner read: all, as before."""
    servers = [
        (i, p.uid, "") for i, p in enumerate(procs) if engine_kind(p.cmd.split(" ")) is not None
    ]
    audit_uid, cut = listing_audit(text)
    engine, ambiguous = choose_engine(servers, audit_uid, cut)
    if ambiguous:
        raise _owners_ambiguous([(procs[a[0]].pid, a[1]) for a in ambiguous], cut, "none read")
    owner = engine[0][1] if engine else None
    return procs if owner is None else [p for p in procs if p.uid == owner]


def _owners_ambiguous(servers: list[tuple[int, int | None]], cut: bool, outcome: str) -> ParseError:
    """The error of a listing whose API servers (pid, owner) `choose_engine` left ambiguous: several owners, or
    one non-root owner in a root audit's listing cut before a root-owned one was seen (as `ambiguity` says)."""
    names = "; ".join(f"pid {pid} uid {'unknown' if uid is None else uid}" for pid, uid in servers)
    why = (
        "the listing was cut before a root-owned API server was seen"
        if cut and len({uid for _pid, uid in servers}) == 1
        else "API servers of different owners"
    )
    return ParseError(
        f"which process is the serving engine is ambiguous: {why} ({names}): {outcome}"
    )


def _uid_line(line: str) -> int | None:
    """An `@@uid N` line's owner; None when it was not read (awk printed nothing)."""
    uid = line[5:].strip()
    return int(uid) if uid.isdigit() else None


_STATUS_KEYS = {"VmRSS": "rss_kb", "VmSwap": "swap_kb", "Threads": "threads"}


def _status_line(cur: dict[str, Any], s: str, section: str) -> str:
    """One line inside a process section (@@cmd, @@numa lines, /proc/<pid>/status fields) -> the next section."""
    if s.startswith("@@cmd"):
        cur["cmd"] = s[5:].strip()
    elif s == "@@numa":
        return "numa"
    elif s == "@@numa-unreadable":
        cur["numa_kb"] = None
    elif section == "numa":
        m = re.fullmatch(r"N(\d+)\s+(\d+)(?:\.\d+)?", s)
        if m and cur["numa_kb"] is not None:
            cur["numa_kb"][int(m.group(1))] = int(m.group(2))
    elif ":" in s:
        k, v = (x.strip() for x in s.split(":", 1))
        num = re.match(r"(\d+)", v)
        if k == "Cpus_allowed_list":
            cur["cpus"] = _cpus(v)
        elif k == "Mems_allowed_list":
            cur["mems"] = _cpus(v)
        elif k in _STATUS_KEYS and num:
            cur[_STATUS_KEYS[k]] = int(num.group(1))
    return section


# ------------------------------------------------------------------ engine logs (NCCL transport, throughput)


@dataclass(frozen=True, slots=True)
class EngineLog:
    """One engine process's log: where it was read from, and its NCCL and throughput lines."""

    pid: int
    stdout: str = ""
    source: str = "none"
    """"file", "journal" or "none" (stdout is a pipe, a terminal or /dev/null)."""
    where: str = ""
    nccl_lines: tuple[str, ...] = ()
    throughput_lines: tuple[str, ...] = ()
    uid: int | None = None
    """The API server's owner (effective uid); None when not read (older listings carry no `@@uid`)."""


@parse_once
def parse_engine_logs(text: str) -> list[EngineLog]:
    """Output of `ENGINE_LOGS_SHELL` -> one EngineLog per API server of THE engine (illustrative sample):

        @@auditor 0
        @@pid 2417
        @@uid 0
        @@stdout pipe:[88123]
        @@source journal sglang.service
        @@nccl
        ct101:2950:3101 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
        @@throughput
        [2026-01-10 08:51:02 TP0] Decode batch. #running-req: 1, #token: 1893, token usage: 0.00, gen throughput (token/s): 10.12, #queue-req: 0
        @@end
    The logs are those of the API servers `choose_engine` takes for the engine (issue 29: under a root audit a
    root-owned one, never a user's look-alike); API servers of several owners raise ParseError naming them.
    A section starts only between sections and `@@uid` counts only right after `@@pid`: a log line cannot
    open one. Raises ParseError unless the text holds complete sections or the `@@none` marker.
    """
    out: list[EngineLog] = []
    cur: dict[str, Any] | None = None
    section = ""
    for line in text.splitlines():
        if cur is None and line.startswith("@@pid "):
            pid = line.split()[1] if len(line.split()) > 1 else ""
            cur = {"pid": int(pid) if pid.isdigit() else -1, "nccl": [], "tp": [], "head": True}
            section = ""
        elif cur is None:
            continue
        elif cur.pop("head", False) and line.startswith("@@uid"):
            cur["uid"] = _uid_line(line)
        elif line.startswith("@@stdout"):
            cur["stdout"] = line[8:].strip()
        elif line.startswith("@@source"):
            parts = line.split(None, 2)
            cur["source"] = parts[1] if len(parts) > 1 else "none"
            cur["where"] = parts[2] if len(parts) > 2 else ""
        elif line in ("@@nccl", "@@throughput"):
            section = line[2:]
        elif line == "@@end":
            out.append(
                EngineLog(
                    pid=cur["pid"],
                    stdout=cur.get("stdout", ""),
                    source=cur.get("source", "none"),
                    where=cur.get("where", ""),
                    nccl_lines=tuple(cur["nccl"]),
                    throughput_lines=tuple(cur["tp"]),
                    uid=cur.get("uid"),
                )
            )
            cur, section = None, ""
        elif section == "nccl" and line.strip():
            cur["nccl"].append(line.rstrip())
        elif section == "throughput" and line.strip():
            cur["tp"].append(line.rstrip())
    require_sections(text, "engine log", len(out))
    audit_uid, cut = listing_audit(text)
    engine, ambiguous = choose_engine([(i, lg.uid, "") for i, lg in enumerate(out)], audit_uid, cut)
    if ambiguous:
        raise _owners_ambiguous([(out[a[0]].pid, a[1]) for a in ambiguous], cut, "no log read")
    return [out[e[0]] for e in engine]


def log_source_labels(logs: list[EngineLog]) -> list[str]:
    """Where each API server's log was read: "journal sglang.service", "file /var/log/x", "none (pipe:[1])"."""
    return [
        f"{lg.source} {lg.where}".strip()
        if lg.source != "none"
        else f"none ({lg.stdout or 'stdout unreadable'})"
        for lg in logs
    ]


@dataclass(frozen=True, slots=True)
class NcclChannel:
    """One `NCCL INFO Channel` line of an engine log: from which GPU to which, over what transport."""

    src_dev: int
    dst_dev: int
    transport: str
    """"P2P", "SHM", "NET" or another first word after "via"."""
    detail: str


_CHANNEL = re.compile(
    r"NCCL INFO Channel \d+(?:/\d+)?\s*:\s*\d+\[(\d+)\]\s*->\s*\d+\[(\d+)\]\s*(?:\[\w+\]\s*)?via (\S+)"
)


def parse_nccl_channels(lines: list[str] | tuple[str, ...]) -> list[NcclChannel]:
    """NCCL_DEBUG=INFO connection lines -> channels (device indices are the CUDA-visible ones).

    node:2950:3101 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
    node:2950:3101 [0] NCCL INFO Channel 01 : 0[0] -> 1[1] via SHM/direct/direct
    """
    out = []
    for ln in lines:
        m = _CHANNEL.search(ln)
        if m:
            detail = m.group(3)
            out.append(
                NcclChannel(int(m.group(1)), int(m.group(2)), detail.split("/")[0].upper(), detail)
            )
    return out


@dataclass(frozen=True, slots=True)
class ThroughputSample:
    """One decode throughput line of an engine log: tokens/s and the batch it was measured at."""

    tok_s: float
    running: int | None
    """Requests in the batch at that moment (1 = single stream); None when the line does not say."""
    accept_len: float | None = None
    """Speculative decoding: tokens accepted per step (SGLang "accept len", vLLM "Mean acceptance length")."""


_ACCEPT = re.compile(r"accept len:\s*([\d.]+)|Mean acceptance length:\s*([\d.]+)")


def _accept_len(line: str) -> float | None:
    m = _ACCEPT.search(line)
    try:
        return float(m.group(1) or m.group(2)) if m else None
    except ValueError:
        return None


def parse_throughput_lines(lines: list[str] | tuple[str, ...]) -> list[ThroughputSample]:
    """SGLang "Decode batch" and vLLM "Avg generation throughput" log lines -> samples (prefill lines are not decode).

        Decode batch, #running-req: 24, #token: 233600, token usage: 0.66, accept len: 3.05, accept rate: 0.68, npu graph: True, gen throughput (token/s): 239.06, #queue-req: 2
        Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 249.5 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 6.5%, Prefix cache hit rate: 0.0%
        SpecDecoding metrics: Mean acceptance length: 4.00, Accepted throughput: 187.08 tokens/s, ...
    vLLM logs its acceptance on the next line: it is attached to the sample before it.
    """
    out: list[ThroughputSample] = []
    for ln in lines:
        m = re.search(r"gen throughput \(token/s\):\s*([\d.]+)", ln) or re.search(
            r"Avg generation throughput:\s*([\d.]+)", ln
        )
        if not m:
            if (
                "SpecDecoding metrics" in ln
                and out
                and out[-1].accept_len is None
                and (acc := _accept_len(ln)) is not None
            ):
                out[-1] = ThroughputSample(out[-1].tok_s, out[-1].running, acc)
            continue
        r = re.search(r"#running-req:\s*(\d+)", ln) or re.search(r"Running:\s*(\d+)\s*req", ln)
        try:
            out.append(
                ThroughputSample(float(m.group(1)), int(r.group(1)) if r else None, _accept_len(ln))
            )
        except ValueError:
            continue
    return out
