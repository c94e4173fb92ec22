"""Parsers for `nvidia-smi` outputs, shared by several probes (owner: the driver/nvlink probes).

Stable public API (other probes import these; names and return shapes do not change):

* `detect_smi_error(text) -> str | None`        an error banner instead of data, canonical message
* `parse_handle_errors(text) -> list[HandleError]`  GPUs nvidia-smi could not open (bus id, reason: lost, Unknown Error)
* `smi_error_kind(text) -> str | None`          the same as a short key (`SMI_ERR_*` constants)
* `parse_query_gpu_csv(text, fields=None) -> list[dict[str, str | None]]`
                                                `--query-gpu=... --format=csv[,noheader][,nounits]`
* `csv_value_missing(value) -> bool`            "[N/A]", "[Not Supported]", "[Unknown Error]", ...
* `csv_value_error(value)` / `csv_row_errors(row)`  only the "could not read" tokens ("[Unknown Error]", ...)
* `parse_smi_table(text) -> SmiTable`           the default `nvidia-smi` table (header + GPU rows)
* `parse_smi_q(text) -> list[dict]`             `nvidia-smi -q` text: one nested dict per GPU
* `parse_smi_q_header(text) -> dict[str, str]`  `nvidia-smi -q` lines before the first GPU
* `parse_smi_q_xml(text) -> SmiXml`             `nvidia-smi -q -x`: typed per-GPU records (the primary per-GPU source)
* `strip_escapes(text) -> str`                  drop SGR/CSI sequences (every text parser here calls it)
* `parse_topo_m(text) -> TopoMatrix`            `nvidia-smi topo -m`
* `parse_nvlink_s(text) -> dict[int, list[NvLink]]`  `nvidia-smi nvlink -s`
* `SMI_GPU_IDS` / `parse_smi_gpu_ids(text) -> list[SmiGpuId]`  index, UUID and bus id of each GPU (numa, container)

Parsers are pure; they raise `probes.core.errors.ParseError` on output they cannot read, never
anything else, and return empty results for empty input.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.parsers.lines import (
    SMI_GPU_IDS as SMI_GPU_IDS,  # declared there, read here
)
from gpuaudit.probes.core.parsers.system import normalize_bdf
from gpuaudit.probes.core.parsing import parse_once

# --------------------------------------------------------------------------- terminal escapes

_CSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
_ORPHAN_SGR = re.compile(r"\[\d{1,3}(?:;\d{1,3})*m")
"""An SGR sequence whose ESC was lost on the way (a paste into a GitHub issue keeps "[4m...[0m")."""


def strip_escapes(text: str) -> str:
    """Drop terminal control sequences (CSI/SGR) nvidia-smi writes even into files.

    Drivers 590/595 underline the `topo -m` header row whatever stdout is:
        \t\x1b[4mGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m
    Every text parser here reads through this first; "[4m"/"[0m" left by a lost ESC go too.
    """
    if not text:
        return ""
    if "\x1b" in text:
        text = _CSI.sub("", text)
    return _ORPHAN_SGR.sub("", text) if "m" in text and "[" in text else text


# --------------------------------------------------------------------------- error banners

SMI_ERR_MISMATCH = "driver_library_mismatch"
SMI_ERR_NO_DRIVER = "no_driver"
SMI_ERR_NO_DEVICES = "no_devices"
SMI_ERR_DEVICE_HANDLE = "device_handle"
SMI_ERR_GPU_LOST = "gpu_lost"
SMI_ERR_NVML_INIT = "nvml_init"
SMI_ERR_NO_PERMISSION = "no_permission"
SMI_ERR_NOT_FOUND = "not_found"

# In priority order; matched case-insensitively against the whole output.
_ERROR_PATTERNS: tuple[tuple[str, tuple[str, ...], re.Pattern[str]], ...] = (
    # (kind, lower-case literals one of which every match contains, pattern)
    (
        SMI_ERR_MISMATCH,
        ("driver/library version mismatch",),
        re.compile(r"Driver/library version mismatch", re.I),
    ),
    (
        SMI_ERR_NO_DRIVER,
        ("couldn't communicate with the nvidia driver",),
        re.compile(r"couldn't communicate with the NVIDIA driver", re.I),
    ),
    (
        SMI_ERR_NO_DEVICES,
        ("no devices were found",),
        re.compile(r"^\s*No devices were found", re.I | re.M),
    ),
    (
        SMI_ERR_GPU_LOST,
        ("gpu is lost", "has fallen off the bus"),
        re.compile(r"(?<!\[)GPU is lost(?!\])|has fallen off the bus", re.I),
    ),  # not a "[GPU is lost]" cell
    (
        SMI_ERR_DEVICE_HANDLE,
        ("unable to determine the device handle for gpu",),
        re.compile(r"Unable to determine the device handle for GPU", re.I),
    ),
    (
        SMI_ERR_NO_PERMISSION,
        ("failed to initialize nvml: insufficient permissions",),
        re.compile(r"Failed to initialize NVML: Insufficient Permissions", re.I),
    ),
    (
        SMI_ERR_NVML_INIT,
        ("failed to initialize nvml",),
        re.compile(r"Failed to initialize NVML", re.I),
    ),
    (SMI_ERR_NOT_FOUND, ("nvidia-smi: ",), re.compile(r"nvidia-smi: (?:command )?not found", re.I)),
)


@parse_once
def _error_span(text: str) -> tuple[str, int, int] | None:
    """The first error pattern that matches: (its kind, the match's start and end).

    A case-insensitive regex over a 50 MB output takes seconds, and every probe reading that output asks: a
    pattern runs only where one of its literals occurs (str.find on one lower-cased copy is ~100× faster).
    Under the parse cache (issue 30): the extracts of several probes, and each driver extract's banner pass, ask
    of the same outputs; each text is scanned once per audit.
    """
    if not text:
        return None
    low = text.lower()
    for kind, needles, pat in _ERROR_PATTERNS:
        if any(n in low for n in needles):
            m = pat.search(text)
            if m:
                return kind, m.start(), m.end()
    return None


def smi_error_kind(text: str) -> str | None:
    """The kind of nvidia-smi error banner in `text` (an `SMI_ERR_*` constant), or None.

        Failed to initialize NVML: Driver/library version mismatch
        NVML library version: 570.124
    -> "driver_library_mismatch"
    """
    found = _error_span(text)
    return found[0] if found else None


def detect_smi_error(text: str) -> str | None:
    """The error banner line nvidia-smi printed instead of data, or None when there is none.

        NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure ...
    -> that first line. Pass stdout + stderr: nvidia-smi prints banners on stdout.
    """
    found = _error_span(text)
    if found is None:
        return None
    start = text.rfind("\n", 0, found[1]) + 1
    end = text.find("\n", found[2])
    return text[start : end if end != -1 else len(text)].strip()


@dataclass(frozen=True, slots=True)
class HandleError:
    """One "Unable to determine the device handle for GPU <bus id>: <reason>" banner line."""

    bus_id: str
    reason: str
    """As printed, unwrapped: "GPU is lost.  Reboot the system to recover this GPU", "Unknown Error"."""

    @property
    def lost(self) -> bool:
        return "lost" in self.reason.lower()


_HANDLE = re.compile(
    r"Unable to determine the device handle for GPU\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)"
    r":\s*([^\n]*(?:\n [^\n]+)*)"
)


@parse_once
def parse_handle_errors(text: str) -> list[HandleError]:
    """Every GPU nvidia-smi could not open, with its bus id and the reason (a console-wrapped reason rejoined).

    Unable to determine the device handle for GPU 0000:02:00.0: GPU is lost. Reboot the system to recover this GPU
    Unable to determine the device handle for GPU0000:07:00.0: Unknown Error
    """
    return [
        HandleError(bus_id=m.group(1), reason=" ".join(m.group(2).split()).rstrip("."))
        for m in _HANDLE.finditer(strip_escapes(text))
    ]


def nvml_library_version(text: str) -> str | None:
    """ "NVML library version: 570.124" (printed after a mismatch banner) -> "570.124"."""
    m = re.search(r"NVML library version:\s*([0-9][0-9.]*)", text or "")
    return m.group(1) if m else None


# --------------------------------------------------------------------------- --query-gpu csv

_ERROR_TOKENS = {"[unknown error]", "[insufficient permissions]", "[gpu is lost]"}
"""Tokens that say the value could not be read (unlike "[N/A]", which says the GPU has no such value)."""
_MISSING = {
    "",
    "n/a",
    "[n/a]",
    "[not supported]",
    "not supported",
    "[requested functionality has been deprecated]",
    *_ERROR_TOKENS,
}
CSV_ERRORS_KEY = "_errors"
"""Row key `parse_query_gpu_csv` adds when cells held error tokens: their field names, comma-separated."""
_HEADER_UNIT = re.compile(r"\s*\[([^\]]*)\]\s*$")


def csv_value_missing(value: str | None) -> bool:
    """True for the tokens nvidia-smi prints instead of a value ("[N/A]", "[Not Supported]", "[Unknown Error]", ...)."""
    return value is None or value.strip().lower() in _MISSING


def csv_value_error(value: str | None) -> bool:
    """True for the tokens that mean "could not read" ("[Unknown Error]", "[Insufficient Permissions]", "[GPU is lost]")."""
    return value is not None and value.strip().lower() in _ERROR_TOKENS


def csv_row_errors(row: dict[str, str | None]) -> set[str]:
    """Field names whose cell in a `parse_query_gpu_csv` row was an error token (read failed, not "not supported")."""
    return {f for f in (row.get(CSV_ERRORS_KEY) or "").split(",") if f}


def _field_key(name: str) -> str:
    # `gpu_name` and `name` are aliases; `pci.bus_id` and `gpu_bus_id` too.
    return {"gpu_name": "name", "gpu_bus_id": "pci.bus_id", "gpu_uuid": "uuid"}.get(name, name)


@parse_once
def parse_query_gpu_csv(
    text: str, fields: list[str] | tuple[str, ...] | None = None
) -> list[dict[str, str | None]]:
    """`nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]` -> one dict per GPU row.

        index, name, memory.total [MiB], compute_cap, driver_version
        0, NVIDIA A100-SXM4-80GB, 81920 MiB, 8.0, 580.105.08
    -> [{"index": "0", "name": "NVIDIA A100-SXM4-80GB", "memory.total": "81920", "compute_cap": "8.0", ...}]

    A header line (detected by its field names) is used when present, else `fields` names the
    columns (noheader). Units announced in the header (`[MiB]`) are stripped from values; tokens
    like "[N/A]" become None; cells holding an error token ("[Unknown Error]") become None too and
    their field names are listed under `CSV_ERRORS_KEY` (read with `csv_row_errors`). Raises ParseError
    on an error banner or a row of the wrong width.
    """
    text = strip_escapes(text)
    if err := detect_smi_error(text):
        raise ParseError(f"nvidia-smi error: {err}")
    lines = [ln for ln in (text or "").splitlines() if ln.strip()]
    if not lines:
        return []
    wanted = [_field_key(f.strip()) for f in fields] if fields else None
    head_cells = [c.strip() for c in lines[0].split(",")]
    head_names = [_field_key(_HEADER_UNIT.sub("", c).strip()) for c in head_cells]
    # A header is all field-name-shaped cells ("memory.total [MiB]"); data rows never are.
    # camelCase parts are real ("encoder.stats.sessionCount", "fabric.cliqueId"); values never start lowercase.
    is_header = all(re.fullmatch(r"[a-z_][A-Za-z0-9_.]*", n or "-") for n in head_names)
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
        errors: list[str] = []
        for name, unit, cell in zip(names, units, cells):
            if csv_value_missing(cell):
                row[name] = None
                if csv_value_error(cell):
                    errors.append(name)
                continue
            if unit and cell.endswith(" " + unit):
                cell = cell[: -len(unit) - 1].strip()
            row[name] = cell
        if errors:
            row[CSV_ERRORS_KEY] = ",".join(errors)
        out.append(row)
    return out


# --------------------------------------------------------------------------- the default table


@dataclass
class SmiGpuRow:
    """One GPU block of the `nvidia-smi` table (values as printed, "N/A" kept)."""

    index: int
    name: str
    persistence: str | None = None
    bus_id: str | None = None
    ecc_uncorrected: str | None = None
    perf_state: str | None = None
    memory_used_mib: int | None = None
    memory_total_mib: int | None = None
    compute_mode: str | None = None
    """As NVML names it: the table's "E. Process" / "E. Thread" read as Exclusive_Process / Exclusive_Thread."""
    mig_mode: str | None = None
    sensor_errors: list[str] = field(default_factory=list)
    """Cells printed as "ERR!" (a sensor read failure): "fan", "temperature", "power", "power_cap", "utilization"."""


_TABLE_COMPUTE_MODES = {"E. Process": "Exclusive_Process", "E. Thread": "Exclusive_Thread"}


@dataclass
class SmiTable:
    """The `nvidia-smi` header versions and GPU rows."""

    smi_version: str | None = None
    driver_version: str | None = None
    """"Driver Version" (or "KMD Version" in newer releases): the kernel module's version."""
    cuda_version: str | None = None
    """Newest CUDA the driver supports ("CUDA Version" / "CUDA UMD Version"), not a toolkit."""
    gpus: list[SmiGpuRow] = field(default_factory=list)
    error: str | None = None


_HEADER = re.compile(
    r"NVIDIA-SMI\s+(?P<smi>\S+)\s+(?:Driver|KMD) Version:\s*(?P<drv>\S+)\s+CUDA(?: UMD)? Version:\s*(?P<cuda>\S+)"
)
_ROW1 = re.compile(r"^\s*(?P<idx>\d+)\s+(?P<name>.+?)\s+(?P<pm>On|Off|N/A)\s*$")
_MEM = re.compile(r"(\d+)MiB\s*/\s*(\d+)MiB")


@parse_once
def parse_smi_table(text: str) -> SmiTable:
    """The default `nvidia-smi` output -> header versions and one row per GPU.

        | NVIDIA-SMI 580.95.05              Driver Version: 580.95.05      CUDA Version: 13.0     |
        |   0  NVIDIA RTX PRO 6000 Blac...    On  |   00000000:01:00.0 Off |                  Off |
        | 30%   31C    P0            106W /  600W |      20MiB /  97887MiB |      0%      Default |
        |                                         |                        |                  N/A |
    An error banner gives a table with only `error` set. Fragments without a header still parse.
    """
    text = strip_escapes(text)
    err = detect_smi_error(text)
    if err:
        return SmiTable(error=err)
    out = SmiTable()
    m = _HEADER.search(text or "")
    if m:
        out.smi_version, out.driver_version, out.cuda_version = m["smi"], m["drv"], m["cuda"]
    lines = (text or "").splitlines()
    current: SmiGpuRow | None = None
    line_in_block = 0
    in_gpu_section = True
    for line in lines:
        s = line.strip()
        if s.startswith("| Processes") or s.startswith("| MIG devices"):
            in_gpu_section = False
        if not in_gpu_section or not s.startswith("|"):
            continue
        cells = [c.strip() for c in s.strip("|").split("|")]
        if len(cells) != 3:
            continue
        r1 = _ROW1.match(cells[0])
        if r1 and re.match(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d", cells[1]):
            current = SmiGpuRow(
                index=int(r1["idx"]),
                name=r1["name"],
                persistence=r1["pm"],
                bus_id=cells[1].split()[0],
                ecc_uncorrected=cells[2] or None,
            )
            out.gpus.append(current)
            line_in_block = 1
            continue
        if current is None:
            continue
        line_in_block += 1
        if line_in_block == 2:
            perf = re.search(r"\bP(\d{1,2})\b", cells[0])
            current.perf_state = f"P{perf.group(1)}" if perf else None
            mem = _MEM.search(cells[1])
            if mem:
                current.memory_used_mib, current.memory_total_mib = (
                    int(mem.group(1)),
                    int(mem.group(2)),
                )
            util_mode = re.match(r"^(\S+)\s+(.+?)\s*$", cells[2])
            mode = util_mode.group(2) if util_mode else (cells[2] or None)
            current.compute_mode = _TABLE_COMPUTE_MODES.get(mode or "", mode)
            current.sensor_errors = _sensor_errors(
                cells[0], util_mode.group(1) if util_mode else ""
            )
        elif line_in_block == 3:
            current.mig_mode = cells[2] or None
            current = None
    return out


def _sensor_errors(fan_temp_perf_power: str, util: str) -> list[str]:
    """Which cells of a GPU's second table line read "ERR!": "ERR!   68C    P2    99W /  130W" -> ["fan"]."""
    toks = fan_temp_perf_power.split()  # "N/A" is one token; the power cell's " / " stands alone
    names: list[str] = []
    if "/" in toks:  # power "draw / cap" closes the cell; fan, temperature, perf state precede it
        slash = toks.index("/")
        head, draw, cap = toks[: slash - 1], toks[slash - 1 : slash], toks[slash + 1 : slash + 2]
        names += [n for n, t in zip(("fan", "temperature", "perf"), head) if t == "ERR!"]
        names += ["power"] * (draw == ["ERR!"]) + ["power_cap"] * (cap == ["ERR!"])
    else:
        names += ["sensor"] * toks.count("ERR!")
    if util == "ERR!":
        names.append("utilization")
    return names


# --------------------------------------------------------------------------- nvidia-smi -q (text)

_Q_LINE = re.compile(r"^(?P<indent>\s*)(?P<key>[^:]+?)\s*(?::\s?(?P<value>.*))?$")


def _q_lines(lines: list[str]) -> Iterator[tuple[int, str, str]]:
    """(indentation, key, value) of each `Key : value` line ("" when it has no value): str methods on the usual
    lines (issue 30), _Q_LINE's reading only for a line that starts with ":" after its indentation."""
    for raw in lines:
        line = raw.rstrip()
        body = line.lstrip()
        if not body or body.startswith("===="):
            continue
        colon = body.find(":")
        if colon > 0:  # `Key : value`
            head = line[: len(line) - len(body)]
            key, value = body[:colon].strip(), body[colon + 1 :].strip()
        elif colon < 0:  # a key alone (a section)
            head, key, value = line[: len(line) - len(body)], body, ""
        else:
            m = _Q_LINE.match(line)
            if not m:
                continue
            head, key, value = m["indent"], m["key"].strip(), (m["value"] or "").strip()
        yield (len(head.expandtabs(4)) if "\t" in head else len(head)), key, value


def _q_tree(lines: list[str]) -> dict[str, Any]:
    """Indented `Key : value` lines -> nested dicts; a key with children maps to a dict.

    A key that has both a value and children keeps its value under "" in the child dict.
    Repeated keys at one level keep the first (process lists repeat keys).
    A key with only a value is stored as that string at once, and becomes {"": value, ...} when children follow
    (issue 30: no second pass over the tree); a key read as "" (a line that is ":" after its indentation) takes
    the reading that collapses the tree afterwards, whose results for it are its own.
    """
    root: dict[str, Any] = {}
    # each open key: [its indentation, its dict (None while it holds only a value), the dict holding it, its key]
    stack: list[list[Any]] = [[-1, root, None, ""]]
    for indent, key, value in _q_lines(lines):
        if key == "":
            return _q_tree_collapsed(lines)
        while stack[-1][0] >= indent:
            stack.pop()
        top = stack[-1]
        parent = top[1]
        if parent is None:  # a key that held only a value gets children
            parent = top[1] = top[2][top[3]] = {"": top[2][top[3]]}
        if key in parent:  # keep the first; still descend so children do not leak upward
            stack.append([indent, {}, None, ""])
        elif value != "":
            parent[key] = value
            stack.append([indent, None, parent, key])
        else:
            node: dict[str, Any] = {}
            parent[key] = node
            stack.append([indent, node, None, ""])
    return root


def _q_tree_collapsed(lines: list[str]) -> dict[str, Any]:
    """_q_tree's reading with every key a dict first, collapsed afterwards (a node with only a value becomes
    that value): what a key read as "" gives."""
    root: dict[str, Any] = {}
    stack: list[tuple[int, dict[str, Any]]] = [(-1, root)]
    for indent, key, value in _q_lines(lines):
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        node: dict[str, Any] = {}
        if value != "":
            node[""] = value
        if key in parent:  # keep the first; still descend so children do not leak upward
            stack.append((indent, {}))
            continue
        parent[key] = node
        stack.append((indent, node))
    return cast(
        dict[str, Any], _collapse(root)
    )  # root's values are child nodes (dicts): it never collapses to a str


def _collapse(node: dict[str, Any]) -> dict[str, Any] | str:
    # a node with only a value becomes that value string
    if len(node) == 1 and "" in node:
        return str(node[""])
    return {k: (_collapse(v) if isinstance(v, dict) else v) for k, v in node.items()}


@parse_once
def parse_smi_q_header(text: str) -> dict[str, str]:
    """`nvidia-smi -q` lines before the first GPU block: Driver Version, CUDA Version, Attached GPUs.

    Driver Version                            : 565.57.01
    CUDA Version                              : 12.7
    """
    text = strip_escapes(text)
    out: dict[str, str] = {}
    for line in (text or "").splitlines():
        if re.match(r"^GPU [0-9A-Fa-f]{4,8}:", line):
            break
        if ":" in line and not line.startswith(" "):
            k, v = line.split(":", 1)
            out.setdefault(k.strip(), v.strip())
    return out


_Q_GPU = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)\s*$")


@parse_once
def parse_smi_q(text: str) -> list[dict[str, Any]]:
    """`nvidia-smi -q` text -> one nested dict per `GPU <bus id>` block (key "_bus_id" added).

        GPU 00000000:18:00.0
            Product Name                          : NVIDIA H100 80GB HBM3
            Persistence Mode                      : Enabled
            MIG Mode
                Current                           : Disabled
    -> [{"_bus_id": "00000000:18:00.0", "Product Name": "NVIDIA H100 80GB HBM3", "MIG Mode": {"Current": ...}}]
    Output without GPU blocks (a `-d` fragment) gives []; use `parse_q_tree` for those.
    """
    text = strip_escapes(text)
    if err := detect_smi_error(text):
        raise ParseError(f"nvidia-smi error: {err}")
    gpus: list[dict[str, Any]] = []
    block: list[str] | None = None
    bus = ""
    for line in (text or "").splitlines():
        m = _Q_GPU.match(line) if line.startswith("GPU ") else None
        if m:
            if block is not None:
                gpus.append({"_bus_id": bus, **_as_dict(_q_tree(block))})
            block, bus = [], m.group(1)
        elif block is not None:
            block.append(line)
    if block is not None:
        gpus.append({"_bus_id": bus, **_as_dict(_q_tree(block))})
    return gpus


@parse_once
def parse_q_tree(text: str) -> dict[str, Any]:
    """Any `nvidia-smi -q`-style indented text (e.g. a `-d PERFORMANCE` fragment) -> nested dict."""
    text = strip_escapes(text)
    return _as_dict(_q_tree((text or "").splitlines()))


def _as_dict(v: dict[str, Any] | str) -> dict[str, Any]:
    return v if isinstance(v, dict) else {"": v}


def q_get(tree: dict[str, Any], *path: str) -> str | None:
    """Walk a parsed -q dict: q_get(gpu, "MIG Mode", "Current") -> "Disabled"; None when absent."""
    node: object = tree
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    if isinstance(node, dict):
        node = node.get("")
    return node if isinstance(node, str) else None


# --------------------------------------------------------------------------- nvidia-smi -q -x

XML_ERROR_TOKENS = ("unknown error", "insufficient permissions", "gpu is lost", "not found")
"""Values that say the driver could not read the field (unlike "N/A": the GPU has no such value)."""
_XML_NA_TOKENS = (
    "n/a",
    "not supported",
    "requested functionality has been deprecated",
    "not available",
)
CLOCK_EVENT_REASONS = (
    "gpu_idle",
    "applications_clocks_setting",
    "sw_power_cap",
    "hw_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
    "sync_boost",
    "sw_thermal_slowdown",
    "display_clocks_setting",
)
"""Canonical clock event reason names (the element suffixes of `clocks_event_reasons` / `clocks_throttle_reasons`)."""


@dataclass
class SmiXmlGpu:
    """One `<gpu>` of `nvidia-smi -q -x`, typed. None = absent or not a value; why is in `notes`/`errors`.

    Strings are kept as printed ("Enabled", "Disabled", "Default", "Exclusive_Process", "Yes"/"No"); numbers are
    parsed without units (W, C, MiB, MHz, lanes). `errors` lists the fields the driver could not read
    ("[Unknown Error]", "[Insufficient Permissions]", "[GPU is lost]"): never "not supported".
    """

    bus_id: str | None = None
    index: int = 0
    """Position in the XML (nvidia-smi's enumeration order = its GPU index)."""
    product_name: str | None = None
    product_brand: str | None = None
    product_architecture: str | None = None
    uuid: str | None = None
    persistence_mode: str | None = None
    compute_mode: str | None = None
    mig_current: str | None = None
    mig_pending: str | None = None
    mig_devices: int = 0
    ecc_current: str | None = None
    ecc_pending: str | None = None
    ecc_volatile_corrected: int | None = None
    ecc_volatile_uncorrected: int | None = None
    ecc_aggregate_corrected: int | None = None
    ecc_aggregate_uncorrected: int | None = None
    """DRAM (device memory) counts; the older single/double-bit totals before R450."""
    ecc_volatile_sram_uncorrected: int | None = None
    ecc_aggregate_sram_uncorrected: int | None = None
    """On-chip SRAM uncorrectable errors (R570+ split into parity + SECDED: summed here)."""
    retired_sbe: int | None = None
    retired_dbe: int | None = None
    retired_pending: str | None = None
    remap_correctable: int | None = None
    remap_uncorrectable: int | None = None
    remap_pending: str | None = None
    remap_failure: str | None = None
    clock_events: dict[str, bool | None] = field(default_factory=dict)
    """CLOCK_EVENT_REASONS name -> Active (True) / Not Active (False) / unreadable (None); absent = not reported."""
    clock_events_element: str | None = None
    """"clocks_event_reasons" (R535+) or "clocks_throttle_reasons" (older): which schema the GPU reported."""
    performance_state: str | None = None
    utilization_gpu_pct: int | None = None
    power_draw_w: float | None = None
    power_limit_w: float | None = None
    """The enforced limit (`enforced_power_limit`, or `current_power_limit` on R535+)."""
    power_default_limit_w: float | None = None
    power_min_limit_w: float | None = None
    power_max_limit_w: float | None = None
    temp_c: int | None = None
    temp_slowdown_c: int | None = None
    temp_shutdown_c: int | None = None
    temp_max_gpu_c: int | None = None
    temp_memory_c: int | None = None
    tlimit_c: int | None = None
    """Headroom to the slowdown limit (R550+ `gpu_temp_tlimit`); the *_tlimit_threshold values are relative."""
    pcie_gen_current: int | None = None
    pcie_gen_max: int | None = None
    pcie_gen_device_max: int | None = None
    pcie_gen_host_max: int | None = None
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    bar1_total_mib: int | None = None
    fb_total_mib: int | None = None
    vbios_version: str | None = None
    gsp_firmware_version: str | None = None
    inforom_image: str | None = None
    mem_clock_max_mhz: int | None = None
    sm_clock_max_mhz: int | None = None
    sm_clock_mhz: int | None = None
    app_clock_mhz: int | None = None
    memory_bus_width: int | None = None
    fabric_state: str | None = None
    fabric_status: str | None = None
    reset_required: str | None = None
    drain_and_reset_recommended: str | None = None
    recovery_action: str | None = None
    notes: dict[str, str] = field(default_factory=dict)
    """Field -> the token printed instead of a value ("N/A", "[Not Supported]", "[Unknown Error]", ...)."""
    errors: dict[str, str] = field(default_factory=dict)
    """The subset of `notes` that means "could not read"."""


@dataclass
class SmiXml:
    """`nvidia-smi -q -x`: the driver and CUDA versions, the GPU count and every GPU."""

    driver_version: str | None = None
    cuda_version: str | None = None
    attached_gpus: int | None = None
    gpus: list[SmiXmlGpu] = field(default_factory=list)


_XML_TEXT: tuple[tuple[str, tuple[str, ...]], ...] = (
    # field, paths tried in order (renamed across driver branches)
    ("product_name", ("product_name",)),
    ("product_brand", ("product_brand",)),
    ("product_architecture", ("product_architecture",)),
    ("uuid", ("uuid",)),
    ("persistence_mode", ("persistence_mode",)),
    ("compute_mode", ("compute_mode",)),
    ("mig_current", ("mig_mode/current_mig",)),
    ("mig_pending", ("mig_mode/pending_mig",)),
    ("ecc_current", ("ecc_mode/current_ecc",)),
    ("ecc_pending", ("ecc_mode/pending_ecc",)),
    ("retired_pending", ("retired_pages/pending_retirement", "retired_pages/pending_blacklist")),
    ("remap_pending", ("remapped_rows/remapped_row_pending",)),
    (
        "remap_failure",
        ("remapped_rows/remapped_row_failure", "remapped_rows/remapped_row_failure_occurred"),
    ),
    ("performance_state", ("performance_state",)),
    ("vbios_version", ("vbios_version",)),
    ("gsp_firmware_version", ("gsp_firmware_version",)),
    ("inforom_image", ("inforom_version/img_version",)),
    ("fabric_state", ("fabric/state",)),
    ("fabric_status", ("fabric/status",)),
    ("reset_required", ("gpu_reset_status/reset_required",)),
    ("drain_and_reset_recommended", ("gpu_reset_status/drain_and_reset_recommended",)),
    ("recovery_action", ("gpu_recovery_action",)),
)
_XML_NUMBER: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "ecc_volatile_corrected",
        ("ecc_errors/volatile/dram_correctable", "ecc_errors/volatile/single_bit/total"),
    ),
    (
        "ecc_volatile_uncorrected",
        ("ecc_errors/volatile/dram_uncorrectable", "ecc_errors/volatile/double_bit/total"),
    ),
    (
        "ecc_aggregate_corrected",
        ("ecc_errors/aggregate/dram_correctable", "ecc_errors/aggregate/single_bit/total"),
    ),
    (
        "ecc_aggregate_uncorrected",
        ("ecc_errors/aggregate/dram_uncorrectable", "ecc_errors/aggregate/double_bit/total"),
    ),
    ("ecc_volatile_sram_uncorrected", ("ecc_errors/volatile/sram_uncorrectable",)),
    ("ecc_aggregate_sram_uncorrected", ("ecc_errors/aggregate/sram_uncorrectable",)),
    ("retired_sbe", ("retired_pages/multiple_single_bit_retirement/retired_count",)),
    ("retired_dbe", ("retired_pages/double_bit_retirement/retired_count",)),
    ("remap_correctable", ("remapped_rows/remapped_row_corr",)),
    ("remap_uncorrectable", ("remapped_rows/remapped_row_unc",)),
    ("utilization_gpu_pct", ("utilization/gpu_util",)),
    (
        "power_draw_w",
        (
            "gpu_power_readings/power_draw",
            "gpu_power_readings/instant_power_draw",
            "gpu_power_readings/average_power_draw",
            "power_readings/power_draw",
        ),
    ),
    (
        "power_limit_w",
        (
            "gpu_power_readings/current_power_limit",
            "power_readings/enforced_power_limit",
            "power_readings/power_limit",
        ),
    ),
    (
        "power_default_limit_w",
        ("gpu_power_readings/default_power_limit", "power_readings/default_power_limit"),
    ),
    ("power_min_limit_w", ("gpu_power_readings/min_power_limit", "power_readings/min_power_limit")),
    ("power_max_limit_w", ("gpu_power_readings/max_power_limit", "power_readings/max_power_limit")),
    ("temp_c", ("temperature/gpu_temp",)),
    ("temp_slowdown_c", ("temperature/gpu_temp_slow_threshold",)),
    ("temp_shutdown_c", ("temperature/gpu_temp_max_threshold",)),
    ("temp_max_gpu_c", ("temperature/gpu_temp_max_gpu_threshold",)),
    ("temp_memory_c", ("temperature/memory_temp",)),
    ("tlimit_c", ("temperature/gpu_temp_tlimit",)),
    ("pcie_gen_current", ("pci/pci_gpu_link_info/pcie_gen/current_link_gen",)),
    ("pcie_gen_max", ("pci/pci_gpu_link_info/pcie_gen/max_link_gen",)),
    ("pcie_gen_device_max", ("pci/pci_gpu_link_info/pcie_gen/max_device_link_gen",)),
    ("pcie_gen_host_max", ("pci/pci_gpu_link_info/pcie_gen/max_host_link_gen",)),
    ("pcie_width_current", ("pci/pci_gpu_link_info/link_widths/current_link_width",)),
    ("pcie_width_max", ("pci/pci_gpu_link_info/link_widths/max_link_width",)),
    ("bar1_total_mib", ("bar1_memory_usage/total",)),
    ("fb_total_mib", ("fb_memory_usage/total",)),
    ("mem_clock_max_mhz", ("max_clocks/mem_clock",)),
    ("sm_clock_max_mhz", ("max_clocks/sm_clock",)),
    ("sm_clock_mhz", ("clocks/sm_clock",)),
    ("app_clock_mhz", ("applications_clocks/graphics_clock",)),
    ("memory_bus_width", ("memory_bus_width",)),
)
_FLOAT_FIELDS = {
    "power_draw_w",
    "power_limit_w",
    "power_default_limit_w",
    "power_min_limit_w",
    "power_max_limit_w",
}
_NUMBER = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(?:x|W|C|MiB|MHz|%|bits?|bit)?\s*$")


