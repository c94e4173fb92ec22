"""NCCL rules over the ACTIVE nccl-tests all_reduce_perf run (bandwidth, latency)."""

from __future__ import annotations

from collections.abc import Iterator

from gpuaudit.probes.core.models import Finding, Role
from gpuaudit.probes.core.parsers.nccl_tests import human_size
from gpuaudit.probes.core.spec import FactsByTarget, finding
from gpuaudit.probes.nccl.commands import PROBE_ID
from gpuaudit.probes.nccl.rules_common import _interconnect


def _allreduce(facts: FactsByTarget) -> Iterator[Finding]:
    host = facts.get("host")
    if host is None or (not host.allreduce and not host.allreduce_note and "nccl_all_reduce_perf" not in host.problems):
        return  # the ACTIVE command did not run (no --active): no finding
    ev: list[tuple[Role, str]] = [("host", "nccl_all_reduce_perf")]
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
