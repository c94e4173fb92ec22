"""The kernel pane's one-line key facts."""

from __future__ import annotations

from gpuaudit.probes.core.parsers.system import cmdline_value
from gpuaudit.probes.core.spec import FactsByTarget
from gpuaudit.probes.kernel.facts import KernelFacts


def summarize(facts: FactsByTarget) -> str:
    host: KernelFacts | None = facts.get("host")
    if not host or not host.release:
        return ""
    parts = [f"kernel {host.release}"]
    if host.numa_balancing is not None:
        parts.append(f"numa_balancing={host.numa_balancing}")
    if host.cmdline is not None:
        pstate = cmdline_value(host.cmdline, "amd_pstate")
        parts.append(f"amd_pstate={pstate}" if pstate else "no amd_pstate=")
    return " · ".join(parts)