def _xml_token(value: str) -> str | None:
    """The "not a value" token nvidia-smi printed ("N/A", "[Unknown Error]", ...), else None."""
    low = value.strip().strip("[]").strip().lower()
    return value.strip() if low in XML_ERROR_TOKENS or low in _XML_NA_TOKENS or not low else None


@parse_once
def parse_smi_q_xml(text: str) -> SmiXml:
    """`nvidia-smi -q -x` -> driver/CUDA versions and one typed SmiXmlGpu per `<gpu>` (R418 ... R595 schemas).

        <nvidia_smi_log>
            <driver_version>565.57.01</driver_version>
            <cuda_version>12.7</cuda_version>
            <gpu id="00000000:18:00.0"> <product_name>NVIDIA H100 80GB HBM3</product_name> ...

    Fields (see SmiXmlGpu): product name/brand/architecture, bus id, persistence and compute mode, MIG mode
    current/pending (+ MIG device count), ECC mode and volatile/aggregate DRAM error counts (old single/double-bit
    totals too), retired pages and row remapping (pending/failure), clock event reasons (`clocks_event_reasons`,
    or `clocks_throttle_reasons` before R535), performance state and utilisation, power draw/limits
    (enforced/default/min/max; `power_readings` or `gpu_power_readings`), temperatures and slowdown/shutdown
    thresholds, PCIe generation/width current and max, BAR1 and framebuffer size, VBIOS/GSP/InfoROM versions,
    max memory clock (+ bus width where printed), fabric state/status, reset/recovery state.
    Tokens ("N/A", "[Not Supported]", "[Unknown Error]", "[Insufficient Permissions]") give None with the token in
    `notes` (and in `errors` when it means "could not read"), never a number. Raises ParseError on an error
    banner or non-XML output. The DOCTYPE (and any entity declaration) is dropped before parsing.
    """
    import xml.etree.ElementTree as ET  # stdlib

    text = strip_escapes(text)
    if err := detect_smi_error(text):
        raise ParseError(f"nvidia-smi error: {err}")
    body = re.sub(r"<!DOCTYPE[^>\[]*(?:\[[^\]]*\])?\s*>", "", text or "")
    start = body.find("<")
    try:
        root = ET.fromstring(body[start:].strip() if start >= 0 else body)
    except ET.ParseError as exc:
        raise ParseError(f"not nvidia-smi XML: {exc}") from None
    if root.tag != "nvidia_smi_log":
        raise ParseError(f"not nvidia-smi XML: root <{root.tag}>")

    def txt(el: ET.Element, path: str) -> str | None:
        found = el.find(path)
        if found is None or found.text is None:
            return None
        return found.text.strip() or None

    attached = txt(root, "attached_gpus")
    out = SmiXml(
        driver_version=txt(root, "driver_version"),
        cuda_version=txt(root, "cuda_version"),
        attached_gpus=int(attached) if attached and attached.isdigit() else None,
    )
    for i, g in enumerate(root.findall("gpu")):
        out.gpus.append(_xml_gpu(g, i, txt))
    return out


