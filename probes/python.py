"""Python runtime and serving engine probe: torch build vs GPU arch, CUDA stack, engine flags and env.

Never creates a CUDA context (PROBES.md §0.2): package metadata, torch's compiled arch flags and the
engine's /proc entries only. The interpreter is `--python`, else the running engine's, else python3.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pydantic import BaseModel

from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.models import Finding, Role
from gpuaudit.probes.core.parsers.engine import (
    engine_listing_problem,
    log_source_labels,
    parse_engine_logs,
    parse_engine_procs,
    parse_engine_status,
    parse_throughput_lines,
    summarize_engine,
)
from gpuaudit.probes.core.parsers.nvidia_smi import parse_query_gpu_csv
from gpuaudit.probes.core.parsers.pyenv import arch_sms, cuda_major_minor, parse_pyenv_json
from gpuaudit.probes.core.sources import use
from gpuaudit.probes.core.spec import FactsByTarget, Outputs, Probe, finding, record_problem

PROBE_ID = "python"
_BOTH: frozenset[Role] = frozenset({"host", "container"})
SMI_GPU_CC_FIELDS = ("index", "name", "compute_cap", "driver_version")
SMI_GPU_CC = f"nvidia-smi --query-gpu={','.join(SMI_GPU_CC_FIELDS)} --format=csv,noheader"
# Persistent JIT/compile caches of the audit user (the engine usually runs as root in its container):
# file-system type (tmpfs = lost on restart), writability and top-level entries (FlashInfer keys by version/arch).
JIT_CACHE_SHELL = (
    "for d in \"$HOME/.cache/flashinfer\" \"$HOME/.triton/cache\" \"$HOME/.cache/vllm\" \"$HOME/.cache/sglang\" "
    "\"$HOME/.cache/deep_gemm\" \"/tmp/torchinductor_$(id -un)\"; do [ -d \"$d\" ] || continue; echo \"@@dir $d\"; "
    "echo \"@@fs $(stat -f -c %T \"$d\" 2>/dev/null)\"; [ -w \"$d\" ] && echo '@@writable'; ls -1 \"$d\" 2>/dev/null | head -n 12; done; "
    "echo '@@done'"
)

COMMANDS = use('smi_gpu_cc', 'pyenv', 'engine_procs', 'engine_proc_status', 'engine_logs', 'jit_cache_dirs')

# Newest CUDA each driver branch supports (nvidia-smi's "CUDA Version"; CUDA release notes, table 3).
_DRIVER_CUDA = ((590, (13, 1)), (580, (13, 0)), (575, (12, 9)), (570, (12, 8)), (565, (12, 7)), (560, (12, 6)),
                (555, (12, 5)), (550, (12, 4)), (545, (12, 3)), (535, (12, 2)), (530, (12, 1)), (525, (12, 0)),
                (520, (11, 8)), (515, (11, 7)), (510, (11, 6)), (470, (11, 4)))
# Attention backends with no sm_120 kernels (Hopper/datacenter-Blackwell only).
_NO_SM120_BACKENDS = {"fa3", "flashmla", "cutlass_mla", "trtllm_mla", "trtllm_mha", "flash_attn_3", "fa4"}


class JitDir(BaseModel, frozen=True):
    path: str
    fs: str | None = None
    writable: bool = False
    entries: list[str] = []


def parse_jit_dirs(text: str) -> list[JitDir]:
    """Output of `JIT_CACHE_SHELL` -> existing cache folders (illustrative sample):

        @@dir /root/.cache/flashinfer
        @@fs zfs
        @@writable
        0.5.3
        @@done
    """
    out: list[JitDir] = []
    cur: dict | None = None
    for ln in text.splitlines():
        if ln.startswith("@@dir "):
            if cur:
                out.append(JitDir(**cur))
            cur = {"path": ln[6:].strip(), "entries": []}
        elif cur is None or ln == "@@done":
            continue
        elif ln.startswith("@@fs"):
            cur["fs"] = ln[4:].strip() or None
        elif ln == "@@writable":
            cur["writable"] = True
        elif ln.strip():
            cur["entries"].append(ln.strip())
    if cur:
        out.append(JitDir(**cur))
    return out


class PythonFacts(BaseModel, frozen=True):
    gpus: list[str] = []
    compute_caps: list[str] = []
    driver: str | None = None
    interpreter: str | None = None
    python: str | None = None
    torch: str | None = None
    torch_cuda: str | None = None
    arch_list: list[str] | None = None
    torch_error: str | None = None
    packages: dict[str, str] = {}
    engine_kind: str | None = None
    engine_pid: int | None = None
    engine_args: list[str] = []
    tp: int | None = None
    pp: int | None = None
    cuda_graphs_disabled: bool | None = None
    graph_flag: str | None = None
    attention_backend: str | None = None
    moe_backend: str | None = None
    model: str | None = None
    quantization: str | None = None
    engine_env: dict[str, str] = {}
    engine_env_readable: bool | None = None
    engine_procs: int = 0
    proc_threads: list[tuple[str, int, int | None]] | None = None
    """(process title, Threads, allowed CPU count) per engine process; None = not read."""
    cpus_online: int | None = None
    log_sources: list[str] | None = None
    throughput: list[tuple[float, int | None]] = []
    """(tok/s, running requests) from the engine's log, oldest first."""
    jit_dirs: list[JitDir] | None = None
    problems: dict[str, str] = {}


