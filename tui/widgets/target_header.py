"""The header: every target with its connection state and reason; the demo/replay note, plainly."""

from __future__ import annotations

from textual.widgets import Static

from gpuaudit.probes.core.models import AuditRun, Severity
from gpuaudit.tui.render import PLAIN, header_text


class TargetHeader(Static):
    def show(self, run: AuditRun, min_severity: Severity | None = None) -> None:
        self.update(header_text(run, getattr(self.app, "palette", PLAIN), min_severity))
