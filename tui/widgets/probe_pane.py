"""ProbePane: one probe's live state on the dashboard. A view only: no I/O, parsing or judging."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget

from gpuaudit.probes.core.models import ProbeResult, Severity
from gpuaudit.tui.render import PLAIN, pane_body, pane_subtitle, sev_label, state_class

STATE_CLASSES = ("-pending", "-running", "-ok", "-warn", "-fail", "-unknown", "-error", "-skipped")


class ProbePane(Widget, can_focus=True):
    """Shows spinner + elapsed + running commands, then counts per target, key facts and top findings."""

    BINDINGS = [Binding("enter", "select", "Details", show=True)]

    result: reactive[ProbeResult | None] = reactive(None, always_update=True)
    running: reactive[tuple[tuple[str, str], ...]] = reactive((), always_update=True)
    min_severity: reactive[Severity | None] = reactive(None)
    changed: reactive[bool] = reactive(False)
    """Set after a snapshot diff: this probe differs from the snapshot compared against."""

    class Selected(Message):
        """The user opened this pane (Enter or click)."""

        def __init__(self, probe_id: str) -> None:
            super().__init__()
            self.probe_id = probe_id

    def __init__(self, result: ProbeResult, roles: Sequence[str], clock: Callable[[], datetime]) -> None:
        super().__init__(id=f"pane-{result.probe_id}", classes="-pending")
        self.probe_id = result.probe_id
        self.roles = list(roles)
        self.clock = clock
        self.set_reactive(ProbePane.result, result)

    def on_mount(self) -> None:
        self.watch_result(self.result)

    def watch_result(self, result: ProbeResult | None) -> None:
        if result is None:
            return
        state = state_class(result)
        if not self.has_class(state):
            self.remove_class(*STATE_CLASSES)
            self.add_class(state)
        self._update_chrome()

    def watch_changed(self) -> None:
        self._update_chrome()

    def watch_min_severity(self) -> None:
        self._update_chrome()  # the reactive repaints the body itself

    def _update_chrome(self) -> None:
        result = self.result
        if result is None:
            return
        worst = result.worst
        mark = f"{sev_label(worst)}  " if worst and result.status == "done" else ""
        changed = "Δ changed · " if self.changed else ""
        self.border_title = Text(f"{mark}{changed}{result.title}")
        self.set_class(self.changed, "-changed")
        self.border_subtitle = Text(pane_subtitle(result, self.clock()))
        below = self.min_severity is not None and (worst is None or worst.rank < self.min_severity.rank)
        self.set_class(below and result.status == "done", "-dimmed")

    def tick(self) -> None:
        """Called by the dashboard's timer while this probe runs (spinner + elapsed)."""
        self._update_chrome()
        self.refresh()

    def render(self) -> Text:
        if self.result is None:
            return Text("")
        palette = getattr(self.app, "palette", PLAIN)
        return pane_body(self.result, roles=self.roles, now=self.clock(), running=self.running,
                         min_severity=self.min_severity, palette=palette, height=self.content_size.height,
                         width=self.content_size.width)

    def action_select(self) -> None:
        self.post_message(self.Selected(self.probe_id))

    def on_click(self) -> None:
        self.focus()
        self.post_message(self.Selected(self.probe_id))
