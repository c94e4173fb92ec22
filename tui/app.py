"""GpuAuditApp: themes, global bindings, the AuditRun it holds; `make_app` (tests + CLI) and `run_app`."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from gpuaudit.probes.core.models import AuditRun, CommandRecord, Severity
from gpuaudit.probes.core.run.events import initial_run
from gpuaudit.probes.core.run.request import AuditRequest
from gpuaudit.probes.core.text import neutralise
from gpuaudit.themes import DEFAULT_THEME, STATUS_DEFAULTS, STYLESHEETS, THEMES
from gpuaudit.tui.cli import code_cache
from gpuaudit.tui.first_frame import skeleton_run
from gpuaudit.tui.screens.confirm import ConfirmScreen
from gpuaudit.tui.screens.dashboard import DashboardScreen
from gpuaudit.tui.theme_store import ThemeStore
from gpuaudit.tui.views.filtering import ALL, FindingFilter
from gpuaudit.tui.views.render import palette_from, sev_label
from rich.console import RenderableType
from rich.markup import escape
from textual import events, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.reactive import reactive
from textual.screen import Screen
from textual.theme import BUILTIN_THEMES

if TYPE_CHECKING:  # types only: the engine loads after the first frame (tui/deferred.py)
    from gpuaudit.probes.core.run.runner import Audit
    from gpuaudit.tui.cli.setup_options import AuditSetup

Clock = Callable[[], datetime]
KNOWN_THEMES = (*THEMES, *BUILTIN_THEMES)


def later() -> ModuleType:
    """tui/deferred.py: the screens not on the first frame, the snapshot actions, the baseline, the audit setup.

    The app loads it in a thread right after the dashboard's first frame (`GpuAuditApp._preload`); a key pressed
    before that waits here for the import. The one lazy import of the app (tests/core/test_import_contracts.py)."""
    from gpuaudit.tui import deferred

    return deferred


def _start_up_loads() -> None:
    """tui/deferred.py, then the code cache written: the next start finds the start-up's code compiled."""
    later()
    code_cache.checkpoint()


def utc_now() -> datetime:
    return datetime.now(UTC)


def _load_judging(setup: AuditSetup) -> None:
    """Import the audit's probes' judging halves now (issue 30); a failure is the probe's own judging's to report."""
    try:
        for probe in setup.audit.probes:
            probe.load()
    except Exception:  # noqa: BLE001, S110 - reported in the probe's pane
        pass


