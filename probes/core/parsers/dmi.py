"""Parser for `dmidecode` text (owner: the firmware probe).

Public API:

* `parse_dmidecode(text) -> list[DmiRecord]`    every `Handle ..., DMI type N` record
* `bios_info(records) -> dict[str, str]`         type 0 (Vendor, Version, Release Date) + type 1/2 names
* `memory_devices(records) -> list[MemoryDevice]` type 17, populated or not (`is_system_dimm` drops BIOS flash)
* `slot_place(locator, bank) -> SlotPlace`        which socket and channel a slot belongs to

Pure; never raises (a record without a recognisable header is skipped). Works with tab or space
indentation (some captures were pasted with spaces).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpuaudit.probes.core.parsing import parse_once, size_bytes

_HANDLE = re.compile(r"^Handle 0x[0-9A-Fa-f]+, DMI type (\d+)")


@dataclass
class DmiRecord:
    """One `dmidecode` record (a Handle block): its type, title and fields."""

    type: int
    title: str = ""
    fields: dict[str, str] = field(default_factory=dict)


@parse_once
def parse_dmidecode(text: str) -> list[DmiRecord]:
    """`dmidecode [-t ...]` -> records.

        Handle 0x0000, DMI type 0, 26 bytes
        BIOS Information
                Vendor: American Megatrends International, LLC.
                Version: 1.0
    -> [DmiRecord(type=0, title="BIOS Information", fields={"Vendor": "American Megatrends ...", "Version": "1.0"})]

    Only first-level `Key: value` lines are kept (list items such as Characteristics are skipped).
    """
    out: list[DmiRecord] = []
    cur: DmiRecord | None = None
    indent: int | None = None
    for line in (text or "").splitlines():
        # most lines are not a handle: the regex only for those that can be (issue 30)
        m = _HANDLE.match(line) if line.startswith("Handle ") else None
        if m:
            cur = DmiRecord(type=int(m.group(1)))
            out.append(cur)
            indent = None
            continue
        if cur is None or not line.strip():
            continue
        if not cur.title and not line[0].isspace():
            cur.title = line.strip()
            continue
        lead = len(line) - len(line.lstrip())
        expanded = len(line[:lead].expandtabs(8))
        if indent is None:
            indent = expanded
        if expanded != indent or ":" not in line:
            continue
        k, v = line.strip().split(":", 1)
        cur.fields.setdefault(k.strip(), v.strip())
    return out


def bios_info(records: list[DmiRecord]) -> dict[str, str]:
    """BIOS vendor/version/date (type 0), system and board product (types 1 and 2)."""
    out: dict[str, str] = {}
    for r in records:
        if r.type == 0:
            for k in ("Vendor", "Version", "Release Date", "BIOS Revision", "Firmware Revision"):
                if k in r.fields:
                    out.setdefault(f"bios_{k.lower().replace(' ', '_')}", r.fields[k])
        elif r.type == 1:
            for k in ("Manufacturer", "Product Name"):
                if k in r.fields:
                    out.setdefault(f"system_{k.lower().replace(' ', '_')}", r.fields[k])
        elif r.type == 2:
            for k in ("Manufacturer", "Product Name", "Version"):
                if k in r.fields:
                    out.setdefault(f"board_{k.lower().replace(' ', '_')}", r.fields[k])
    return out


@dataclass(frozen=True)
class MemoryDevice:
    """One DIMM slot (dmidecode type 17): locator, size, speeds, type and bank."""

    locator: str
    size_mb: int | None
    """None: "No Module Installed" (an empty slot)."""
    speed_mts: int | None = None
    configured_mts: int | None = None
    type: str | None = None
    bank: str | None = None


def _size_mb(v: str) -> int | None:
    """ "32 GB" -> 32768; "No Module Installed" -> None."""
    b = size_bytes(v)
    return b // 2**20 if b is not None else None


def _mts(v: str | None) -> int | None:
    m = re.match(r"(\d+)\s*(MT/s|MHz)", v or "")
    return int(m.group(1)) if m else None


NON_DRAM_TYPES = frozenset({"Flash", "ROM", "EPROM", "EEPROM", "FEPROM"})
"""Type 17 records that are not system DIMMs: Supermicro X8 boards list the 4 MB BIOS flash chip ("Locator: BIOS",
"Type: Flash") as a memory device of a "Use: Flash Memory" array."""


def is_system_dimm(d: MemoryDevice) -> bool:
    return d.type not in NON_DRAM_TYPES


def memory_devices(records: list[DmiRecord]) -> list[MemoryDevice]:
    """Type 17 records -> MemoryDevice (size None for empty slots)."""
    out = []
    for r in records:
        if r.type != 17:
            continue
        f = r.fields
        out.append(
            MemoryDevice(
                locator=f.get("Locator", "?"),
                size_mb=_size_mb(f.get("Size", "")),
                speed_mts=_mts(f.get("Speed")),
                configured_mts=_mts(
                    f.get("Configured Memory Speed") or f.get("Configured Clock Speed")
                ),
                type=f.get("Type"),
                bank=f.get("Bank Locator"),
            )
        )
    return out


# --------------------------------------------------------------------------------------------------
# Which socket and memory channel a slot belongs to, from its Locator / Bank Locator strings.
# Boards spell it many ways (linuxhw/DMI server dumps): "P1-DIMMA1" (Supermicro), "CPU1_DIMM_A1",
# "PROC 1 DIMM 3" (HPE), "DIMM_P0_A1" (Gigabyte), "DIMM 0" + bank "P0 CHANNEL A" (AMD reference/ASRock),
# "DIMM_A1" + bank "NODE 0 CHANNEL 0 DIMM 0" (Intel S2600), bank "P0_Node0_Channel0_Dimm0" (Intel Xeon SP),
# Supermicro X8 "P1-DIMM2B" (channel 2, slot B), Dell "A1".."B12" (the letter is the socket).

_SOCKET_RES = (  # the locator first: boards fill the bank locator only for populated slots (Supermicro X11)
    ("locator", re.compile(r"^P(\d+)[-_ ]")),
    ("locator", re.compile(r"\bCPU[_ ]?(\d+)", re.I)),
    ("locator", re.compile(r"\bPROC(?:ESSOR)?\s*(\d+)", re.I)),
    ("locator", re.compile(r"_P(\d+)_")),
    ("locator", re.compile(r"^Node(\d+)[_-]", re.I)),
    ("bank", re.compile(r"^P(\d+)_Node\d+_Channel")),
    ("bank", re.compile(r"^P(\d+)\s+CHANNEL\b", re.I)),
    ("bank", re.compile(r"^NODE\s+(\d+)\s+CHANNEL\b", re.I)),
    ("bank", re.compile(r"\bCPU[_ ]?(\d+)", re.I)),
)
_CHANNEL_RES = (
    ("locator", re.compile(r"_([A-P])\d+$")),
    ("locator", re.compile(r"DIMM[_ -]?([A-P])\d", re.I)),
    ("locator", re.compile(r"-DIMM(\d)[A-F]$")),  # Supermicro X8: P1-DIMM2B = channel 2, slot B
    ("locator", re.compile(r"Channel[_ -]?([A-P])\b", re.I)),
    ("locator", re.compile(r"^CH([A-P])[_ -]")),
    ("bank", re.compile(r"_Node(\d+)_Channel(\d+)_")),
    ("bank", re.compile(r"\bCHANNEL\s+([A-Z0-9]+)\b", re.I)),
)
_DELL = re.compile(r"^([A-H])(\d{1,2})$")


@dataclass(frozen=True)
class SlotPlace:
    """Where a DIMM slot sits: its socket and channel as the board's strings say."""

    socket: str | None
    """Socket label as the board spells it ("1", "0", "B"); None when the strings don't say."""
    channel: str | None
    """Channel label within the socket ("A", "0.2"); None when the strings don't say."""


def slot_place(locator: str, bank: str | None) -> SlotPlace:
    """Socket and channel of one DIMM slot from its Locator and Bank Locator.

    slot_place("P2-DIMMA1", "P1_Node1_Channel0_Dimm0") -> SlotPlace(socket="2", channel="A")
    slot_place("DIMM 0", "P0 CHANNEL A")               -> SlotPlace(socket="0", channel="A")
    slot_place("B3", "Not Specified")                   -> SlotPlace(socket="B", channel=None)   # Dell
    """
    fields = {"locator": (locator or "").strip(), "bank": (bank or "").strip()}
    socket = channel = None
    for where, rx in _SOCKET_RES:
        if m := rx.search(fields[where]):
            socket = m.group(1)
            break
    for where, rx in _CHANNEL_RES:
        if m := rx.search(fields[where]):
            channel = ".".join(m.groups()).upper()
            break
    if socket is None and (m := _DELL.match(fields["locator"])):
        socket = m.group(1)
    return SlotPlace(socket=socket, channel=channel)
