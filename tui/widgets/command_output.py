"""Read-only raw output viewer, line based: only the visible lines are ever rendered.

A TextArea took 6 s to load 10 MB (per-line Python work in its document and wrap maps); this keeps
the text as one str plus its `split("\\n")` (C speed) and renders rows on demand via the Line API.
Tabs are expanded once when the text is loaded (lspci -vvv indents with them), so a match's column
is a screen column and the highlighted row never leaves stale cells behind.

A big output is prepared off the UI thread (`prepare`, in chunks of whole lines, reporting its progress: the
drill-down shows a progress bar) and then shown at once (`show_prepared`). The case-folded copy that search needs
is built on the first search only.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

MATCH = Style(reverse=True, bold=True)
LINE = Style(underline=True, bold=True)
GUTTER = Style(dim=True)
CHUNK = 1 << 20
"""Characters `prepare` handles between two progress reports (whole lines: a chunk ends at a newline)."""


@dataclass(frozen=True, slots=True)
class Prepared:
    """A text ready for the viewer: tabs expanded, its lines, the longest line's length."""

    text: str
    lines: list[str]
    width: int


def prepare(text: str, progress: Callable[[float], None] | None = None) -> Prepared:
    """Expand tabs, split into lines and measure them, `CHUNK` characters of whole lines at a time, calling
    `progress(fraction done)` after each chunk. The same result as on the whole text (`show`)."""
    pieces: list[str] = []
    lines: list[str] = []
    width, start, n = 0, 0, len(text)
    while True:
        end = text.find("\n", start + CHUNK) if start + CHUNK < n else -1
        piece = text[start : n if end < 0 else end]
        if "\t" in piece:
            piece = piece.expandtabs(8)  # a chunk starts a line: the tab stops are the same
        part = piece.split("\n")
        width = max(width, max(map(len, part)))
        pieces.append(piece)
        lines += part
        if end < 0:
            break
        start = end + 1
        if progress is not None:
            progress(start / n)
    return Prepared(pieces[0] if len(pieces) == 1 else "\n".join(pieces), lines, width)


