"""DashboardScreen: ten ProbePanes and the target header; owns the audit worker and folds its events."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuaudit.probes.core.run.events import (
    AuditFinished,
    CommandFinished,
    CommandStarted,
    ProbeFinished,
    ProbeStarted,
    apply_event,
)
from gpuaudit.tui.messages import AuditCompleted, AuditEventReceived
from gpuaudit.tui.views.render import unreachable_roles
from gpuaudit.tui.widgets.probe_pane import ProbePane
from gpuaudit.tui.widgets.roofline_strip import RooflineStrip
from gpuaudit.tui.widgets.target_header import TargetHeader
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.events import Resize
from textual.screen import Screen
from textual.widgets import Footer, Input

if TYPE_CHECKING:
    from gpuaudit.tui.app import GpuAuditApp

COMPACT_BELOW = (100, 34)
"""Below this width or height, one column of two-line panes (80×24 shows all ten); above, a grid."""


def layout_for(width: int, height: int) -> tuple[int, bool]:
    """(columns, compact) for a terminal size."""
    if width < COMPACT_BELOW[0] or height < COMPACT_BELOW[1]:
        return 1, True
    return (3 if width >= 180 and height < 50 else 2), False


class DashboardScreen(Screen[None]):
    BINDINGS = [
        Binding("enter", "open", "Open the probe's drill-down", show=False),
        Binding("r", "rerun", "Re-run"),
        Binding("a", "app.plan", "Plan"),
        Binding("f", "app.filter", "Filter"),
        Binding("slash", "text_filter", "Find", key_display="/"),
        Binding("u", "app.not_checked", "Unknowns"),
        Binding("q", "app.back_or_quit", "Quit"),  # here q quits (asking during a live audit)
        Binding("p", "app.roofline", "Roofline", show=False),
        Binding("s", "app.save", "Save", show=False),
        Binding("d", "app.diff", "Diff", show=False),
        Binding("escape", "clear_text_filter", "Clear every filter", show=False),
        Binding("v", "app.pictures", "Pictures", show=False),
        Binding("up,k", "move('up')", "Up", show=False),
        Binding("down,j", "move('down')", "Down", show=False),
        Binding("g", "edge(0)", "First", show=False),
        Binding("G", "edge(-1)", "Last", show=False),
        Binding("left", "move('left')", "Left", show=False),
        Binding("right", "move('right')", "Right", show=False),
    ]
    app: GpuAuditApp

    def __init__(self) -> None:
        super().__init__(id="dashboard")
        self.in_flight: dict[str, list[tuple[str, str]]] = {}
        self._panes: list[ProbePane] = []
        """The panes, cached at mount: the grid is fixed (one pane per probe) and `_tick` runs 5×/s."""
        self.cursor = 0
        """Index of the pane that has (or is about to get) focus: focus() lands later, so a second
        arrow key pressed before it does must not read the old focus."""
        self.columns = 2
        self._layout: tuple[int, bool] | None = None
        """(columns, compact) the grid and the panes have now."""

    def compose(self) -> ComposeResult:
        run = self.app.audit_run
        roles = [t.role for t in run.targets]
        # laid out for the terminal's size before anything is styled: applying it after the mount restyled the
        # screen and every pane again before the first frame (issue 30)
        columns, compact = self._layout = layout_for(self.app.size.width, self.app.size.height)
        self.set_class(compact, "-compact")
        yield TargetHeader(id="targets")
        yield RooflineStrip(id="roofline-strip")
        with self._columns(Grid(id="panes"), columns):
            for result in run.probes:
                yield ProbePane(result, roles, self.app.clock, compact)
        yield Input(
            placeholder="filter findings by title or id (Enter: keep, Esc: clear)",
            id="text-filter",
            select_on_focus=False,
        )
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self._panes = list(self.query(ProbePane))
        # a no-op unless the terminal was resized since compose laid the screen out
        self.apply_layout(self.app.size.width, self.app.size.height)
        self.refresh_all()
        panes = self.panes()
        if panes:
            panes[0].focus()
        self.set_interval(0.2, self._tick)
        self.watch(self.app, "finding_filter", self.refresh_all, init=False)
        if self.app.audit is not None and self.app.autostart:
            self.start_audit(None)

    async def engine_ready(self) -> None:
        """The audit was set up after the first frame (tui/app.py `app_for`): its targets, then start it."""
        run = self.app.audit_run
        shown = [(p.probe_id, p.result.title if p.result else "") for p in self._panes]
        if [(p.probe_id, p.title) for p in run.probes] != shown:  # tui/first_frame.py out of date
            await self.recompose()
            self._panes = list(self.query(ProbePane))
            self.apply_layout(self.app.size.width, self.app.size.height)
            if self._panes:
                self.cursor = 0
                self._panes[0].focus()
        roles = [t.role for t in run.targets]
        for pane in self._panes:
            pane.roles = roles
        self.refresh_all()
        if self.app.audit is not None and self.app.autostart:
            self.start_audit(None)

    def on_resize(self, event: Resize) -> None:
        self.apply_layout(event.size.width, event.size.height)
        self.refresh_header()

    def apply_layout(self, width: int, height: int) -> None:
        if (layout := layout_for(width, height)) == self._layout:
            return  # every pane was given it already (compose, or the last call)
        columns, compact = self._layout = layout
        self._columns(self.query_one("#panes", Grid), columns)
        self.set_class(compact, "-compact")
        for pane in self._panes:
            pane.compact = compact

    def _columns(self, grid: Grid, columns: int) -> Grid:
        self.columns = columns
        grid.styles.grid_size_columns = columns
        grid.styles.grid_columns = " ".join(["1fr"] * columns)
        return grid

    def panes(self) -> list[ProbePane]:
        return list(self._panes)

    def pane(self, probe_id: str) -> ProbePane:
        return self.query_one(f"#pane-{probe_id}", ProbePane)

    def refresh_header(self) -> None:
        self.query_one(TargetHeader).show(self.app.audit_run, self.app.finding_filter)

    # --- the audit worker: it only posts messages; the screen owns state -------------------------
    @work(exclusive=True, group="audit", exit_on_error=False, description="Running audit")
    async def start_audit(self, probe_ids: list[str] | None) -> None:
        audit = self.app.audit
        assert audit is not None
        error = None
        try:
            async for event in audit.events(probe_ids=probe_ids):
                self.post_message(AuditEventReceived(event))
        except Exception as exc:  # an engine bug shows as a notification, never a crash
            error = f"{exc.__class__.__name__}: {exc}"
        self.post_message(AuditCompleted(error))

    @property
    def busy(self) -> bool:
        return any(w.group == "audit" and not w.is_finished for w in self.workers)

    @on(AuditEventReceived)
    def _fold(self, message: AuditEventReceived) -> None:
        ev = message.event
        app = self.app
        app.audit_run = apply_event(app.audit_run, ev)  # open drill-downs watch it
        if isinstance(ev, CommandStarted):
            self.in_flight.setdefault(ev.probe_id, []).append((ev.role, ev.command_id))
            self._show(ev.probe_id)
        elif isinstance(ev, CommandFinished):
            pid, key = ev.record.probe_id, (ev.record.target, ev.record.command_id)
            if key in self.in_flight.get(pid, []):
                self.in_flight[pid].remove(key)
            self._show(pid)
        elif isinstance(ev, (ProbeStarted, ProbeFinished)):
            pid = ev.probe_id if isinstance(ev, ProbeStarted) else ev.result.probe_id
            self.in_flight[pid] = []
            self._show(pid)
        elif isinstance(ev, AuditFinished):
            app.audit_finished()
        else:  # target state changes
            self.refresh_header()
            gone = unreachable_roles(app.audit_run)
            for pane in self._panes:
                pane.unreachable = gone

    @on(AuditCompleted)
    def _completed(self, message: AuditCompleted) -> None:
        if message.error:
            self.notify(f"audit stopped: {message.error}", severity="error", timeout=10)

    def _show(self, probe_id: str) -> None:
        result = self.app.audit_run.probe(probe_id)
        if result is None:
            return
        pane = self.pane(probe_id)
        pane.running = tuple(self.in_flight.get(probe_id, []))
        pane.result = result

    def refresh_all(self) -> None:
        gone = unreachable_roles(self.app.audit_run)
        for pane in self.panes():
            pane.finding_filter = self.app.finding_filter
            pane.unreachable = gone
            pane.result = self.app.audit_run.probe(pane.probe_id)
        self.refresh_header()

    def _tick(self) -> None:
        for pane in self._panes:
            if pane.result is not None and pane.result.status == "running":
                pane.tick()

    # --- actions -----------------------------------------------------------------------------------
    @on(RooflineStrip.Selected)
    def _open_roofline(self) -> None:
        self.app.action_roofline()

    @on(ProbePane.Selected)
    def _open(self, message: ProbePane.Selected) -> None:
        self.app.open_drilldown(message.probe_id)

    def focused_probe(self) -> str | None:
        """The probe under the cursor (the focus may still be landing after a fast arrow key)."""
        return (
            self._panes[self.cursor].probe_id
            if isinstance(self.focused, ProbePane) and self._panes
            else None
        )

    def on_descendant_focus(self) -> None:
        if isinstance(self.focused, ProbePane) and self.focused in self._panes:
            self.cursor = self._panes.index(self.focused)

    def action_move(self, direction: str) -> None:
        """Arrows move within the grid from `cursor` (not from the focus, which may not have landed yet)."""
        step = {"up": -self.columns, "down": self.columns, "left": -1, "right": 1}[direction]
        if self.columns == 1 and direction in ("left", "right"):
            return
        self.cursor = max(0, min(len(self._panes) - 1, self.cursor + step))
        self._panes[self.cursor].focus()

    def action_edge(self, index: int) -> None:
        if self._panes:
            self.cursor = index % len(self._panes)
            self._panes[self.cursor].focus()

    def action_open(self) -> None:
        if self._panes:
            self.app.open_drilldown(self._panes[self.cursor].probe_id)

    def action_text_filter(self) -> None:
        box = self.query_one("#text-filter", Input)
        box.add_class("-visible")
        box.focus()
        self.call_after_refresh(box.focus)  # it was display: none a moment ago

    @on(Input.Changed, "#text-filter")
    def _filter_typed(self, event: Input.Changed) -> None:
        self.app.set_text_filter(event.value)

    @on(Input.Submitted, "#text-filter")
    def _filter_kept(self, event: Input.Submitted) -> None:
        self.app.set_text_filter(event.value)
        if not event.value.strip():
            event.input.remove_class("-visible")
        matching = [p for p in self._panes if not p.has_class("-dimmed")]
        target = matching[0] if matching else self._panes[self.cursor]
        target.focus()

    def action_clear_text_filter(self) -> None:
        """Esc: every filter off, the text and the severity level (help says "Clear every filter")."""
        box = self.query_one("#text-filter", Input)
        if box.has_class("-visible") or self.app.finding_filter.active:
            box.value = ""
            box.remove_class("-visible")
            self.app.clear_filters()
            self._panes[self.cursor].focus()

    def action_rerun(self) -> None:
        pid = self.focused_probe()
        if pid:
            self.rerun([pid])

    def rerun(self, probe_ids: list[str] | None) -> bool:
        """Start a (partial) re-run; refused while an audit is running or when only a recording is shown."""
        if self.app.audit is None:
            self.notify(
                "static snapshot view: nothing to re-run (open it with --replay to re-judge)",
                severity="warning",
            )
            return False
        if self.busy:
            self.notify("an audit is still running; wait for it to finish", severity="warning")
            return False
        self.start_audit(probe_ids)
        return True
