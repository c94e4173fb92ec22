"""BIOS settings read from the BMC (Redfish `Bios` resource): normalise the raw attributes through the map
(bios_map.py), keep every other name raw, and compare the pending settings object with the current values.

Pure: text in, facts out; never raises (odd JSON makes the source unusable, noted in problems).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from gpuaudit.probes.core.parsers.lspci import parse_lspci_vvv
from gpuaudit.probes.core.record import Record
from gpuaudit.probes.firmware.bios_map import (
    GENERIC_VENDORS,
    ROWS,
    SETTINGS,
    VENDOR_OF_MANUFACTURER,
    MapRow,
)

SUPERMICRO_SUFFIX = re.compile(r"_[0-9A-F]{4}$")


class BiosSetting(Record, frozen=True):
    """One normalised setting, beside the raw name and value it was read from."""

    value: str | None
    """Normalised value (enabled/disabled/auto, NPS1, power, x16, ...); None: the row could not read this raw value."""
    raw_name: str
    raw_value: str
    source: str


def text_of(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


# --------------------------------------------------------------------------- value readers


def _onoff(v: str) -> str | None:
    low = v.strip().lower().replace("_", " ")
    if low in ("1", "true", "on", "yes"):
        return "enabled"
    if low in ("0", "false", "off", "no"):
        return "disabled"
    for word, out in (
        ("disabled", "disabled"),
        ("disable", "disabled"),
        ("enabled", "enabled"),
        ("enable", "enabled"),
        ("auto", "auto"),
    ):
        if low.endswith(word):  # "Force Enable", "CbsCmnGnbSmuDfCstatesRsDisabled"
            return out
    return None


def _nps(v: str) -> str | None:
    low = v.strip().lower()
    if low.endswith("auto"):
        return "auto"
    if m := re.search(r"nps\s*([0-9])", low):
        return f"NPS{m.group(1)}"
    if re.fullmatch(r"[0-9]", low):
        return f"NPS{low}"
    for word, n in (("one", 1), ("two", 2), ("four", 4)):
        if low.startswith(word):
            return f"NPS{n}"
    return None


def _determinism(v: str) -> str | None:
    low = v.strip().lower()
    if low.endswith("auto"):
        return "auto"
    if "power" in low:
        return "power"
    if "perf" in low:
        return "performance"
    return None


def _width(v: str) -> str | None:
    low = v.strip().lower()
    if low.endswith("auto"):
        return "auto"
    m = re.search(r"x\s*([0-9]+)", low)
    return f"x{m.group(1)}" if m else None


def _pstate(v: str) -> str | None:
    low = v.strip().lower()
    if low.endswith("auto"):
        return "auto"
    m = re.search(r"p\s*([0-9])$", low)
    return f"P{m.group(1)}" if m else None


def _number(v: str) -> str | None:
    return v.strip() if re.fullmatch(r"-?[0-9]+(\.[0-9]+)?", v.strip()) else None


def _raw(v: str) -> str | None:
    return v


READERS: dict[str, Callable[[str], str | None]] = {
    "onoff": _onoff,
    "nps": _nps,
    "determinism": _determinism,
    "width": _width,
    "pstate": _pstate,
    "number": _number,
    "raw": _raw,
}


def read_value(row: MapRow, raw: str) -> str | None:
    if row.kind == "table":
        return next((n for k, n in row.table.items() if k.lower() == raw.strip().lower()), None)
    return READERS[row.kind](raw)


# --------------------------------------------------------------------------- matching


def vendor_of(manufacturer: str | None) -> str | None:
    low = (manufacturer or "").lower()
    return next((v for key, v in VENDOR_OF_MANUFACTURER if key in low), None)


def base_name(name: str) -> str:
    """Supermicro's `Above4GDecoding_0041` -> `Above4GDecoding` (the suffix changes between BIOS builds)."""
    return SUPERMICRO_SUFFIX.sub("", name)


def _index(
    rows: tuple[MapRow, ...], supermicro_only: bool
) -> dict[str, tuple[tuple[int, MapRow], ...]]:
    """attribute -> (position in ROWS, row), in ROWS order (built once: row_for runs per attribute per host)."""
    index: dict[str, list[tuple[int, MapRow]]] = {}
    for i, row in enumerate(rows):
        if not supermicro_only or row.vendor == "supermicro":
            index.setdefault(row.attribute, []).append((i, row))
    return {k: tuple(v) for k, v in index.items()}


_BY_ATTRIBUTE = _index(ROWS, supermicro_only=False)
_SUPERMICRO_BY_ATTRIBUTE = _index(ROWS, supermicro_only=True)


def row_for(name: str, vendor: str | None) -> MapRow | None:
    """The map row for a raw attribute name, for this BMC's vendor family (None: every family's rows apply).

    The first row of ROWS that matches wins: the attribute itself, or (Supermicro rows) its base name.
    """
    candidates = _BY_ATTRIBUTE.get(name, ())
    base = base_name(name)
    if base != name:  # else its rows are candidates already
        suffixed = _SUPERMICRO_BY_ATTRIBUTE.get(base, ())
        if suffixed:
            candidates = tuple(sorted(dict([*candidates, *suffixed]).items(), key=lambda c: c[0]))
    for _, row in candidates:
        if vendor is None or row.vendor in GENERIC_VENDORS or row.vendor == vendor:
            return row
    return None


