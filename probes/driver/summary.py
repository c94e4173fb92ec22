"""The driver pane's key-facts line."""

from __future__ import annotations

from gpuaudit.probes.core.judge.checks import NO_GPU
from gpuaudit.probes.core.spec import FactsByTarget
from gpuaudit.probes.driver.facts import DriverFacts
from gpuaudit.probes.driver.knowledge import fleet, host_version


def summarize(facts: FactsByTarget) -> str:
    h: DriverFacts | None = facts.get("host") or facts.get("container")
    if h is None:
        return ""
    if h.nvidia_present is False:
        return NO_GPU
    if h.handle_failures:
        return "GPU lost: " + ", ".join(x.bus_id for x in h.handle_failures)
    if h.smi_error and not h.module_version:
        return f"nvidia-smi: {h.smi_error[:60]}"
    parts = []
    version = host_version(h)
    if version:
        flavours: dict[bool | None, str] = {True: " open", False: " proprietary"}
        flavour = flavours.get(h.module_open, "")
        parts.append(f"{version}{flavour}")
    if h.cuda_version:
        parts.append(f"CUDA {h.cuda_version}")
    if h.gpus:
        parts.append(fleet(h.gpus))
    elif h.smi_error:
        parts.append(f"nvidia-smi: {h.smi_error[:50]}")
    return " · ".join(parts)
