"""The power pane's key facts line."""

from __future__ import annotations

from gpuaudit.probes.core.spec import FactsByTarget
from gpuaudit.probes.power.cpu_checks import deep_states
from gpuaudit.probes.power.facts import PowerFacts


def summarize(facts: FactsByTarget) -> str:
    h: PowerFacts | None = facts.get("host")
    if h is None:
        return ""
    parts = [h.scaling_driver or "cpufreq ?"]
    if h.governors:
        parts.append("/".join(sorted(h.governors)))
    if deep := deep_states(h):
        s = max(deep, key=lambda s: s.latency_us or 0)
        parts.append(
            f"{s.name} {s.latency_us}µs {'on' if any(not x.disabled for x in deep) else 'off'}"
        )
    elif h.idle_states:
        parts.append("no deep C-states")
    return " · ".join(parts)
