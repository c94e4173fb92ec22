"""The NCCL pane's key-facts line."""

from __future__ import annotations

from collections import Counter

from gpuaudit.probes.core.spec import FactsByTarget
from gpuaudit.probes.nccl.targets import interconnect


def summarize(facts: FactsByTarget) -> str:
    host_first = [facts[r] for r in ("host", "container") if r in facts]
    parts = []
    if (topo := next((f.topo for f in host_first if f.topo), None)) is not None:
        parts.append(
            f"{interconnect(topo)} " + "/".join(k for k, _ in Counter(topo.values()).most_common(3))
        )
    if (read := next((f.p2p_read for f in host_first if f.p2p_read), None)) is not None:
        parts.append("P2P " + ("all OK" if all(v == "OK" for v in read.values()) else "partial"))
    if tn := next((f.torch_nccl for f in reversed(host_first) if f.torch_nccl), None):
        parts.append(f"NCCL {tn} (torch)")
    return " · ".join(parts)
