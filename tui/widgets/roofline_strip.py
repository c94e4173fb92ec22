"""RooflineStrip: one line under a header, the decode roofline of the app's run (dashboard, plan screen).

It watches the app's `audit_run` itself, so it follows a live audit, a re-run and a theme change wherever
it is mounted. Clicking it posts `Selected` (the screen opens the python drill-down's Roofline tab).
"""

from __future__ import annotations

from rich.text import Text
from textual.message import Message
from textual.widget import Widget

from gpuaudit.probes.core.models import AuditRun
from gpuaudit.probes.core.roofline.report import Roofline
from gpuaudit.tui.render import PLAIN
from gpuaudit.tui.roofline_view import LEVEL_CLASS, level, roofline_of, strip_line

HINT = "p: how it is computed"
"""Shown after the figures only when it fits whole (never at 80 columns)."""


class RooflineStrip(Widget):
    class Selected(Message):
        """The user clicked the strip."""

    def __init__(self, **kw: str) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.roofline = Roofline()

    def on_mount(self) -> None:
        self.watch(self.app, "audit_run", self._run_changed, init=True)
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.refresh())

    def _run_changed(self, run: AuditRun) -> None:
        rf = roofline_of(run)
        if rf is not self.roofline:
            self.roofline = rf
            self.remove_class(*LEVEL_CLASS.values())
            self.add_class(LEVEL_CLASS[level(rf)])
            self.refresh()

    def render(self) -> Text:
        return strip_line(self.roofline, getattr(self.app, "palette", PLAIN), width=self.content_size.width or None,
                          hint=HINT)

    def on_click(self) -> None:
        self.post_message(self.Selected())
