"""Verdicts on GPU-to-GPU paths: P2P matrix, topology class, AMD inter-socket model, IOMMU/ACS gate, host vs
container NCCL environment, and the transport NCCL logged."""

from __future__ import annotations

from collections import Counter

from gpuaudit.probes.core.judge.checks import (
    Ctx,
    Verdict,
    critical,
    info,
    not_applicable,
    ok,
    unknown,
    warning,
)
from gpuaudit.probes.core.models import Role
from gpuaudit.probes.nccl.targets import (
    engine,
    engine_env,
    interconnect,
    iommu_gate,
    ordered,
    p2p_all_ok,
)

_NOT_P2P = "fewer than two GPUs"


def fewer_than_two_gpus(ctx: Ctx) -> str | None:
    """`applies`: the matrix was read and holds one GPU (no pair to judge)."""
    n = ctx.f.gpu_count
    return "fewer than two GPUs" if n is not None and n < 2 else None


def p2p_matrix(ctx: Ctx) -> Verdict:
    f = ctx.f
    read, write = f.p2p_read or {}, f.p2p_write or {}
    if not read:
        return not_applicable(_NOT_P2P, variant="p2p_not_applicable_single_gpu")
    bad = {k: v for k, v in read.items() if v != "OK"} | {
        k: f"w:{v}" for k, v in write.items() if v != "OK"
    }
    n = len({int(x) for k in read for x in k.split("-")})
    if not bad:
        return ok(
            f"{n} GPUs, {len(read)} pairs: all OK (read{', write' if write else ''})",
            variant="driver_reports_p2p_read_write",
        )
    codes = Counter(v.split(":")[-1] for v in bad.values())
    names = " ".join(n for _r, g in ordered(ctx) for n in g.gpu_names).lower()
    geforce = "geforce" in names and set(codes) <= {"NS", "GNS", "CNS"}
    sample = ", ".join(f"GPU{k.replace('-', '↔GPU')}={v}" for k, v in list(bad.items())[:6])
    return Verdict(
        "info" if geforce else "warning",
        f"{len(bad)} non-OK pair entries ({dict(codes)}): {sample}",
        "OK for every pair used by one tensor-parallel group",
        variant="p2p_not_supported_on_consumer" if geforce else "some_gpu_pairs_lack_p2p",
    )


def topology_class(ctx: Ctx) -> Verdict:
    topo = ctx.f.topo or {}
    summary = ", ".join(f"{k}×{v}" for k, v in Counter(topo.values()).most_common())
    host = ctx.of("host")
    vendor = host.cpu_vendor if host is not None else None
    level = engine_env(ctx).get("NCCL_P2P_LEVEL")
    ev: tuple[tuple[Role, str], ...] = (("host", "cpuinfo_id"),) if vendor else ()
    if interconnect(topo) == "nvlink":
        return ok(summary, variant="all_gpu_pairs_connected_nvlink")
    if vendor == "Intel" and any(v in ("PHB", "NODE", "SYS") for v in topo.values()) and not level:
        return info(
            f"{summary}; CPU Intel; NCCL_P2P_LEVEL unset",
            "P2P only up to PXB on Intel hosts unless NCCL_P2P_LEVEL raises it",
            evidence=ev,
            variant="nccl_will_not_use_p2p",
        )
    if vendor is None and any(v in ("PHB", "NODE", "SYS") for v in topo.values()):
        return (
            unknown(  # NCCL's P2P cutoff over the CPU depends on the vendor: no verdict without it
                f"{summary}; CPU vendor not read (cpuinfo_id)",
                evidence=(("host", "cpuinfo_id"),),
                variant="gpu_path_types_read_cpu",
            )
        )
    return ok(
        f"{summary}; CPU {vendor or 'not needed (no path over the CPU)'}"
        + (f"; NCCL_P2P_LEVEL={level}" if level else ""),
        evidence=ev,
        variant="gpu_path_types_p2p_expected",
    )


def not_amd_cross_socket(ctx: Ctx) -> str | None:
    """`applies`: not an AMD host, or no GPU pair crosses the sockets (both read, so proven)."""
    f = ctx.f
    sys_pairs = [k for k, v in (f.topo or {}).items() if v == "SYS"]
    if f.cpu_vendor != "AMD" or not sys_pairs:
        return f"CPU {f.cpu_vendor}, {len(sys_pairs)} cross-socket GPU pairs"
    return None


def amd_dual_socket_model(ctx: Ctx) -> Verdict:
    f = ctx.f
    numa = sorted({n for n in f.gpu_numa if n and n != "N/A"})
    sys_pairs = [k for k, v in (f.topo or {}).items() if v == "SYS"]
    env = engine_env(ctx)
    override = [
        k
        for k in ("NCCL_GRAPH_FILE", "NCCL_TOPO_FILE", "NCCL_TUNER_PLUGIN", "NCCL_MIN_NCHANNELS")
        if k in env
    ]
    if override:
        return ok(
            f"{len(sys_pairs)} SYS pairs over NUMA nodes {numa}; {', '.join(override)} set",
            variant="cross_socket_tp_on_amd",
        )
    return info(
        f"{len(sys_pairs)} GPU pairs cross sockets (SYS), GPUs on NUMA nodes {numa or '?'}; "
        "no NCCL_MIN_NCHANNELS / topology / tuner override",
        variant="nccl_assumes_16_gb_between",
    )


