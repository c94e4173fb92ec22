"""The header: every target with its state (recorded, connected, unreachable) and the demo/replay note, wrapped."""

from __future__ import annotations

from gpuaudit.probes.core.models import AuditRun
from gpuaudit.tui.views.filtering import ALL, FindingFilter
from gpuaudit.tui.views.render import PLAIN, header_text
from textual.widgets import Static


class TargetHeader(Static):
    def show(self, run: AuditRun, finding_filter: FindingFilter = ALL) -> None:
        width = self.app.size.width - 2 if self.is_attached else None
        self.update(
            header_text(run, getattr(self.app, "palette", PLAIN), finding_filter, width=width)
        )
