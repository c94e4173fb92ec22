"""DashboardScreen: ten ProbePanes and the target header; owns the audit worker and folds its events."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.screen import Screen
from textual.widgets import Footer

from gpuaudit.probes.core.events import AuditFinished, CommandFinished, CommandStarted, ProbeFinished, ProbeStarted, apply_event
from gpuaudit.tui.messages import AuditCompleted, AuditEventReceived
from gpuaudit.tui.widgets.probe_pane import ProbePane
from gpuaudit.tui.widgets.target_header import TargetHeader

if TYPE_CHECKING:
    from gpuaudit.tui.app import GpuAuditApp

COLUMNS = 2


class DashboardScreen(Screen[None]):
    BINDINGS = [
        Binding("r", "rerun", "Re-run"),
        Binding("up", "move(-2)", "Up", show=False),
        Binding("down", "move(2)", "Down", show=False),
        Binding("left", "move(-1)", "Left", show=False),
        Binding("right", "move(1)", "Right", show=False),
    ]
    app: GpuAuditApp

    def __init__(self) -> None:
        super().__init__(id="dashboard")
        self.in_flight: dict[str, list[tuple[str, str]]] = {}
        self._panes: list[ProbePane] = []
        """The panes, cached at mount: the grid is fixed (one pane per probe) and `_tick` runs 5×/s."""

    def compose(self) -> ComposeResult:
        run = self.app.audit_run
        roles = [t.role for t in run.targets]
        yield TargetHeader(id="targets")
        with Grid(id="panes"):
            for result in run.probes:
                yield ProbePane(result, roles, self.app.clock)
        yield Footer()

    def on_mount(self) -> None:
        self._panes = list(self.query(ProbePane))
        self.refresh_header()
        panes = self.panes()
        if panes:
            panes[0].focus()
        self.set_interval(0.2, self._tick)
        if self.app.audit is not None and self.app.autostart:
            self.start_audit(None)

    def panes(self) -> list[ProbePane]:
        return list(self._panes)

    def pane(self, probe_id: str) -> ProbePane:
        return self.query_one(f"#pane-{probe_id}", ProbePane)

    def refresh_header(self) -> None:
        self.query_one(TargetHeader).show(self.app.audit_run, self.app.min_severity)

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
        app.audit_run = apply_event(app.audit_run, ev)
        if isinstance(ev, CommandStarted):
            self.in_flight.setdefault(ev.probe_id, []).append((ev.role, ev.command_id))
            self._show(ev.probe_id)
        elif isinstance(ev, CommandFinished):
            pid, key = ev.record.probe_id, (ev.record.target, ev.record.command_id)
            if key in self.in_flight.get(pid, []):
                self.in_flight[pid].remove(key)
            self._show(pid)
            app.run_changed(probe_id=pid)  # an open drill-down of this probe gains a record
        elif isinstance(ev, (ProbeStarted, ProbeFinished)):
            pid = ev.probe_id if isinstance(ev, ProbeStarted) else ev.result.probe_id
            self.in_flight[pid] = []
            self._show(pid)
            app.run_changed(probe_id=pid)  # its status (and, when finished, findings and facts) changed
        elif isinstance(ev, AuditFinished):
            app.audit_finished()
        else:
            self.refresh_header()

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
        for pane in self.panes():
            pane.min_severity = self.app.min_severity
            pane.result = self.app.audit_run.probe(pane.probe_id)
        self.refresh_header()

    def _tick(self) -> None:
        for pane in self._panes:
            if pane.result is not None and pane.result.status == "running":
                pane.tick()

    # --- actions -----------------------------------------------------------------------------------
    @on(ProbePane.Selected)
    def _open(self, message: ProbePane.Selected) -> None:
        self.app.open_drilldown(message.probe_id)

    def focused_probe(self) -> str | None:
        return self.focused.probe_id if isinstance(self.focused, ProbePane) else None

    def action_move(self, delta: int) -> None:
        panes = self.panes()
        current = self.focused if isinstance(self.focused, ProbePane) else None
        idx = panes.index(current) if current in panes else 0
        panes[max(0, min(len(panes) - 1, idx + delta))].focus()

    def action_rerun(self) -> None:
        pid = self.focused_probe()
        if pid:
            self.rerun([pid])

    def rerun(self, probe_ids: list[str] | None) -> bool:
        """Start a (partial) re-run; refused while an audit is running or when only a recording is shown."""
        if self.app.audit is None:
            self.notify("static snapshot view: nothing to re-run (open it with --replay to re-judge)", severity="warning")
            return False
        if self.busy:
            self.notify("an audit is still running; wait for it to finish", severity="warning")
            return False
        self.start_audit(probe_ids)
        return True