def parse_gpu_cc(text: str) -> list[tuple[str, str | None, str | None]]:
    """`nvidia-smi --query-gpu=index,name,compute_cap,driver_version --format=csv,noheader` -> rows.

        0, NVIDIA RTX PRO 6000 Blackwell Server Edition, 12.0, 590.48.01
    -> [("NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0", "590.48.01")]
    Raises ParseError on an nvidia-smi error banner or a row of the wrong width.
    """
    rows = []
    for r in parse_query_gpu_csv(text, SMI_GPU_CC_FIELDS):
        cc, drv = r.get("compute_cap") or "", r.get("driver_version") or ""
        rows.append((r.get("name") or "?", cc if re.fullmatch(r"\d+\.\d+", cc) else None, drv if re.match(r"\d+\.", drv) else None))
    return rows


def driver_max_cuda(driver: str | None) -> tuple[int, int] | None:
    """"590.48.01" -> (13, 1): the newest CUDA the driver branch supports; None when unknown."""
    m = re.match(r"(\d+)\.", driver or "")
    if not m:
        return None
    branch = int(m.group(1))
    for b, cuda in _DRIVER_CUDA:
        if branch >= b:
            return cuda
    return None


def extract(outputs: Outputs, role: Role) -> PythonFacts:
    problems = {cid: p for cid, rec in outputs.items() if (p := record_problem(rec))}
    f: dict = {}
    rec = outputs.get("smi_gpu_cc")
    if rec is not None and "smi_gpu_cc" not in problems:
        try:
            rows = parse_gpu_cc(rec.stdout)
        except ParseError as exc:
            rows, problems["smi_gpu_cc"] = [], f"unreadable: {exc}"
        if rows:
            f.update(gpus=[r[0] for r in rows], compute_caps=[r[1] or "?" for r in rows], driver=rows[0][2])
        elif "smi_gpu_cc" not in problems:
            problems["smi_gpu_cc"] = "unreadable: " + ((rec.stdout + rec.stderr).strip().splitlines() or ["empty"])[0][:120]
    rec = outputs.get("pyenv")
    if rec is not None and "pyenv" not in problems:
        try:
            env = parse_pyenv_json(rec.stdout)
            f.update(interpreter=env.interpreter, python=env.python, torch=env.torch, torch_cuda=env.torch_cuda,
                     arch_list=env.arch_list, torch_error=env.torch_error, packages=env.packages)
        except ParseError as exc:
            problems["pyenv"] = f"unreadable: {exc}"
    if (t := _text(outputs, "engine_procs", problems)) is not None:
        try:
            eng = summarize_engine(parse_engine_procs(t))
        except ParseError as exc:
            problems["engine_procs"] = f"unreadable: {exc}"
        else:
            f["engine_procs"] = len(eng.procs)
            if eng.procs:
                f.update(engine_env=eng.env, engine_env_readable=eng.env_readable)
            if eng.main is not None and (cfg := eng.config) is not None:
                f.update(engine_kind=cfg.kind, engine_pid=eng.main.pid, engine_args=list(eng.main.argv)[:80], tp=cfg.tp,
                         pp=cfg.pp, cuda_graphs_disabled=cfg.cuda_graphs_disabled, graph_flag=cfg.graph_flag,
                         attention_backend=cfg.attention_backend, moe_backend=cfg.moe_backend, model=cfg.model,
                         quantization=cfg.quantization)
    if (t := _text(outputs, "engine_proc_status", problems)) is not None:
        try:
            rep = parse_engine_status(t)
            f["proc_threads"] = [(p.cmd.split(" ")[0] if p.cmd else f"pid {p.pid}", p.threads or 0,
                                  len(p.cpus) if p.cpus is not None else None) for p in rep.procs]
            f["cpus_online"] = len(rep.online) if rep.online else None
        except ParseError as exc:
            problems["engine_proc_status"] = f"unreadable: {exc}"
    if (t := _text(outputs, "engine_logs", problems)) is not None:
        try:
            logs = parse_engine_logs(t)
            f["log_sources"] = log_source_labels(logs)
            f["throughput"] = [(x.tok_s, x.running) for lg in logs for x in parse_throughput_lines(lg.throughput_lines)]
        except ParseError as exc:
            problems["engine_logs"] = f"unreadable: {exc}"
    if (t := _text(outputs, "jit_cache_dirs", problems)) is not None:
        f["jit_dirs"] = parse_jit_dirs(t)
    return PythonFacts(**f, problems=problems)


def _text(outputs: Outputs, cid: str, problems: dict[str, str]) -> str | None:
    rec = outputs.get(cid)
    return rec.stdout if rec is not None and cid not in problems else None


# --------------------------------------------------------------------------- judge helpers

