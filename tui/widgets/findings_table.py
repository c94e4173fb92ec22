"""A table of findings (severity, title, targets, who fixes it, check id); the row key is the finding's index."""

from __future__ import annotations

from collections.abc import Sequence

from gpuaudit.probes.core.models import Finding
from gpuaudit.tui.views.render import PLAIN, Palette, neutralise, sev_text
from rich.text import Text
from textual.widgets import DataTable


class FindingsTable(DataTable[Text]):
    def __init__(self, **kw: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kw)  # type: ignore[arg-type]
        self.findings: list[Finding] = []

    def on_mount(self) -> None:
        # the title first: in a half-width pane it is what must stay readable (the id is in the detail)
        self.add_columns("severity", "title", "on", "owner", "check")

    def set_findings(self, findings: Sequence[Finding], palette: Palette = PLAIN) -> None:
        """Refill, keeping the cursor on the same row index (findings keep their order)."""
        row = self.cursor_row
        self.findings = list(findings)
        self.clear()
        for n, f in enumerate(self.findings):
            self.add_row(
                sev_text(f.severity, palette),
                Text(neutralise(f.title)),
                Text(",".join(f.targets) or "-"),
                Text(f.owner or "-"),
                Text(f.id, style="dim"),
                key=str(n),
            )
        if self.findings:
            self.move_cursor(row=min(max(row, 0), len(self.findings) - 1))

    @property
    def current(self) -> Finding | None:
        if not self.findings or self.cursor_row < 0 or self.cursor_row >= len(self.findings):
            return None
        return self.findings[self.cursor_row]