def _xml_gpu(g: Any, index: int, txt: Callable[[Any, str], str | None]) -> SmiXmlGpu:
    rec = SmiXmlGpu(bus_id=g.get("id") or txt(g, "pci/pci_bus_id"), index=index)

    def first(paths: tuple[str, ...]) -> str | None:
        return next((v for p in paths if (v := txt(g, p)) is not None), None)

    def note(name: str, token: str) -> None:
        rec.notes[name] = token
        if token.strip("[] ").lower() in XML_ERROR_TOKENS:
            rec.errors[name] = token

    for name, paths in _XML_TEXT:
        value = first(paths)
        if value is None:
            continue
        if tok := _xml_token(value):
            note(name, tok)
        else:
            setattr(rec, name, value)
    for name, paths in _XML_NUMBER:
        value = first(paths)
        if value is None:
            continue
        if tok := _xml_token(value):
            note(name, tok)
        elif m := _NUMBER.match(value):
            setattr(
                rec, name, float(m.group(1)) if name in _FLOAT_FIELDS else int(float(m.group(1)))
            )
        else:
            note(name, value)
    for scope in (
        "volatile",
        "aggregate",
    ):  # R570+: sram_uncorrectable_parity + sram_uncorrectable_secded
        parts = [
            txt(g, f"ecc_errors/{scope}/sram_uncorrectable_{kind}") for kind in ("parity", "secded")
        ]
        if all(p is not None and p.isdigit() for p in parts):
            setattr(rec, f"ecc_{scope}_sram_uncorrected", sum(int(p) for p in parts if p))
    remap = g.find("remapped_rows")
    if remap is not None and len(remap) == 0 and (tok := _xml_token(remap.text or "")):
        note(
            "remap_pending", tok
        )  # "<remapped_rows>N/A</remapped_rows>": no row remapper (or MIG mode)
        note("remap_failure", tok)
    devices = g.find("mig_devices")
    rec.mig_devices = len(devices.findall("mig_device")) if devices is not None else 0
    for element in ("clocks_event_reasons", "clocks_throttle_reasons"):
        reasons = g.find(element)
        if reasons is None:
            continue
        rec.clock_events_element = element
        prefix = element[:-1] + "_"  # clocks_event_reason_ / clocks_throttle_reason_
        for child in reasons:
            name = child.tag.removeprefix(prefix)
            value = (child.text or "").strip()
            if value.lower() in ("active", "not active"):
                rec.clock_events[name] = value.lower() == "active"
            else:
                rec.clock_events[name] = None
                note(f"clock_events.{name}", value or "empty")
        break
    return rec


