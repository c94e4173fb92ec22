"""Read-only raw output viewer, line based: only the visible lines are ever rendered.

A TextArea took 6 s to load 10 MB (per-line Python work in its document and wrap maps); this keeps
the text as one str plus its `split("\\n")` (C speed) and renders rows on demand via the Line API.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

MATCH = Style(reverse=True, bold=True)
GUTTER = Style(dim=True)


class CommandOutput(ScrollView, can_focus=True):
    """Shows already-neutralised text with line numbers; `find()` highlights the next match and scrolls to it."""

    def __init__(self, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.text = ""
        self.lines: list[str] = [""]
        self.match: tuple[int, int, int] | None = None
        """(row, column, length) of the current search match."""
        self._pos = 0
        self._gutter = 2

    @property
    def line_count(self) -> int:
        return len(self.lines)

    def show(self, text: str) -> None:
        self.text, self.lines, self.match, self._pos = text, text.split("\n"), None, 0
        self._gutter = len(str(len(self.lines))) + 2
        width = max(map(len, self.lines), default=0)
        self.virtual_size = Size(width + self._gutter, len(self.lines))
        self.scroll_to(0, 0, animate=False)
        self.refresh()

    def find(self, query: str) -> bool:
        """Select the next occurrence after the last match (wrapping); False if absent. str.find/count: C speed."""
        if not query:
            return False
        idx = self.text.find(query, self._pos)
        if idx < 0:
            idx = self.text.find(query)
        if idx < 0:
            return False
        self._pos = idx + len(query)
        row = self.text.count("\n", 0, idx)
        col = idx - (self.text.rfind("\n", 0, idx) + 1)
        self.match = (row, col, len(query))
        self.scroll_to(max(0, col - self.size.width // 2), max(0, row - self.size.height // 2), animate=False)
        self.refresh()
        return True

    @property
    def selected_text(self) -> str:
        if self.match is None:
            return ""
        row, col, n = self.match
        return self.lines[row][col:col + n]

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row = scroll_y + y
        width = self.size.width
        base = self.rich_style
        if row >= len(self.lines):
            return Strip.blank(width, base)
        line = self.lines[row]
        if self.match and self.match[0] == row:
            _, col, n = self.match
            parts = [Segment(line[:col], base), Segment(line[col:col + n], base + MATCH), Segment(line[col + n:], base)]
        else:
            parts = [Segment(line.expandtabs(8), base)]
        gutter = Segment(f"{row + 1:>{self._gutter - 1}} ", base + GUTTER)
        body = Strip(parts).crop(scroll_x, scroll_x + max(0, width - self._gutter))
        return Strip([gutter, *body]).extend_cell_length(width, base)
