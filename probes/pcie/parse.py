"""Parsers of the pcie probe's own command lines (sysfs loop, nvidia-smi PCIe query). Pure; never raise on odd lines."""

from __future__ import annotations

import re
from typing import Any

from gpuaudit.probes.core.parsers.lspci import normalize_bdf
from gpuaudit.probes.core.parsers.nvidia_smi import parse_query_gpu_csv
from gpuaudit.probes.core.parsing import parse_once
from gpuaudit.probes.pcie.facts import SmiLink, SysPci

SMI_PCIE_FIELDS = (
    "index",
    "pci.bus_id",
    "utilization.gpu",
    "pcie.link.gen.gpucurrent",
    "pcie.link.gen.gpumax",
    "pcie.link.gen.hostmax",
    "pcie.link.width.current",
    "pcie.link.width.max",
)
GEN_BY_SPEED = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
_SYS_LINE = re.compile(r"^(/sys/\S*?/([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]))/([\w/]+):(.*)$")
_BDF_END = re.compile(r"([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])$")


@parse_once
def parse_sys_pci(text: str) -> list[SysPci]:
    """Output of the `sys_pci_nvidia` loop -> SysPci per NVIDIA function.

        /sys/bus/pci/devices/0000:01:00.0/upstream:/sys/devices/pci0000:00/0000:00:01.1
        /sys/bus/pci/devices/0000:01:00.0/max_link_speed:32.0 GT/s PCIe
        /sys/devices/pci0000:00/0000:00:01.1/power/control:auto
    Multi-line AER files keep one key per counter ("aer_dev_fatal/TOTAL_ERR_FATAL": "0").
    """
    devs: dict[str, dict[str, Any]] = {}
    sharing: dict[str, list[dict[str, Any]]] = {}
    # an upstream port -> the functions below it (emptied whenever a function's upstream is read)
    for line in (text or "").splitlines():
        m = _SYS_LINE.match(line.strip())
        if not m:
            continue
        base, bdf, key, val = m.groups()
        val = val.strip()
        dev = devs.get(bdf)
        if key == "upstream":
            um = _BDF_END.search(val)
            if dev is None:
                dev = devs[bdf] = {"bdf": bdf, "values": {}, "upstream_values": {}}
            dev["upstream"] = um.group(1) if um else None
            sharing.clear()
            continue
        if key.startswith("aer_dev_") and " " in val:
            name, _, count = val.rpartition(" ")
            key, val = f"{key}/{name.strip()}", count
        if base.startswith("/sys/bus/pci/devices/"):
            if dev is None:
                dev = devs[bdf] = {"bdf": bdf, "values": {}, "upstream_values": {}}
            dev["values"][key] = val
        else:  # an upstream port, addressed by its device path; several GPUs may share it
            below = sharing.get(bdf)
            if below is None:
                below = sharing[bdf] = [d for d in devs.values() if d.get("upstream") == bdf]
            for d in below:
                d["upstream_values"][key] = val
    return [SysPci.of(d) for d in devs.values()]


def to_int(v: str | None) -> int | None:
    try:
        return int(float(v)) if v not in (None, "") else None
    except ValueError:
        return None


@parse_once
def parse_smi_pcie(text: str) -> list[SmiLink]:
    """`nvidia-smi --query-gpu=<SMI_PCIE_FIELDS> --format=csv,noheader,nounits` -> SmiLink per GPU.

        0, 00000000:01:00.0, 0, 1, 5, 5, 16, 16
    Raises ParseError on an error banner or a row of the wrong width.
    """
    out: list[SmiLink] = []
    for r in parse_query_gpu_csv(text, list(SMI_PCIE_FIELDS)):
        util = r.get("utilization.gpu")
        out.append(
            SmiLink(
                index=r.get("index") or str(len(out)),
                bus_id=normalize_bdf(r.get("pci.bus_id") or f"gpu{len(out)}"),
                util=float(util) if util and re.fullmatch(r"[0-9.]+", util) else None,
                # older captures use the deprecated gen.current/gen.max names (header-driven)
                gen_cur=to_int(r.get("pcie.link.gen.gpucurrent") or r.get("pcie.link.gen.current")),
                gen_gpumax=to_int(r.get("pcie.link.gen.gpumax") or r.get("pcie.link.gen.max")),
                gen_hostmax=to_int(r.get("pcie.link.gen.hostmax")),
                width_cur=to_int(r.get("pcie.link.width.current")),
                width_max=to_int(r.get("pcie.link.width.max")),
            )
        )
    return out