# --------------------------------------------------------------------------- topo -m


@dataclass
class TopoMatrix:
    """`nvidia-smi topo -m`: device names, pairwise link types, and per-GPU affinity columns."""

    devices: list[str] = field(default_factory=list)
    links: dict[tuple[str, str], str] = field(default_factory=dict)
    """(row device, column device) -> "NV18", "PIX", "SYS", ... (self "X" omitted)."""
    cpu_affinity: dict[str, str] = field(default_factory=dict)
    numa_affinity: dict[str, str] = field(default_factory=dict)
    nic_names: dict[str, str] = field(default_factory=dict)

    @property
    def gpus(self) -> list[str]:
        return [d for d in self.devices if d.startswith("GPU")]

    def nvlink_pairs(self) -> dict[tuple[str, str], int]:
        """GPU pairs joined by NVLink -> bonded link count (NV12 -> 12)."""
        out = {}
        for (a, b), kind in self.links.items():
            m = re.fullmatch(r"NV(\d+)", kind)
            if m and a.startswith("GPU") and b.startswith("GPU"):
                out[(a, b)] = int(m.group(1))
        return out


_TOPO_DEVICE = re.compile(r"(?:GPU|NIC)\d+|mlx\d+_\d+")


def _topo_header_index(lines: list[str]) -> int | None:
    """The header row: "GPU0" followed by another column name (a GPU0 data row has "X" next).

    Indented by a TAB or spaces as printed, or flush left when pasted; escapes already stripped.
    """
    for i, ln in enumerate(lines):
        toks = ln.split()
        if toks[:1] == ["GPU0"] and (len(toks) == 1 or toks[1] != "X"):
            return i
    return None


