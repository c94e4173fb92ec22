"""RooflineStrip: one line under a header, the decode roofline of the app's run (dashboard, plan screen).

It watches the app's `audit_run` itself, so it follows a live audit, a re-run and a theme change wherever
it is mounted. Clicking it posts `Selected` (the screen opens the python drill-down's Roofline tab).

The roofline itself (tui/views/roofline_view.py: the engine's roofline, its parsers and models) is reached through
the app's deferred module once the run has a record to read; until then the strip says "pending" without it, so
the dashboard's first frame does not wait for it (issue 30).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from gpuaudit.probes.core.models import AuditRun, Severity
from gpuaudit.tui.views.render import PLAIN, roofline_pending
from rich.text import Text
from textual.message import Message
from textual.widget import Widget

if TYPE_CHECKING:
    from gpuaudit.probes.core.roofline.report import Roofline
    from gpuaudit.tui.app import GpuAuditApp

LIVE_EVERY_S = 0.5
"""While the audit runs, the strip's roofline is recomputed at most this often (it says "pending" meanwhile)."""
HINT = {True: "p: what is missing", False: "p: how it is computed"}
"""Shown after the figures only when it fits whole (never at 80 columns); by whether the roofline is unknown."""
LEVEL_CLASS = {
    Severity.OK: "-ok",
    Severity.WARNING: "-warn",
    Severity.CRITICAL: "-fail",
    Severity.INFO: "-info",
    Severity.UNKNOWN: "-unknown",
}
"""The strip's CSS class per level (the theme colours it; the icon and the % say it too)."""


class RooflineStrip(Widget):
    app: GpuAuditApp

    class Selected(Message):
        """The user clicked the strip."""

    def __init__(self, **kw: str) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.roofline: Roofline | None = None
        """None while nothing was read: the strip says pending without computing (or loading) the roofline."""
        self.pending = True
        """The audit is still running (an unknown roofline then means "not read yet")."""
        self._computed_at = float("-inf")
        self._deferred = False
        self._latest: AuditRun | None = None

    def on_mount(self) -> None:
        self.watch(self.app, "audit_run", self._run_changed, init=True)
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.refresh())

    def _run_changed(self, run: AuditRun) -> None:
        self._latest = run
        pending = run.finished_at is None and any(
            p.status in ("pending", "running") for p in run.probes
        )
        if pending and self.roofline is None and not any(p.records for p in run.probes):
            # no record read yet: nothing to compute, the strip says pending
            self._level(Severity.INFO)
            return
        now = time.monotonic()
        if pending and now - self._computed_at < LIVE_EVERY_S:
            # a live audit changes the run ~400 times; recomputing the roofline (tens of ms) on each probe's
            # start and end cost first paint ~0.7 s: at most every LIVE_EVERY_S, and once more at the end
            if not self._deferred:
                self._deferred = True
                self.set_timer(LIVE_EVERY_S, lambda: self._catch_up())
            return
        self._computed_at = now
        view = self.app.deferred().roofline_view
        rf = view.roofline_of(run)
        if rf is not self.roofline or pending != self.pending:
            self.roofline, self.pending = rf, pending
            self._level(Severity.INFO if pending and not rf.bounds else view.level(rf))
            self.refresh()

    def _level(self, level: Severity) -> None:
        self.remove_class(*(c for lv, c in LEVEL_CLASS.items() if lv != level))
        self.add_class(LEVEL_CLASS[level])

    def _catch_up(self) -> None:
        self._deferred = False
        self._computed_at = float("-inf")
        if self._latest is not None:  # the newest run the watch delivered
            self._run_changed(self._latest)

    def render(self) -> Text:
        if self.roofline is None:
            return roofline_pending(self.content_size.width or None)
        unknown = not self.roofline.bounds
        return self.app.deferred().roofline_view.strip_line(
            self.roofline,
            getattr(self.app, "palette", PLAIN),
            width=self.content_size.width or None,
            hint="" if unknown and self.pending else HINT[unknown],
            pending=self.pending,
        )

    def on_click(self) -> None:
        self.post_message(self.Selected())
