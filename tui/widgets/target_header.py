"""The header: every target with its state (recorded, connected, unreachable) and the demo/replay note, wrapped."""

from __future__ import annotations

from gpuaudit.probes.core.models import AuditRun
from gpuaudit.tui.views.filtering import ALL, FindingFilter, match_line
from gpuaudit.tui.views.render import PLAIN, header_text
from textual.widgets import Static


class TargetHeader(Static):
    def show(self, run: AuditRun, finding_filter: FindingFilter = ALL) -> None:
        width = self.app.size.width - 2 if self.is_attached else None
        text = header_text(run, getattr(self.app, "palette", PLAIN), ALL, width=width)
        if (line := match_line(run.probes, finding_filter)) is not None:
            # the one persistent filter indicator (f and / change it; no toast), with the "no match" line
            text.append("\n")
            text.append(line, style="italic" if "no match" not in line else "bold italic")
        self.update(text)
