"""Pilot tests: the dashboard over a real Audit (replay transport, real REGISTRY: structure only) and over
the SYNTHETIC static fixture (exact texts)."""

from __future__ import annotations

import time
from pathlib import Path

from gpuaudit.probes.catalogue import PROBE_IDS, REGISTRY
from gpuaudit.probes.core.collect.replay_transport import ReplayTransport
from gpuaudit.probes.core.errors import TransportError
from gpuaudit.probes.core.models import CommandRecord
from gpuaudit.probes.core.run.events import (
    AuditFinished,
    CommandFinished,
    CommandStarted,
    ProbeStarted,
)
from gpuaudit.probes.core.run.runner import Audit
from gpuaudit.probes.core.run.session import replay_bindings
from gpuaudit.snapshots import store
from gpuaudit.snapshots.schema import Snapshot
from gpuaudit.tui.app import make_app
from gpuaudit.tui.messages import AuditEventReceived, SnapshotSaved
from gpuaudit.tui.screens.dashboard import DashboardScreen
from gpuaudit.tui.screens.drilldown import DrilldownScreen
from gpuaudit.tui.theme_store import ThemeStore
from gpuaudit.tui.widgets.command_output import CommandOutput
from gpuaudit.tui.widgets.probe_pane import ProbePane
from textual.widgets import DataTable
from tui_support import FIXTURE, synthetic_run

DONE_STATES = {"-ok", "-warn", "-fail", "-unknown", "-error", "-skipped"}


def live_audit() -> Audit:
    snap = Snapshot.model_validate_json(FIXTURE.read_text())
    return Audit(replay_bindings(snap.targets, snap.records), REGISTRY)


def state_of(pane: ProbePane) -> str:
    return next(c for c in pane.classes if c.startswith("-") and c != "-dimmed")


def events(seen: list, kind: type) -> list:
    """Runner events of one kind the dashboard received (the hook may see a message twice: dedupe)."""
    unique = {id(m): m for m in seen if isinstance(m, AuditEventReceived)}
    return [m.event for m in unique.values() if isinstance(m.event, kind)]


async def settle(app, pilot) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()


async def test_live_audit_fills_ten_panes_in_registry_order(clock, tmp_path: Path) -> None:
    seen: list = []
    app = make_app(
        live_audit(),
        mode="replay",
        note="REPLAY of synthetic",
        clock=clock,
        theme_store=ThemeStore(tmp_path / "c.json"),
    )
    async with app.run_test(size=(120, 40), message_hook=seen.append) as pilot:
        await settle(app, pilot)
        panes = app.screen.query(ProbePane)
        assert [p.probe_id for p in panes] == list(PROBE_IDS)
        assert all(state_of(p) in DONE_STATES for p in panes)
        assert all(p.region.height >= 4 for p in panes)
        assert len(events(seen, AuditFinished)) == 1
        assert app.audit_run.finished_at is not None
        header = str(app.screen.query_one("#targets").render())
        assert (
            "recorded" in header and "connected" not in header and "REPLAY of synthetic" in header
        )
        assert app.focused is panes[0]


