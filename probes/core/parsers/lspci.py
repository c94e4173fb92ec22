"""Parsers for `lspci -vvv` device blocks and the `lspci -tv` tree (owner: the pcie probe).

Public API:

* `parse_lspci_vvv(text) -> list[PciDevice]`   one entry per device block
* `acs_flags(text) -> dict[str, bool]`          "SrcValid+ ReqRedir- ..." -> {"SrcValid": True, ...}
* `parse_lspci_tree(text) -> dict[str, TreeNode]`  `lspci -tv`: BDF -> (parent BDF, name)
* `bus_tree(devices) -> dict[str, TreeNode]`      the same tree from the bridges' `Bus: primary= secondary=` lines
* `normalize_bdf(text) -> str`                  re-exported from `parsers.system` ("01:00.0" -> "0000:01:00.0")

Pure; never raise on odd input (unknown lines are skipped; a block whose capabilities read
`<access denied>` is marked `access_denied=True` and keeps None for every capability field).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpuaudit.probes.core.parsers.system import normalize_bdf
from gpuaudit.probes.core.parsing import parse_once

__all__ = [
    "PciDevice",
    "TreeNode",
    "acs_flags",
    "bus_tree",
    "normalize_bdf",
    "parse_lspci_tree",
    "parse_lspci_vvv",
    "tree_path",
]

_HEADER = re.compile(
    r"^(?P<bdf>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+(?P<rest>.*)$"
)
_IDS = re.compile(r"\[([0-9a-f]{4}):([0-9a-f]{4})\]")
_SIZE = re.compile(r"(\d+)\s*(bytes|[KMGT]B?)\b")
_UNITS = {
    "bytes": 1,
    "K": 1 << 10,
    "KB": 1 << 10,
    "M": 1 << 20,
    "MB": 1 << 20,
    "G": 1 << 30,
    "GB": 1 << 30,
    "T": 1 << 40,
    "TB": 1 << 40,
}


def _bytes(text: str) -> int | None:
    m = _SIZE.search(text)
    return int(m.group(1)) * _UNITS[m.group(2)] if m else None


def _speed(text: str) -> float | None:
    m = re.search(r"Speed\s+([0-9.]+)GT/s", text)
    return float(m.group(1)) if m else None


def _width(text: str) -> int | None:
    m = re.search(r"Width\s+x(\d+)", text)
    return int(m.group(1)) if m else None


def acs_flags(text: str) -> dict[str, bool]:
    """`ACSCtl: SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ ...` -> {"SrcValid": True, "TransBlk": False, ...}."""
    body = text.split(":", 1)[1] if ":" in text else text
    return {m.group(1): m.group(2) == "+" for m in re.finditer(r"([A-Za-z]+)([+-])", body)}


@dataclass
class PciDevice:
    """One `lspci -vvv` block; sizes in bytes, speeds in GT/s. None = not shown (or access denied)."""

    bdf: str
    description: str = ""
    vendor_id: str | None = None
    device_id: str | None = None
    port_type: str | None = None
    """"Endpoint", "Legacy Endpoint", "Root Port", "Downstream Port", "Upstream Port", ..."""
    access_denied: bool = False
    devcap_mps: int | None = None
    devctl_mps: int | None = None
    devctl_mrrs: int | None = None
    relaxed_ordering: bool | None = None
    lnkcap_speed: float | None = None
    lnkcap_width: int | None = None
    lnksta_speed: float | None = None
    lnksta_width: int | None = None
    speed_downgraded: bool = False
    width_downgraded: bool = False
    speed_unknown: bool = False
    aspm_ctl: str | None = None
    """LnkCtl ASPM field: "Disabled", "L1 Enabled", "L0s L1 Enabled"."""
    acs_ctl: dict[str, bool] | None = None
    tag10_req_cap: bool | None = None
    tag10_req_en: bool | None = None
    ue_status: list[str] | None = None
    """AER uncorrectable status bits that are set (e.g. ["UnsupReq"]); None = no UESta line read."""
    ce_status: list[str] | None = None
    """AER correctable status bits that are set; None = no CESta line read."""
    regions: dict[int, int] = field(default_factory=dict)
    """BAR index -> size in bytes."""
    prefetchable64: dict[int, int] = field(default_factory=dict)
    """The 64-bit prefetchable BARs (index -> bytes): a GPU's BAR1, the aperture CPUs and peers map."""
    rebar_current: dict[int, int] = field(default_factory=dict)
    """Physical Resizable BAR: BAR index -> current size in bytes."""
    kernel_driver: str | None = None
    secondary_bus: int | None = None
    """A bridge's `Bus: primary=00, secondary=01, subordinate=06`: the bus right below it (readable without root)."""
    subordinate_bus: int | None = None
    lines: dict[str, int] = field(default_factory=dict)
    """Where a value was read: field name -> 0-based line of the text ("devctl_mrrs": the DevCtl MaxReadReq line,
    "acs_ctl": the ACSCtl: line), so a finding's evidence points at the line the parser used."""

    @property
    def is_nvidia(self) -> bool:
        return self.vendor_id == "10de" or "NVIDIA" in self.description

    @property
    def is_gpu(self) -> bool:
        d = self.description
        return self.is_nvidia and ("VGA compatible controller" in d or "3D controller" in d)

    @property
    def is_bridge(self) -> bool:
        return (
            self.port_type in ("Root Port", "Downstream Port", "Upstream Port")
            or "bridge" in self.description.lower()
        )


