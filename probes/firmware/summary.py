"""The firmware pane's one-line key facts."""

from __future__ import annotations

import re

from gpuaudit.probes.core.spec import FactsByTarget
from gpuaudit.probes.firmware.facts import FirmwareFacts


def bios_label(h: FirmwareFacts) -> str | None:
    if not h.bios:
        return None
    raw = h.bios.get("bios_vendor") or "?"
    vendor = "AMI" if raw.startswith("American Megatrends") else raw.split()[0].rstrip(",")
    m = re.match(r"(\d\d)/\d\d/(\d{4})", h.bios.get("bios_release_date", ""))
    return f"{vendor} {h.bios.get('bios_version', '?')}" + (
        f" ({m.group(2)}-{m.group(1)})" if m else ""
    )


def iommu_label(h: FirmwareFacts) -> str | None:
    if h.iommu_units is None:
        return None
    types = set(h.gpu_iommu_types.values())
    if not h.iommu_units and not any(types):
        return "IOMMU off"
    if types == {"identity"}:
        return "IOMMU pt"
    return "IOMMU " + "/".join(sorted(t or "none" for t in types)) if types else "IOMMU on"


def summarize(facts: FactsByTarget) -> str:
    h: FirmwareFacts | None = facts.get("host")
    if h is None:
        return ""
    return " · ".join(p for p in (bios_label(h), iommu_label(h)) if p)
