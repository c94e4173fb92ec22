"""Hanging indentation: a wrapped line continues under its own indentation, not at column 0 (plan steps,
findings). Rich wraps without it, so a long `     fix: ...` line would run back under the step number."""

from __future__ import annotations

import re

from rich.console import Console
from rich.text import Text

_NUMBERED = re.compile(r"^\s*\d+\. ")
_CONSOLE = Console(width=200, no_color=True, legacy_windows=False)


def hang(text: Text, width: int) -> Text:
    """`text` wrapped at `width` cells, every continuation indented like the line it continues."""
    width = max(20, width)
    out: list[Text] = []
    for line in text.split("\n", allow_blank=True):
        plain = line.plain
        indent = len(plain) - len(plain.lstrip(" "))
        if numbered := _NUMBERED.match(
            plain
        ):  # " 1. ✖ CRIT title": continue under the title's rank
            indent = numbered.end()
        if line.cell_len <= width or indent >= width // 2:
            out.append(line)
            continue
        body = line[indent:]
        pieces = body.wrap(_CONSOLE, width - indent)
        for n, piece in enumerate(pieces):
            piece.rstrip()
            out.append((line[:indent] if n == 0 else Text(" " * indent)) + piece)
    return Text("\n").join(out)