@parse_once
def parse_topo_m(text: str) -> TopoMatrix:
    """`nvidia-smi topo -m` or `topo -p2p <r|w|n|a|p>` (spaces or TABs) -> TopoMatrix.

                GPU0    GPU1    CPU Affinity    NUMA Affinity   GPU NUMA ID
        GPU0     X      NV12    32-63,96-127    1               N/A
        GPU1    NV12     X      32-63,96-127    1               N/A
    Drivers 590+ underline the header with SGR escapes (read through). Raises ParseError on an error
    banner, on empty output and when no header row or no GPU row is found: a topology that was not
    read must never look like "no NVLink" to the caller.
    """
    text = strip_escapes(text)
    if err := detect_smi_error(text):
        raise ParseError(f"nvidia-smi error: {err}")
    lines = text.splitlines()
    out = TopoMatrix()
    if not any(ln.strip() for ln in lines):
        raise ParseError("empty topo output")
    header_i = _topo_header_index(lines)
    if header_i is None:
        raise ParseError("no topo -m header row (GPU0 ...)")
    out.devices = [t for t in lines[header_i].split() if _TOPO_DEVICE.fullmatch(t)]
    n = len(out.devices)
    seen_rows: set[str] = set()
    for line in lines[header_i + 1 :]:
        toks = line.split()
        if not toks or toks[0] not in out.devices:
            if line.strip().startswith("Legend"):
                break
            continue
        name, cells, rest = toks[0], toks[1 : 1 + n], toks[1 + n :]
        seen_rows.add(name)
        for col, cell in zip(out.devices, cells):
            if cell != "X":
                out.links[(name, col)] = cell
        if name.startswith("GPU"):
            if rest:
                out.cpu_affinity[name] = rest[0]
            if len(rest) > 1:
                out.numa_affinity[name] = rest[1]
    if not any(r.startswith("GPU") for r in seen_rows):
        raise ParseError("topo header without GPU rows (truncated output?)")
    for m in re.finditer(r"^\s*(NIC\d+):\s*(\S+)\s*$", text, re.M):
        out.nic_names[m.group(1)] = m.group(2)
    return out


