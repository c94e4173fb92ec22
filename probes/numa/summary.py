"""The NUMA pane's one-line key facts."""

from __future__ import annotations

from gpuaudit.probes.core.spec import FactsByTarget
from gpuaudit.probes.numa.facts import NumaFacts
from gpuaudit.probes.numa.locality import gpu_nodes, ranges


def summarize(facts: FactsByTarget) -> str:
    host: NumaFacts | None = facts.get("host")
    if not host or not host.nodes:
        return ""
    parts = [f"{len(host.nodes)} node(s)"]
    counts: dict[int, int] = {}
    for n in gpu_nodes(host).values():
        if n is not None:
            counts[n] = counts.get(n, 0) + 1
    if counts:
        parts.append("GPUs " + " ".join(f"n{n}:{c}" for n, c in sorted(counts.items())))
    ctr: NumaFacts | None = facts.get("container")
    if ctr and ctr.cpuset_cpus is not None:
        parts.append(f"container cpuset {ranges(ctr.cpuset_cpus)}")
    return " · ".join(parts)
