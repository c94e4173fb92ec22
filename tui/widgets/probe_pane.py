"""ProbePane: one probe's live state on the dashboard. A view only: no I/O, parsing or judging."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from gpuaudit.probes.core.models import ProbeResult
from gpuaudit.tui.views.filtering import ALL, FindingFilter
from gpuaudit.tui.views.render import (
    PLAIN,
    compact_pane_body,
    pane_body,
    pane_subtitle,
    sev_label,
    state_class,
)
from rich.text import Text
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget

STATE_CLASSES = (
    "-pending",
    "-running",
    "-ok",
    "-na",
    "-warn",
    "-fail",
    "-unknown",
    "-error",
    "-skipped",
)


class ProbePane(Widget, can_focus=True):
    """Shows spinner + elapsed + running commands, then counts per target, key facts and top findings."""

    # Enter is the dashboard's binding: it opens the pane under its cursor, which is right even when
    # the focus of a just-pressed arrow key has not landed yet.

    result: reactive[ProbeResult | None] = reactive(None, always_update=True)
    running: reactive[tuple[tuple[str, str], ...]] = reactive((), always_update=True)
    finding_filter: reactive[FindingFilter] = reactive(ALL)
    unreachable: reactive[dict[str, str]] = reactive(dict, always_update=True)
    """role -> reason for targets never reached: the pane says "not audited" instead of listing unknowns."""
    compact: reactive[bool] = reactive(False)
    """Two borderless lines (small terminals): title + key facts, then the worst finding."""
    changed: reactive[bool] = reactive(False)
    """Set after a snapshot diff: this probe differs from the snapshot compared against."""

    class Selected(Message):
        """The user opened this pane (Enter or click)."""

        def __init__(self, probe_id: str) -> None:
            super().__init__()
            self.probe_id = probe_id

    def __init__(
        self,
        result: ProbeResult,
        roles: Sequence[str],
        clock: Callable[[], datetime],
        compact: bool = False,
    ) -> None:
        # compact from the start: the pane is styled once as it mounts, not restyled right after
        super().__init__(
            id=f"pane-{result.probe_id}", classes="-pending -compact" if compact else "-pending"
        )
        self.probe_id = result.probe_id
        self.roles = list(roles)
        self.clock = clock
        self.set_reactive(ProbePane.result, result)
        self.set_reactive(ProbePane.compact, compact)

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

    def watch_finding_filter(self) -> None:
        self._update_chrome()  # the reactive repaints the body itself

    def watch_compact(self, compact: bool) -> None:
        self.set_class(compact, "-compact")

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
        flt = self.finding_filter
        below = flt.active and not any(flt.admits(f, result) for f in result.findings)
        settled = result.status in ("done", "failed")
        self.set_class(below and settled, "-dimmed")
        self.set_class(
            below and settled and bool(flt.text), "-filtered-out"
        )  # a text filter hides, k9s-style

    def tick(self) -> None:
        """Called by the dashboard's timer while this probe runs (spinner + elapsed)."""
        self._update_chrome()
        self.refresh()

    def render(self) -> Text:
        if self.result is None:
            return Text("")
        palette = getattr(self.app, "palette", PLAIN)
        if self.compact:
            title = ("Δ " if self.changed else "") + self.result.title
            return compact_pane_body(
                self.result,
                roles=self.roles,
                now=self.clock(),
                title=title,
                min_severity=self.finding_filter,
                palette=palette,
                width=self.content_size.width,
                unreachable=self.unreachable,
            )
        return pane_body(
            self.result,
            roles=self.roles,
            now=self.clock(),
            running=self.running,
            min_severity=self.finding_filter,
            palette=palette,
            height=self.content_size.height,
            width=self.content_size.width,
            unreachable=self.unreachable,
        )

    def action_select(self) -> None:
        self.post_message(self.Selected(self.probe_id))

    def on_click(self) -> None:
        self.focus()
        self.post_message(self.Selected(self.probe_id))