# --------------------------------------------------------------------------- nvlink -s / -e


@dataclass
class NvLink:
    """One link line of `nvidia-smi nvlink -s`: speed in GB/s, or inactive."""

    link: int
    active: bool
    speed_gbs: float | None = None


@dataclass
class NvlinkGpu:
    """One GPU of `nvidia-smi nvlink -s` with its links (or why it has none)."""

    index: int
    name: str
    uuid: str | None = None
    links: list[NvLink] = field(default_factory=list)
    all_inactive: bool = False
    """NVML said "Unable to retrieve NVLink information as all links are inActive"."""
    note: str | None = None

    @property
    def active_links(self) -> int:
        return sum(1 for ln in self.links if ln.active)


_NVL_GPU = re.compile(r"^GPU (\d+): (.+?)(?: \(UUID: ([^)]+)\))?\s*$")
_NVL_LINK = re.compile(r"^\s*Link (\d+):\s*(.*?)\s*$")


@parse_once
def parse_nvlink_s(text: str) -> list[NvlinkGpu]:
    """`nvidia-smi nvlink -s` -> one entry per GPU with its link lines.

        GPU 0: NVIDIA H100 PCIe (UUID: GPU-6968dfc2-d444-d92c-c36b-6abe53445cb9)
                 Link 0: 26.562 GB/s
                 Link 4: <inactive>
        GPU 0: NVIDIA A100-PCIE-40GB (UUID: ...)
        NVML: Unable to retrieve NVLink information as all links are inActive
    Raises ParseError on an error banner.
    """
    text = strip_escapes(text)
    if err := detect_smi_error(text):
        raise ParseError(f"nvidia-smi error: {err}")
    gpus: list[NvlinkGpu] = []
    for line in (text or "").splitlines():
        g = _NVL_GPU.match(line)
        if g:
            gpus.append(NvlinkGpu(index=int(g.group(1)), name=g.group(2), uuid=g.group(3)))
            continue
        if not gpus:
            continue
        lk = _NVL_LINK.match(line)
        if lk:
            value = lk.group(2)
            sp = re.match(r"([0-9.]+)\s*GB/s", value)
            if sp:
                gpus[-1].links.append(NvLink(int(lk.group(1)), True, float(sp.group(1))))
            elif "inactive" in value.lower():
                gpus[-1].links.append(NvLink(int(lk.group(1)), False))
            continue
        if "all links are inactive" in line.lower():
            gpus[-1].all_inactive = True
        elif line.strip():
            gpus[-1].note = line.strip()
    return gpus