class CommandOutput(ScrollView, can_focus=True):
    """Shows already-neutralised text with line numbers; `find()` highlights the next match and scrolls to it."""

    def __init__(self, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.text = ""
        self._folded = ""
        """`text.lower()`, built on the first search: searches are case-insensitive."""
        self.lines: list[str] = [""]
        self.match: tuple[int, int, int] | None = None
        """(row, column, length) of the current search match (or the whole evidence line)."""
        self._pos = 0
        """Text index where the current match starts."""
        self._gutter = 2
        self._match_style = MATCH
        self.wrap = False
        """Soft wrap (`w` in the drill-down): long lines continue on the next rows under the gutter."""
        self._rows: list[tuple[int, int]] = []
        """With wrap: one (line index, start column) per screen row."""
        self._wrap_width = 0
        self._width = 0
        """The longest line's length (the virtual width without wrap)."""

    @property
    def line_count(self) -> int:
        return len(self.lines)

    def show(self, text: str) -> None:
        self.show_prepared(prepare(text))

    def show_prepared(self, prepared: Prepared) -> None:
        """Show a text `prepare` made ready (in a worker thread for a big one): no per-line work here."""
        self.text, self.lines, self._width = prepared.text, prepared.lines, prepared.width
        self._folded, self.match, self._pos = "", None, 0
        self._gutter = len(str(len(self.lines))) + 2
        self._layout()
        self.scroll_to(0, 0, animate=False)
        self.refresh()

    def toggle_wrap(self) -> None:
        self.wrap = not self.wrap
        self._layout()
        if self.match is not None:
            row, col, n = self.match
            self._select(row, col, n, self._match_style)
        self.refresh()

    def on_resize(self) -> None:
        if self.wrap and self._text_width() != self._wrap_width:
            self._layout()

    def _text_width(self) -> int:
        """Characters per wrapped row: the width inside the scrollbar, less the gutter."""
        return max(10, self.scrollable_content_region.width - self._gutter - 1)

    def _layout(self) -> None:
        """The virtual size: the longest line (no wrap), or one row per `width` characters of each line."""
        if not self.wrap:
            self._rows = []
            self.virtual_size = Size(self._width + self._gutter, len(self.lines))
            return
        w = self._wrap_width = self._text_width()
        self._rows = [
            (n, start)
            for n, line in enumerate(self.lines)
            for start in range(0, max(1, len(line)), w)
        ]
        self.virtual_size = Size(self.size.width, len(self._rows))

    @property
    def folded(self) -> str:
        if not self._folded and self.text:
            self._folded = self.text.lower()
        return self._folded

    def find(self, query: str, backwards: bool = False) -> bool:
        """Select the next (or previous) case-insensitive occurrence, wrapping; False if absent."""
        if not query:
            return False
        q, hay = query.lower(), self.folded
        at = (
            self._pos if self.match else -1
        )  # next looks after the current match, previous strictly before it
        if backwards:
            idx = hay.rfind(q, 0, at + len(q) - 1) if at > 0 else -1
            if idx < 0:
                idx = hay.rfind(q)
        else:
            idx = hay.find(q, at + 1)
            if idx < 0:
                idx = hay.find(q)
        if idx < 0:
            return False
        self._pos = idx
        row = hay.count("\n", 0, idx)
        col = idx - (hay.rfind("\n", 0, idx) + 1)
        self._select(row, col, len(q), MATCH)
        return True

    def match_position(self, query: str) -> tuple[int, int]:
        """(index of the current match counting from 1, total matches) for the search box's counter."""
        q = query.lower()
        if not q:
            return 0, 0
        total = self.folded.count(q)
        current = self.folded.count(q, 0, self._pos) + 1 if self.match else 0
        return min(current, total), total

    def goto_line(self, row: int) -> None:
        """Underline a whole line and bring it to the middle of the view (the evidence jump)."""
        row = max(0, min(row, len(self.lines) - 1))
        self._pos = sum(len(line) + 1 for line in self.lines[:row])
        self._select(row, 0, len(self.lines[row]), LINE)

    def _select(self, row: int, col: int, length: int, style: Style) -> None:
        self.match, self._match_style = (row, col, length), style
        if self.wrap and self._rows:
            w = self._wrap_width
            screen_row = bisect_left(self._rows, (row, col // w * w))
            self.scroll_to(0, max(0, screen_row - self.size.height // 2), animate=False)
            self.refresh()
            return
        visible = max(1, self.size.width - self._gutter - 2)
        x = (
            0 if col + length <= visible else min(col, col + length - visible + 12)
        )  # line starts in view when possible
        self.scroll_to(x, max(0, row - self.size.height // 2), animate=False)
        self.refresh()

    @property
    def selected_text(self) -> str:
        if self.match is None:
            return ""
        row, col, n = self.match
        return self.lines[row][col : col + n]

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        if self.wrap:
            return self._render_wrapped(scroll_y + y)
        row = scroll_y + y
        width = self.size.width
        base = self.rich_style
        if row >= len(self.lines):
            return Strip.blank(width, base)
        line = self.lines[row]
        if self.match and self.match[0] == row:
            _, col, n = self.match
            parts = [
                Segment(line[:col], base),
                Segment(line[col : col + n], base + self._match_style),
                Segment(line[col + n :], base),
            ]
        else:
            parts = [Segment(line, base)]
        gutter = Segment(f"{row + 1:>{self._gutter - 1}} ", base + GUTTER)
        body = Strip(parts).crop(scroll_x, scroll_x + max(0, width - self._gutter))
        return Strip([gutter, *body]).extend_cell_length(width, base)

    def _render_wrapped(self, screen_row: int) -> Strip:
        width, base = self.scrollable_content_region.width, self.rich_style
        if screen_row >= len(self._rows):
            return Strip.blank(width, base)
        row, start = self._rows[screen_row]
        end = start + self._wrap_width
        piece = self.lines[row][start:end]
        parts = [Segment(piece, base)]
        if self.match and self.match[0] == row:
            _, col, n = self.match
            a, b = max(col, start) - start, min(col + n, end) - start
            if a < b:
                parts = [
                    Segment(piece[:a], base),
                    Segment(piece[a:b], base + self._match_style),
                    Segment(piece[b:], base),
                ]
        number = f"{row + 1:>{self._gutter - 1}} " if start == 0 else " " * self._gutter
        return Strip([Segment(number, base + GUTTER), *parts]).extend_cell_length(width, base)