# _parse_block's per-line patterns, compiled once (issue 30: re's cache lookup on every line)
_EXPRESS = re.compile(r"Express \(v\d\) ([A-Za-z ]+?)(?: \(|,|$)")
_REGION = re.compile(r"Region (\d+):.*\[size=(\d+)([KMGT]?)\]")
_BUSES = re.compile(r"secondary=([0-9a-f]{2}), subordinate=([0-9a-f]{2})")
_DEVCTL_SIZES = re.compile(r"MaxPayload\s+(\d+)\s*bytes.*MaxReadReq\s+(\d+)\s*bytes")
_ASPM = re.compile(r"ASPM ([^;]+);?")
_REBAR = re.compile(r"BAR (\d+): current size:\s*(\d+)([KMGT]B)")


def _parse_block(header: re.Match[str], lines: list[str], start: int = 0) -> PciDevice:
    """One block; `start` is the text line of its first body line (for `PciDevice.lines`)."""
    rest = header.group("rest")
    ids = _IDS.findall(rest)
    dev = PciDevice(bdf=normalize_bdf(header.group("bdf")), description=rest.strip())
    if ids:
        dev.vendor_id, dev.device_id = ids[-1]
    section = ""
    for at, raw in enumerate(lines, start):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("Capabilities:"):
            section = line
            if "<access denied>" in line:
                dev.access_denied = True
            m = _EXPRESS.search(line)
            if m:
                dev.port_type = m.group(1).strip()
            continue
        key, _, val = line.partition(":")
        if line.startswith("Region ") and "[size=" in line:
            m = _REGION.match(line)
            if m:
                size = int(m.group(2)) * _UNITS.get(m.group(3) or "bytes", 1)
                dev.regions[int(m.group(1))] = size
                if "(64-bit, prefetchable)" in line:
                    dev.prefetchable64[int(m.group(1))] = size
        elif key == "Bus" and (m := _BUSES.search(val)):
            dev.secondary_bus, dev.subordinate_bus = int(m.group(1), 16), int(m.group(2), 16)
        elif line.startswith("Kernel driver in use:"):
            dev.kernel_driver = val.strip()
        elif key == "DevCap":
            dev.devcap_mps = _bytes(val)
        elif key == "DevCtl":
            section = "DevCtl"
        elif section == "DevCtl" and "MaxReadReq" in line:
            m = _DEVCTL_SIZES.search(line)
            if m:
                dev.devctl_mps, dev.devctl_mrrs = int(m.group(1)), int(m.group(2))
                dev.lines["devctl_mrrs"] = dev.lines["devctl_mps"] = at
            section = ""
        elif key == "LnkCap":
            dev.lnkcap_speed, dev.lnkcap_width = _speed(val), _width(val)
        elif key == "LnkCtl":
            m = _ASPM.search(val)
            dev.aspm_ctl = m.group(1).strip() if m else None
        elif key == "LnkSta":
            dev.lnksta_speed, dev.lnksta_width = _speed(val), _width(val)
            dev.speed_unknown = "Speed unknown" in val
            dev.speed_downgraded = bool(
                re.search(r"GT/s(?: \([^)]*\))? ?\(downgraded\)|Speed unknown \(downgraded\)", val)
            )
            dev.width_downgraded = bool(re.search(r"Width x\d+ \(downgraded\)", val))
        elif key == "DevCap2":
            section = "DevCap2"
            if "10BitTagReq" in val:
                dev.tag10_req_cap = "10BitTagReq+" in val
        elif key == "DevCtl2":
            section = "DevCtl2"
            if "10BitTagReq" in val:
                dev.tag10_req_en = "10BitTagReq+" in val
        elif key == "ACSCtl":
            dev.acs_ctl = acs_flags(line)
            dev.lines["acs_ctl"] = at
        elif key == "UESta":
            dev.ue_status = [k for k, v in acs_flags(line).items() if v]
        elif key == "CESta":
            dev.ce_status = [k for k, v in acs_flags(line).items() if v]
        elif section == "DevCap2" and "10BitTagReq" in line:
            dev.tag10_req_cap = "10BitTagReq+" in line
        elif section == "DevCtl2" and "10BitTagReq" in line:
            dev.tag10_req_en = "10BitTagReq+" in line
        elif section.startswith("Capabilities:") and "Express" in section and ("RlxdOrd" in line):
            dev.relaxed_ordering = "RlxdOrd+" in line
        elif (
            "Resizable BAR" in section
            and section.startswith("Capabilities:")
            and "Physical" in section
        ):
            m = _REBAR.match(line)
            if m:
                dev.rebar_current[int(m.group(1))] = int(m.group(2)) * _UNITS[m.group(3)]
        if section == "DevCtl" and "RlxdOrd" in line:
            dev.relaxed_ordering = "RlxdOrd+" in line
    return dev