@parse_once
def parse_nvlink_errors(text: str) -> dict[int, dict[int, dict[str, int]]]:
    """`nvidia-smi nvlink --errorcounters` -> gpu index -> link -> counter name -> value.

    Synthetic shape (no real capture in the corpus):
        GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)
                 Link 0: Replay Errors: 0
                 Link 0: Recovery Errors: 0
                 Link 0: CRC Errors: 0
    """
    text = strip_escapes(text)
    if err := detect_smi_error(text):
        raise ParseError(f"nvidia-smi error: {err}")
    out: dict[int, dict[int, dict[str, int]]] = {}
    gpu: int | None = None
    for line in (text or "").splitlines():
        g = _NVL_GPU.match(line)
        if g:
            gpu = int(g.group(1))
            out[gpu] = {}
            continue
        m = re.match(r"^\s*Link (\d+):\s*([^:]+?):\s*(\d+)\s*$", line)
        if m and gpu is not None:
            out[gpu].setdefault(int(m.group(1)), {})[m.group(2).strip()] = int(m.group(3))
    return out


# --------------------------------------------------------------------------- GPU ids (numa, container)

"""The one command line for each GPU's index, UUID and bus id: probes that need them declare this exact string."""


@dataclass(frozen=True, slots=True)
class SmiGpuId:
    """One GPU of the GPU id query: index, UUID, bus id and name."""

    index: int | None
    uuid: str | None
    bus_id: str
    """Normalised "0000:01:00.0"."""
    name: str | None = None
    """The product name ("NVIDIA RTX PRO 6000 Blackwell Server Edition")."""


