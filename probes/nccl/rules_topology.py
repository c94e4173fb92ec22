"""NCCL rules on GPU-to-GPU paths: P2P matrix, topology class, IOMMU/ACS gate, observed transports."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from gpuaudit.probes.core.models import Finding, Role
from gpuaudit.probes.core.spec import FactsByTarget, finding
from gpuaudit.probes.nccl.commands import PROBE_ID
from gpuaudit.probes.nccl.facts import NcclFacts
from gpuaudit.probes.nccl.rules_common import _engine, _gate, _interconnect, _pick, _problem


def _p2p_matrix(facts: FactsByTarget) -> Iterator[Finding]:
    role, read = _pick(facts, "p2p_read")
    ev: list[tuple[Role, str]] = [(role or "host", "smi_topo_p2p_r"), (role or "host", "smi_topo_p2p_w")]
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
    ev: list[tuple[Role, str]] = [(role or "host", "smi_topo_m"), ("host", "cpuinfo_id")]
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


def _iommu_acs_gate(facts: FactsByTarget) -> Iterator[Finding]:
    sev, obs = _gate(facts)
    ev: list[tuple[Role, str]] = [("host", "proc_cmdline"), ("host", "sys_iommu_groups"), ("host", "lspci_acsctl"), ("container", "engine_procs")]
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
    ev: list[tuple[Role, str]] = [("container", "engine_procs"), ("host", "smi_topo_p2p_r"), ("host", "sys_iommu_groups")]
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
    roles: list[Role] = [r for r in ("container", "host") if r in facts]
    ev: list[tuple[Role, str]] = [(r, "engine_logs") for r in roles] + [(r, "engine_procs") for r in roles] + [("host", "smi_topo_p2p_r")]
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