def _first(facts: FactsByTarget, has: str | None = None) -> tuple[Role | None, PythonFacts | None]:
    """The first target, container before host, whose facts exist (and whose attribute `has` is set).

    No `has`: the target whose Python to judge (the container when audited); "engine_kind": the one running
    the serving engine; "compute_caps": the one whose GPUs were listed.
    """
    for role in ("container", "host"):
        f = facts.get(role)
        if f is not None and (has is None or getattr(f, has)):
            return role, f
    return None, None


def _engine_or_gate(facts: FactsByTarget, slug: str, what: str) -> tuple[Role, PythonFacts] | Finding:
    """The engine's target and facts, or the finding that says why there is none to judge.

    The gate is `engine_listing_problem`: unknown when any target's listing failed and none found an engine.
    """
    role, e = _first(facts, "engine_kind")
    if e is not None and role is not None:
        return role, e
    ev: list[tuple[Role, str]] = [(r, "engine_procs") for r in facts]
    if (prob := engine_listing_problem({r: facts[r].problems.get("engine_procs") for r in facts}, found=False)):
        return finding(PROBE_ID, slug, "unknown", f"{what}: engine processes could not be listed", targets=list(facts),
                       observed=prob, evidence=ev)
    return finding(PROBE_ID, slug, "ok", f"{what}: no serving engine found", targets=list(facts) or ["container"],
                   observed="not applicable: no SGLang/vLLM/TGI process found (nothing to judge)", evidence=ev)


def _sm(cc: str) -> int | None:
    m = re.fullmatch(r"(\d+)\.(\d+)", cc)
    return int(m.group(1)) * 10 + int(m.group(2)) if m else None


# --------------------------------------------------------------------------- judge

def judge(facts: FactsByTarget) -> Iterator[Finding]:
    if not facts:
        return
    yield from _torch_arch(facts)
    yield from _cuda_stack(facts)
    yield from _flashinfer(facts)
    yield from _cuda_graphs(facts)
    yield from _dangerous_env(facts)
    yield from _attention(facts)
    yield from _runtime_vs_driver(facts)
    yield from _engine_threads(facts)
    yield from _jit_caches(facts)
    yield from _measured_throughput(facts)


def _torch_arch(facts: FactsByTarget) -> Iterator[Finding]:
    role, rt = _first(facts)
    grole, g = _first(facts, "compute_caps")
    ev: list[tuple[Role, str]] = [(role or "container", "pyenv"), (grole or role or "container", "smi_gpu_cc")]
    assert rt is not None and role is not None
    if g is None:
        yield finding(PROBE_ID, "torch_arch_support", "unknown", "GPU compute capability unknown", targets=[role],
                      observed=next((f"{r}: {facts[r].problems['smi_gpu_cc']}" for r in facts if "smi_gpu_cc" in facts[r].problems),
                                    "no GPU listed by nvidia-smi"), evidence=ev)
        return
    if "pyenv" in rt.problems:
        yield finding(PROBE_ID, "torch_arch_support", "unknown", "Engine's Python could not be inspected", targets=[role],
                      observed=rt.problems["pyenv"], evidence=ev)
        return
    if rt.torch is None:
        yield finding(PROBE_ID, "torch_arch_support", "info", "torch not installed in the inspected Python", targets=[role],
                      observed=f"not applicable: {rt.interpreter or 'python3'} has no torch ({(rt.torch_error or '')[:120]})",
                      why="Without a serving engine's interpreter the probe inspects python3; pass --python to aim it.",
                      fix="Point --python at the engine's interpreter (e.g. /opt/venv/bin/python).", evidence=ev)
        return
    if rt.arch_list is None or (rt.torch_cuda is None):
        sev = "critical" if rt.torch_cuda is None else "unknown"
        yield finding(PROBE_ID, "torch_arch_support", sev, "torch is a CPU-only build" if rt.torch_cuda is None
                      else "torch arch list unreadable", targets=[role],
                      observed=f"torch {rt.torch}, torch.version.cuda={rt.torch_cuda}", evidence=ev,
                      fix="Install a CUDA build of torch matching the engine." if rt.torch_cuda is None else "")
        return
    sass, ptx = arch_sms(rt.arch_list)
    ccs = sorted({c for c in g.compute_caps if _sm(c) is not None})
    if not ccs:  # GPUs listed, but no compute capability readable: nothing to compare the arch list with
        yield finding(PROBE_ID, "torch_arch_support", "unknown", "GPU compute capability unreadable", targets=[role],
                      observed=f"torch {rt.torch} arch list {' '.join(rt.arch_list)}; nvidia-smi compute_cap "
                               f"{', '.join(g.compute_caps)} for {len(g.compute_caps)} GPU(s)", evidence=ev)
        return
    worst = "ok"
    notes = []
    for cc in ccs:
        sm = _sm(cc) or 0
        if sm in sass:
            notes.append(f"sm_{sm}: SASS present")
        elif any(p <= sm for p in ptx):
            worst = "warning" if worst == "ok" else worst
            notes.append(f"sm_{sm}: only PTX compute_{max(p for p in ptx if p <= sm)} (JIT)")
        else:
            worst = "critical"
            notes.append(f"sm_{sm}: no kernels")
    obs = f"torch {rt.torch} (CUDA {rt.torch_cuda}), arch list {' '.join(rt.arch_list)}; GPUs {', '.join(ccs)}: {'; '.join(notes)}"
    titles = {"ok": "torch carries kernels for every GPU architecture",
              "warning": "torch only has PTX for the GPU (JIT at first use)",
              "critical": "torch has no kernels for the GPU's architecture",
              "unknown": "torch covers the readable GPUs; some compute capabilities unreadable"}
    unread = sum(1 for c in g.compute_caps if _sm(c) is None)
    if unread and worst == "ok":  # "every GPU" cannot be claimed for GPUs whose capability is missing
        worst = "unknown"
        obs += f"; {unread} GPU(s) with unreadable compute capability"
    yield finding(PROBE_ID, "torch_arch_support", worst, titles[worst], targets=[role], observed=obs,
                  expected="sm_<cc> of every GPU in torch's compiled arch list (sm_120 for Blackwell RTX)",
                  why="is_available() still returns True on an unsupported arch; the failure arrives at the first kernel "
                      "('no kernel image is available'), or PTX is JIT-compiled without the tuned kernels.",
                  fix="Install a torch built from a CUDA 12.8+ index (cu128/cu13x) matching the engine.", evidence=ev)