class GpuAuditApp(App[int]):
    CSS_PATH = STYLESHEETS  # type: ignore[assignment]
    TITLE = "gpuaudit-tui"
    ENABLE_COMMAND_PALETTE = True
    BINDINGS = [
        Binding(
            "q", "back_or_quit", "Back/Quit", show=False
        ),  # the dashboard's footer shows "q Quit"
        Binding("ctrl+c", "copy_or_quit", "Copy/Quit", show=False, priority=True),
        Binding("j", "vim('down')", "Down", show=False),
        Binding("k", "vim('up')", "Up", show=False),
        Binding("g", "vim('first')", "First", show=False),
        Binding("G", "vim('last')", "Last", show=False),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("a", "plan", "Plan", show=False),
        Binding("s", "save", "Save", show=False),
        Binding("d", "diff", "Diff", show=False),
        Binding("R", "rerun_all", "Re-run all", show=False),
        Binding("f", "filter", "Filter", show=False),
        Binding("u", "not_checked", "Not checked", show=False),
        Binding("t", "cycle_theme", "Theme", show=False),
        Binding("p", "roofline", "Roofline", show=False),
        Binding("v", "pictures", "Pictures", show=False),
        Binding("colon", "command_line", "Command line", show=False, key_display=":"),
    ]
    PALETTE_TEXT = {
        "quit_app": None,  # the palette's own "Quit" entry already does it
        "back_or_quit": None,
        "command_line": None,
        "vim('down')": None,
        "vim('up')": None,
        "vim('first')": None,
        "vim('last')": None,
        "help": ("Help: every key", "All key bindings of every screen"),
        "plan": (
            "Action plan",
            "Every finding at warning or worse, ranked into steps, plus what couldn't be checked",
        ),
        "save": ("Save a snapshot", "Store this audit (0600) in the snapshot directory"),
        "diff": ("Diff with a saved snapshot", "Pick a saved snapshot and show what changed since"),
        "rerun_all": ("Re-run all probes", "Audit every probe again (live audits only)"),
        "filter": ("Cycle the severity filter", "all → info → warning → critical → unknown only"),
        "not_checked": (
            "What couldn't be checked",
            "Unknown findings with their reasons, unreachable targets",
        ),
        "cycle_theme": ("Next gpuaudit theme", "dark → light → high contrast"),
        "pictures": (
            "Pictures of the machine",
            "PCIe/NUMA tree, GPU x GPU paths, GPU/NUMA/cpuset, roofline bar",
        ),
        "roofline": (
            "Decode roofline",
            "Measured decode speed against its physical bounds: every input and step",
        ),
    }

    finding_filter: reactive[FindingFilter] = reactive(ALL)
    """What the panes and drill-downs show; screens watch it."""
    audit_run: reactive[AuditRun] = reactive(AuditRun, always_update=True)
    """The folded audit. The dashboard's worker folds events into it; screens watch it (no push from here).
    always_update: a new run object is always a change, and comparing two runs field by field would cost."""

    def __init__(
        self,
        run: AuditRun,
        audit: Audit | None,
        *,
        clock: Clock = utc_now,
        snapshot_dir: Path | None = None,
        theme_store: ThemeStore | None = None,
        theme: str | None = None,
        replay_file: Path | None = None,
        autostart: bool = True,
        plan_dir: Path | None = None,
        request: AuditRequest | None = None,
    ) -> None:
        super().__init__()
        self.request = request
        """Set up the audit from this request after the first frame (`app_for`); None: `audit` is given."""
        self.setup_error: Exception | None = None
        """Why setting up the audit failed (the app exits; `run_app` raises it for the CLI's one line, exit 2)."""
        self.plan_dir = plan_dir
        """Where `m` saves the plan (checked writable before the audit: tui/cli/preflight.py plan_folder)."""
        self.set_reactive(GpuAuditApp.audit_run, run)
        self.audit, self.clock = audit, clock
        self.snapshot_dir, self.theme_store, self.replay_file, self.autostart = (
            snapshot_dir,
            theme_store,
            replay_file,
            autostart,
        )
        self.saved_name: str | None = None
        self.quitting = False
        """Set once the app is leaving: no input is read any more (on_event)."""
        """The name of the last snapshot saved from this run (a diff's B side shows it)."""
        self.recorded: tuple[CommandRecord, ...] = ()
        """A replay's recorded records: those no probe asked for are put back when it ends (`keep_unasked`)."""
        for t in THEMES.values():
            self.register_theme(t)
        self.theme = theme if theme in self.available_themes else DEFAULT_THEME
        self.palette = palette_from(self.get_css_variables())

    @property
    def min_severity(self) -> Severity | None:
        """The severity floor of the filter (None: all, or unknown-only)."""
        level = self.finding_filter.level
        return None if level in ("all", "unknown") else Severity(level)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every notification (screens' and widgets' go through here too) is plain, neutralised text.

        Messages carry search text, exception texts and paths: as markup, `a[/]b` would crash the app.
        """
        super().notify(
            neutralise(message),
            title=neutralise(title),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(STATUS_DEFAULTS)

    def on_mount(self) -> None:
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        self.push_screen(DashboardScreen())
        if self.request is not None:
            self.call_after_refresh(
                self._set_up
            )  # the skeleton paints first; the engine loads meanwhile
            return
        if self.audit is None:
            self.audit_finished()
        self.call_after_refresh(self._preload)

    def _preload(self) -> None:
        """Load tui/deferred.py in a thread now that the first frame is out, so the first key finds it loaded."""
        self.run_worker(_start_up_loads, thread=True, group="preload", exit_on_error=False)

    @work(thread=True, exclusive=True, group="setup", exit_on_error=False)
    def _set_up(self) -> None:
        """After the first frame: load the engine and build the audit from the request (in a thread)."""
        assert self.request is not None
        try:
            deferred = later()
            setup = deferred.build_setup(self.request)
            plan_dir = self.plan_dir or deferred.plan_folder()
        except Exception as exc:  # noqa: BLE001 - run_app raises it again once the terminal is restored
            self.call_from_thread(self._setup_failed, exc)
            return
        # The probes' judging halves (parsers, facts, checks) load in this thread, off the screen's loop, where the
        # runner would load them a probe at a time between two frames (Audit._load_judging): for a live audit
        # once it started (its first commands leave first), for a recorded one before (its outputs are instant)
        live = setup.mode == "live"
        if not live:
            _load_judging(setup)
        self.call_from_thread(self._setup_ready, setup, plan_dir)
        if live:
            _load_judging(setup)
        code_cache.checkpoint()  # the start-up's code is compiled: kept for the next start (tui/cli/code_cache.py)

    def _setup_failed(self, exc: Exception) -> None:
        self.setup_error = exc
        self.exit(return_code=2)

    def _setup_ready(self, setup: AuditSetup, plan_dir: Path) -> None:
        """The audit is built: the real run (its targets) replaces the skeleton and the dashboard starts it."""
        self.audit, self.replay_file, self.plan_dir = setup.audit, setup.source, plan_dir
        self.audit_run = first_run(setup.audit, setup.mode, setup.note)
        self.recorded = setup.recorded
        self.call_next(self.dashboard().engine_ready)

    def _theme_changed(self, theme: object) -> None:
        self.palette = palette_from(self.get_css_variables())
        if self.theme_store is not None:
            self.theme_store.save(self.theme)
        self.run_changed(all_panes=True)

    # --- state the screens share ---------------------------------------------------------------------
    def deferred(self) -> ModuleType:
        """tui/deferred.py for the widgets on the dashboard's first frame (the roofline strip): they never
        import it themselves, so that frame does not wait for the engine; imported now if not yet loaded."""
        return later()

    def dashboard(self) -> DashboardScreen:
        return next(s for s in self.screen_stack if isinstance(s, DashboardScreen))

    def run_changed(self, all_panes: bool = False, probe_id: str | None = None) -> None:
        """Repaint after a theme change (the run and the filter are watched by the screens themselves).

        `probe_id`: only that probe changed, so an open drill-down reloads only if it shows that probe.
        """
        if all_panes:
            self.dashboard().refresh_all()
        if isinstance(self.screen, later().DrilldownScreen) and (
            probe_id is None or self.screen.probe_id == probe_id
        ):
            self.screen.reload()

    def audit_finished(self) -> None:
        """Offer resume when a replayed recording has failed probes or targets. Add the regression.* findings
        against the host's last-known-good baseline when one is pinned (snapshots/baseline.py)."""
        # a replay keeps what no probe asks for today, as recorded (a replay saved from here too)
        if self.recorded:
            self.audit_run = later().keep_unasked(self.audit_run, self.recorded)
        with_baseline = later().apply_baseline(self.audit_run)
        if with_baseline is not self.audit_run:
            self.audit_run = with_baseline
        failed = [p.probe_id for p in self.audit_run.probes if p.status == "failed"]
        failed += [
            f"target {s.role}" for s in self.audit_run.target_states.values() if s.state == "failed"
        ]
        if failed and self.replay_file is not None:
            self.notify(
                f"{', '.join(failed)} failed in this recording; re-run only those with:\n"
                f"gpuaudit-tui --resume {self.replay_file}",
                title="Resume",
                timeout=20,
            )

    def open_drilldown(
        self, probe_id: str, finding_id: str | None = None, tab: str | None = None
    ) -> None:
        self.push_screen(later().DrilldownScreen(probe_id, finding_id=finding_id, tab=tab))

    def rerun(self, probe_ids: list[str] | None) -> bool:
        return self.dashboard().rerun(probe_ids)

    async def on_event(self, event: events.Event) -> None:
        """Once the app is quitting, no key or mouse input is read: a key typed right after `q` (`v`, `a`,
        Enter) opened a screen while the app closed, whose on_mount found no children (a traceback on the
        terminal)."""
        if self.quitting and isinstance(event, events.InputEvent):
            event.stop()
            return
        await super().on_event(event)

    def exit(
        self, result: int | None = None, return_code: int = 0, message: RenderableType | None = None
    ) -> None:
        self.quitting = True
        super().exit(result, return_code, message)

    def _quit(self) -> None:
        """Quit now: no input is read from here on (the keys already typed included), the audit closes, the app
        exits."""
        self.quitting = True
        self.run_worker(self.action_quit_app(), exclusive=True, group="quit")

    # --- actions -------------------------------------------------------------------------------------
    async def action_quit_app(self) -> None:
        self.quitting = True  # before the audit's close: keys are read while it closes
        if self.audit is not None:
            await self.audit.aclose()
        self.exit(0)

    @property
    def auditing(self) -> bool:
        """A live audit is running (quitting stops it: ask first)."""
        try:
            return self.audit is not None and self.dashboard().busy
        except StopIteration:
            return False

    def action_back_or_quit(self) -> None:
        """q: back one level; on the first screen (the dashboard, the fleet), quit (asking while a live audit
        runs). A node's dashboard opened from the fleet screen is one level up: q goes back to the fleet."""
        if len(self.screen_stack) > 2:
            if hasattr(self.screen, "action_back"):
                self.screen.action_back()  # the drill-down's Esc (it may close its own panel first)
            else:
                self.pop_screen()
            return
        self.quit_asking()

    def action_copy_or_quit(self) -> None:
        """Ctrl-C: copy the selection when there is one, else quit (asking while a live audit runs)."""
        selected = (
            self.screen.get_selected_text() if hasattr(self.screen, "get_selected_text") else None
        )
        if selected:
            self.copy_to_clipboard(selected)
            self.screen.clear_selection()
            self.notify(f"copied {len(selected)} character(s) (OSC 52)")
            return
        self.quit_asking()

    def quit_asking(self) -> None:
        if not self.auditing:
            self._quit()
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._quit()

        if self.screen.id != "confirm":
            self.push_screen(
                ConfirmScreen("An audit is still running. Quit and stop it? (y/n)"), answered
            )

    def action_command_line(self) -> None:
        """`:` (vim, k9s): the command palette, where every action, probe and finding is a command."""
        self.action_command_palette()

    def action_vim(self, what: str) -> None:
        """j/k/g/G on whatever list, table or text has the focus (the dashboard binds its own)."""
        names = {
            "down": ("action_cursor_down", "action_scroll_down"),
            "up": ("action_cursor_up", "action_scroll_up"),
            "first": ("action_first", "action_scroll_top", "action_scroll_home"),
            "last": ("action_last", "action_scroll_bottom", "action_scroll_end"),
        }[what]
        node: object = self.focused
        while node is not None and node is not self.screen:
            for name in names:
                if callable(action := getattr(node, name, None)):
                    action()
                    return
            node = getattr(node, "parent", None)

    def action_help(self) -> None:
        if self.screen.id != "help":
            ui = later()
            self.push_screen(
                ui.HelpScreen(
                    ui.binding_rows(
                        [
                            ("app", self.BINDINGS),
                            ("dashboard", DashboardScreen.BINDINGS),
                            ("drill-down", ui.DrilldownScreen.BINDINGS),
                            ("plan", ui.PlanScreen.BINDINGS),
                            ("not checked", ui.NotCheckedScreen.BINDINGS),
                            ("pictures", ui.PicturesScreen.BINDINGS),
                            ("diff", ui.SnapshotDiffScreen.BINDINGS),
                            (
                                "snapshot picker",
                                [
                                    *ui.SnapshotPickerScreen.BINDINGS,
                                    Binding("enter", "", "Compare with this snapshot"),
                                ],
                            ),
                        ]
                    )
                )
            )

    def action_plan(self) -> None:
        if self.screen.id != "plan":
            self.push_screen(
                later().PlanScreen(self.audit_run, self.palette, save_dir=self.plan_dir)
            )

    def action_not_checked(self) -> None:
        if self.screen.id != "not-checked":
            self.push_screen(later().NotCheckedScreen(self.audit_run, self.palette))

    def action_roofline(self) -> None:
        """The decode roofline's inputs and steps: the python probe's drill-down, on its Roofline tab."""
        ui = later()
        if (
            isinstance(self.screen, ui.DrilldownScreen)
            and self.screen.probe_id == ui.ROOFLINE_PROBE
        ):
            self.screen.show_tab("roofline")
        elif self.audit_run.probe(ui.ROOFLINE_PROBE) is None:
            self.notify(
                "the roofline's details live in the python probe's drill-down; this audit has no python probe",
                severity="warning",
            )
        else:
            self.open_drilldown(ui.ROOFLINE_PROBE, tab="roofline")

    def action_pictures(self) -> None:
        """The pictures; from a drill-down, the one of that probe's data."""
        if self.screen.id == "pictures":
            return
        ui = later()
        probe = self.screen.probe_id if isinstance(self.screen, ui.DrilldownScreen) else None
        self.push_screen(ui.PicturesScreen(ui.PROBE_TAB.get(probe or "", "tree")))

    def action_save(self) -> None:
        later().snapshot_actions.save(self)

    def action_diff(self) -> None:
        later().snapshot_actions.diff(self)

    def action_rerun_all(self) -> None:
        self.rerun(None)

    def action_filter(self) -> None:
        """f: the next severity level. The dashboard's header says the filter (one line, never a toast);
        elsewhere one toast, replacing the last one instead of stacking."""
        self.finding_filter = self.finding_filter.next_level()
        if not isinstance(self.screen, DashboardScreen):
            self.clear_notifications()
            self.notify(self.finding_filter.describe())

    def clear_filters(self) -> None:
        """Esc: every filter off (severity and text)."""
        self.finding_filter = ALL

    def set_text_filter(self, text: str) -> None:
        self.finding_filter = self.finding_filter.with_text(text)

    def action_cycle_theme(self) -> None:
        names = list(THEMES)
        self.theme = (
            names[(names.index(self.theme) + 1) % len(names)] if self.theme in names else names[0]
        )
        self.notify(f"theme: {self.theme}")

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for b in self.BINDINGS:
            assert isinstance(b, Binding)
            text = self.PALETTE_TEXT.get(b.action, (b.description, b.description))
            if text is None or b.key == "ctrl+c":
                continue
            title, help_ = text
            yield SystemCommand(
                f"{title} ({b.key_display or later().key_display(b.key)})",
                help_,  # "[a]" would be markup
                lambda action=b.action: self.run_action(action),
            )
        yield SystemCommand(
            "Re-run the focused probe (r)",
            "Audit the probe of the focused pane or drill-down again",
            lambda: self.run_action("screen.rerun"),
        )
        for p in self.audit_run.probes:
            yield SystemCommand(
                f"Open probe: {p.title}",
                f"The {p.probe_id} drill-down: findings, facts, raw outputs",
                lambda pid=p.probe_id: self.open_drilldown(pid),
            )
        for f in sorted(self.audit_run.findings, key=lambda f: -f.severity.rank):
            if f.severity != Severity.OK:
                yield SystemCommand(
                    f"Finding: {sev_label(f.severity)} {escape(neutralise(f.title))}",  # palette uses markup
                    f"{f.id} on {', '.join(f.targets) or '-'}: open it in its drill-down",
                    lambda pid=f.probe, fid=f.id: self.open_drilldown(pid, fid),
                )


