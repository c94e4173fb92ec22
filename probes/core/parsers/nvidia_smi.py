"""Parsers for `nvidia-smi` outputs, shared by several probes (owner: the driver/nvlink probes).

Stable public API (other probes import these; names and return shapes do not change):

* `detect_smi_error(text) -> str | None`        an error banner instead of data, canonical message
* `smi_error_kind(text) -> str | None`          the same as a short key (`SMI_ERR_*` constants)
* `parse_query_gpu_csv(text, fields=None) -> list[dict[str, str | None]]`
                                                `--query-gpu=... --format=csv[,noheader][,nounits]`
* `csv_value_missing(value) -> bool`            "[N/A]", "[Not Supported]", "[Unknown Error]", ...
* `parse_smi_table(text) -> SmiTable`           the default `nvidia-smi` table (header + GPU rows)
* `parse_smi_q(text) -> list[dict]`             `nvidia-smi -q` text: one nested dict per GPU
* `parse_smi_q_header(text) -> dict[str, str]`  `nvidia-smi -q` lines before the first GPU
* `parse_smi_q_xml(text) -> SmiXml`             `nvidia-smi -q -x`
* `parse_topo_m(text) -> TopoMatrix`            `nvidia-smi topo -m`
* `parse_nvlink_s(text) -> dict[int, list[NvLink]]`  `nvidia-smi nvlink -s`

Parsers are pure; they raise `probes.core.errors.ParseError` on output they cannot read, never
anything else, and return empty results for empty input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from probes.core.errors import ParseError

# --------------------------------------------------------------------------- error banners

SMI_ERR_MISMATCH = "driver_library_mismatch"
SMI_ERR_NO_DRIVER = "no_driver"
SMI_ERR_NO_DEVICES = "no_devices"
SMI_ERR_DEVICE_HANDLE = "device_handle"
SMI_ERR_NVML_INIT = "nvml_init"
SMI_ERR_NO_PERMISSION = "no_permission"
SMI_ERR_NOT_FOUND = "not_found"

# (kind, regex) in priority order; matched case-insensitively against the whole output.
_ERROR_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (SMI_ERR_MISMATCH, re.compile(r"Driver/library version mismatch", re.I)),
    (SMI_ERR_NO_DRIVER, re.compile(r"couldn't communicate with the NVIDIA driver", re.I)),
    (SMI_ERR_NO_DEVICES, re.compile(r"^\s*No devices were found", re.I | re.M)),
    (SMI_ERR_DEVICE_HANDLE, re.compile(r"Unable to determine the device handle for GPU", re.I)),
    (SMI_ERR_NO_PERMISSION, re.compile(r"Failed to initialize NVML: Insufficient Permissions", re.I)),
    (SMI_ERR_NVML_INIT, re.compile(r"Failed to initialize NVML", re.I)),
    (SMI_ERR_NOT_FOUND, re.compile(r"nvidia-smi: (?:command )?not found", re.I)),
)


def smi_error_kind(text: str) -> str | None:
    """The kind of nvidia-smi error banner in `text` (an `SMI_ERR_*` constant), or None.

        Failed to initialize NVML: Driver/library version mismatch
        NVML library version: 570.124
    -> "driver_library_mismatch"
    """
    for kind, pat in _ERROR_PATTERNS:
        if pat.search(text or ""):
            return kind
    return None


def detect_smi_error(text: str) -> str | None:
    """The error banner line nvidia-smi printed instead of data, or None when there is none.

        NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure ...
    -> that first line. Pass stdout + stderr: nvidia-smi prints banners on stdout.
    """
    for _kind, pat in _ERROR_PATTERNS:
        m = pat.search(text or "")
        if m:
            start = text.rfind("\n", 0, m.start()) + 1
            end = text.find("\n", m.end())
            return text[start:end if end != -1 else len(text)].strip()
    return None


def nvml_library_version(text: str) -> str | None:
    """"NVML library version: 570.124" (printed after a mismatch banner) -> "570.124"."""
    m = re.search(r"NVML library version:\s*([0-9][0-9.]*)", text or "")
    return m.group(1) if m else None


# --------------------------------------------------------------------------- --query-gpu csv

_MISSING = {"", "n/a", "[n/a]", "[not supported]", "not supported", "[unknown error]", "[insufficient permissions]",
            "[gpu is lost]", "[requested functionality has been deprecated]"}
_HEADER_UNIT = re.compile(r"\s*\[([^\]]*)\]\s*$")


def csv_value_missing(value: str | None) -> bool:
    """True for the tokens nvidia-smi prints instead of a value ("[N/A]", "[Not Supported]", ...)."""
    return value is None or value.strip().lower() in _MISSING


def _field_key(name: str) -> str:
    # `gpu_name` and `name` are aliases; `pci.bus_id` and `gpu_bus_id` too.
    return {"gpu_name": "name", "gpu_bus_id": "pci.bus_id", "gpu_uuid": "uuid"}.get(name, name)


def parse_query_gpu_csv(text: str, fields: list[str] | tuple[str, ...] | None = None) -> list[dict[str, str | None]]:
    """`nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]` -> one dict per GPU row.

        index, name, memory.total [MiB], compute_cap, driver_version
        0, NVIDIA A100-SXM4-80GB, 81920 MiB, 8.0, 580.105.08
    -> [{"index": "0", "name": "NVIDIA A100-SXM4-80GB", "memory.total": "81920", "compute_cap": "8.0", ...}]

    A header line (detected by its field names) is used when present, else `fields` names the
    columns (noheader). Units announced in the header (`[MiB]`) are stripped from values; tokens
    like "[N/A]" become None. Raises ParseError on an error banner or a row of the wrong width.
    """
    if detect_smi_error(text):
        raise ParseError(f"nvidia-smi error: {detect_smi_error(text)}")
    lines = [ln for ln in (text or "").splitlines() if ln.strip()]
    if not lines:
        return []
    wanted = [_field_key(f.strip()) for f in fields] if fields else None
    head_cells = [c.strip() for c in lines[0].split(",")]
    head_names = [_field_key(_HEADER_UNIT.sub("", c).strip()) for c in head_cells]
    # A header is all field-name-shaped cells ("memory.total [MiB]"); data rows never are.
    is_header = all(re.fullmatch(r"[a-z_][a-z0-9_.]*", n or "-") for n in head_names)
    units: list[str | None]
    if is_header:
        names = head_names
        units = [(m.group(1) if (m := _HEADER_UNIT.search(c)) else None) for c in head_cells]
        rows = lines[1:]
    elif wanted is not None:
        names, units, rows = wanted, [None] * len(wanted), lines
    else:
        raise ParseError(f"no header and no field list: {lines[0][:120]!r}")
    out: list[dict[str, str | None]] = []
    for line in rows:
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(names):
            raise ParseError(f"row has {len(cells)} fields, expected {len(names)}: {line[:120]!r}")
        row: dict[str, str | None] = {}
        for name, unit, cell in zip(names, units, cells):
            if csv_value_missing(cell):
                row[name] = None
                continue
            if unit and cell.endswith(" " + unit):
                cell = cell[: -len(unit) - 1].strip()
            row[name] = cell
        out.append(row)
    return out
