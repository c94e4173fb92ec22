"""Shared pure parsing helpers: csv rows, key/value lines, sizes, versions, cpu lists."""

from __future__ import annotations

import re


def kv_lines(text: str, sep: str = ":") -> dict[str, str]:
    """`Key: value` lines -> dict (first occurrence wins, keys and values stripped)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if sep in line:
            k, v = line.split(sep, 1)
            out.setdefault(k.strip(), v.strip())
    return out


def version_tuple(text: str) -> tuple[int, ...]:
    """ "6.8.12-9-pve" -> (6, 8, 12); "590.48.01" -> (590, 48, 1); garbage -> ()."""
    m = re.match(r"\s*v?(\d+(?:\.\d+)*)", text)
    if not m:
        return ()
    return tuple(int(p) for p in m.group(1).split("."))


def cpu_list(text: str) -> list[int]:
    """ "0-3,8,10-11" -> [0,1,2,3,8,10,11]; empty -> []."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-", 1)
            cpus.extend(range(int(a), int(b) + 1))
        else:
            cpus.append(int(part))
    return cpus


_SIZE_UNITS = {
    "": 1,
    "B": 1,
    "K": 1024,
    "KB": 1024,
    "KIB": 1024,
    "M": 1024**2,
    "MB": 1024**2,
    "MIB": 1024**2,
    "G": 1024**3,
    "GB": 1024**3,
    "GIB": 1024**3,
    "T": 1024**4,
    "TB": 1024**4,
    "TIB": 1024**4,
}


def size_bytes(text: str) -> int | None:
    """ "64M", "63G", "4096 MiB", "512 bytes" -> bytes; None when unparsable."""
    m = re.match(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)", text)
    if not m:
        return None
    unit = m.group(2).upper().replace("BYTES", "B")
    if unit not in _SIZE_UNITS:
        return None
    return int(float(m.group(1)) * _SIZE_UNITS[unit])


def one_value(text: str) -> tuple[str, str | None]:
    """A single-value output (`uname -r`, a sysfs file): (the value, None), or ("", why) when it holds more than
    one non-blank line: malformed, never half-read (a second line must not end up in a label; issue 29)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if len(lines) > 1:
        return "", f"malformed: {len(lines)} lines where one value is expected"
    return (lines[0] if lines else ""), None


def first_line(text: str) -> str:
    """First non-blank line, stripped ("" if none)."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""