def make_app(
    source: Audit | AuditRun,
    *,
    note: str | None = None,
    mode: str = "live",
    clock: Clock = utc_now,
    snapshot_dir: Path | None = None,
    theme_store: ThemeStore | None = None,
    theme: str | None = None,
    replay_file: Path | None = None,
    autostart: bool = True,
    plan_dir: Path | None = None,
) -> GpuAuditApp:
    """A live/replay app over an Audit, or a static view of an already folded AuditRun (no re-judging)."""
    if isinstance(source, AuditRun):
        return GpuAuditApp(
            source,
            None,
            clock=clock,
            snapshot_dir=snapshot_dir,
            theme_store=theme_store,
            theme=theme,
            replay_file=replay_file,
            plan_dir=plan_dir,
        )
    return GpuAuditApp(
        first_run(source, mode, note),
        source,
        clock=clock,
        snapshot_dir=snapshot_dir,
        theme_store=theme_store,
        theme=theme,
        replay_file=replay_file,
        autostart=autostart,
        plan_dir=plan_dir,
    )


def run_app(request: AuditRequest) -> int:
    """`gpuaudit-tui` without --json: build the audit, open the dashboard; exit status 0 (2 on bad --theme)."""
    store = ThemeStore()
    if request.theme and request.theme not in KNOWN_THEMES:
        print(
            f"gpuaudit-tui: error: --theme {request.theme!r}: unknown; known: {', '.join(KNOWN_THEMES)}",
            file=sys.stderr,
        )
        return 2
    if request.theme:
        store.save(request.theme)
    app = app_for(request, store)
    status = app.run()
    if (
        app.setup_error is not None
    ):  # a bad recording, a bad target spec: the CLI's one line and exit 2
        raise app.setup_error
    return status or 0


def first_run(audit: Audit, mode: str, note: str | None) -> AuditRun:
    """The run before any event: every probe of the audit pending, its targets, the mode and the note."""
    run = initial_run(audit.targets, [(p.id, p.title) for p in audit.probes])
    return run.model_copy(update={"mode": mode, "note": note})


def app_for(request: AuditRequest, store: ThemeStore | None = None) -> GpuAuditApp:
    """The app `gpuaudit-tui` opens for a request: the dashboard paints from a skeleton (tui/first_frame.py), then
    the audit is set up in a thread (tests/bench/bench_first_paint.py times the first frame)."""
    store = store or ThemeStore()
    return GpuAuditApp(
        skeleton_run(request),
        None,
        request=request,
        theme_store=store,
        snapshot_dir=Path(request.snapshot_dir) if request.snapshot_dir else None,
        theme=request.theme or store.load() or DEFAULT_THEME,
    )
