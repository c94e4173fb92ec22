"""What the NCCL checks share: the engine's target, the interconnect class, P2P state and the IOMMU/ACS gate."""

from __future__ import annotations

from gpuaudit.probes.core.judge.checks import Ctx, source_problem
from gpuaudit.probes.core.models import Role
from gpuaudit.probes.core.parsers.engine import engine_listing_problem
from gpuaudit.probes.nccl.facts import NcclFacts

ENGINE_FIRST: tuple[Role, ...] = ("container", "host")
HOST_FIRST: tuple[Role, ...] = ("host", "container")
NO_ENGINE = "no serving engine found (no SGLang/vLLM/TGI server process)"
INTERCONNECTS = ("nvlink", "mixed", "pcie")


def ordered(ctx: Ctx, prefer: tuple[Role, ...] = ENGINE_FIRST) -> list[tuple[Role, NcclFacts]]:
    """The judged target first, then the others that ran, in `prefer` order."""
    judged: Role = ctx.role or "host"
    first = [(judged, ctx.facts[judged])] if judged in ctx.facts else []
    return first + [(r, ctx.facts[r]) for r in prefer if r != judged and r in ctx.facts]


def engine(ctx: Ctx) -> tuple[Role, NcclFacts] | None:
    """The target whose process scan found the engine's API server (the judged one first)."""
    return next(((r, f) for r, f in ordered(ctx) if f.engine_kind), None)


def engine_env(ctx: Ctx) -> dict[str, str]:
    found = engine(ctx)
    return found[1].engine_env if found else {}


def no_engine(ctx: Ctx) -> str | None:
    """`applies`: "not applicable" only when every target's process scan answered and none found an engine."""
    return (
        NO_ENGINE if all(f.engine_listed and not f.engine_kind for _r, f in ordered(ctx)) else None
    )


def engine_missing(ctx: Ctx) -> str:
    listings = {
        r: (ctx.problem("engine_procs", r) or (None if f.engine_listed else "not collected"))
        for r, f in ordered(ctx)
    }
    return engine_listing_problem(listings, found=False) or NO_ENGINE


def interconnect(topo: dict[str, str] | None) -> str | None:
    """ "nvlink" (every pair NV#), "mixed", "pcie"; None when the topology was not read (never a guess)."""
    if topo is None:
        return None
    if topo and all(v.startswith("NV") for v in topo.values()):
        return "nvlink"
    if any(v.startswith("NV") for v in topo.values()):
        return "mixed"
    return "pcie"


def topology(ctx: Ctx) -> tuple[Role, dict[str, str]] | None:
    """The GPU pair matrix, the host's first (the container sees the same GPUs)."""
    return next(((r, f.topo) for r, f in ordered(ctx, HOST_FIRST) if f.topo is not None), None)


def topology_problem(ctx: Ctx) -> str:
    return (
        "; ".join(
            f"{r}: smi_topo_m {p}"
            for r, _f in ordered(ctx, HOST_FIRST)
            if (p := ctx.problem("smi_topo_m", r))
        )
        or "smi_topo_m: not collected"
    )


def p2p_all_ok(f: NcclFacts | None) -> bool:
    return (
        f is not None and bool(f.p2p_read) and all(v == "OK" for v in (f.p2p_read or {}).values())
    )


def host_problem(ctx: Ctx, command_id: str) -> str:
    """Why a host source gave no usable data ("not collected", "needs root ...", a parse problem)."""
    host = ctx.of("host")
    return source_problem(ctx.outputs.get("host", {}).get(command_id), host) or "no data"


def iommu_gate(ctx: Ctx) -> tuple[str, str]:
    """The `nccl.iommu_acs_gate` verdict (severity, observed), shared with `nccl.env_vs_topology`."""
    host = ctx.of("host")
    if host is None:
        return "unknown", "host not audited"
    translated = host.iommu_translated
    found = engine(ctx)
    env = found[1].engine_env if found else {}
    p2p_off = env.get("NCCL_P2P_DISABLE") == "1"
    tp = (found[1].engine_tp if found else None) or 0
    if translated is False:
        return "ok", "IOMMU off or passthrough: GPU peer traffic is not translated"
    if translated is None:
        return "unknown", (
            f"IOMMU state of the GPU functions not known ({host.iommu_detail or 'not read'}; "
            f"iommu_state: {host_problem(ctx, 'iommu_state')}; no iommu=pt/off on the kernel command line)"
        )
    base = f"IOMMU translating ({host.iommu_detail})"
    redirect = host.acs_redirect
    if redirect is None:
        why = (
            host.acs_detail
            if ctx.usable("lspci_vvv", "host")
            else f"lspci_vvv: {host_problem(ctx, 'lspci_vvv')}"
        )
        return "warning", f"{base}; ACS state unknown ({why})"
    if redirect and not p2p_off and tp > 1:
        return "critical", (
            f"{base}; ACS redirect on {len(redirect)} bridge(s) above the GPUs ({', '.join(redirect[:4])}); "
            f"engine TP={tp} with P2P allowed"
        )
    if redirect:
        return "warning", (
            f"{base}; ACS redirect on {len(redirect)} bridge(s) above the GPUs; "
            f"P2P {'disabled' if p2p_off else 'allowed'}, TP={tp or 'n/a'}"
        )
    return "warning", f"{base}; no ACS redirect above the GPUs ({host.acs_detail})"