def iommu_acs_gate(ctx: Ctx) -> Verdict:
    sev, obs = iommu_gate(ctx)
    found = engine(ctx)
    ev: tuple[tuple[Role, str], ...] = (("host", "iommu_state"), ("host", "lspci_vvv")) + (
        ((found[0], "engine_procs"),) if found else ()
    )
    return Verdict(sev, obs, variant=sev, evidence=ev)  # a variant per severity


def no_container_engine(ctx: Ctx) -> str | None:
    ctr = ctx.of("container")
    return (
        "no serving engine in the container"
        if ctr is not None and ctr.engine_listed and ctr.engine_env_readable is None
        else None
    )


def env_vs_topology(ctx: Ctx) -> Verdict:
    ctr, host = ctx.of("container"), ctx.of("host")
    if not ctr.engine_env_readable:
        return unknown(
            f"engine environment unreadable ({ctx.problem('engine_procs', 'container') or 'environ not readable'})",
            variant="container_nccl_env_vs_host",
        )
    env = ctr.engine_env
    gate, gobs = iommu_gate(ctx)
    p2p_ok = p2p_all_ok(host)
    if env.get("NCCL_P2P_LEVEL", "").upper() in ("SYS", "5") and gate == "critical":
        return critical(
            f"container NCCL_P2P_LEVEL={env['NCCL_P2P_LEVEL']}; host: {gobs}",
            variant="p2p_forced_on_iommu_acs",
        )
    if env.get("NCCL_P2P_DISABLE") == "1" and p2p_ok and gate == "ok":
        return warning(
            f"container NCCL_P2P_DISABLE=1; host P2P all OK; {gobs}",
            variant="container_disables_p2p_host_supports",
        )
    return ok(
        f"NCCL_P2P_DISABLE={env.get('NCCL_P2P_DISABLE', 'unset')}, NCCL_P2P_LEVEL={env.get('NCCL_P2P_LEVEL', 'unset')}; "
        f"host P2P {'all OK' if p2p_ok else 'not all OK/unknown'}; gate {gate}",
        variant="container_nccl_env_consistent_host",
    )


def no_api_server_log(ctx: Ctx) -> str | None:
    """`applies`: every target's log scan answered and found no engine API server."""
    return (
        "no SGLang/vLLM/TGI API server found"
        if all(f.log_sources == [] for _r, f in ordered(ctx))
        else None
    )


def transport_observed(ctx: Ctx) -> Verdict:
    """The transports NCCL logged (NCCL_DEBUG=INFO) vs the P2P the driver reports."""
    pick = next(((r, f) for r, f in ordered(ctx) if f.nccl_channels), None) or next(
        ((r, f) for r, f in ordered(ctx) if f.log_sources), None
    )
    if pick is None:
        return unknown(
            "; ".join(
                f"{r}: {ctx.problem('engine_logs', r) or 'not collected'}"
                for r, f in ordered(ctx)
                if f.log_sources is None
            )
            or "no engine log read",
            variant="nccl_transport_engine_log_not",
        )
    role, f = pick
    ev = ((role, "engine_logs"),)
    if not f.nccl_channels:
        return unknown(
            no_channels_reason(ctx, f.log_sources or []),
            expected="NCCL INFO 'Channel .. via P2P/..' lines",
            evidence=ev,
            variant="nccl_transport_not_visible_engine",
        )
    host = ctx.of("host")
    p2p = (host.p2p_read or {}) if host is not None else {}
    counts = Counter(t for _s, _d, t in f.nccl_channels)
    summary = ", ".join(f"{t} {n}" for t, n in counts.most_common())
    vetoed = [
        f"GPU{a}->GPU{b} via {t}"
        for a, b, t in f.nccl_channels
        if t != "P2P" and p2p.get(f"{min(a, b)}-{max(a, b)}") == "OK"
    ]
    if vetoed:
        more = f" (+{len(vetoed) - 4} more)" if len(vetoed) > 4 else ""
        return warning(
            f"{'; '.join(vetoed[:4])}{more}; channels: {summary}",
            "via P2P/... between pairs that nvidia-smi topo -p2p r reports OK",
            variant="nccl_uses_shm_net_between",
            evidence=ev + (("host", "smi_topo_p2p_r"),),
        )
    if counts.keys() - {"P2P"}:
        return info(
            f"channels: {summary}; driver P2P matrix {'read' if p2p else 'not read'}",
            evidence=ev,
            variant="nccl_uses_non_p2p_transports",
        )
    return ok(
        f"channels: {summary} ({len(f.nccl_channels)} distinct GPU pairs/transports)",
        evidence=ev,
        variant="nccl_connects_gpus_via_p2p",
    )


def no_channels_reason(ctx: Ctx, logs: list[str]) -> str:
    found = engine(ctx)
    debug = (
        found[1].engine_env.get("NCCL_DEBUG", "unset")
        if found and found[1].engine_env_readable
        else "unknown"
    )
    where = ", ".join(logs)
    if all(src.startswith("none") for src in logs):
        return (
            f"engine stdout is not a file or a systemd unit's journal: {where}; NCCL_DEBUG={debug}"
        )
    if debug.upper() not in ("INFO", "TRACE"):
        return (
            f"no NCCL channel lines in {where}: NCCL_DEBUG={debug}, so NCCL does not log its transport; "
            "set NCCL_DEBUG=INFO and restart to see the transport"
        )
    return f"NCCL_DEBUG={debug} but no channel lines in {where} (log rotated, or NCCL not initialised yet)"
