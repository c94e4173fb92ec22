"""RooflineStrip: one line under a header, the decode roofline of the app's run (dashboard, plan screen).

It watches the app's `audit_run` itself, so it follows a live audit, a re-run and a theme change wherever
it is mounted. Clicking it posts `Selected` (the screen opens the python drill-down's Roofline tab).
"""

from __future__ import annotations

import time

from gpuaudit.probes.core.models import AuditRun, Severity
from gpuaudit.probes.core.roofline.report import Roofline
from gpuaudit.tui.views.render import PLAIN
from gpuaudit.tui.views.roofline_view import LEVEL_CLASS, level, roofline_of, strip_line
from rich.text import Text
from textual.message import Message
from textual.widget import Widget

LIVE_EVERY_S = 0.5
"""While the audit runs, the strip's roofline is recomputed at most this often (it says "pending" meanwhile)."""
HINT = {True: "p: what is missing", False: "p: how it is computed"}
"""Shown after the figures only when it fits whole (never at 80 columns); by whether the roofline is unknown."""


class RooflineStrip(Widget):
    class Selected(Message):
        """The user clicked the strip."""

    def __init__(self, **kw: str) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.roofline = Roofline()
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
        now = time.monotonic()
        if pending and now - self._computed_at < LIVE_EVERY_S:
            # a live audit changes the run ~400 times; recomputing the roofline (tens of ms) on each probe's
            # start and end cost first paint ~0.7 s: at most every LIVE_EVERY_S, and once more at the end
            if not self._deferred:
                self._deferred = True
                self.set_timer(LIVE_EVERY_S, lambda: self._catch_up())
            return
        self._computed_at = now
        rf = roofline_of(run)
        if rf is not self.roofline or pending != self.pending:
            self.roofline, self.pending = rf, pending
            self.remove_class(*LEVEL_CLASS.values())
            self.add_class(LEVEL_CLASS[Severity.INFO if pending and not rf.bounds else level(rf)])
            self.refresh()

    def _catch_up(self) -> None:
        self._deferred = False
        self._computed_at = float("-inf")
        if self._latest is not None:  # the newest run the watch delivered
            self._run_changed(self._latest)

    def render(self) -> Text:
        unknown = not self.roofline.bounds
        return strip_line(
            self.roofline,
            getattr(self.app, "palette", PLAIN),
            width=self.content_size.width or None,
            hint="" if unknown and self.pending else HINT[unknown],
            pending=self.pending,
        )

    def on_click(self) -> None:
        self.post_message(self.Selected())