def _cuda_stack(facts: FactsByTarget) -> Iterator[Finding]:
    role, rt = _first(facts)
    assert rt is not None and role is not None
    ev: list[tuple[Role, str]] = [(role, "pyenv")]
    if "pyenv" in rt.problems or not rt.packages:
        yield finding(PROBE_ID, "cuda_stack_versions", "unknown" if "pyenv" in rt.problems else "info",
                      "CUDA Python wheels could not be listed" if "pyenv" in rt.problems else "No CUDA Python packages installed",
                      targets=[role], observed=rt.problems.get("pyenv", f"not applicable: {rt.interpreter or 'python3'} has none of the tracked packages"),
                      evidence=ev)
        return
    pk = rt.packages
    issues: list[tuple[str, str]] = []
    cu12 = sorted(k for k in pk if k.endswith("-cu12"))
    cu13 = sorted(k for k in pk if k.endswith("-cu13"))
    if cu12 and cu13:
        issues.append(("warning", f"mixed CUDA runtime wheels: {', '.join(cu12[:3])} and {', '.join(cu13[:3])}"))
    tv = cuda_major_minor(rt.torch_cuda)
    if tv and (cu12 and tv[0] == 13 and not cu13 or cu13 and tv[0] == 12 and not cu12):
        issues.append(("warning", f"torch built for CUDA {rt.torch_cuda} but runtime wheels are {'cu12' if cu12 else 'cu13'}"))
    _gr, g = _first(facts, "compute_caps")
    if g and any(_sm(c) == 120 for c in g.compute_caps) and (tri := pk.get("triton")):
        m = re.match(r"(\d+)\.(\d+)", tri)
        if m and (int(m.group(1)), int(m.group(2))) < (3, 3):
            issues.append(("critical", f"triton {tri} predates sm_120 support (needs ≥ 3.3, shipped with torch 2.7)"))
    listed = ", ".join(f"{k} {pk[k]}" for k in ("torch", "triton", "flashinfer-python", "sglang", "sgl-kernel", "vllm") if k in pk)
    if not issues:
        yield finding(PROBE_ID, "cuda_stack_versions", "ok", "CUDA Python wheels coherent", targets=[role],
                      observed=listed + (f"; runtime wheels {'cu13' if cu13 else 'cu12' if cu12 else 'none'}"), evidence=ev)
        return
    worst = "critical" if any(s == "critical" for s, _ in issues) else "warning"
    yield finding(PROBE_ID, "cuda_stack_versions", worst, "CUDA Python wheels inconsistent", targets=[role],
                  observed="; ".join(t for _, t in issues) + f" ({listed})",
                  expected="one CUDA major across torch and nvidia-* wheels; Triton ≥ 3.3 on sm_120",
                  why="Two CUDA runtimes in one process load whichever comes first; old Triton cannot generate sm_120 code.",
                  fix="Reinstall the engine's wheels from one CUDA index (e.g. all cu130).", evidence=ev)


