"""Pilot tests of what a demanding terminal user expects (issue 17): small terminals, search, keys,
filters, the plan, failed targets, facts, recordings and the diff screen."""

from __future__ import annotations

from pathlib import Path

from gpuaudit.probes.core.judge.plan import build_plan, fix_commands, plan_markdown
from gpuaudit.snapshots import store
from gpuaudit.snapshots.schema import Snapshot
from gpuaudit.tui.app import make_app
from gpuaudit.tui.cli.recorded_setup import DEMO_NOTE
from gpuaudit.tui.screens.dashboard import layout_for
from gpuaudit.tui.screens.diff import SnapshotDiffScreen
from gpuaudit.tui.screens.drilldown import DrilldownScreen
from gpuaudit.tui.views.render import evidence_row, fact_value, header_text, record_output
from gpuaudit.tui.widgets.command_output import CommandOutput
from gpuaudit.tui.widgets.probe_pane import ProbePane
from textual.widgets import DataTable, Input, Label, OptionList, Static
from textual.widgets._footer import FooterKey
from tui_support import FIXTURE, case_study_run, failed_run, synthetic_run


def body(pane: ProbePane) -> str:
    return pane.render().plain


# --- 80x24 first ---------------------------------------------------------------------------------
async def test_80x24_dashboard_shows_every_probe_with_its_worst_finding_title(clock) -> None:
    run = case_study_run().model_copy(update={"note": DEMO_NOTE})  # what `--demo` shows
    app = make_app(run, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        panes = list(app.screen.query(ProbePane))
        assert all(p.region.bottom <= 23 for p in panes)  # every probe on screen, above the footer
        pcie = app.screen.query_one("#pane-pcie", ProbePane)
        assert body(pcie).splitlines()[1].startswith("▲ WARN GPU MaxReadReq 512 bytes")
        python = body(app.screen.query_one("#pane-python", ProbePane))
        assert "CUDA graphs disabled" in python
        keys = [k for k in app.screen.query(FooterKey) if k.display]
        shown = {k.key_display or k.key for k in keys}
        assert {"f", "/", "a", "q", "?"} <= shown
        assert all(
            k.region.right <= 80 and k.region.width >= len(k.description) + 2 for k in keys
        ), [(k.key, k.region) for k in keys]


async def test_demo_note_wraps_and_targets_say_recorded(clock) -> None:
    run = case_study_run()
    app = make_app(run, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        header = app.screen.query_one("#targets", Static)
        text = str(header.render())
        assert "not a capture of a real machine" in text.replace("\n", " ")
        assert "recorded" in text and "connected" not in text
        assert header.region.height >= 3  # the note wrapped onto more lines instead of being cut
    assert "● recorded" in header_text(run, width=200).plain


def test_layout_uses_the_space_of_larger_terminals() -> None:
    assert layout_for(80, 24) == (1, True)
    assert layout_for(120, 40) == (2, False)
    assert layout_for(200, 45) == (3, False)


async def test_120x40_panes_list_several_findings(clock) -> None:
    app = make_app(case_study_run(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        text = body(app.screen.query_one("#pane-pcie", ProbePane))
        assert "GPU MaxReadReq 512 bytes" in text and "ACS redirect" in text


# --- search in raw output ------------------------------------------------------------------------
async def test_search_expands_tabs_ignores_case_and_n_navigates(clock) -> None:
    app = make_app(case_study_run(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        app.open_drilldown("pcie")
        await pilot.pause()
        await pilot.press("slash", *"maxreadreq", "enter")
        await pilot.pause()
        viewer = app.screen.query_one(CommandOutput)
        assert app.focused is viewer  # Enter leaves the box, so n / N navigate
        assert viewer.selected_text == "MaxReadReq"
        row = viewer.match[0]
        rendered = "".join(seg.text for seg in viewer.render_line(row - viewer.scroll_offset.y))
        assert (
            "\t" not in rendered and rendered.count("MaxPayload") <= 1
        )  # no stale cells from tab widths
        assert "MaxReadReq 512 bytes" in rendered
        count = str(app.screen.query_one("#search-count", Label).render())
        assert count.startswith("1/") and int(count.split("/")[1]) >= 8
        await pilot.press("n")
        assert str(app.screen.query_one("#search-count", Label).render()).startswith("2/")
        await pilot.press("N", "N")
        assert (
            str(app.screen.query_one("#search-count", Label).render())
            == count.split("/")[1] + "/" + count.split("/")[1]
        )


async def test_evidence_jump_scrolls_to_the_devctl_line(clock) -> None:
    app = make_app(case_study_run(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        app.open_drilldown("pcie", "pcie.max_read_req")
        await pilot.pause()
        await pilot.press("e")
        await pilot.pause()
        viewer = app.screen.query_one(CommandOutput)
        assert viewer.match is not None
        row = viewer.match[0]
        assert "MaxReadReq 512 bytes" in viewer.lines[row]
        assert viewer.scroll_offset.y <= row < viewer.scroll_offset.y + viewer.size.height


def test_evidence_row_prefers_the_line_with_the_observed_words() -> None:
    run = case_study_run()
    f = next(f for f in run.findings if f.id == "pcie.max_read_req")
    rec = next(r for p in run.probes for r in p.records if r.command_id == "lspci_vvv")
    text = record_output(rec).expandtabs(8)
    assert "MaxReadReq 512" in text.split("\n")[evidence_row(text, f)]


# --- keys ----------------------------------------------------------------------------------------
async def test_fast_arrow_keys_are_not_dropped(clock) -> None:
    app = make_app(synthetic_run(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("down", "down")  # no pause between: the focus of the first has not landed
        await pilot.pause()
        assert app.focused.id == "pane-pcie"
        await pilot.press("right", "up")
        await pilot.pause()
        assert app.focused.id == "pane-kernel"


async def test_enter_right_after_arrows_opens_the_pane_they_reached(clock) -> None:
    app = make_app(synthetic_run(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press(
            "down", "down", "enter"
        )  # as fast as tmux send-keys: focus lands after Enter
        await pilot.pause()
        assert isinstance(app.screen, DrilldownScreen) and app.screen.probe_id == "pcie"


async def test_80x24_arrows_walk_the_single_column(clock) -> None:
    app = make_app(synthetic_run(), clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("down", "down", "down", "down")
        await pilot.pause()
        assert app.focused.id == "pane-pcie"


# --- filtering -----------------------------------------------------------------------------------
async def test_slash_filters_panes_by_title_or_id(clock) -> None:
    app = make_app(case_study_run(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("slash", *"MAXREAD", "enter")
        await pilot.pause()
        shown = [
            p.probe_id
            for p in app.screen.query(ProbePane)
            if p.display and not p.has_class("-filtered-out")
        ]
        assert shown == ["pcie"] and app.focused.id == "pane-pcie"
        assert "'MAXREAD'" in str(app.screen.query_one("#targets").render())
        await pilot.press("escape")
        await pilot.pause()
        assert app.finding_filter.text == "" and all(
            not p.has_class("-filtered-out") for p in app.screen.query(ProbePane)
        )


async def test_not_checked_view_lists_unknowns_with_reasons_and_opens_one(clock) -> None:
    app = make_app(case_study_run(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("u")
        await pilot.pause()
        assert app.screen.id == "not-checked"
        options = app.screen.query_one(OptionList)
        prompts = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert any("nccl.transport_observed" in p and "NCCL_DEBUG" in p for p in prompts)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DrilldownScreen)
        assert app.screen.query_one("#findings").current.severity.value == "unknown"


# --- plan ----------------------------------------------------------------------------------------
async def test_plan_has_not_checked_opens_steps_copies_and_saves(clock, tmp_path: Path) -> None:
    app = make_app(case_study_run(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("a")
        await pilot.pause()
        screen = app.screen
        assert "Not checked" in str(screen.query_one("#plan-not-checked", Static).render())
        screen.save_dir = tmp_path
        await pilot.press("down", "down", "down")  # step 4: the NUMA balancing sysctl
        await pilot.press("c")
        assert app.clipboard == "sysctl -w kernel.numa_balancing=0"
        await pilot.press("C")
        assert app.clipboard.startswith("# gpuaudit-tui action plan") and "```sh" in app.clipboard
        await pilot.press("m")
        saved = list(tmp_path.glob("gpuaudit-plan-*.md"))
        assert len(saved) == 1 and saved[0].read_text() == app.clipboard
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DrilldownScreen) and app.screen.probe_id == "kernel"
        await pilot.press("c")  # a finding to the clipboard
        assert app.clipboard.startswith("[warning] Automatic NUMA balancing is on")


def test_plan_markdown_has_no_join_glitch_and_fences_commands() -> None:
    run = case_study_run()
    md = plan_markdown(build_plan(run), run)
    assert "enabled.; Either" not in md and ".; " not in md.replace("=...;", "")
    assert "```sh\nsysctl -w kernel.numa_balancing=0\n```" in md
    assert "## Not checked" in md


def test_fix_commands_are_cut_where_the_prose_resumes() -> None:
    assert fix_commands(
        "On the HOST: systemctl enable --now nvidia-persistenced (nothing to change)."
    ) == ["systemctl enable --now nvidia-persistenced"]
    assert fix_commands("Reset the GPU (nvidia-smi -r) or reboot during a maintenance window.") == [
        "nvidia-smi -r"
    ]
    assert fix_commands("Runtime setpci changes are non-persistent and risky on production.") == []


# --- failed targets ------------------------------------------------------------------------------
async def test_failed_targets_one_line_each_and_panes_say_not_audited(clock) -> None:
    app = make_app(failed_run(), clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        lines = str(app.screen.query_one("#targets").render()).splitlines()
        assert (
            len(lines) == 2 and "host root@10.0.0.5 ✖ unreachable: connection refused" in lines[0]
        )
        assert "not reached, the host is unreachable" in lines[1]
        for pane in app.screen.query(ProbePane):
            assert (
                body(pane).splitlines()[1] == "not audited: host unreachable, container unreachable"
            )
    app = make_app(failed_run(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        text = body(app.screen.query_one("#pane-pcie", ProbePane))
        assert text == "not audited: host unreachable, container unreachable"


# --- facts ---------------------------------------------------------------------------------------
async def test_facts_tab_is_a_table_with_units_and_sources(clock) -> None:
    app = make_app(case_study_run(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        app.open_drilldown("kernel")
        await pilot.pause()
        table = app.screen.query_one("#facts", DataTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        release = next(r for r in rows if r[1] == "release")
        assert release == ["host", "release", "6.8.12-9-pve", "uname_r"]
        assert not any(c.startswith("{") for r in rows for c in r[2:3] if not c[0].isdigit())
    assert fact_value("max_power_w", 600) == "600 W" and fact_value("x", True) == "yes"


# --- diff ----------------------------------------------------------------------------------------
async def test_diff_uses_v_for_raw_and_names_b_after_a_save(clock, tmp_path: Path) -> None:
    old = store.save(Snapshot.model_validate_json(FIXTURE.read_text()), "old", tmp_path)
    app = make_app(synthetic_run(), clock=clock, snapshot_dir=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("d")
        await pilot.pause()
        app.screen.dismiss(old)
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, SnapshotDiffScreen)
        assert "r" not in {b.key for b in screen.BINDINGS}
        await pilot.press("s")
        await pilot.pause()
        app.screen.query_one(Input).value = "after-fix"
        await pilot.press("enter")
        await pilot.pause()
        assert "B: after-fix" in str(screen.query_one("#diff-header", Static).render())


def test_diff_lists_no_ok_to_ok_rows() -> None:
    snap = Snapshot.model_validate_json(FIXTURE.read_text())
    kernel = snap.probes[3]
    ok = next(f for f in kernel.findings if f.severity.value == "ok")
    reworded = [
        f.model_copy(update={"observed": f.observed + " (reworded)"}) if f is ok else f
        for f in kernel.findings
    ]
    newer = snap.model_copy(
        update={
            "probes": [
                *snap.probes[:3],
                kernel.model_copy(update={"findings": reworded}),
                *snap.probes[4:],
            ]
        }
    )
    screen = SnapshotDiffScreen(snap, newer)
    assert screen.changed_probes == [] and screen.diff.hidden >= 1


async def test_picker_marks_recorded_snapshots(clock, tmp_path: Path) -> None:
    from gpuaudit.tui.screens.snapshot_picker import SnapshotPickerScreen

    demo = Snapshot.from_run(case_study_run())
    store.save(demo.model_copy(update={"name": "saved-from-demo"}), "saved-from-demo", tmp_path)
    app = make_app(synthetic_run(), clock=clock, snapshot_dir=tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:
        app.push_screen(SnapshotPickerScreen(tmp_path))
        await pilot.pause()
        table = app.screen.query_one(DataTable)
        rows = {
            str(table.get_row_at(i)[0]): str(table.get_row_at(i)[5]) for i in range(table.row_count)
        }
        assert rows["saved-from-demo"] == "recorded (demo)"


async def test_owner_shows_in_the_drilldown_and_the_plan(clock) -> None:
    run = synthetic_run()
    python = run.probe("python")
    run.probes[8] = python.model_copy(
        update={"findings": [f.model_copy(update={"owner": "engine"}) for f in python.findings]}
    )
    app = make_app(run, clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        app.open_drilldown("python")
        await pilot.pause()
        table = app.screen.query_one("#findings", DataTable)
        assert [str(c) for c in table.get_row_at(0)][3] == "engine"
        assert "who fixes it: engine" in str(
            app.screen.query_one("#finding-detail", Static).render()
        )
        await pilot.press("escape", "a")
        await pilot.pause()
        assert "who: engine" in str(
            app.screen.query_one("#plan-steps", OptionList).get_option_at_index(0).prompt
        )
