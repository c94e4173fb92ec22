"""The NCCL pane's key-facts line."""

from __future__ import annotations

from collections import Counter

from gpuaudit.probes.core.spec import FactsByTarget
from gpuaudit.probes.nccl.rules_common import _interconnect, _pick


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