def _flashinfer(facts: FactsByTarget) -> Iterator[Finding]:
    role, rt = _first(facts)
    assert rt is not None and role is not None
    _gr, g = _first(facts, "compute_caps")
    ev: list[tuple[Role, str]] = [(role, "pyenv"), (role, "engine_procs")]
    fi = rt.packages.get("flashinfer-python")
    sm120 = g is not None and any(_sm(c) in (120, 121) for c in g.compute_caps)
    if "pyenv" in rt.problems:
        yield finding(PROBE_ID, "flashinfer_sm120", "unknown", "FlashInfer version unknown", targets=[role],
                      observed=rt.problems["pyenv"], evidence=ev)
        return
    if not fi or not sm120:
        why = "FlashInfer not installed" if not fi else ("GPU compute capability unknown" if not g else "no sm_120/121 GPU")
        yield finding(PROBE_ID, "flashinfer_sm120", "ok" if (not fi or g) else "unknown",
                      "FlashInfer sm_120 check not applicable" if (not fi or g) else "FlashInfer: GPU arch unknown",
                      targets=[role], observed=f"not applicable: {why}", evidence=ev)
        return
    cubin = rt.packages.get("flashinfer-cubin")
    archs = rt.engine_env.get("FLASHINFER_CUDA_ARCH_LIST")
    if cubin and cubin.startswith("0.6.11"):
        sev, title, obs = "critical", "flashinfer-cubin 0.6.11 ships no sm_120 cubins", f"flashinfer-python {fi}, flashinfer-cubin {cubin}"
    elif archs and not re.search(r"12\.0|12\.1|120|121", archs):
        sev, title, obs = "critical", "FLASHINFER_CUDA_ARCH_LIST excludes sm_120", f"FLASHINFER_CUDA_ARCH_LIST={archs}"
    else:
        sev, title = "ok", "FlashInfer installed for sm_120 (no known-bad build)"
        obs = f"flashinfer-python {fi}" + (f", cubin {cubin}" if cubin else "") + \
              (f", jit-cache {rt.packages['flashinfer-jit-cache']}" if "flashinfer-jit-cache" in rt.packages else "") + \
              (f", FLASHINFER_CUDA_ARCH_LIST={archs}" if archs else "") + "; cubin contents not inspected"
    yield finding(PROBE_ID, "flashinfer_sm120", sev, title, targets=[role], observed=obs,
                  expected="FlashInfer cubins/JIT targets include sm_120 (12.0f)",
                  why="flashinfer-cubin 0.6.11 had no sm_120/121 cubins and fell through to wrong-arch ones, producing "
                      "degenerate NVFP4-MoE output on RTX PRO 6000.",
                  fix="Upgrade flashinfer-python/-cubin/-jit-cache together to a release with sm_120 targets; clear ~/.cache/flashinfer.",
                  evidence=ev)


def _cuda_graphs(facts: FactsByTarget) -> Iterator[Finding]:
    gate = _engine_or_gate(facts, "cuda_graphs", "CUDA graphs")
    if isinstance(gate, Finding):
        yield gate
        return
    role, e = gate
    ev: list[tuple[Role, str]] = [(role, "engine_procs")]
    if e.cuda_graphs_disabled:
        yield finding(PROBE_ID, "cuda_graphs", "critical", "CUDA graphs disabled in the serving engine (confirm intent)",
                      targets=[role], observed=f"{e.engine_kind} (pid {e.engine_pid}) started with {e.graph_flag}, TP={e.tp}",
                      expected="CUDA graphs on for decode (the engine default)",
                      why="In eager mode every decode step re-launches all kernels from the host: 8× RTX PRO 6000 with "
                          "--enforce-eager decoded at ~2–4 tok/s; enabling graphs gave 4–5× elsewhere. Some sm_120 "
                          "setups run eager on purpose because capture fails: confirm why it is off.",
                      fix=f"Remove {e.graph_flag} from the engine's launch command (lower --cuda-graph-max-bs if capture runs out of memory).",
                      evidence=ev)
    else:
        yield finding(PROBE_ID, "cuda_graphs", "ok", "CUDA graphs not disabled", targets=[role],
                      observed=f"{e.engine_kind} (pid {e.engine_pid}): no --disable-cuda-graph/--enforce-eager, TP={e.tp}",
                      evidence=ev)


def _dangerous_env(facts: FactsByTarget) -> Iterator[Finding]:
    gate = _engine_or_gate(facts, "dangerous_env", "Engine environment")
    if isinstance(gate, Finding):
        yield gate
        return
    role, e = gate
    ev: list[tuple[Role, str]] = [(role, "engine_procs"), (role, "smi_gpu_cc")]
    if not e.engine_env_readable:
        yield finding(PROBE_ID, "dangerous_env", "unknown", "Engine environment not readable", targets=[role],
                      observed="/proc/<pid>/environ unreadable (needs root or the engine's uid)",
                      fix="Run the audit as root (or --sudo).", evidence=ev)
        return
    env = e.engine_env
    issues: list[tuple[str, str]] = []
    if env.get("CUDA_LAUNCH_BLOCKING", "0") not in ("0", ""):
        issues.append(("critical", f"CUDA_LAUNCH_BLOCKING={env['CUDA_LAUNCH_BLOCKING']} (every kernel launch synchronous)"))
    if env.get("NCCL_DEBUG", "").upper() == "TRACE":
        issues.append(("warning", "NCCL_DEBUG=TRACE"))
    for k in ("TORCH_USE_CUDA_DSA", "PYTORCH_NO_CUDA_MEMORY_CACHING"):
        if env.get(k, "0") not in ("0", ""):
            issues.append(("warning", f"{k}={env[k]}"))
    needed = (e.tp or 1) * (e.pp or 1)
    _gr, g = _first(facts, "compute_caps")
    ngpu = len(g.compute_caps) if g else None
    vis = env.get("CUDA_VISIBLE_DEVICES")
    if vis is not None:
        visible = len([x for x in vis.split(",") if x.strip() and x.strip() != "-1"])
        if visible < needed:
            issues.append(("critical", f"CUDA_VISIBLE_DEVICES={vis} shows {visible} GPU(s) but TP×PP={needed}"))
    elif ngpu is not None and needed > ngpu:
        issues.append(("critical", f"TP×PP={needed} exceeds the {ngpu} GPU(s) visible"))
    if "OMP_NUM_THREADS" not in env:
        issues.append(("info", "OMP_NUM_THREADS unset (thread pools sized to all CPUs)"))
    bad = [i for i in issues if i[0] != "info"]
    if not bad:
        yield finding(PROBE_ID, "dangerous_env", "info" if issues else "ok",
                      "No performance-wrecking variables in the engine's environment", targets=[role],
                      observed="; ".join(t for _, t in issues) or f"checked {len(env)} CUDA/NCCL/torch variables; TP×PP={needed}"
                               + (f" on {ngpu} GPUs" if ngpu else ""), evidence=ev)
        return
    worst = "critical" if any(s == "critical" for s, _ in issues) else "warning"
    yield finding(PROBE_ID, "dangerous_env", worst, "Debug or limiting variables set in the engine's environment",
                  targets=[role], observed="; ".join(t for _, t in issues),
                  expected="no debug variables in production; every GPU the TP×PP layout needs visible",
                  why="CUDA_LAUNCH_BLOCKING serialises every kernel launch with the host; DSA and disabled caching "
                      "allocators add checks and cudaMalloc calls to each step.",
                  fix="Remove the debug variables from the engine's environment (container config, unit file, launch script).",
                  evidence=ev)


