"""GpuAuditApp: themes, global bindings, the AuditRun it holds; `make_app` (tests + CLI) and `run_app`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.notifications import SeverityLevel
from textual.theme import BUILTIN_THEMES

from gpuaudit.probes.core.events import initial_run
from gpuaudit.probes.core.models import AuditRun, Severity
from gpuaudit.probes.core.runner import Audit
from gpuaudit.probes.core.text import neutralise
from gpuaudit.themes import DEFAULT_THEME, STATUS_DEFAULTS, STYLESHEETS, THEMES
from gpuaudit.tui.render import palette_from
from gpuaudit.tui.snapshot_actions import SnapshotActions
from gpuaudit.tui.theme_store import ThemeStore

if TYPE_CHECKING:
    from gpuaudit.tui.screens.dashboard import DashboardScreen

Clock = Callable[[], datetime]
FILTERS: tuple[Severity | None, ...] = (None, Severity.INFO, Severity.WARNING, Severity.CRITICAL)
KNOWN_THEMES = (*THEMES, *BUILTIN_THEMES)


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


class GpuAuditApp(SnapshotActions, App[int]):
    CSS_PATH = STYLESHEETS  # type: ignore[assignment]
    TITLE = "gpuaudit-tui"
    BINDINGS = [
        Binding("q", "quit_app", "Quit"),
        Binding("question_mark", "help", "Help"),
        Binding("a", "plan", "Plan"),
        Binding("s", "save", "Save"),
        Binding("d", "diff", "Diff"),
        Binding("R", "rerun_all", "Re-run all"),
        Binding("f", "filter", "Filter"),
        Binding("t", "cycle_theme", "Theme"),
    ]

    def __init__(self, run: AuditRun, audit: Audit | None, *, clock: Clock = utc_now, snapshot_dir: Path | None = None,
                 theme_store: ThemeStore | None = None, theme: str | None = None, replay_file: Path | None = None,
                 autostart: bool = True) -> None:
        super().__init__()
        self.audit_run, self.audit, self.clock = run, audit, clock
        self.snapshot_dir, self.theme_store, self.replay_file, self.autostart = snapshot_dir, theme_store, replay_file, autostart
        self.min_severity: Severity | None = None
        for t in THEMES.values():
            self.register_theme(t)
        self.theme = theme if theme in self.available_themes else DEFAULT_THEME
        self.palette = palette_from(self.get_css_variables())

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = False) -> None:
        """Every notification (screens' and widgets' go through here too) is plain, neutralised text.

        Messages carry search text, exception texts and paths: as markup, `a[/]b` would crash the app.
        """
        super().notify(neutralise(message), title=neutralise(title), severity=severity, timeout=timeout, markup=False)

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(STATUS_DEFAULTS)

    def on_mount(self) -> None:
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        from gpuaudit.tui.screens.dashboard import DashboardScreen

        self.push_screen(DashboardScreen())
        if self.audit is None:
            self.audit_finished()

    def _theme_changed(self, theme: object) -> None:
        self.palette = palette_from(self.get_css_variables())
        if self.theme_store is not None:
            self.theme_store.save(self.theme)
        self.run_changed(all_panes=True)

    # --- state the screens share ---------------------------------------------------------------------
    def dashboard(self) -> DashboardScreen:
        from gpuaudit.tui.screens.dashboard import DashboardScreen

        return next(s for s in self.screen_stack if isinstance(s, DashboardScreen))

    def run_changed(self, all_panes: bool = False, probe_id: str | None = None) -> None:
        """The AuditRun (or the filter/theme) changed: refresh what shows it.

        `probe_id`: only that probe changed, so an open drill-down reloads only if it shows that probe.
        """
        from gpuaudit.tui.screens.drilldown import DrilldownScreen

        if all_panes:
            self.dashboard().refresh_all()
        if isinstance(self.screen, DrilldownScreen) and (probe_id is None or self.screen.probe_id == probe_id):
            self.screen.reload()

    def audit_finished(self) -> None:
        """Offer resume when a replayed recording has failed probes or targets."""
        failed = [p.probe_id for p in self.audit_run.probes if p.status == "failed"]
        failed += [f"target {s.role}" for s in self.audit_run.target_states.values() if s.state == "failed"]
        if failed and self.replay_file is not None:
            self.notify(f"{', '.join(failed)} failed in this recording; re-run only those with:\n"
                        f"gpuaudit-tui --resume {self.replay_file}", title="Resume", timeout=20)

    def open_drilldown(self, probe_id: str) -> None:
        from gpuaudit.tui.screens.drilldown import DrilldownScreen

        self.push_screen(DrilldownScreen(probe_id))

    def rerun(self, probe_ids: list[str] | None) -> bool:
        return self.dashboard().rerun(probe_ids)

    # --- actions -------------------------------------------------------------------------------------
    async def action_quit_app(self) -> None:
        if self.audit is not None:
            await self.audit.aclose()
        self.exit(0)

    def action_help(self) -> None:
        from gpuaudit.tui.screens.dashboard import DashboardScreen
        from gpuaudit.tui.screens.drilldown import DrilldownScreen
        from gpuaudit.tui.screens.help import HelpScreen, binding_rows

        if self.screen.id != "help":
            self.push_screen(HelpScreen(binding_rows([("app", self.BINDINGS), ("dashboard", DashboardScreen.BINDINGS),
                                                      ("dashboard", [Binding("enter", "", "Open the probe's drill-down")]),
                                                      ("drill-down", DrilldownScreen.BINDINGS)])))

    def action_plan(self) -> None:
        from gpuaudit.tui.screens.plan import PlanScreen

        if self.screen.id != "plan":
            self.push_screen(PlanScreen(self.audit_run, self.palette))

    def action_rerun_all(self) -> None:
        self.rerun(None)

    def action_filter(self) -> None:
        self.min_severity = FILTERS[(FILTERS.index(self.min_severity) + 1) % len(FILTERS)]
        self.notify(f"showing {'all findings' if self.min_severity is None else f'{self.min_severity.value} and worse'}")
        self.run_changed(all_panes=True)

    def action_cycle_theme(self) -> None:
        names = list(THEMES)
        self.theme = names[(names.index(self.theme) + 1) % len(names)] if self.theme in names else names[0]
        self.notify(f"theme: {self.theme}")

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for b in self.BINDINGS:
            assert isinstance(b, Binding)
            yield SystemCommand(f"{b.description} ({b.key})", f"gpuaudit-tui: {b.description.lower()}",
                                lambda action=b.action: self.run_action(action))
        yield SystemCommand("Re-run focused probe (r)", "re-run the probe of the focused pane or drill-down",
                            lambda: self.run_action("screen.rerun"))


def make_app(source: Audit | AuditRun, *, note: str | None = None, mode: str = "live", clock: Clock = utc_now,
             snapshot_dir: Path | None = None, theme_store: ThemeStore | None = None, theme: str | None = None,
             replay_file: Path | None = None, autostart: bool = True) -> GpuAuditApp:
    """A live/replay app over an Audit, or a static view of an already folded AuditRun (no re-judging)."""
    if isinstance(source, AuditRun):
        return GpuAuditApp(source, None, clock=clock, snapshot_dir=snapshot_dir, theme_store=theme_store,
                           theme=theme, replay_file=replay_file)
    run = initial_run(source.targets, [(p.id, p.title) for p in source.probes])
    run = run.model_copy(update={"mode": mode, "note": note})
    return GpuAuditApp(run, source, clock=clock, snapshot_dir=snapshot_dir, theme_store=theme_store, theme=theme,
                       replay_file=replay_file, autostart=autostart)


def run_app(args: argparse.Namespace) -> int:
    """`gpuaudit-tui` without --json: build the audit, open the dashboard; exit status 0 (2 on bad --theme)."""
    from gpuaudit.tui.session_setup import build_setup

    store = ThemeStore()
    if args.theme and args.theme not in KNOWN_THEMES:
        print(f"gpuaudit-tui: error: --theme {args.theme!r}: unknown; known: {', '.join(KNOWN_THEMES)}", file=sys.stderr)
        return 2
    if args.theme:
        store.save(args.theme)
    setup = build_setup(args)
    app = make_app(setup.audit, note=setup.note, mode=setup.mode, replay_file=setup.source, theme_store=store,
                   snapshot_dir=Path(args.snapshot_dir) if args.snapshot_dir else None,
                   theme=args.theme or store.load() or DEFAULT_THEME)
    return app.run() or 0
