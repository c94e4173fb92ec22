"""FleetApp: the fleet screen inside the normal app, so Enter shows a node with the normal dashboard.

Integration with the single-run app (tui/app.py) goes through its public surface only: FleetApp is a
`GpuAuditApp` started on an empty run; opening a node sets `audit_run` to that node's AuditRun (a static
view, `audit=None`) and pushes a `NodeDashboardScreen` (the `DashboardScreen`, Escape back). The drill-down,
plan and filters then work as for one run. A live `--hosts` audit runs as a worker of this app through a
`runner(model)` coroutine (tui/cli/fleet_hosts.py builds it; tests pass a fake), which updates the FleetModel.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from gpuaudit.probes.core.fleet.documents import MAX_SNAPSHOT_BYTES
from gpuaudit.probes.core.fleet.model import FleetModel, NodeRow
from gpuaudit.probes.core.run.events import initial_run
from gpuaudit.tui.app import Clock, GpuAuditApp, later, utc_now
from gpuaudit.tui.screens.dashboard import DashboardScreen
from gpuaudit.tui.screens.fleet import FleetScreen, NodeDashboardScreen
from gpuaudit.tui.screens.help import HelpScreen, binding_rows
from gpuaudit.tui.theme_store import ThemeStore
from gpuaudit.tui.views.render import palette_from
from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.events import Mount
from textual.screen import Screen

# the schema loads with tui/deferred.py: `gpuaudit-tui`'s dashboard does not wait for it
if TYPE_CHECKING:
    from gpuaudit.snapshots.schema import Snapshot

Runner = Callable[[FleetModel], Awaitable[object]]
NODE_ACTIONS = frozenset({"plan", "save", "diff", "rerun_all", "filter", "not_checked"})
"""App actions about one run: off on the fleet screen (no node is open there)."""


def load_run(row: NodeRow) -> Snapshot:
    """The node's Snapshot: the live audit's JSON, or its file read again (size-capped)."""
    snapshot = later().Snapshot
    if row.snapshot_json is not None:
        return snapshot.model_validate_json(row.snapshot_json)
    assert row.path is not None
    path = Path(row.path)
    if path.stat().st_size > MAX_SNAPSHOT_BYTES:
        raise ValueError("larger than 256 MiB")
    return snapshot.model_validate_json(path.read_bytes())


class FleetApp(GpuAuditApp):
    def __init__(
        self,
        model: FleetModel,
        runner: Runner | None = None,
        *,
        clock: Clock = utc_now,
        theme: str | None = None,
        theme_store: ThemeStore | None = None,
        snapshot_dir: Path | None = None,
    ) -> None:
        super().__init__(
            initial_run([], []),
            None,
            clock=clock,
            theme=theme,
            theme_store=theme_store,
            snapshot_dir=snapshot_dir,
        )
        self.fleet, self.runner = model, runner

    def on_mount(self, event: Mount) -> None:
        event.prevent_default()  # GpuAuditApp.on_mount would push an (empty) dashboard
        self.theme_changed_signal.subscribe(self, self._fleet_theme_changed)
        self.push_screen(FleetScreen(self.fleet))
        if self.runner is not None:
            self.audit_fleet()

    def _fleet_theme_changed(self, theme: object) -> None:
        self.palette = palette_from(self.get_css_variables())
        if self.theme_store is not None:
            self.theme_store.save(self.theme)
        self.run_changed(all_panes=True)
        if isinstance(self.screen, FleetScreen):
            self.screen.on_screen_resume()

    @work(exclusive=True, group="fleet", exit_on_error=False, description="Auditing the fleet")
    async def audit_fleet(self) -> None:
        assert self.runner is not None
        error = None
        try:
            await self.runner(self.fleet)
        except Exception as exc:  # noqa: BLE001 - an engine bug shows in the progress line, never a crash
            error = f"{exc.__class__.__name__}: {exc}"
        self.fleet.finish(error)

    def on_fleet_screen_node_chosen(self, message: FleetScreen.NodeChosen) -> None:
        row = self.fleet.rows[message.key]
        try:
            snapshot = load_run(row)
        except (OSError, ValueError) as exc:
            self.notify(f"{row.name}: cannot open its snapshot: {exc}", severity="error")
            return
        self.audit_run = snapshot.to_run()
        self.saved_name = snapshot.name
        self.push_screen(NodeDashboardScreen())

    def run_changed(self, all_panes: bool = False, probe_id: str | None = None) -> None:
        if any(isinstance(s, DashboardScreen) for s in self.screen_stack):
            super().run_changed(all_panes=all_panes, probe_id=probe_id)

    def rerun(self, probe_ids: list[str] | None) -> bool:
        if not any(isinstance(s, DashboardScreen) for s in self.screen_stack):
            return False
        return super().rerun(probe_ids)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in NODE_ACTIONS and isinstance(self.screen, FleetScreen):
            return False
        return super().check_action(action, parameters)

    async def action_quit_app(self) -> None:
        self.exit(self.fleet.exit_status())

    def action_help(self) -> None:
        if not isinstance(self.screen, FleetScreen):
            super().action_help()
        elif self.screen.id != "help":
            self.push_screen(
                HelpScreen(
                    binding_rows(
                        [
                            ("fleet", FleetScreen.BINDINGS),
                            (
                                "fleet",
                                [
                                    Binding(
                                        "enter", "", "Open the node's dashboard (Esc comes back)"
                                    )
                                ],
                            ),
                            (
                                "fleet",
                                [
                                    Binding(
                                        "q",
                                        "",
                                        "Quit (exit status: the worst host's; 3 if one was not audited)",
                                    )
                                ],
                            ),
                            ("node", NodeDashboardScreen.BINDINGS),
                            ("node", DashboardScreen.BINDINGS),
                        ]
                    )
                )
            )

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        if isinstance(
            screen, FleetScreen
        ):  # no node open: only Textual's own commands (theme, keys, quit)
            yield from App.get_system_commands(self, screen)
        else:
            yield from super().get_system_commands(screen)