def _attention(facts: FactsByTarget) -> Iterator[Finding]:
    gate = _engine_or_gate(facts, "attention_backend", "Attention backend")
    if isinstance(gate, Finding):
        yield gate
        return
    role, e = gate
    ev: list[tuple[Role, str]] = [(role, "engine_procs")]
    _gr, g = _first(facts, "compute_caps")
    sm120 = g is not None and any(_sm(c) in (120, 121) for c in g.compute_caps)
    backend = e.attention_backend or e.engine_env.get("VLLM_ATTENTION_BACKEND") or e.engine_env.get("SGLANG_ATTENTION_BACKEND")
    deepgemm = next((f"{k}={v}" for k, v in e.engine_env.items() if "DEEPGEMM" in k and v not in ("0", "false", "False")), None)
    extra = (f"; MoE runner {e.moe_backend}" if e.moe_backend else "") + (f"; {deepgemm}" if deepgemm else "")
    if sm120 and backend and backend.lower() in _NO_SM120_BACKENDS:
        sev, title = "warning", f"Attention backend {backend} has no sm_120 kernels"
    elif sm120 and deepgemm:
        sev, title = "warning", "DeepGEMM enabled on sm_120 (unsupported)"
    elif backend and backend.lower() in ("torch_native", "torch_sdpa", "sdpa"):
        sev, title = "warning", f"Attention backend {backend} is a slow fallback path"
    elif backend:
        sev, title = "ok", f"Attention backend {backend}"
    else:
        sev, title = "info", "Attention backend: engine default (see its startup log)"
    yield finding(PROBE_ID, "attention_backend", sev, title, targets=[role],
                  observed=f"{e.engine_kind}: attention backend {backend or 'not set (auto)'}{extra}",
                  expected="a backend with native kernels for the GPU (FlashInfer/Triton on sm_120)",
                  why="sm_120 support landed piecemeal: FA3/FlashMLA/TRT-LLM MLA kernels and DeepGEMM do not run on "
                      "Blackwell RTX, so engines fall back to slower paths or fail.",
                  fix="Pick a supported backend explicitly (e.g. --attention-backend flashinfer or triton) and check the startup log.",
                  evidence=ev)


def _runtime_vs_driver(facts: FactsByTarget) -> Iterator[Finding]:
    role, rt = _first(facts)
    assert rt is not None and role is not None
    host = facts.get("host")
    drv_role: Role | None = "host" if host is not None and host.driver else ("container" if facts.get("container") and facts["container"].driver else None)
    driver = facts[drv_role].driver if drv_role else None
    targets = list(dict.fromkeys([r for r in (drv_role, role) if r]))
    ev: list[tuple[Role, str]] = [(role, "pyenv")] + ([(drv_role, "smi_gpu_cc")] if drv_role else [])
    runtime = cuda_major_minor(rt.torch_cuda)
    wheel = next((v for k, v in rt.packages.items() if k.startswith("nvidia-cuda-runtime")), None)
    if runtime is None:
        sev = "unknown" if "pyenv" in rt.problems else "ok"
        yield finding(PROBE_ID, "cuda_runtime_vs_driver", sev, "CUDA runtime vs driver: no CUDA runtime to compare",
                      targets=targets or [role], observed=rt.problems.get("pyenv", "not applicable: no CUDA build of torch found"),
                      evidence=ev)
        return
    maxc = driver_max_cuda(driver)
    if driver is None or maxc is None:
        yield finding(PROBE_ID, "cuda_runtime_vs_driver", "unknown", "Driver's CUDA support unknown", targets=targets or [role],
                      observed=f"torch CUDA {rt.torch_cuda}; driver {driver or 'not read'}", evidence=ev)
        return
    obs = f"torch built for CUDA {rt.torch_cuda}" + (f" (runtime wheel {wheel})" if wheel else "") + \
          f"; {drv_role} driver {driver} supports CUDA ≤ {maxc[0]}.{maxc[1]}"
    if runtime[0] > maxc[0]:
        yield finding(PROBE_ID, "cuda_runtime_vs_driver", "critical", "CUDA runtime newer than the host driver supports",
                      targets=targets, observed=obs, expected=f"runtime major ≤ {maxc[0]} (or valid forward-compat libs)",
                      why="A runtime of a newer CUDA major needs a newer driver; without cuda-compat libs kernels fail to "
                          "load (see driver.cuda_compat_libs).",
                      fix="Upgrade the host driver, or install a torch/engine build for the driver's CUDA major.", evidence=ev)
    elif runtime > maxc:
        yield finding(PROBE_ID, "cuda_runtime_vs_driver", "ok", "CUDA runtime newer minor than the driver (compatible)",
                      targets=targets, observed=obs + "; minor-version compatibility applies",
                      why="Same major: minor-version compatibility runs it, but features needing newer PTX/JIT may fail.",
                      evidence=ev)
    else:
        yield finding(PROBE_ID, "cuda_runtime_vs_driver", "ok", "CUDA runtime supported by the driver", targets=targets,
                      observed=obs, evidence=ev)


