"""NCCL / GPU-to-GPU probe: P2P capability, topology, NCCL environment and library, IOMMU/ACS gate.

Passive by default. The one ACTIVE command (nccl-tests `all_reduce_perf`) generates load and runs
only with `--active`; its findings say so in their titles.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator

from pydantic import BaseModel

from probes.core.errors import ParseError
from probes.core.models import Finding, Role
from probes.core.parsers.engine import (
    ENGINE_LOGS_SHELL,
    ENGINE_PROCS_SHELL,
    engine_env,
    main_engine,
    parse_engine_logs,
    parse_engine_procs,
    parse_nccl_channels,
)
from probes.core.parsers.nccl_tests import human_size, parse_all_reduce_perf
from probes.core.parsers.pyenv import PYENV_SHELL, parse_pyenv_json
from probes.core.spec import Command, FactsByTarget, Outputs, Probe, finding, record_problem

PROBE_ID = "nccl"
_BOTH = frozenset({"host", "container"})

SMI_GPU_CC = "nvidia-smi --query-gpu=index,name,compute_cap,driver_version --format=csv,noheader"
ALL_REDUCE_SHELL = (
    "b=$(command -v all_reduce_perf || ls /opt/nccl-tests/build/all_reduce_perf /opt/nccl_tests/build/all_reduce_perf "
    "/usr/local/nccl-tests/build/all_reduce_perf 2>/dev/null | head -n1); "
    "[ -n \"$b\" ] || { echo 'all_reduce_perf: not found' 1>&2; exit 127; }; "
    "n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU'); "
    "free=$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits 2>/dev/null | sort -n | head -n1); "
    "if [ \"${free:-0}\" -lt 4096 ]; then echo \"gate: least free VRAM ${free:-unknown} MiB is below 4096 MiB, not run\"; exit 3; fi; "
    "\"$b\" -b 8 -e 256M -f 4 -g \"$n\" -w 5 -n 20"
)

COMMANDS = (
    Command("smi_gpu_cc", SMI_GPU_CC, on=_BOTH, description="GPU names, compute capability, driver version"),
    Command("smi_topo_m", "nvidia-smi topo -m", on=_BOTH, description="path type per GPU pair, NUMA affinity"),
    Command("smi_topo_p2p_r", "nvidia-smi topo -p2p r", on=_BOTH, description="driver-reported P2P read capability"),
    Command("smi_topo_p2p_w", "nvidia-smi topo -p2p w", on=_BOTH, description="driver-reported P2P write capability"),
    Command("proc_cmdline", "cat /proc/cmdline", description="kernel boot parameters (iommu=, amd_iommu=, intel_iommu=)"),
    Command("sys_iommu_groups", "ls /sys/kernel/iommu_groups | wc -l; cat /sys/kernel/iommu_groups/*/type 2>/dev/null | sort | uniq -c",
            description="IOMMU group count and domain types (DMA = translated, identity = passthrough)"),
    Command("lspci_acsctl", "lspci -vvv 2>/dev/null | grep -E '^[0-9a-f]|ACSCtl'", needs_root=True,
            description="ACS control bits of every PCIe function (redirect forces P2P through the root complex)"),
    Command("cpuinfo_id", "grep -m4 -E '^(vendor_id|cpu family|model|model name)' /proc/cpuinfo",
            description="CPU vendor (NCCL's P2P cutoff differs); same line as the kernel probe's"),
    Command("engine_procs", ENGINE_PROCS_SHELL, on=_BOTH,
            description="serving engine processes: command line, NCCL/CUDA environment, mapped libnccl"),
    Command("ldconfig_nccl", "ldconfig -p 2>/dev/null | grep -i libnccl || echo none", on=_BOTH,
            description="system libnccl copies"),
    Command("pyenv", PYENV_SHELL, on=_BOTH, timeout_s=60,
            description="the engine's Python: torch build, arch list, bundled NCCL (no CUDA context created)"),
    Command("engine_logs", ENGINE_LOGS_SHELL, on=_BOTH, timeout_s=60,
            description="the engine's log (its stdout file or its systemd unit's journal): NCCL INFO transport lines, "
                        "throughput lines"),
    Command("nccl_all_reduce_perf", ALL_REDUCE_SHELL, timeout_s=180, active=True,
            description="ACTIVE, load-generating: nccl-tests all_reduce_perf 8 B..256 MiB over all GPUs "
                        "(skipped when any GPU has under 4 GiB free)"),
)

_P2P_CODES = {"OK", "CNS", "GNS", "TNS", "NS", "U", "X"}
_TUNING = ("NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_BUFFSIZE", "NCCL_NTHREADS",
           "NCCL_MIN_CTAS", "NCCL_MAX_CTAS", "NCCL_CUMEM_ENABLE", "NCCL_NET_GDR_LEVEL")


class NcclFacts(BaseModel, frozen=True):
    gpu_names: list[str] = []
    topo: dict[str, str] = {}
    """"0-1" -> "SYS" / "NODE" / "PHB" / "PXB" / "PIX" / "NV18" (GPU pairs, i < j)."""
    gpu_numa: list[str] = []
    p2p_read: dict[str, str] = {}
    p2p_write: dict[str, str] = {}
    cmdline: str | None = None
    iommu_groups: int | None = None
    iommu_types: dict[str, int] = {}
    acs_redirect: list[str] | None = None
    """PCIe functions with ACS request/completion redirect on; None = not read."""
    cpu_vendor: str | None = None
    engine_kind: str | None = None
    engine_tp: int | None = None
    custom_allreduce_disabled: bool | None = None
    engine_env: dict[str, str] = {}
    engine_env_readable: bool | None = None
    engine_nccl_libs: list[str] = []
    system_nccl: list[str] = []
    torch_nccl: str | None = None
    allreduce: list[dict[str, float]] = []
    """Active test rows: size_b, time_us, busbw (out-of-place)."""
    allreduce_gpus: int | None = None
    allreduce_peak: float | None = None
    allreduce_note: str | None = None
    log_sources: list[str] | None = None
    """Where each engine API server's log was read ("journal sglang.service", "file /var/log/x", "none (pipe:[1])");
    None = not read, [] = no engine running."""
    nccl_channels: list[tuple[int, int, str]] = []
    """(src device, dst device, transport "P2P"/"SHM"/"NET"/...) from NCCL_DEBUG=INFO lines."""
    problems: dict[str, str] = {}


# --------------------------------------------------------------------------- parsers

def parse_gpu_matrix(text: str) -> tuple[dict[str, str], list[str], int]:
    """`nvidia-smi topo -m` or `topo -p2p r` -> (pair cells "i-j" for i<j, NUMA affinity per GPU, GPU count).

        	GPU0	GPU1	CPU Affinity	NUMA Affinity	GPU NUMA ID
        GPU0	 X 	SYS	0-55,112-167	0		N/A
        GPU1	SYS	 X 	56-111,168-223	1		N/A
    Raises ParseError when there is no GPU header row.
    """
    lines = [ln for ln in text.splitlines() if ln.strip()]
    header = next((ln for ln in lines if re.match(r"^\s*GPU0\b", ln.strip()) and not re.match(r"^\s*GPU0\s+X\b", ln)), None)
    if header is None:
        raise ParseError("no GPU header row")
    gpus = re.findall(r"\bGPU(\d+)\b", header)
    n = len(gpus)
    numa_col = "NUMA Affinity" in header
    cells: dict[str, str] = {}
    numa: list[str] = ["" for _ in range(n)]
    for ln in lines:
        m = re.match(r"^\s*GPU(\d+)\s+(.*)$", ln)
        if not m or ln is header:
            continue
        i = int(m.group(1))
        toks = m.group(2).split()
        for j in range(min(n, len(toks))):
            if i < j:
                cells[f"{i}-{j}"] = toks[j]
        if numa_col and len(toks) > n and i < n:
            rest = [t for t in re.split(r"\t+|\s{2,}", m.group(2).strip())][n:]
            # after the pair cells (and NIC cells): CPU affinity, NUMA affinity, GPU NUMA ID
            nic = len(re.findall(r"\bNIC\d+\b", header))
            rest = rest[nic:]
            if len(rest) >= 2:
                numa[i] = rest[1]
    return cells, numa, n


def parse_iommu_groups(text: str) -> tuple[int | None, dict[str, int]]:
    """`ls /sys/kernel/iommu_groups | wc -l; cat .../type | sort | uniq -c` -> (count, {type: n}).

        96
             96 DMA-FQ
    """
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines or not lines[0].isdigit():
        return None, {}
    types: dict[str, int] = {}
    for ln in lines[1:]:
        m = re.match(r"(\d+)\s+(\S+)", ln)
        if m:
            types[m.group(2)] = int(m.group(1))
    return int(lines[0]), types


def parse_acsctl(text: str) -> list[str]:
    """`lspci -vvv | grep -E '^[0-9a-f]|ACSCtl'` -> functions whose ACSCtl has ReqRedir+ or CmpltRedir+.

        40:01.1 PCI bridge: Advanced Micro Devices, Inc. [AMD] Device 150a (rev 01)
        		ACSCtl:	SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-
    """
    out: list[str] = []
    dev = None
    for ln in text.splitlines():
        if re.match(r"^[0-9a-f]{2,4}:", ln):
            dev = ln.split()[0]
        elif "ACSCtl:" in ln and dev and re.search(r"\b(?:ReqRedir|CmpltRedir)\+", ln):
            out.append(dev)
    return list(dict.fromkeys(out))


def parse_ldconfig_nccl(text: str) -> list[str]:
    """`ldconfig -p | grep libnccl` -> library paths.

        	libnccl.so.2 (libc6,x86-64) => /lib/x86_64-linux-gnu/libnccl.so.2
    """
    return [m.group(1) for m in re.finditer(r"=>\s*(\S*libnccl\S*)", text)]


def nccl_version_from_path(path: str) -> str | None:
    """"/usr/lib/x86_64-linux-gnu/libnccl.so.2.27.7" -> "2.27.7"; a bare ".so.2" -> None."""
    m = re.search(r"libnccl\.so\.(\d+\.\d+\.\d+)", path)
    return m.group(1) if m else None


# --------------------------------------------------------------------------- extract

def _ok(outputs: Outputs, cid: str, problems: dict[str, str]) -> str | None:
    rec = outputs.get(cid)
    if rec is None or cid in problems:
        return None
    return rec.stdout


def extract(outputs: Outputs, role: Role) -> NcclFacts:
    problems = {cid: p for cid, rec in outputs.items() if (p := record_problem(rec))}
    f: dict = {}
    if (t := _ok(outputs, "smi_gpu_cc", problems)) is not None:
        names = []
        for ln in t.splitlines():
            cells = [c.strip() for c in ln.split(",")]
            if len(cells) >= 2 and cells[0].isdigit():
                names.append(cells[1])
        if names:
            f["gpu_names"] = names
        elif t.strip():
            problems["smi_gpu_cc"] = f"unreadable: {t.strip().splitlines()[0][:120]}"
    for cid, key in (("smi_topo_m", "topo"), ("smi_topo_p2p_r", "p2p_read"), ("smi_topo_p2p_w", "p2p_write")):
        if (t := _ok(outputs, cid, problems)) is not None:
            try:
                cells, numa, _n = parse_gpu_matrix(t)
                f[key] = cells
                if key == "topo":
                    f["gpu_numa"] = numa
            except ParseError as exc:
                problems[cid] = f"unreadable: {exc}"
    if (t := _ok(outputs, "proc_cmdline", problems)) is not None:
        f["cmdline"] = t.strip()
    if (t := _ok(outputs, "sys_iommu_groups", problems)) is not None:
        f["iommu_groups"], f["iommu_types"] = parse_iommu_groups(t)
    if (t := _ok(outputs, "lspci_acsctl", problems)) is not None:
        if "ACSCtl" in t or re.search(r"^[0-9a-f]{2,4}:", t, re.M):
            f["acs_redirect"] = parse_acsctl(t)
        else:
            problems["lspci_acsctl"] = "no PCIe functions listed"
    if (t := _ok(outputs, "cpuinfo_id", problems)) is not None:
        m = re.search(r"vendor_id\s*:\s*(\S+)", t)
        f["cpu_vendor"] = m.group(1) if m else None
    if (t := _ok(outputs, "engine_procs", problems)) is not None:
        procs = parse_engine_procs(t)
        found = main_engine(procs)
        env, readable = engine_env(procs)
        if found:
            _p, cfg = found
            f.update(engine_kind=cfg.kind, engine_tp=cfg.tp, custom_allreduce_disabled=cfg.custom_allreduce_disabled)
        if procs:
            f.update(engine_env=env, engine_env_readable=readable,
                     engine_nccl_libs=sorted({lib for p in procs for lib in p.nccl_libs}))
    if (t := _ok(outputs, "engine_logs", problems)) is not None:
        try:
            logs = parse_engine_logs(t)
            f["log_sources"] = [f"{lg.source} {lg.where}".strip() if lg.source != "none" else f"none ({lg.stdout or 'stdout unreadable'})"
                                for lg in logs]
            f["nccl_channels"] = sorted({(c.src_dev, c.dst_dev, c.transport) for lg in logs for c in parse_nccl_channels(lg.nccl_lines)})
        except ParseError as exc:
            problems["engine_logs"] = f"unreadable: {exc}"
    if (t := _ok(outputs, "ldconfig_nccl", problems)) is not None:
        f["system_nccl"] = parse_ldconfig_nccl(t)
    if (t := _ok(outputs, "pyenv", problems)) is not None:
        try:
            f["torch_nccl"] = parse_pyenv_json(t).nccl
        except ParseError as exc:
            problems["pyenv"] = f"unreadable: {exc}"
    rec = outputs.get("nccl_all_reduce_perf")
    if rec is not None:
        if rec.exit_status == 3 and rec.stdout.startswith("gate:"):
            f["allreduce_note"] = rec.stdout.strip()
        elif (t := _ok(outputs, "nccl_all_reduce_perf", problems)) is not None or (rec.timed_out and rec.stdout):
            try:
                perf = parse_all_reduce_perf(rec.stdout)
                f.update(allreduce=[{"size_b": r.size_b, "time_us": r.time_us, "busbw": r.busbw} for r in perf.rows],
                         allreduce_gpus=perf.n_gpus if perf.n_gpus and perf.n_gpus > 1 else perf.ranks or None,
                         allreduce_peak=perf.peak_busbw)
                if perf.errors():
                    f["allreduce_note"] = f"{perf.errors()} message size(s) returned wrong values"
                if rec.timed_out:
                    f["allreduce_note"] = "timed out after partial output (hang risk)"
            except ParseError as exc:
                problems["nccl_all_reduce_perf"] = f"unreadable: {exc}"
    return NcclFacts(**f, problems=problems)


# --------------------------------------------------------------------------- judge helpers

def _pick(facts: FactsByTarget, attr: str, prefer: tuple[Role, ...] = ("host", "container")) -> tuple[Role | None, object]:
    """First target (in `prefer` order) whose fact is set."""
    for role in prefer:
        f = facts.get(role)
        if f is not None and getattr(f, attr):
            return role, getattr(f, attr)
    return None, None


def _problem(facts: FactsByTarget, cid: str, prefer: tuple[Role, ...] = ("host", "container")) -> str:
    for role in prefer:
        f = facts.get(role)
        if f is not None and cid in f.problems:
            return f"{role}: {f.problems[cid]}"
    return "not collected"


def _engine(facts: FactsByTarget) -> tuple[Role | None, NcclFacts | None]:
    """The target whose engine discovery found the serving engine (container first)."""
    for role in ("container", "host"):
        f = facts.get(role)
        if f is not None and (f.engine_kind or f.engine_env_readable is not None):
            return role, f
    return None, None


def _engine_unlisted(facts: FactsByTarget) -> str | None:
    """Why no target could list processes (every engine_procs failed), else None."""
    probs = [f"{r}: {f.problems['engine_procs']}" for r, f in facts.items() if "engine_procs" in f.problems]
    return "; ".join(probs) if probs and len(probs) == len(facts) else None


def _interconnect(topo: dict[str, str]) -> str:
    if topo and all(v.startswith("NV") for v in topo.values()):
        return "nvlink"
    if any(v.startswith("NV") for v in topo.values()):
        return "mixed"
    return "pcie"


def _iommu_translated(f: NcclFacts) -> bool | None:
    """True when DMA is translated by the IOMMU (not passthrough), False when off/pt, None when unknown."""
    if f.cmdline is not None and re.search(r"\biommu=pt\b|\b(?:amd_iommu|intel_iommu)=off\b|\biommu=off\b", f.cmdline):
        return False
    if f.iommu_groups is None:
        return None
    if f.iommu_groups == 0:
        return False
    if f.iommu_types:
        return any(t.startswith("DMA") for t in f.iommu_types)
    return True


def _gate(facts: FactsByTarget) -> tuple[str, str]:
    """The `nccl.iommu_acs_gate` verdict (severity, observed) shared with `nccl.env_vs_topology`."""
    host = facts.get("host")
    if host is None:
        return "unknown", "host not audited"
    translated = _iommu_translated(host)
    _er, eng = _engine(facts)
    p2p_off = bool(eng and eng.engine_env.get("NCCL_P2P_DISABLE") == "1")
    tp = (eng.engine_tp if eng else None) or 0
    redirect = host.acs_redirect
    if translated is False:
        return "ok", "IOMMU off or passthrough: GPU peer traffic is not translated"
    if translated is None:
        return "unknown", f"IOMMU state unreadable ({_problem(facts, 'sys_iommu_groups', ('host',))})"
    types = ", ".join(f"{k}×{v}" for k, v in host.iommu_types.items()) or "types unread"
    base = f"IOMMU translating ({host.iommu_groups} groups, {types})"
    if redirect is None:
        return "warning", f"{base}; ACS state unknown ({_problem(facts, 'lspci_acsctl', ('host',))})"
    if redirect and not p2p_off and tp > 1:
        return "critical", f"{base}; ACS redirect on {len(redirect)} function(s) ({', '.join(redirect[:4])}); engine TP={tp} with P2P allowed"
    if redirect:
        return "warning", f"{base}; ACS redirect on {len(redirect)} function(s); P2P {'disabled' if p2p_off else 'allowed'}, TP={tp or 'n/a'}"
    return "warning", f"{base}; no ACS redirect found"


# --------------------------------------------------------------------------- judge

def judge(facts: FactsByTarget) -> Iterator[Finding]:
    yield from _p2p_matrix(facts)
    yield from _topology_class(facts)
    yield from _env_overrides(facts)
    yield from _library_in_use(facts)
    yield from _custom_allreduce(facts)
    yield from _amd_dual_socket(facts)
    yield from _iommu_acs_gate(facts)
    yield from _env_vs_topology(facts)
    yield from _transport_observed(facts)
    yield from _allreduce(facts)


def _p2p_matrix(facts: FactsByTarget) -> Iterator[Finding]:
    role, read = _pick(facts, "p2p_read")
    ev = [(role or "host", "smi_topo_p2p_r"), (role or "host", "smi_topo_p2p_w")]
    if role is None:
        yield finding(PROBE_ID, "p2p_matrix", "unknown", "GPU P2P capability could not be read",
                      observed=_problem(facts, "smi_topo_p2p_r"), evidence=ev)
        return
    f: NcclFacts = facts[role]
    write = f.p2p_write or {}
    bad = {k: v for k, v in read.items() if v != "OK"} | {k: f"w:{v}" for k, v in write.items() if v != "OK"}
    names = " ".join(n for r in facts for n in facts[r].gpu_names).lower()
    n = len({int(x) for k in read for x in k.split("-")})
    if not read:
        yield finding(PROBE_ID, "p2p_matrix", "ok", "P2P not applicable (single GPU)", targets=[role],
                      observed="not applicable: fewer than two GPUs", evidence=ev)
    elif not bad:
        yield finding(PROBE_ID, "p2p_matrix", "ok", "Driver reports P2P read/write OK between all GPUs", targets=[role],
                      observed=f"{n} GPUs, {len(read)} pairs: all OK (read{', write' if write else ''})",
                      expected="OK for every GPU pair", evidence=ev,
                      why="NCCL uses its P2P transport only when CUDA reports peer access; note OK here does not prove "
                          "P2P works: ACS/IOMMU can still redirect or hang it (see nccl.iommu_acs_gate).")
    else:
        codes = Counter(v.split(":")[-1] for v in bad.values())
        geforce = "geforce" in names and set(codes) <= {"NS", "GNS", "CNS"}
        sample = ", ".join(f"GPU{k.replace('-', '↔GPU')}={v}" for k, v in list(bad.items())[:6])
        yield finding(PROBE_ID, "p2p_matrix", "info" if geforce else "warning",
                      "P2P not supported on consumer GPUs (driver design)" if geforce else "Some GPU pairs lack P2P",
                      targets=[role], observed=f"{len(bad)} non-OK pair entries ({dict(codes)}): {sample}",
                      expected="OK for every pair used by one tensor-parallel group",
                      why="Without peer access NCCL falls back to SHM/host-memory staging: every all-reduce hop costs "
                          "~14 µs instead of sub-µs P2P writes (community figure for RTX PRO 6000).",
                      fix="Stock drivers disable P2P on GeForce; on datacenter/workstation cards check BIOS ACS/IOMMU "
                          "settings and the PCIe topology (CNS = chipset, TNS = topology).", evidence=ev)


def _topology_class(facts: FactsByTarget) -> Iterator[Finding]:
    role, topo = _pick(facts, "topo")
    ev = [(role or "host", "smi_topo_m"), ("host", "cpuinfo_id")]
    if role is None:
        yield finding(PROBE_ID, "topology_class", "unknown", "GPU topology could not be read",
                      observed=_problem(facts, "smi_topo_m"), evidence=ev)
        return
    counts = Counter(topo.values())
    summary = ", ".join(f"{k}×{v}" for k, v in counts.most_common())
    host = facts.get("host")
    vendor = host.cpu_vendor if host else None
    _er, eng = _engine(facts)
    level = eng.engine_env.get("NCCL_P2P_LEVEL") if eng else None
    cpu_paths = {k for k, v in topo.items() if v in ("PHB", "NODE", "SYS")}
    if _interconnect(topo) == "nvlink":
        yield finding(PROBE_ID, "topology_class", "ok", "All GPU pairs connected by NVLink", targets=[role],
                      observed=summary, evidence=ev)
    elif vendor == "GenuineIntel" and cpu_paths and not level:
        yield finding(PROBE_ID, "topology_class", "info", "NCCL will not use P2P across the Intel CPU (by design)",
                      targets=[role], observed=f"{summary}; CPU GenuineIntel; NCCL_P2P_LEVEL unset",
                      expected="P2P only up to PXB on Intel hosts unless NCCL_P2P_LEVEL raises it",
                      why="NCCL lowers its P2P cutoff to PXB on Intel x86 (Intel root complexes split P2P traffic into "
                          "64-byte TLPs), so GPUs that meet only at the CPU talk through SHM.",
                      fix="Usually nothing; if measured P2P over the CPU is fast, NCCL_P2P_LEVEL=SYS enables it.", evidence=ev)
    else:
        sev = "ok" if vendor is not None else "info"
        yield finding(PROBE_ID, "topology_class", sev, "GPU path types: P2P expected on every path"
                      if vendor else "GPU path types read (CPU vendor unknown)", targets=[role],
                      observed=f"{summary}; CPU {vendor or 'unknown'}" + (f"; NCCL_P2P_LEVEL={level}" if level else ""),
                      expected="NCCL's default P2P cutoff covers these paths on AMD hosts",
                      why="NCCL's built-in P2P cutoff is SYS (everywhere) except on Intel/ARM where it is PXB.", evidence=ev)


def _env_overrides(facts: FactsByTarget) -> Iterator[Finding]:
    role, eng = _engine(facts)
    ev = [(role or "container", "engine_procs")]
    if eng is None:
        why = _problem(facts, "engine_procs", ("container", "host"))
        sev = "unknown" if why != "not collected" and "not applicable" not in why else "ok"
        yield finding(PROBE_ID, "env_overrides", sev if facts else "unknown",
                      "NCCL environment: no serving engine found" if sev == "ok" else "NCCL environment could not be read",
                      targets=[r for r in facts] or ["host"],
                      observed="not applicable: no SGLang/vLLM/TGI process found" if sev == "ok" else why, evidence=ev)
        return
    if not eng.engine_env_readable:
        yield finding(PROBE_ID, "env_overrides", "unknown", "Engine environment not readable", targets=[role],
                      observed="/proc/<pid>/environ unreadable (needs root or the engine's uid)", evidence=ev,
                      fix="Run the audit as root (or --sudo) to read the serving process's environment.")
        return
    env = eng.engine_env
    host = facts.get("host")
    p2p_all_ok = bool(host and host.p2p_read) and all(v == "OK" for v in host.p2p_read.values())
    gate, _obs = _gate(facts)
    issues: list[tuple[str, str]] = []
    if env.get("NCCL_P2P_DISABLE") == "1" or env.get("NCCL_P2P_LEVEL", "").upper() in ("LOC", "0"):
        v = "NCCL_P2P_DISABLE=1" if env.get("NCCL_P2P_DISABLE") == "1" else f"NCCL_P2P_LEVEL={env['NCCL_P2P_LEVEL']}"
        issues.append(("warning" if p2p_all_ok and gate == "ok" else "info",
                       f"{v} (P2P {'OK in the driver matrix' if p2p_all_ok else 'capability not confirmed'})"))
    if env.get("NCCL_SHM_DISABLE") == "1":
        issues.append(("warning", "NCCL_SHM_DISABLE=1"))
    if env.get("NCCL_DEBUG", "").upper() in ("INFO", "TRACE"):
        issues.append(("info", f"NCCL_DEBUG={env['NCCL_DEBUG']}"))
    if env.get("NCCL_NVLS_ENABLE") == "0":
        topo = host.topo if host else {}
        issues.append(("warning" if _interconnect(topo) == "nvlink" else "info", "NCCL_NVLS_ENABLE=0"))
    tuning = [f"{k}={env[k]}" for k in _TUNING if k in env]
    if tuning:
        issues.append(("info", "tuning in effect: " + ", ".join(tuning)))
    nccl_vars = sorted(k for k in env if k.startswith("NCCL_"))
    if not issues:
        yield finding(PROBE_ID, "env_overrides", "ok", "No NCCL overrides in the engine's environment", targets=[role],
                      observed=f"{eng.engine_kind or 'engine'}: " + (", ".join(nccl_vars) if nccl_vars else "no NCCL_* variables"),
                      evidence=ev)
        return
    worst = max((s for s, _ in issues), key=lambda s: ("info", "warning", "critical").index(s))
    yield finding(PROBE_ID, "env_overrides", worst, "NCCL knobs override transport or algorithm" if worst != "info"
                  else "NCCL tuning/debug variables set", targets=[role],
                  observed="; ".join(t for _, t in issues),
                  expected="no P2P/SHM disables unless a documented workaround; debug logging off in production",
                  why="NCCL_P2P_DISABLE turns off direct GPU access over PCIe/NVLink (P2P write latency ≈0.4 µs vs "
                      "≈14 µs without, community RTX PRO 6000 figure); NCCL_SHM_DISABLE pushes fallbacks to sockets. "
                      "Some high-concurrency setups measured more throughput with P2P off: explain why it is set.",
                  fix="Remove stale NCCL_* workarounds from the engine's environment (container config, systemd unit, "
                      "launch script) once the P2P path is verified.", evidence=ev)


def _library_in_use(facts: FactsByTarget) -> Iterator[Finding]:
    role, eng = _engine(facts)
    ev = [(role or "container", "engine_procs"), (role or "container", "ldconfig_nccl"), (role or "container", "pyenv")]
    torch_role, torch_nccl = _pick(facts, "torch_nccl", ("container", "host"))
    sys_role, system = _pick(facts, "system_nccl", ("container", "host"))
    libs = eng.engine_nccl_libs if eng else []
    vers = f"torch bundles NCCL {torch_nccl or 'unknown'}; system: {', '.join(system) if system else 'none'}"
    if (eng is None or not eng.engine_kind) and (why := _engine_unlisted(facts)):
        yield finding(PROBE_ID, "library_in_use", "unknown", "NCCL library in use: processes could not be listed",
                      targets=list(facts), observed=why, evidence=ev)
        return
    if eng is None or not eng.engine_kind:
        sev = "info" if (torch_nccl or system) else "ok"
        yield finding(PROBE_ID, "library_in_use", sev, "NCCL library: no running engine to inspect",
                      targets=[r for r in facts] or ["host"], observed=f"not applicable: no serving engine found; {vers}",
                      evidence=ev)
        return
    if not libs:
        yield finding(PROBE_ID, "library_in_use", "unknown" if not eng.engine_env_readable else "info",
                      "libnccl mapped by the engine not seen", targets=[role],
                      observed=f"no libnccl in the main process maps (workers load it; or maps unreadable); {vers}",
                      evidence=ev)
        return
    names = {re.sub(r"^.*/", "", lib) for lib in libs}
    distinct_files = len(set(libs))
    if distinct_files > 1 and len(names) > 1:
        yield finding(PROBE_ID, "library_in_use", "warning", "Two different libnccl copies mapped by the engine",
                      targets=[role], observed=", ".join(libs) + f"; {vers}",
                      expected="one libnccl per process", evidence=ev,
                      why="Preloaded or pinned NCCL copies next to torch's explain 'works in one container, hangs in another'.",
                      fix="Keep one NCCL (torch's nvidia-nccl wheel or an explicit VLLM_NCCL_SO_PATH/LD_PRELOAD), not both.")
        return
    lib_v = next((v for lib in libs if (v := nccl_version_from_path(lib))), None)
    older = lib_v and torch_nccl and _vt(lib_v) < _vt(torch_nccl)
    yield finding(PROBE_ID, "library_in_use", "info" if older else "ok",
                  "Engine loads an NCCL older than torch was built with" if older else "Engine loads one libnccl",
                  targets=[role], observed=f"{', '.join(libs)}" + (f" ({lib_v})" if lib_v else "") + f"; {vers}",
                  evidence=ev)


def _vt(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


def _custom_allreduce(facts: FactsByTarget) -> Iterator[Finding]:
    role, eng = _engine(facts)
    ev = [(role or "container", "engine_procs"), ("host", "smi_topo_m")]
    if (eng is None or not eng.engine_kind) and (why := _engine_unlisted(facts)):
        yield finding(PROBE_ID, "custom_allreduce", "unknown", "Custom all-reduce: processes could not be listed",
                      targets=list(facts), observed=why, evidence=ev)
        return
    if eng is None or not eng.engine_kind:
        yield finding(PROBE_ID, "custom_allreduce", "ok", "Custom all-reduce: no serving engine found",
                      targets=[r for r in facts] or ["host"], observed="not applicable: no SGLang/vLLM process found", evidence=ev)
        return
    _tr, topo = _pick(facts, "topo")
    inter = _interconnect(topo or {})
    tp = eng.engine_tp or 1
    if tp <= 1:
        yield finding(PROBE_ID, "custom_allreduce", "ok", "Custom all-reduce not applicable (TP=1)", targets=[role],
                      observed="not applicable: tensor parallel size 1", evidence=ev)
    elif not eng.custom_allreduce_disabled:
        yield finding(PROBE_ID, "custom_allreduce", "ok", "Engine's custom all-reduce not disabled", targets=[role],
                      observed=f"{eng.engine_kind} TP={tp}, --disable-custom-all-reduce absent ({inter if topo else 'topology unknown'})",
                      evidence=ev)
    else:
        sev = "warning" if inter == "nvlink" else "info"
        yield finding(PROBE_ID, "custom_allreduce", sev, "Engine's custom all-reduce disabled", targets=[role],
                      observed=f"{eng.engine_kind} TP={tp} with --disable-custom-all-reduce on {inter if topo else 'unknown'} topology",
                      expected="custom all-reduce on for NVLink systems; on > 2 PCIe GPUs vLLM disables it by design",
                      why="Small-message all-reduces dominate TP decode; the engine's one-shot kernel beat NCCL 3× for "
                          "≤ 8 KB on PCIe-switch boxes but was slower on dual-CPU boxes without switches (community).",
                      fix="Drop --disable-custom-all-reduce on NVLink systems; on PCIe measure both (act.nccl_allreduce_lat).",
                      evidence=ev)


def _amd_dual_socket(facts: FactsByTarget) -> Iterator[Finding]:
    host = facts.get("host")
    _tr, topo = _pick(facts, "topo")
    ev = [("host", "cpuinfo_id"), ("host", "smi_topo_m")]
    if host is None or host.cpu_vendor is None or not topo:
        yield finding(PROBE_ID, "amd_dual_socket_model", "unknown", "AMD inter-socket model: inputs missing",
                      observed=f"cpu vendor: {host.cpu_vendor if host else 'host not audited'}; topology: {'read' if topo else _problem(facts, 'smi_topo_m')}",
                      evidence=ev)
        return
    numa = {n for n in host.gpu_numa if n and n != "N/A"}
    sys_pairs = [k for k, v in topo.items() if v == "SYS"]
    _er, eng = _engine(facts)
    env = eng.engine_env if eng else {}
    override = [k for k in ("NCCL_GRAPH_FILE", "NCCL_TOPO_FILE", "NCCL_TUNER_PLUGIN", "NCCL_MIN_NCHANNELS") if k in env]
    if host.cpu_vendor != "AuthenticAMD" or not sys_pairs:
        yield finding(PROBE_ID, "amd_dual_socket_model", "ok", "AMD inter-socket NCCL model not applicable",
                      observed=f"not applicable: CPU {host.cpu_vendor}, {len(sys_pairs)} cross-socket GPU pairs", evidence=ev)
    elif override:
        yield finding(PROBE_ID, "amd_dual_socket_model", "ok", "Cross-socket TP on AMD with an NCCL override",
                      observed=f"{len(sys_pairs)} SYS pairs over NUMA nodes {sorted(numa)}; {', '.join(override)} set", evidence=ev)
    else:
        yield finding(PROBE_ID, "amd_dual_socket_model", "info", "NCCL assumes 16 GB/s between AMD sockets",
                      observed=f"{len(sys_pairs)} GPU pairs cross sockets (SYS), GPUs on NUMA nodes {sorted(numa) or '?'}; "
                               "no NCCL_MIN_NCHANNELS / topology / tuner override",
                      expected="an override (e.g. NCCL_MIN_NCHANNELS=8) or a measured busbw near the PCIe figure",
                      why="NCCL models AMD's inter-socket link with a fixed AMD_BW of 16 GB/s and may pick few channels; "
                          "8× RTX PRO 6000 on dual Turin rose from ~22 to ~37.6 GB/s busbw with NCCL_MIN_NCHANNELS=8 (community).",
                      fix="Measure with nccl-tests (--active); if low, set NCCL_MIN_NCHANNELS=8 in the engine's environment.",
                      evidence=ev)


def _iommu_acs_gate(facts: FactsByTarget) -> Iterator[Finding]:
    sev, obs = _gate(facts)
    ev = [("host", "proc_cmdline"), ("host", "sys_iommu_groups"), ("host", "lspci_acsctl"), ("container", "engine_procs")]
    titles = {"ok": "GPU peer traffic not translated by the IOMMU", "unknown": "IOMMU/ACS gate could not be judged",
              "warning": "IOMMU translates GPU DMA (P2P may be slowed)",
              "critical": "P2P will be routed via the IOMMU: expect very low bandwidth or hangs"}
    yield finding(PROBE_ID, "iommu_acs_gate", sev, titles[sev], observed=obs,
                  expected="iommu=pt (or IOMMU off) and no ACS redirect on GPU paths when TP uses P2P",
                  why="With translation and ACS redirect, peer writes detour through the root complex/IOMMU: reports range "
                      "from a few GB/s to all-reduces that never finish and GPUs wedged at 100% until reset.",
                  fix="Kernel cmdline iommu=pt (AMD keeps the IOMMU on for x2APIC); disable ACS redirect in BIOS for GPU "
                      "ports, or NCCL_P2P_DISABLE=1 as a stop-gap.", evidence=[e for e in ev if e[0] in facts] or ev[:3])


def _env_vs_topology(facts: FactsByTarget) -> Iterator[Finding]:
    ctr = facts.get("container")
    host = facts.get("host")
    ev = [("container", "engine_procs"), ("host", "smi_topo_p2p_r"), ("host", "sys_iommu_groups")]
    if ctr is None or host is None:
        yield finding(PROBE_ID, "env_vs_topology", "ok", "Container NCCL env vs host: not applicable",
                      targets=[r for r in facts] or ["host"], observed="not applicable: needs both a host and a container target",
                      evidence=[e for e in ev if e[0] in facts])
        return
    if not ctr.engine_env_readable:
        yield finding(PROBE_ID, "env_vs_topology", "ok" if ctr.engine_env_readable is None and "engine_procs" not in ctr.problems else "unknown",
                      "Container NCCL env vs host: no engine environment",
                      targets=["host", "container"], observed="not applicable: no serving engine in the container"
                      if ctr.engine_env_readable is None and "engine_procs" not in ctr.problems
                      else f"engine environment unreadable ({ctr.problems.get('engine_procs', 'environ not readable')})",
                      evidence=ev)
        return
    env = ctr.engine_env
    gate, gobs = _gate(facts)
    p2p_ok = bool(host.p2p_read) and all(v == "OK" for v in host.p2p_read.values())
    if env.get("NCCL_P2P_LEVEL", "").upper() in ("SYS", "5") and gate == "critical":
        yield finding(PROBE_ID, "env_vs_topology", "critical", "P2P forced on while the IOMMU/ACS gate says it will hang",
                      targets=["host", "container"], observed=f"container NCCL_P2P_LEVEL={env['NCCL_P2P_LEVEL']}; host: {gobs}",
                      why="Forcing P2P through an IOMMU-translated, ACS-redirected path is the reported recipe for hung collectives.",
                      fix="Fix the host (iommu=pt, ACS redirect off) before forcing NCCL_P2P_LEVEL=SYS.", evidence=ev)
    elif env.get("NCCL_P2P_DISABLE") == "1" and p2p_ok and gate in ("ok",):
        yield finding(PROBE_ID, "env_vs_topology", "warning", "Container disables P2P that the host supports",
                      targets=["host", "container"], observed=f"container NCCL_P2P_DISABLE=1; host P2P all OK; {gobs}",
                      why="A stale workaround: P2P is available and not blocked by IOMMU/ACS, yet every hop goes through host memory.",
                      fix="Remove NCCL_P2P_DISABLE=1 from the container's environment and confirm with nccl-tests (--active).",
                      evidence=ev)
    else:
        yield finding(PROBE_ID, "env_vs_topology", "ok", "Container NCCL env consistent with host P2P capability",
                      targets=["host", "container"],
                      observed=f"NCCL_P2P_DISABLE={env.get('NCCL_P2P_DISABLE', 'unset')}, NCCL_P2P_LEVEL={env.get('NCCL_P2P_LEVEL', 'unset')}; "
                               f"host P2P {'all OK' if p2p_ok else 'not all OK/unknown'}; gate {gate}", evidence=ev)


def _transport_observed(facts: FactsByTarget) -> Iterator[Finding]:
    """`nccl.transport_observed`: the transports NCCL logged (NCCL_DEBUG=INFO) vs the P2P the driver reports."""
    roles = [r for r in ("container", "host") if r in facts]
    ev = [(r, "engine_logs") for r in roles] + [(r, "engine_procs") for r in roles] + [("host", "smi_topo_p2p_r")]
    role = next((r for r in roles if facts[r].nccl_channels), None) or \
        next((r for r in roles if facts[r].log_sources), None)
    if role is None:
        if all(facts[r].log_sources is None for r in roles):
            why = "; ".join(f"{r}: {facts[r].problems.get('engine_logs', 'not collected')}" for r in roles)
            yield finding(PROBE_ID, "transport_observed", "unknown", "NCCL transport: engine log not read", targets=roles or ["host"],
                          observed=why, evidence=ev)
        else:
            yield finding(PROBE_ID, "transport_observed", "ok", "NCCL transport: no serving engine found", targets=roles,
                          observed="not applicable: no SGLang/vLLM/TGI API server found", evidence=ev)
        return
    f = facts[role]
    hint = "set NCCL_DEBUG=INFO in the engine's environment and restart it to see the transport, or run nccl-tests (--active)"
    if not f.nccl_channels:
        _er, eng = _engine(facts)
        debug = (eng.engine_env.get("NCCL_DEBUG", "unset") if eng and eng.engine_env_readable else "unknown")
        logs = ", ".join(f.log_sources or [])
        if all(src.startswith("none") for src in f.log_sources or []):
            obs = f"engine stdout is not a file or a systemd unit's journal: {logs}; NCCL_DEBUG={debug}"
        elif debug.upper() not in ("INFO", "TRACE"):
            obs = (f"no NCCL channel lines in {logs}: NCCL_DEBUG={debug}, so NCCL does not log its transport; "
                   "set NCCL_DEBUG=INFO and restart to see the transport")
        else:
            obs = f"NCCL_DEBUG={debug} but no channel lines in {logs} (log rotated, or NCCL not initialised yet)"
        yield finding(PROBE_ID, "transport_observed", "unknown", "NCCL transport not visible in the engine log", targets=[role],
                      observed=obs, expected="NCCL INFO 'Channel .. via P2P/..' lines", fix=hint[0].upper() + hint[1:] + ".",
                      why="Only NCCL's own log says which transport it picked; the driver's P2P matrix only says what is possible.",
                      evidence=ev)
        return
    host = facts.get("host")
    p2p = host.p2p_read if host is not None else {}
    counts = Counter(t for _s, _d, t in f.nccl_channels)
    summary = ", ".join(f"{t} {n}" for t, n in counts.most_common())
    vetoed = [f"GPU{a}->GPU{b} via {t}" for a, b, t in f.nccl_channels
              if t != "P2P" and p2p.get(f"{min(a, b)}-{max(a, b)}") == "OK"]
    why = ("NCCL uses P2P only when both its topology cutoff (NCCL_P2P_LEVEL) and NVML's P2P status allow it; SHM/NET "
           "between P2P-capable GPUs means something vetoed it and every hop is staged through host memory.")
    if vetoed:
        yield finding(PROBE_ID, "transport_observed", "warning", "NCCL uses SHM/NET between GPUs the driver reports P2P-capable",
                      targets=[role] + (["host"] if role != "host" else []),
                      observed=f"{'; '.join(vetoed[:4])}{f' (+{len(vetoed) - 4} more)' if len(vetoed) > 4 else ''}; channels: {summary}",
                      expected="via P2P/... between pairs that nvidia-smi topo -p2p r reports OK", why=why,
                      fix="Look for NCCL_P2P_DISABLE / NCCL_P2P_LEVEL in the engine's environment and for IOMMU/ACS blockers "
                          "(nccl.iommu_acs_gate); confirm with nccl-tests (--active).", evidence=ev)
    elif counts.keys() - {"P2P"}:
        yield finding(PROBE_ID, "transport_observed", "info", "NCCL uses non-P2P transports (P2P capability not confirmed)",
                      targets=[role], observed=f"channels: {summary}; driver P2P matrix {'read' if p2p else 'not read'}",
                      why=why, evidence=ev)
    else:
        yield finding(PROBE_ID, "transport_observed", "ok", "NCCL connects the GPUs via P2P", targets=[role],
                      observed=f"channels: {summary} ({len(f.nccl_channels)} distinct GPU pairs/transports)", evidence=ev)


def _allreduce(facts: FactsByTarget) -> Iterator[Finding]:
    host = facts.get("host")
    if host is None or (not host.allreduce and not host.allreduce_note and "nccl_all_reduce_perf" not in host.problems):
        return  # the ACTIVE command did not run (no --active): no finding
    ev = [("host", "nccl_all_reduce_perf")]
    title = "(active, load-generating) "
    if not host.allreduce:
        yield finding(PROBE_ID, "allreduce_bw", "unknown", title + "nccl-tests all_reduce_perf gave no result",
                      observed=host.allreduce_note or host.problems.get("nccl_all_reduce_perf", "no output"), evidence=ev)
        return
    inter = _interconnect(host.topo)
    p2p_ok = bool(host.p2p_read) and all(v == "OK" for v in host.p2p_read.values())
    if inter == "nvlink":
        floor, expect = 100.0, "NVLink: ≳ 200 GB/s busbw on 8 GPUs (8× H100 NVSwitch ≈ 370 ring, 480 NVLS)"
    elif p2p_ok:
        floor, expect = 15.0, "PCIe with P2P: ≈ 22 GB/s (default channels) to 37–41 GB/s (≥ 8 channels) on 8× RTX PRO 6000 Gen5 (community)"
    else:
        floor, expect = 3.0, "PCIe without P2P: host-staged, a few GB/s"
    rows = host.allreduce
    pick = [r for r in rows if r["size_b"] in (8, 65536, 1048576, 16777216, 268435456)] or rows[-3:]
    table = ", ".join(f"{human_size(int(r['size_b']))}: {r['busbw']:.2f} GB/s" for r in pick)
    peak = host.allreduce_peak or 0.0
    sev = "warning" if peak < floor or host.allreduce_note else "ok"
    yield finding(PROBE_ID, "allreduce_bw", sev, title + ("all-reduce bus bandwidth below expectation" if sev != "ok"
                  else "all-reduce bus bandwidth as expected"),
                  observed=f"{host.allreduce_gpus or '?'} GPUs, peak busbw {peak:.1f} GB/s; {table}"
                           + (f"; {host.allreduce_note}" if host.allreduce_note else ""),
                  expected=expect, why="busbw = algbw × 2(n−1)/n normalises all-reduce to link bandwidth; far below the "
                  "topology's figure means P2P is off, routed via the IOMMU, or NCCL picked too few channels.",
                  fix="Check nccl.iommu_acs_gate, nccl.env_overrides and NCCL_MIN_NCHANNELS.", evidence=ev)
    small = [r["time_us"] for r in rows if r["size_b"] <= 65536]
    if small:
        lat = sorted(small)[len(small) // 2]
        limit = 20.0 if inter == "nvlink" else 50.0
        yield finding(PROBE_ID, "allreduce_lat", "warning" if lat > limit else "ok",
                      title + ("small-message all-reduce latency high" if lat > limit else "small-message all-reduce latency"),
                      observed=f"median {lat:.1f} µs for 8 B..64 KB ({len(small)} sizes)",
                      expected=f"≲ {limit:.0f} µs ({'NVSwitch' if inter == 'nvlink' else 'PCIe: NCCL ≈ 24 µs flat to 64 KB on 8× RTX PRO 6000, community'})",
                      why="TP decode issues two small all-reduces per layer: their latency, not peak bandwidth, bounds tok/s.",
                      fix="Look at protocol/channel selection (NCCL_PROTO, NCCL_MIN_NCHANNELS) and whether P2P is used.",
                      evidence=ev)


def summarize(facts: FactsByTarget) -> str:
    parts = []
    role, topo = _pick(facts, "topo")
    if topo:
        c = Counter(topo.values())
        parts.append(f"{_interconnect(topo)} " + "/".join(k for k, _ in c.most_common(3)))
    _r, read = _pick(facts, "p2p_read")
    if read:
        parts.append("P2P " + ("all OK" if all(v == "OK" for v in read.values()) else "partial"))
    _r2, tn = _pick(facts, "torch_nccl", ("container", "host"))
    if tn:
        parts.append(f"NCCL {tn} (torch)")
    return " · ".join(parts)


PROBE = Probe(id=PROBE_ID, title="NCCL / GPU-to-GPU", commands=COMMANDS, extract=extract, judge=judge, summarize=summarize)
