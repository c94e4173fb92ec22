"""The nvlink pane's key facts line."""

from __future__ import annotations

from gpuaudit.probes.core.spec import FactsByTarget
from gpuaudit.probes.nvlink import knowledge as k
from gpuaudit.probes.nvlink.facts import NvlinkFacts


def summarize(facts: FactsByTarget) -> str:
    f: NvlinkFacts | None = facts.get("host")
    if f is None:
        return ""
    if not f.gpu_names:
        return f"unknown ({f.smi_error[:50]})" if f.smi_error else "unknown"
    if k.pcie_only_reason(f):
        return "no NVLink (PCIe board) — n/a"
    if k.mig_reason(f):
        return "MIG mode — NVLink n/a"
    if k.has_nvlink(f):
        links = k.judged_links(f)
        speeds = [s for ls in links.values() for _, a, s in ls if a and s]
        per = max((k.active_links(ls) for ls in links.values()), default=0)
        nvs = " · NVSwitch" if k.is_nvswitch_system(f) else ""
        return f"{per} links/GPU" + (f" @ {max(speeds):g} GB/s" if speeds else "") + nvs
    return "no NVLink seen"