def _engine_threads(facts: FactsByTarget) -> Iterator[Finding]:
    """`python.engine_threads`: thread pools sized to the machine while the engine may use only a few CPUs."""
    gate = _engine_or_gate(facts, "engine_threads", "Engine threads")
    if isinstance(gate, Finding):
        yield gate
        return
    role, e = gate
    ev: list[tuple[Role, str]] = [(role, "engine_proc_status"), (role, "engine_procs")]
    if e.proc_threads is None:
        yield finding(PROBE_ID, "engine_threads", "unknown", "Engine thread counts not read", targets=[role],
                      observed=e.problems.get("engine_proc_status", "not collected"), evidence=ev)
        return
    known = [(n, t, c) for n, t, c in e.proc_threads if c]
    if not known or not e.cpus_online:
        yield finding(PROBE_ID, "engine_threads", "unknown", "Engine CPU affinity not read", targets=[role],
                      observed=f"{len(e.proc_threads)} engine process(es); allowed CPUs or online CPUs unreadable", evidence=ev)
        return
    allowed = min(c for _n, _t, c in known)
    busiest = max(known, key=lambda x: x[1])
    omp = e.engine_env.get("OMP_NUM_THREADS") if e.engine_env_readable else None
    ranks = max(1, len([n for n, _t, _c in known if re.search(r"TP\d+|Worker", n)]))
    obs = (f"{len(known)} engine process(es), up to {busiest[1]} threads ({busiest[0]}); allowed {allowed} of "
           f"{e.cpus_online} online CPUs; OMP_NUM_THREADS={omp or 'unset'}; {ranks} rank(s)")
    why = ("OpenMP/torch pools sized to the whole machine inside a small cpuset oversubscribe the allowed CPUs: the "
           "threads that launch GPU work wait for a CPU between steps.")
    fix = "Set OMP_NUM_THREADS (e.g. allowed CPUs / ranks) in the engine's environment."
    if omp and omp.isdigit() and int(omp) * ranks > allowed:
        yield finding(PROBE_ID, "engine_threads", "warning", "OMP threads × ranks exceed the engine's CPUs", targets=[role],
                      observed=obs, expected=f"OMP_NUM_THREADS × ranks ≤ {allowed}", why=why, fix=fix, evidence=ev)
    elif not omp and allowed < e.cpus_online and busiest[1] > allowed:
        yield finding(PROBE_ID, "engine_threads", "warning", "Engine threads sized to the host while its cpuset is small",
                      targets=[role], observed=obs, expected=f"thread pools ≤ {allowed} allowed CPUs (OMP_NUM_THREADS set)",
                      why=why, fix=fix, evidence=ev)
    elif not omp and allowed >= e.cpus_online:
        yield finding(PROBE_ID, "engine_threads", "info", "Engine may use every CPU (no small cpuset to oversubscribe)",
                      targets=[role], observed=f"not applicable: cpuset is the whole machine; {obs}", evidence=ev)
    else:
        yield finding(PROBE_ID, "engine_threads", "ok", "Engine thread pools fit its CPUs", targets=[role], observed=obs, evidence=ev)