def normalise(
    attributes: Mapping[str, Any], vendor: str | None
) -> tuple[dict[str, BiosSetting], dict[str, str]]:
    """(setting -> BiosSetting, unmapped raw name -> raw value). The first row that matches a setting wins."""
    settings: dict[str, BiosSetting] = {}
    unmapped: dict[str, str] = {}
    for name, value in attributes.items():
        raw = text_of(value)
        row = row_for(name, vendor)
        if row is None:
            unmapped[name] = raw
            continue
        if row.setting in settings:
            unmapped[name] = raw
            continue
        settings[row.setting] = BiosSetting(
            value=read_value(row, raw), raw_name=name, raw_value=raw, source=row.source
        )
    return settings, unmapped


def describe(s: BiosSetting) -> str:
    """`df_cstates: disabled (DataFabricCStateEnable=Disabled)`-style text of one setting."""
    shown = s.value if s.value is not None else f"unread value {s.raw_value!r}"
    return f"{shown} ({s.raw_name}={s.raw_value})"


def label(setting: str) -> str:
    return SETTINGS.get(setting, setting)


# --------------------------------------------------------------------------- readers for extract


def _json_object(t: str) -> dict[str, Any]:
    doc = json.loads(t)
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    return doc


def read_system(t: str, d: dict[str, Any], p: dict[str, str]) -> None:
    """redfish_system: the ComputerSystem's identity as the BMC states it."""
    doc = _json_object(t)
    summary = doc.get("ProcessorSummary")
    proc: dict[str, Any] = summary if isinstance(summary, dict) else {}
    d["bmc_system"] = {
        k: text_of(v).strip()
        for k, v in (
            ("manufacturer", doc.get("Manufacturer")),
            ("model", doc.get("Model")),
            ("bios_version", doc.get("BiosVersion")),
            ("cpu_model", proc.get("Model")),
            ("cpu_count", proc.get("Count")),
        )
        if v is not None
    }


def read_bios(t: str, d: dict[str, Any], p: dict[str, str]) -> None:
    """redfish_bios: Attributes -> normalised settings + unmapped names. No Attributes (factory-default BMCs,
    Redfish-Tacklebox #185) is a problem of the source, not an empty answer."""
    doc = _json_object(t)
    attrs = doc.get("Attributes")
    if not isinstance(attrs, dict) or not attrs:
        p["redfish_bios"] = (
            "the Bios resource has no Attributes (the BMC has not read the BIOS settings yet: a "
            "factory-default BMC fills them after the host's next POST)"
        )
        return
    vendor = vendor_of((d.get("bmc_system") or {}).get("manufacturer"))
    settings, unmapped = normalise(attrs, vendor)
    d["_bios_raw"] = {k: text_of(v) for k, v in attrs.items()}  # for read_pending; not a fact
    d["bios_settings"] = settings
    d["bios_unmapped"] = sorted(unmapped)
    d["bios_vendor_map"] = vendor or "any"
    if isinstance(doc.get("AttributeRegistry"), str):
        d["bios_registry"] = doc["AttributeRegistry"]


def read_pending(t: str, d: dict[str, Any], p: dict[str, str]) -> None:
    """redfish_bios_pending: the SettingsObject's Attributes (what a reboot will apply); compared later."""
    doc = _json_object(t)
    attrs = doc.get("Attributes")
    if attrs is not None and not isinstance(attrs, dict):
        p["redfish_bios_pending"] = "non-compliant settings object: Attributes is not an object"
        return
    current = d.get("_bios_raw")
    if current is None:
        p["redfish_bios_pending"] = (
            "the current settings (redfish_bios) are unusable: nothing to compare"
        )
        return
    pending = {k: text_of(v) for k, v in (attrs or {}).items()}
    d["bios_pending"] = {k: list(v) for k, v in pending_changes(current, pending).items()}


def read_lspci_aspm(t: str, d: dict[str, Any], p: dict[str, str]) -> None:
    """lspci_vvv: how many PCIe links have ASPM on or off in LnkCtl (what the OS runs, beside the BIOS setting)."""
    counts: dict[str, int] = {}
    for dev in parse_lspci_vvv(t):
        if dev.aspm_ctl:
            counts[dev.aspm_ctl] = counts.get(dev.aspm_ctl, 0) + 1
    d["link_aspm"] = counts


def pending_changes(
    current: Mapping[str, str], pending: Mapping[str, str]
) -> dict[str, tuple[str, str]]:
    """name -> (current, pending) for each pending attribute whose value differs (a name absent from the current
    set counts: '(absent)')."""
    return {
        k: (current.get(k, "(absent)"), v)
        for k, v in sorted(pending.items())
        if current.get(k) != v
    }
