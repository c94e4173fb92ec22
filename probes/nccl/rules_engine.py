"""NCCL rules on the serving engine: environment overrides, NCCL library, custom all-reduce, AMD dual-socket."""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpuaudit.probes.core.models import Finding, Role
from gpuaudit.probes.core.spec import FactsByTarget, finding
from gpuaudit.probes.nccl.commands import PROBE_ID
from gpuaudit.probes.nccl.parsers import nccl_version_from_path
from gpuaudit.probes.nccl.rules_common import _engine, _engine_unlisted, _gate, _interconnect, _pick, _problem

_TUNING = ("NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_BUFFSIZE", "NCCL_NTHREADS",
           "NCCL_MIN_CTAS", "NCCL_MAX_CTAS", "NCCL_CUMEM_ENABLE", "NCCL_NET_GDR_LEVEL")


def _env_overrides(facts: FactsByTarget) -> Iterator[Finding]:
    role, eng = _engine(facts)
    ev: list[tuple[Role, str]] = [(role or "container", "engine_procs")]
    if eng is None:
        why = _engine_unlisted(facts)
        sev = "unknown" if why else "ok"
        yield finding(PROBE_ID, "env_overrides", sev if facts else "unknown",
                      "NCCL environment: no serving engine found" if sev == "ok" else "NCCL environment could not be read",
                      targets=[r for r in facts] or ["host"],
                      observed="not applicable: no SGLang/vLLM/TGI process found" if not why else why, evidence=ev)
        return
    assert role is not None  # _engine() returns a role exactly when it returns facts
    if not eng.engine_env_readable:
        yield finding(PROBE_ID, "env_overrides", "unknown", "Engine environment not readable", targets=[role],
                      observed="/proc/<pid>/environ unreadable (needs root or the engine's uid)", evidence=ev,
                      fix="Run the audit as root (or --sudo) to read the serving process's environment.")
        return
    env = eng.engine_env
    host = facts.get("host")
    p2p_all_ok = host is not None and bool(host.p2p_read) and all(v == "OK" for v in host.p2p_read.values())
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
    ev: list[tuple[Role, str]] = [(role or "container", "engine_procs"), (role or "container", "ldconfig_nccl"), (role or "container", "pyenv")]
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
    assert role is not None  # _engine() returns a role exactly when it returns facts
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
    ev: list[tuple[Role, str]] = [(role or "container", "engine_procs"), ("host", "smi_topo_m")]
    if (eng is None or not eng.engine_kind) and (why := _engine_unlisted(facts)):
        yield finding(PROBE_ID, "custom_allreduce", "unknown", "Custom all-reduce: processes could not be listed",
                      targets=list(facts), observed=why, evidence=ev)
        return
    if eng is None or not eng.engine_kind:
        yield finding(PROBE_ID, "custom_allreduce", "ok", "Custom all-reduce: no serving engine found",
                      targets=[r for r in facts] or ["host"], observed="not applicable: no SGLang/vLLM process found", evidence=ev)
        return
    assert role is not None  # _engine() returns a role exactly when it returns facts
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
    ev: list[tuple[Role, str]] = [("host", "cpuinfo_id"), ("host", "smi_topo_m")]
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