def _jit_caches(facts: FactsByTarget) -> Iterator[Finding]:
    """`python.jit_caches`: persistent, writable, and not carrying kernels of another FlashInfer build."""
    role, rt = _first(facts)
    assert rt is not None and role is not None
    ev: list[tuple[Role, str]] = [(role, "jit_cache_dirs"), (role, "pyenv")]
    if rt.jit_dirs is None:
        yield finding(PROBE_ID, "jit_caches", "unknown", "JIT caches not read", targets=[role],
                      observed=rt.problems.get("jit_cache_dirs", "not collected"), evidence=ev)
        return
    if not rt.jit_dirs:
        _er, e = _first(facts, "engine_kind")
        yield finding(PROBE_ID, "jit_caches", "info" if e else "ok", "No JIT cache folders found", targets=[role],
                      observed="no FlashInfer/Triton/vLLM/SGLang/DeepGEMM/inductor cache under the audit user's home"
                               + ("" if e else "; not applicable: no serving engine found")
                               + " (an engine running as another user, or with *_CACHE_DIR set, keeps them elsewhere)",
                      why="Without a persisted cache every restart JIT-compiles again (slow restarts, not slow decode).",
                      evidence=ev)
        return
    fi = rt.packages.get("flashinfer-python")
    stale = []
    for d in rt.jit_dirs:
        if d.path.endswith("/flashinfer") and fi:
            other = [x for x in d.entries if re.fullmatch(r"\d+\.\d+\.\d+\S*", x) and x != fi]
            if other:
                stale.append(f"{d.path} holds {', '.join(other[:3])} next to the installed {fi}")
    volatile = [f"{d.path} on {d.fs}" for d in rt.jit_dirs if (d.fs or "") in ("tmpfs", "ramfs")]
    readonly = [d.path for d in rt.jit_dirs if not d.writable]
    listing = "; ".join(f"{d.path} ({d.fs or '?'}{', read-only' if not d.writable else ''}, {len(d.entries)} entries)" for d in rt.jit_dirs)
    if stale:
        yield finding(PROBE_ID, "jit_caches", "warning", "JIT cache carries kernels of another FlashInfer build", targets=[role],
                      observed="; ".join(stale), expected="only the installed version's entries after an upgrade",
                      why="Caches kept across an image upgrade can serve kernels built by the old version (community: wipe "
                          "the JIT cache after upgrading).",
                      fix="Stop the engine, delete the old version's cache folder, restart (first requests recompile).", evidence=ev)
    elif volatile or readonly:
        yield finding(PROBE_ID, "jit_caches", "info", "JIT caches not persistent" if volatile else "JIT cache folders read-only",
                      targets=[role], observed="; ".join(volatile + [f"{r} not writable" for r in readonly]) + f" ({listing})",
                      why="A cache on tmpfs or read-only is rebuilt on every start: slow restarts, not slow decode.",
                      fix="Put the caches on a persisted volume (or set the engine's *_CACHE_DIR there).", evidence=ev)
    else:
        yield finding(PROBE_ID, "jit_caches", "ok", "JIT caches persistent", targets=[role], observed=listing, evidence=ev)


def _measured_throughput(facts: FactsByTarget) -> Iterator[Finding]:
    """`python.measured_throughput`: the engine's own decode figures (feeds the roofline, §13)."""
    gate = _engine_or_gate(facts, "measured_throughput", "Measured throughput")
    if isinstance(gate, Finding):
        yield gate
        return
    role, e = gate
    ev: list[tuple[Role, str]] = [(role, "engine_logs")]
    if e.log_sources is None:
        yield finding(PROBE_ID, "measured_throughput", "unknown", "Engine log not read", targets=[role],
                      observed=e.problems.get("engine_logs", "not collected"), evidence=ev)
        return
    if not e.throughput:
        yield finding(PROBE_ID, "measured_throughput", "unknown", "No throughput figures in the engine log", targets=[role],
                      observed=f"log: {', '.join(e.log_sources) or 'none found'}; no 'gen throughput' / 'Avg generation throughput' lines",
                      fix="Keep the engine's log (a file or a systemd unit), or start SGLang with --enable-metrics / scrape vLLM's /metrics.",
                      evidence=ev)
        return
    single = [t for t, r in e.throughput if r == 1]
    peak = max(t for t, _r in e.throughput)
    last_t, last_r = e.throughput[-1]
    obs = (f"{len(e.throughput)} sample(s); last {last_t:.1f} tok/s at {last_r if last_r is not None else '?'} running request(s); "
           f"peak {peak:.1f} tok/s" + (f"; single stream median {sorted(single)[len(single) // 2]:.1f} tok/s ({len(single)} samples)" if single else ""))
    yield finding(PROBE_ID, "measured_throughput", "info", "Decode throughput the engine reports", targets=[role], observed=obs,
                  expected="compare single-stream decode with the roofline (§13); aggregate tok/s grows with concurrency",
                  why="The engine's decode-batch figures exclude prefill and queueing; wall-clock tok/s per request includes "
                      "them (a '~9 tok/s' report was 30-35 tok/s decode).", evidence=ev)


def summarize(facts: FactsByTarget) -> str:
    _role, rt = _first(facts)
    parts = []
    if rt is not None and rt.torch:
        parts.append(f"torch {rt.torch}")
    _er, e = _first(facts, "engine_kind")
    if e is not None:
        parts.append(f"{e.engine_kind} TP={e.tp}" + (" eager" if e.cuda_graphs_disabled else " graphs"))
    _gr, g = _first(facts, "compute_caps")
    if g is not None:
        parts.append("sm_" + "/".join(sorted({c.replace('.', '') for c in g.compute_caps})))
    return " · ".join(parts)


PROBE = Probe(id=PROBE_ID, title="Python runtime", commands=COMMANDS, extract=extract, judge=judge, summarize=summarize)