@parse_once
def parse_smi_gpu_ids(text: str) -> list[SmiGpuId]:
    """`SMI_GPU_IDS` output -> one SmiGpuId per GPU.

        0, GPU-5a1e0c3e-..., 00000000:01:00.0, NVIDIA RTX PRO 6000 Blackwell Server Edition
    Raises ParseError on an nvidia-smi error banner.
    """
    rows = parse_query_gpu_csv(text, ["index", "uuid", "pci.bus_id", "name"])
    return [
        SmiGpuId(
            index=int(i) if (i := r.get("index") or "").isdigit() else None,
            uuid=r.get("uuid"),
            bus_id=normalize_bdf(r.get("pci.bus_id") or ""),
            name=r.get("name") or None,
        )
        for r in rows
    ]


def gpu_names(smi_gpu_ids: str) -> list[str]:
    """Product name of every GPU from the `smi_gpu_ids` query (empty on an error banner or no GPU)."""
    try:
        return [g.name for g in parse_smi_gpu_ids(smi_gpu_ids) if g.name]
    except (ParseError, ValueError):
        return []


def gpu_model(smi_gpu_ids: str) -> tuple[str | None, int]:
    """(the most common GPU name, how many GPUs) — (None, 0) when not read."""
    names = gpu_names(smi_gpu_ids)
    return (Counter(names).most_common(1)[0][0], len(names)) if names else (None, 0)
