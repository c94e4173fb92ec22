"""The fleet screen (issue 16 item 5): live rows while `--hosts` audits, sort, filter, Enter/Escape to a node.

Driven by a replayed fleet (tests/tui/fleet_support.py: the case study's 'after' node eight times, two planted
outliers, one refused host), and once by the real `run_fleet` over a real sshd on 127.0.0.1. Baselines:
the screen running (some rows pending) and finished, at 80x24 and 120x40. Regenerate with
python -m pytest tests/tui/test_fleet_screen.py --snapshot-update, and read the SVG diff.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest
from fleet_support import (
    DOWN,
    HOSTS,
    REFUSED,
    ReplayedFleet,
    TickClock,
    live_model,
    write_snapshots,
)
from gpuaudit.probes.core.fleet.documents import load_document
from gpuaudit.probes.core.fleet.model import SORT_ORDER, FleetModel, next_sort
from gpuaudit.probes.core.run.request import AuditRequest
from gpuaudit.probes.ids import PROBE_IDS
from gpuaudit.tui import interactive
from gpuaudit.tui.cli import fleet_compare
from gpuaudit.tui.cli import fleet_hosts as fleet
from gpuaudit.tui.fleet_app import FleetApp
from gpuaudit.tui.screens.drilldown import DrilldownScreen
from gpuaudit.tui.screens.fleet import (
    FleetScreen,
    NodeDashboardScreen,
    fixed_widths,
    row_cells,
)
from gpuaudit.tui.screens.plan import PlanScreen
from sshd_server import free_port
from textual.events import Key
from textual.widgets import DataTable, Input, Static

SIZES = pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])


def replayed() -> tuple[FleetApp, ReplayedFleet, FleetModel]:
    clock = TickClock()
    rep = ReplayedFleet(clock)
    model = live_model(clock)
    app = FleetApp(model, rep, theme="gpuaudit-dark")
    app.animation_level = "none"
    return app, rep, model


async def advance(pilot, rep: ReplayedFleet, steps: int) -> None:
    """Apply `steps` replay steps, then let the screen show them (it polls the model 5x/s)."""
    rep.step(steps)
    await rep.settled.wait()
    if steps >= 9:
        await pilot.app.workers.wait_for_complete()
    pilot.app.screen.refresh_view()
    await pilot.pause()


def shown(app: FleetApp) -> list[str]:
    return list(app.screen._keys)


def states(model: FleetModel) -> dict[str, str]:
    return {r.name: r.state for r in model.rows.values()}


def text_of(app: FleetApp, widget_id: str) -> str:
    return str(app.screen.query_one(widget_id, Static).render())


# --- live progress ----------------------------------------------------------------------------------
async def test_rows_go_pending_auditing_done_unreachable_while_the_fleet_runs() -> None:
    app, rep, model = replayed()
    async with app.run_test(size=(80, 24)) as pilot:
        assert isinstance(app.screen, FleetScreen)
        assert set(states(model).values()) == {"pending"}  # rows are there before any host answered
        assert "0/8 done" in text_of(app, "#fleet-progress") and "8 pending" in text_of(
            app, "#fleet-progress"
        )
        await advance(pilot, rep, 1)
        assert [s for s in states(model).values()].count("auditing") == 2
        await advance(pilot, rep, 4)
        st = states(model)
        assert [st[h.name] for h in HOSTS] == ["done"] * 4 + ["auditing"] * 2 + ["pending"] * 2
        progress = text_of(app, "#fleet-progress")
        assert "4/8 done · 2 auditing · 2 pending · 3.5s" in progress
        await advance(pilot, rep, 2)
        assert states(model)[DOWN] == "unreachable" and "1 unreachable" in text_of(
            app, "#fleet-progress"
        )
        await advance(pilot, rep, 20)
        assert model.finished and set(states(model).values()) == {"done", "unreachable"}
        assert "8 host(s) audited" in text_of(app, "#fleet-progress")
        await pilot.press("q")
    assert app.return_value == 3  # a host could not be audited: the worst exit status


async def test_quitting_before_every_host_finished_exits_3() -> None:
    app, rep, model = replayed()
    async with app.run_test(size=(80, 24)) as pilot:
        await advance(pilot, rep, 1)
        await pilot.press("q")
    assert app.return_value == 3 and not model.finished


async def test_outliers_are_marked_and_named_with_the_majority() -> None:
    app, rep, model = replayed()
    async with app.run_test(size=(120, 40)) as pilot:
        await advance(pilot, rep, 20)
        marked = {r.name: [o.fact for o in r.outliers] for r in model.rows.values() if r.outliers}
        assert marked == {"gpu03": ["kernel"], "gpu05": ["driver"]}  # the two planted, nothing else
        await pilot.press("down", "down")
        detail = text_of(app, "#fleet-detail")
        assert (
            "gpu03" in detail and "kernel = 6.8.12-9-pve (majority 6.14.11-2-pve, 6 of 7)" in detail
        )
        await pilot.press("down", "down", "down")
        detail = text_of(app, "#fleet-detail")
        assert "root@10.0.0.6" in detail and REFUSED.split(": ")[1] in detail


# --- sort and filter --------------------------------------------------------------------------------
async def test_o_cycles_the_sort_and_the_footer_line_says_which() -> None:
    app, rep, model = replayed()
    async with app.run_test(size=(80, 24)) as pilot:
        await advance(pilot, rep, 20)
        assert shown(app) == [h.spec for h in HOSTS]
        assert "sort: inventory order" in text_of(app, "#fleet-sort")
        await pilot.press("o")
        assert "sort: worst first" in text_of(app, "#fleet-sort")
        names = [model.rows[k].name for k in shown(app)]
        assert names[0] == DOWN and names[1:3] == [
            "gpu03",
            "gpu05",
        ]  # unreachable, then the outliers
        await pilot.press("O")
        assert "sort: inventory order" in text_of(app, "#fleet-sort")
        for _ in range(SORT_ORDER.index("kernel")):
            await pilot.press("o")
        assert "sort: kernel (kn)" in text_of(app, "#fleet-sort")
        header = [str(c.label) for c in app.screen.query_one(DataTable).columns.values()]
        assert "kn▾" in header


async def test_slash_filters_by_name_and_outlier_fact_escape_clears() -> None:
    app, rep, model = replayed()
    async with app.run_test(size=(80, 24)) as pilot:
        await advance(pilot, rep, 20)
        await pilot.press("slash", *"580.95")
        await pilot.pause()
        assert [model.rows[k].name for k in shown(app)] == [
            "gpu05"
        ]  # matched by its driver outlier fact
        assert "1 of 8 match" in text_of(app, "#fleet-sort")
        await pilot.press("enter")  # keeps the filter, back to the table
        assert isinstance(app.focused, DataTable)
        await pilot.press("escape")
        assert len(shown(app)) == 8 and app.screen.query_one(Input).value == ""
        await pilot.press("slash", *"gpu0")
        assert len(shown(app)) == 8
        await pilot.press(*"7", "escape")
        assert len(shown(app)) == 8


async def test_keys_typed_in_one_burst_with_slash_land_in_the_filter() -> None:
    app, rep, _ = replayed()
    async with app.run_test(size=(80, 24)) as pilot:
        await advance(pilot, rep, 20)
        for key, ch in [("slash", "/"), ("k", "k"), ("e", "e"), ("r", "r"), ("n", "n"), ("o", "o")]:
            app.post_message(
                Key(key, ch)
            )  # as a terminal delivers a paste: all queued before any is handled
        await pilot.pause()
        assert app.screen.query_one(Input).value == "kerno" and "sort: inventory order" in text_of(
            app, "#fleet-sort"
        )


# --- Enter opens the node's dashboard, Escape returns -----------------------------------------------
async def test_enter_opens_the_nodes_dashboard_and_escape_returns_to_the_fleet() -> None:
    app, rep, model = replayed()
    async with app.run_test(size=(120, 40)) as pilot:
        await advance(pilot, rep, 20)
        await pilot.press("down", "down", "enter")
        await pilot.pause()
        assert isinstance(app.screen, NodeDashboardScreen)
        assert app.audit_run.target_states["host"].hostname == "gpu03" and app.audit is None
        await pilot.press("enter")  # the focused pane's drill-down: the normal app, unchanged
        await pilot.pause()
        assert isinstance(app.screen, DrilldownScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, NodeDashboardScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, FleetScreen)
        assert (
            model.rows[shown(app)[app.screen.query_one(DataTable).cursor_row]].name == "gpu03"
        )  # cursor kept
        await pilot.press("down", "enter")
        await pilot.pause()
        assert app.audit_run.target_states["host"].hostname == "gpu04"


async def test_enter_on_a_pending_node_says_so_and_stays() -> None:
    app, rep, _ = replayed()
    async with app.run_test(size=(80, 24)) as pilot:
        await advance(pilot, rep, 1)
        await pilot.press(*["down"] * 7, "enter")
        await pilot.pause()
        assert isinstance(app.screen, FleetScreen)
        assert any("pending" in n.message and "gpu08" in n.message for n in app._notifications)


async def test_run_actions_are_off_on_the_fleet_screen_and_theme_cycles() -> None:
    app, rep, _ = replayed()
    async with app.run_test(size=(80, 24)) as pilot:
        await advance(pilot, rep, 20)
        await pilot.press("a", "u", "R", "t")
        await pilot.pause()
        assert isinstance(app.screen, FleetScreen) and app.theme == "gpuaudit-light"
        await pilot.press("question_mark")
        await pilot.pause()
        assert any(r[0] == "fleet" and "Sort" in r[2] for r in app.screen.rows)
        await pilot.press("escape")
        await pilot.press("enter", "a")
        await pilot.pause()
        assert isinstance(app.screen, PlanScreen)  # on a node, the plan is that node's


# --- saved snapshots ----------------------------------------------------------------------------------
async def test_snapshot_files_open_in_the_same_screen(tmp_path: Path) -> None:
    paths = write_snapshots(tmp_path, 5)
    model = FleetModel.from_documents(((str(p), load_document(p)) for p in paths), title="fleet")
    app = FleetApp(model, theme="gpuaudit-dark")
    async with app.run_test(size=(80, 24)) as pilot:
        assert "sort: worst first" in text_of(app, "#fleet-sort")
        assert [model.rows[k].name for k in shown(app)][:2] == ["gpu03", "gpu05"]
        assert "5 snapshot(s)" in text_of(app, "#fleet-progress")
        await pilot.press("enter")
        await pilot.pause()
        assert (
            isinstance(app.screen, NodeDashboardScreen)
            and app.audit_run.target_states["host"].hostname == "gpu03"
        )
        await pilot.press("escape", "q")
    assert app.return_value == 1  # an outlier: the text report's exit status


def test_fleet_subcommand_tui_flag_rules(tmp_path: Path, capsys, monkeypatch) -> None:
    write_snapshots(tmp_path, 5)
    assert fleet_compare.main([str(tmp_path), "--tui", "--json"]) == 2
    assert "choose one" in capsys.readouterr().err
    assert fleet_compare.main([str(tmp_path), "--tui", "--text"]) == 2
    capsys.readouterr()
    opened: list[list[Path]] = []
    monkeypatch.setattr(
        interactive, "show_fleet_documents", lambda files: opened.append(files) or 0
    )
    assert (
        fleet_compare.main([str(tmp_path)]) == 1 and not opened
    )  # not a terminal: the text report
    assert "gpu03: kernel = 6.8.12-9-pve" in capsys.readouterr().out
    assert fleet_compare.main([str(tmp_path), "--tui"]) == 0 and len(opened[0]) == 5
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    assert fleet_compare.main([str(tmp_path)]) == 0 and len(opened) == 2  # a terminal: the screen
    assert fleet_compare.main([str(tmp_path), "--text"]) == 1 and len(opened) == 2


def test_hosts_opens_the_screen_only_on_a_terminal_without_json_or_prom(monkeypatch) -> None:
    args = AuditRequest(json=False, prom=None, health=False)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    assert fleet.wants_screen(args)
    assert not fleet.wants_screen(AuditRequest(json=True, prom=None, health=False))
    assert not fleet.wants_screen(AuditRequest(json=False, prom=Path("x.prom"), health=False))
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False, raising=False)
    assert not fleet.wants_screen(args)


# --- pure parts ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("width", [80, 100, 120, 200])
def test_columns_fit_the_terminal(width: int) -> None:
    widths = fixed_widths(width)
    assert sum(widths.values()) + 2 <= width
    assert list(widths)[:2] == ["name", "state"] and list(widths)[2:12] == list(PROBE_IDS)
    row = dataclasses.replace(next(iter(live_model(TickClock()).rows.values())), name="x" * 100)
    cells = row_cells(row, widths, {})
    assert [len(c) <= w for c, w in zip(cells, widths.values())] == [True] * len(widths)


def test_progress_line_is_cut_at_whole_parts() -> None:
    model = live_model(TickClock())
    line = model.progress_line(60)
    assert len(line) <= 60 and line.startswith("fleet hosts.ini: 0/8 done · 8 pending")
    assert not line.endswith("·")


def test_sort_cycle_wraps() -> None:
    assert (
        next_sort(SORT_ORDER[-1]) == SORT_ORDER[0] and next_sort("inventory", -1) == SORT_ORDER[-1]
    )


# --- the real run_fleet, live, over a real sshd -------------------------------------------------------
async def test_live_screen_over_real_ssh_one_host_refused(sshd, tmp_path: Path) -> None:
    from gpuaudit.tui.cli.commands import audit_request
    from gpuaudit.tui.cli.entry import build_parser
    from gpuaudit.tui.cli.session_setup import ssh_options

    down = f"{sshd.user}@127.0.0.1:{free_port()}"  # nothing listens: refused at once
    hosts = [fleet.FleetHost(sshd.spec, "up"), fleet.FleetHost(down, "down")]
    args = audit_request(
        build_parser().parse_args(
            ["--hosts", "x", "--probes", "kernel", "--fail-on", "never", *sshd.cli_args()]
        )
    )
    ssh = dataclasses.replace(ssh_options(args), connections=1)
    model = FleetModel.for_hosts(hosts, title="fleet hosts", max_connections=args.max_connections)
    seen: list[str] = []

    async def runner(m: FleetModel) -> None:
        def started(h: fleet.FleetHost) -> None:
            m.host_started(h)
            seen.append(m.rows[h.spec].state)

        await fleet.run_fleet(hosts, args, ssh, on_start=started, on_done=m.host_finished)

    app = FleetApp(model, runner)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        app.screen.refresh_view()
        await pilot.pause()
        assert seen == ["auditing", "auditing"]
        assert states(model) == {"up": "done", "down": "unreachable"}
        assert "refused" in (model.rows[down].reason or "")
        assert model.rows[sshd.spec].worst.get("kernel") is not None
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, NodeDashboardScreen)
        assert [p.probe_id for p in app.audit_run.probes] == ["kernel"]
        await pilot.press("escape", "q")
    assert app.return_value == 3


# --- baselines ----------------------------------------------------------------------------------------
@SIZES
def test_fleet_running_svg(snap_compare, size) -> None:
    app, rep, _ = replayed()

    async def run_before(pilot) -> None:
        await advance(pilot, rep, 4)  # 3 finished (gpu03 already an outlier), 2 auditing, 3 pending

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@SIZES
def test_fleet_finished_svg(snap_compare, size) -> None:
    app, rep, _ = replayed()

    async def run_before(pilot) -> None:
        await advance(pilot, rep, 20)
        await pilot.press("down", "down")  # gpu03: its outlier fact in the detail line

    assert snap_compare(app, terminal_size=size, run_before=run_before)