@parse_once
def parse_lspci_vvv(text: str) -> list[PciDevice]:
    """`lspci -vvv` (or `-vvnn`, with or without `-D`) -> one PciDevice per block.

    Parsed once per text (parse_once): the pcie, firmware and nccl probes, the ACS combiner and the fleet
    comparison read it, and a 10 MB output takes ~0.5 s.

        01:00.0 VGA compatible controller: NVIDIA Corporation AD102GL [RTX 6000 Ada Generation] (rev a1)
                DevCtl: CorrErr+ NonFatalErr+ FatalErr+ UnsupReq-
                        MaxPayload 256 bytes, MaxReadReq 512 bytes
                LnkSta: Speed 2.5GT/s (downgraded), Width x16
    -> [PciDevice(bdf="0000:01:00.0", devctl_mps=256, devctl_mrrs=512, lnksta_speed=2.5, speed_downgraded=True, ...)]

    Blocks are recognised by a BDF at column 0; lines before the first block are ignored.
    """
    return _parse_lspci_vvv(text)


def _parse_lspci_vvv(text: str) -> list[PciDevice]:
    out: list[PciDevice] = []
    header: re.Match[str] | None = None
    body: list[str] = []
    start = 0
    for n, line in enumerate((text or "").split("\n")):
        m = _HEADER.match(line) if line[:1].isalnum() else None  # a device line starts with its BDF
        if m:
            if header is not None:
                out.append(_parse_block(header, body, start))
            header, body, start = m, [], n + 1
        elif header is not None:
            body.append(line)
    if header is not None:
        out.append(_parse_block(header, body, start))
    return out


