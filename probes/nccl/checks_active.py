"""Verdicts over the ACTIVE nccl-tests all_reduce_perf run (bus bandwidth, small-message latency).

The floors depend on the interconnect. When the topology was not read, a verdict is given only if it is the
same on every interconnect class; otherwise it is unknown (an NVLink box must never be held to the PCIe floor).
"""

from __future__ import annotations

from gpuaudit.probes.core.judge.checks import Ctx, Verdict, unknown
from gpuaudit.probes.core.parsers.nccl_tests import human_size
from gpuaudit.probes.nccl.targets import (
    INTERCONNECTS,
    interconnect,
    p2p_all_ok,
    topology,
    topology_problem,
)

TITLE = "(active, load-generating) "
_SIZES = (8, 65536, 1048576, 16777216, 268435456)


def bw_floor(inter: str, p2p_ok: bool) -> tuple[float, str]:
    """(minimum peak busbw in GB/s, the expectation text) for an interconnect class."""
    if inter == "nvlink":
        return 100.0, "NVLink: ≳ 200 GB/s busbw on 8 GPUs (8× H100 NVSwitch ≈ 370 ring, 480 NVLS)"
    if p2p_ok:
        return (
            15.0,
            "PCIe with P2P: ≈ 22 GB/s (default channels) to 37–41 GB/s (≥ 8 channels) on 8× RTX PRO 6000 Gen5 (community)",
        )
    return 3.0, "PCIe without P2P: host-staged, a few GB/s"


def lat_limit(inter: str) -> tuple[float, str]:
    if inter == "nvlink":
        return 20.0, "≲ 20 µs (NVSwitch)"
    return 50.0, "≲ 50 µs (PCIe: NCCL ≈ 24 µs flat to 64 KB on 8× RTX PRO 6000, community)"


def _classes(ctx: Ctx) -> tuple[list[str], str]:
    """The interconnect classes the verdict must hold on: the one read, else all of them (and why)."""
    topo = topology(ctx)
    inter = interconnect(topo[1]) if topo else None
    return ([inter] if inter else list(INTERCONNECTS)), (
        "" if inter else f"; interconnect unknown ({topology_problem(ctx)})"
    )


def allreduce_bw(ctx: Ctx) -> Verdict:
    f = ctx.f
    if not f.allreduce:
        return unknown(
            f.allreduce_note or "no result rows",
            variant="active_load_generating_nccl_tests",
        )
    classes, note = _classes(ctx)
    peak = f.allreduce_peak or 0.0
    floors = [bw_floor(c, p2p_all_ok(ctx.of("host"))) for c in classes]
    sevs = {"warning" if peak < floor or f.allreduce_note else "ok" for floor, _ in floors}
    pick = [r for r in f.allreduce if r["size_b"] in _SIZES] or f.allreduce[-3:]
    table = ", ".join(f"{human_size(int(r['size_b']))}: {r['busbw']:.2f} GB/s" for r in pick)
    obs = (
        f"{f.allreduce_gpus or '?'} GPUs, peak busbw {peak:.1f} GB/s; {table}"
        + (f"; {f.allreduce_note}" if f.allreduce_note else "")
        + note
    )
    sev = sevs.pop() if len(sevs) == 1 else "unknown"
    return Verdict(
        sev,
        obs,
        " | ".join(text for _, text in floors),
        variant=sev,  # a variant per severity: ok, warning, unknown
    )


def allreduce_lat(ctx: Ctx) -> Verdict:
    f = ctx.f
    small = sorted(r["time_us"] for r in f.allreduce if r["size_b"] <= 65536)
    if not small:
        return unknown(
            f.allreduce_note or "no message size ≤ 64 KB in the run",
            variant="active_load_generating_small_message",
        )
    lat = small[len(small) // 2]
    classes, note = _classes(ctx)
    limits = [lat_limit(c) for c in classes]
    sevs = {"warning" if lat > limit else "ok" for limit, _ in limits}
    sev = sevs.pop() if len(sevs) == 1 else "unknown"
    return Verdict(
        sev,
        f"median {lat:.1f} µs for 8 B..64 KB ({len(small)} sizes){note}",
        " | ".join(t for _, t in limits),
        variant=sev,  # a variant per severity: ok, warning, unknown
    )