async def test_arrows_move_focus_between_panes(clock) -> None:
    app = make_app(synthetic_run(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("down")
        assert app.focused.id == "pane-driver"
        await pilot.press("right")
        assert app.focused.id == "pane-kernel"
        await pilot.press("tab")
        assert app.focused.id == "pane-pcie"


async def test_drilldown_jumps_from_finding_to_evidence_and_escape_returns(clock) -> None:
    app = make_app(synthetic_run(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        app.screen.query_one("#pane-kernel").focus()
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DrilldownScreen) and screen.probe_id == "kernel"
        findings = screen.query_one("#findings", DataTable)
        assert findings.row_count == 4 and app.focused is findings
        await pilot.press("down")  # second finding: numa_balancing -> proc_numa_balancing
        await pilot.press("enter")
        await pilot.pause()
        commands = screen.query_one("#commands", DataTable)
        assert screen.records[commands.cursor_row].command_id == "proc_numa_balancing"
        assert isinstance(app.focused, CommandOutput)
        assert "cat /proc/sys/kernel/numa_balancing" in app.focused.text
        await pilot.press("escape")
        assert isinstance(app.screen, DashboardScreen)
        assert [type(s).__name__ for s in app.screen_stack][-1] == "DashboardScreen"


async def test_remote_escape_sequences_and_markup_are_shown_not_interpreted(clock) -> None:
    app = make_app(synthetic_run(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        app.open_drilldown("kernel")
        await pilot.pause()
        await pilot.press(
            "down", "down", "enter"
        )  # dmesg_faults -> dmesg_tail (SYNTHETIC hostile output)
        await pilot.pause()
        viewer = app.screen.query_one(CommandOutput)
        assert "\x1b" not in viewer.text and "\x07" not in viewer.text
        assert "\\x1b]0;pwned\\x07\\x1b[2J [red]not markup[/red]" in viewer.text
        svg = app.export_screenshot()
        assert "pwned" in svg and "not&#160;markup[/red]" in svg.replace(" ", "&#160;")


async def test_drilldown_search_with_markup_characters_does_not_crash(clock) -> None:
    app = make_app(synthetic_run(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        app.open_drilldown("kernel")
        await pilot.pause()
        await pilot.press(
            "slash", *"a[/]b", "enter"
        )  # not found -> a notification quoting the text
        await pilot.pause()
        assert isinstance(app.screen, DrilldownScreen)
        assert any(n.message == "not found: a[/]b" and not n.markup for n in app._notifications)
        app.notify("boom \x1b[2J [red]x[/red]")  # exception texts and paths: inert too
        await pilot.pause()
        assert any(n.message == "boom \\x1b[2J [red]x[/red]" for n in app._notifications)


async def test_runner_events_reload_an_open_drilldown_only_for_its_probe(clock) -> None:
    app = make_app(synthetic_run(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        app.open_drilldown("kernel")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DrilldownScreen)
        reloads: list[int] = []
        original = screen.reload
        screen.reload = lambda: (reloads.append(1), original())[1]  # type: ignore[method-assign]
        dashboard = app.dashboard()

        def record(probe_id: str) -> CommandRecord:
            return CommandRecord(
                target="host", probe_id=probe_id, command_id="extra", command="true", exit_status=0
            )

        for ev in (
            CommandStarted(probe_id="pcie", role="host", command_id="extra"),
            CommandFinished(record=record("pcie")),
            CommandStarted(probe_id="kernel", role="host", command_id="extra"),
        ):
            dashboard.post_message(AuditEventReceived(ev))
        await pilot.pause()
        assert (
            reloads == []
        )  # other probes' events and a mere start change nothing the drill-down shows
        dashboard.post_message(AuditEventReceived(CommandFinished(record=record("kernel"))))
        await pilot.pause()
        assert reloads == [1]


async def test_rerun_focused_probe_runs_only_that_probe(clock, tmp_path: Path) -> None:
    seen: list = []
    app = make_app(live_audit(), clock=clock, theme_store=ThemeStore(tmp_path / "c.json"))
    async with app.run_test(size=(120, 40), message_hook=seen.append) as pilot:
        await settle(app, pilot)
        seen.clear()
        app.screen.query_one("#pane-kernel").focus()
        await pilot.press("r")
        await settle(app, pilot)
        started = [e.probe_id for e in events(seen, ProbeStarted)]
        assert started == ["kernel"]
        assert state_of(app.screen.query_one("#pane-kernel", ProbePane)) in DONE_STATES
        seen.clear()
        await pilot.press("R")
        await settle(app, pilot)
        assert len(events(seen, ProbeStarted)) == 10


async def test_failed_target_shows_reason_and_other_target_carries_on(clock) -> None:
    class Down(ReplayTransport):
        async def connect(self) -> None:
            raise TransportError("10.0.0.9:22: connection refused")

    snap = Snapshot.model_validate_json(FIXTURE.read_text())
    bindings = replay_bindings(snap.targets, snap.records)
    bindings[1].transport = Down([], label="down")
    app = make_app(Audit(bindings, REGISTRY), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        header = str(app.screen.query_one("#targets").render())
        assert (
            "unreachable: 10.0.0.9:22: connection refused" in header
            and "host replay ✔ connected" in header
        )
        assert app.audit_run.target_states["host"].state == "connected"
        assert all(p.status in ("done", "failed") for p in app.audit_run.probes)


async def test_save_snapshot_with_default_name(clock, tmp_path: Path) -> None:
    seen: list = []
    app = make_app(synthetic_run(), clock=clock, snapshot_dir=tmp_path)
    async with app.run_test(size=(120, 40), message_hook=seen.append) as pilot:
        await pilot.press("s")
        await pilot.pause()
        assert app.screen.id == "save-prompt"
        await pilot.press("enter")
        await pilot.pause()
        saved = list({m.path for m in seen if isinstance(m, SnapshotSaved)})
        assert len(saved) == 1 and saved[0].parent == tmp_path
        assert saved[0].name.startswith("gpu-node-1_")
        assert store.load(saved[0]).probes[3].probe_id == "kernel"
        assert isinstance(app.screen, DashboardScreen)


async def test_theme_cycles_and_persists(clock, tmp_path: Path) -> None:
    themes = ThemeStore(tmp_path / "settings.json")
    app = make_app(synthetic_run(), clock=clock, theme_store=themes, theme="gpuaudit-dark")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("t")
        await pilot.pause()
        assert app.theme == "gpuaudit-light"
        await pilot.press("t")
        await pilot.pause()
        assert app.theme == "gpuaudit-high-contrast"
    assert themes.load() == "gpuaudit-high-contrast"


async def test_filter_dims_panes_below_threshold(clock) -> None:
    app = make_app(synthetic_run(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("f", "f", "f")
        await pilot.pause()
        assert app.min_severity is not None and app.min_severity.value == "critical"
        header = str(
            app.screen.query_one("#targets").render()
        )  # one indicator, no toast (issue 28)
        assert "filter: critical only" in header and not app._notifications
        dimmed = {p.probe_id for p in app.screen.query(ProbePane) if p.has_class("-dimmed")}
        assert "python" not in dimmed and {"kernel", "power", "pcie", "driver"} <= dimmed
        await pilot.press("f")  # unknown only: what couldn't be checked
        await pilot.pause()
        assert app.finding_filter.level == "unknown" and app.min_severity is None
        assert "unknown only" in str(app.screen.query_one("#targets").render())
        dimmed = {p.probe_id for p in app.screen.query(ProbePane) if p.has_class("-dimmed")}
        assert "nccl" not in dimmed and "python" in dimmed
        await pilot.press("f")
        assert app.finding_filter.level == "all"


async def test_help_lists_every_binding_and_closes(clock) -> None:
    app = make_app(synthetic_run(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert app.screen.id == "help"
        keys = {row[1] for row in app.screen.rows}
        assert {
            "q",
            "?",
            "a",
            "s",
            "d",
            "R",
            "f",
            "t",
            "r",
            "/",
            "esc",
            "e",
            "n",
            "N",
            "c",
            "C",
            "m",
            "v",
            "u",
        } <= keys
        wheres = {row[0] for row in app.screen.rows}
        assert {"plan", "diff", "snapshot picker", "drill-down", "dashboard", "app"} <= wheres
        await pilot.press("escape")
        assert isinstance(app.screen, DashboardScreen)


async def test_plan_screen(clock) -> None:
    app = make_app(synthetic_run(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("a")
        await pilot.pause()
        assert app.screen.id == "plan" and app.screen.plan[0].findings[0].id == "python.cuda_graphs"
        await pilot.press("escape")
        assert isinstance(app.screen, DashboardScreen)


async def test_diff_picks_a_saved_snapshot_then_shows_the_diff(clock, tmp_path: Path) -> None:
    saved = store.save(Snapshot.model_validate_json(FIXTURE.read_text()), "old", tmp_path)
    app = make_app(synthetic_run(), clock=clock, snapshot_dir=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("d")
        await pilot.pause()
        assert type(app.screen).__name__ == "SnapshotPickerScreen"
        app.screen.dismiss(saved)
        await pilot.pause()
        assert type(app.screen).__name__ == "SnapshotDiffScreen"


async def test_diff_highlights_the_changed_probes_on_the_dashboard(clock, tmp_path: Path) -> None:
    snap = Snapshot.model_validate_json(FIXTURE.read_text())
    first = snap.probes[0]
    older = snap.model_copy(
        update={
            "probes": [first.model_copy(update={"findings": first.findings[1:]}), *snap.probes[1:]]
        }
    )
    saved = store.save(older, "older", tmp_path)
    app = make_app(synthetic_run(), clock=clock, snapshot_dir=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("d")
        await pilot.pause()
        app.screen.dismiss(saved)
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        panes = {p.id: p for p in app.screen.query(ProbePane)}
        changed = [pid for pid, p in panes.items() if p.has_class("-changed")]
        assert changed == [f"pane-{first.probe_id}"]
        assert "Δ changed" in str(panes[f"pane-{first.probe_id}"].border_title)


async def test_replayed_recording_with_failures_offers_resume(clock) -> None:
    app = make_app(synthetic_run(), clock=clock, replay_file=Path("/tmp/x.json"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert any("gpuaudit-tui --resume /tmp/x.json" in n.message for n in app._notifications)


async def test_small_terminal_panes_do_not_overlap(clock) -> None:
    app = make_app(synthetic_run(), clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        regions = [p.region for p in app.screen.query(ProbePane)]
        assert len(regions) == 10 and all(r.height == 2 and r.width >= 70 for r in regions)
        assert not any(a.overlaps(b) for i, a in enumerate(regions) for b in regions[i + 1 :])


async def test_ten_megabyte_output_stays_responsive(clock) -> None:
    run = synthetic_run()
    big = "".join(f"line {n} " + "x" * 60 + "\n" for n in range(150_000)) + "NEEDLE\n"
    kernel = run.probe("kernel")
    rec = CommandRecord(
        target="host",
        probe_id="kernel",
        command_id="big",
        command="cat big",
        exit_status=0,
        stdout=big,
    )
    run.probes[3] = kernel.model_copy(update={"records": [rec, *kernel.records]})
    app = make_app(run, clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        t0 = time.perf_counter()
        app.open_drilldown("kernel")
        await pilot.pause()
        opened = time.perf_counter() - t0
        viewer = app.screen.query_one(CommandOutput)
        assert viewer.line_count > 150_000
        t0 = time.perf_counter()
        await pilot.press("slash", *"NEEDLE", "enter")
        await pilot.pause()
        searched = time.perf_counter() - t0
        assert viewer.selected_text == "NEEDLE"
        print(f"10 MB: drill-down open {opened:.2f}s, search {searched:.2f}s")
        assert opened < 5 and searched < 5