@dataclass(frozen=True)
class TreeNode:
    """One device of the PCI tree: its address, its parent bridge and its name."""

    bdf: str
    parent: str | None
    name: str


_TREE_TOKEN = re.compile(
    r"\[(?P<dom>[0-9a-f]{4}):(?P<bus>[0-9a-f]{2})\]"
    r"|(?P<dev>[0-9a-f]{2}\.[0-7])(?:-\[(?P<sec>[0-9a-f]{2})(?:-[0-9a-f]{2})?\])?(?P<name>\s{2}.*)?"
)


@parse_once
def parse_lspci_tree(text: str) -> dict[str, TreeNode]:
    """`lspci -tv` -> {BDF: TreeNode(parent BDF or None for a root-bus device, name)}.

        -+-[0000:00]-+-00.0  Advanced Micro Devices, Inc. [AMD] Device 14a4
         |           +-01.1-[01]--+-00.0  NVIDIA Corporation AD102GL [RTX 6000 Ada Generation]
         |           |            \\-00.1  NVIDIA Corporation AD102 High Definition Audio Controller
    -> {"0000:00:01.1": TreeNode(parent=None, ...), "0000:01:00.0": TreeNode(parent="0000:00:01.1", ...), ...}

    lspci aligns siblings in one column, so a device's bus and parent are those last announced
    for its column (by a `[dddd:bb]` root or a bridge's `-[bb]` secondary bus to its left).
    """
    nodes: dict[str, TreeNode] = {}
    ctx: dict[int, tuple[str, str, str | None]] = {}  # column -> (domain, bus, parent bdf)
    domain = "0000"
    for line in (text or "").splitlines():
        pending: tuple[str, str, str | None] | None = None
        for m in _TREE_TOKEN.finditer(line):
            if m.group("dom"):
                domain = m.group("dom")
                pending = (domain, m.group("bus"), None)
                continue
            col = m.start("dev")
            if pending is not None:
                ctx[col] = pending
                pending = None
            if col not in ctx:
                # a bare "-[0000:00]-" less tree (single domain without the root token)
                ctx[col] = (domain, "00", None)
            dom, bus, parent = ctx[col]
            bdf = f"{dom}:{bus}:{m.group('dev')}"
            nodes[bdf] = TreeNode(bdf=bdf, parent=parent, name=(m.group("name") or "").strip())
            if m.group("sec"):
                pending = (dom, m.group("sec"), bdf)
    return nodes


def bus_tree(devices: list[PciDevice]) -> dict[str, TreeNode]:
    """The PCI tree from `lspci -vvv` alone, for when `lspci -tv` is missing or failed.

        00:01.1 PCI bridge: ...                      (root port)
                Bus: primary=00, secondary=01, subordinate=06, sec-latency=0
        01:00.0 PCI bridge: ... PEX890xx ...         (switch upstream port)
                Bus: primary=01, secondary=02, subordinate=06, sec-latency=0
    -> {"0000:01:00.0": TreeNode(parent="0000:00:01.1", ...), ...}: a device's parent is the bridge (same domain)
    whose secondary bus is the device's bus; a device on a bus no bridge leads to is on a root bus (parent None).
    """
    below: dict[tuple[str, int], str] = {}
    for d in devices:
        if d.secondary_bus is not None:
            below[(d.bdf[:4], d.secondary_bus)] = d.bdf
    nodes: dict[str, TreeNode] = {}
    for d in devices:
        parent = below.get((d.bdf[:4], int(d.bdf[5:7], 16)))
        nodes[d.bdf] = TreeNode(
            bdf=d.bdf, parent=parent if parent != d.bdf else None, name=d.description
        )
    return nodes


def tree_path(nodes: dict[str, TreeNode], bdf: str) -> list[str]:
    """Ancestors of `bdf` from its parent bridge up to the root-bus port (empty when unknown)."""
    path: list[str] = []
    cur = nodes.get(bdf)
    while cur is not None and cur.parent and cur.parent not in path:
        path.append(cur.parent)
        cur = nodes.get(cur.parent)
    return path
