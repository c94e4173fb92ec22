"""The decode roofline in the TUI (issue 15 item 5): the strip on the dashboard and the plan screen, the python
drill-down's Roofline tab, the diff screen's before -> after line. Figures come from the engine only."""

from __future__ import annotations

import pytest
from gpuaudit.probes.core.models import Severity
from gpuaudit.probes.core.roofline.report import Roofline, roofline_for_run
from gpuaudit.snapshots.diff import RooflineChange
from gpuaudit.snapshots.schema import Snapshot
from gpuaudit.tui.app import make_app
from gpuaudit.tui.cli.recorded_setup import DEMO_NOTE
from gpuaudit.tui.screens.diff import SnapshotDiffScreen
from gpuaudit.tui.screens.drilldown import DrilldownScreen
from gpuaudit.tui.screens.plan import PlanScreen
from gpuaudit.tui.views import roofline_view
from gpuaudit.tui.views.render import ROOFLINE_PENDING, roofline_pending
from gpuaudit.tui.views.roofline_view import (
    level,
    roofline_change_line,
    roofline_detail,
    roofline_of,
    roofline_summary,
    strip_line,
)
from gpuaudit.tui.widgets.findings_table import FindingsTable
from gpuaudit.tui.widgets.probe_pane import ProbePane
from gpuaudit.tui.widgets.roofline_strip import RooflineStrip
from rich.console import Console
from textual.widgets import OptionList, Static, TabbedContent
from tui_support import case_study_run, demo_roofline, running_run, synthetic_run

DEMO_STRIP = "decode 10.1 tok/s · 10% of comm-aware bound 98–100 tok/s"


def plain(renderable, width: int = 200) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def strip_of(screen) -> RooflineStrip:
    return screen.query_one(RooflineStrip)


def strip_text(screen) -> str:
    return strip_of(screen).render().plain


# --- the strip -----------------------------------------------------------------------------------
async def test_demo_strip_at_80x24_keeps_every_pane_on_screen(clock) -> None:
    run = case_study_run().model_copy(update={"note": DEMO_NOTE})  # what `--demo` shows
    app = make_app(run, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        strip = strip_of(app.screen)
        assert strip_text(app.screen) == f"✖ roofline  {DEMO_STRIP}"
        assert strip.region.height == 1 and strip.region.right <= 80
        assert strip.has_class("-fail")  # 10% of the all-reduce-aware bound: far from physics
        assert strip.region.y < min(
            p.region.y for p in app.screen.query(ProbePane)
        )  # under the header, above the panes
        assert all(p.region.bottom <= 23 for p in app.screen.query(ProbePane))


async def test_strip_at_120x40_adds_the_key_that_explains_it(clock) -> None:
    app = make_app(case_study_run(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert strip_text(app.screen) == f"✖ roofline  {DEMO_STRIP}  ·  p: how it is computed"


async def test_unknown_strip_names_the_first_missing_input_and_no_figure(clock) -> None:
    app = make_app(synthetic_run(), clock=clock)  # SYNTHETIC: no engine process list
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        text = strip_text(app.screen)
        assert text.startswith("? roofline unknown: no serving engine")
        assert (
            "tok/s" not in text and len(text) <= 78 and text.endswith("…")
        )  # cut to the width, not wrapped
        assert strip_of(app.screen).has_class("-unknown")


async def test_a_running_audit_says_pending_not_missing(clock) -> None:
    app = make_app(running_run(), clock=clock)  # SYNTHETIC: half the probes still running
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert (
            strip_text(app.screen)
            == "… roofline pending: the audit is still reading the engine, the model and the GPUs"
        )
        assert strip_of(app.screen).has_class("-info")


async def test_strip_follows_the_run(clock) -> None:
    app = make_app(synthetic_run(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert "unknown" in strip_text(app.screen)
        app.audit_run = case_study_run()  # what a finished live audit does
        await pilot.pause()
        assert DEMO_STRIP in strip_text(app.screen)
        assert strip_of(app.screen).has_class("-fail") and not strip_of(app.screen).has_class(
            "-unknown"
        )


async def test_plan_screen_shows_the_strip(clock) -> None:
    app = make_app(case_study_run(), clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, PlanScreen)
        assert DEMO_STRIP in strip_text(app.screen)
        title = app.screen.query_one("#plan-title", Static)
        assert title.region.bottom <= strip_of(app.screen).region.y  # under the plan's title


# --- the python drill-down's Roofline tab -----------------------------------------------------------
async def test_p_opens_the_roofline_with_every_input_step_and_bound(clock) -> None:
    run = case_study_run()
    rf = roofline_for_run(run)
    app = make_app(run, clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("p")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DrilldownScreen) and screen.probe_id == "python"
        assert screen.query_one("#dd-tabs", TabbedContent).active == "tab-roofline"
        summary = plain(screen.query_one("#roofline-summary", Static).content)
        assert DEMO_STRIP in summary
        for words in (
            "naive (all GPUs' bandwidth)",
            "325 tok/s",
            "measured is 3.1%",
            "with all-reduce latency",
            "98 tok/s",
            "measured is 10.2%",
            "10.1 tok/s",
            rf.measured_source,
            "89.3 ms per token",
        ):
            assert words in summary, words
        detail = plain(screen.query_one("#roofline-detail", Static).content, width=400)
        for label, value in rf.inputs.items():
            assert label in detail and value in detail, label
        for step in rf.steps:
            assert step.label in detail and step.value in detail and step.how in detail, step.label
        assert (
            "51.6 tok/s" in detail and "rtx6kpro/blob/main/models/glm5.md" in detail
        )  # the published row and its source
        box = screen.query_one("#roofline-findings", OptionList)
        assert [box.get_option_at_index(n).id for n in range(box.option_count)] == [
            e["id"] for e in rf.explanations
        ]
        assert (
            box.option_count == 3
        )  # pcie.acs does not apply: every GPU pair crosses the root complex


async def test_an_explaining_finding_opens_here_or_in_its_probe(clock) -> None:
    app = make_app(case_study_run(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("p")
        await pilot.pause()
        screen = app.screen
        box = screen.query_one("#roofline-findings", OptionList)
        box.focus()
        box.highlighted = 0  # python.cuda_graphs: this probe's own finding
        await pilot.press("enter")
        await pilot.pause()
        assert (
            app.screen is screen
            and screen.query_one("#dd-tabs", TabbedContent).active == "tab-finding"
        )
        assert screen.query_one(FindingsTable).current.id == "python.cuda_graphs"
        assert not screen.has_class("-roofline")
        screen.show_tab("roofline")
        box.focus()
        box.highlighted = 1  # power.cpu_scaling_driver: another probe's drill-down
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DrilldownScreen) and app.screen.probe_id == "power"
        assert app.screen.query_one(FindingsTable).current.id == "power.cpu_scaling_driver"


async def test_missing_inputs_are_listed_and_no_figure_is_shown(clock) -> None:
    app = make_app(synthetic_run(), clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        app.open_drilldown("python", tab="roofline")
        await pilot.pause()
        screen = app.screen
        summary = plain(screen.query_one("#roofline-summary", Static).content)
        detail = plain(screen.query_one("#roofline-detail", Static).content)
        assert "roofline unknown" in summary and "tok/s" not in summary + detail
        assert "Missing inputs" in detail and "no serving engine" in detail
        box = screen.query_one(
            "#roofline-findings", OptionList
        )  # SYNTHETIC findings that usually slow decode
        assert [box.get_option_at_index(n).id for n in range(box.option_count)] == [
            "python.cuda_graphs",
            "power.cpu_scaling_driver",
            "power.cpu_cstates",
        ]
        assert (
            "explain a slow decode"
            in screen.query_one("#roofline-explain-title", Static).render().plain
        )


async def test_clicking_the_strip_opens_the_roofline(clock) -> None:
    app = make_app(case_study_run(), clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.click("#roofline-strip")
        await pilot.pause()
        assert isinstance(app.screen, DrilldownScreen)
        assert app.screen.query_one("#dd-tabs", TabbedContent).active == "tab-roofline"
        assert app.screen.has_class("-roofline")  # the findings table gives the tab its room


# --- the diff screen -----------------------------------------------------------------------------
async def test_diff_screen_shows_the_roofline_before_and_after(clock) -> None:
    new = Snapshot.from_run(case_study_run(), name="after-fix")
    faster = dict(
        new.roofline or {},
        measured_tok_s=48.0,
        strip="decode 48.0 tok/s · bound 98–195 tok/s · 25–49% of physics",
    )
    old = new.model_copy(update={"name": "before-fix"})
    new = new.model_copy(update={"roofline": faster})
    app = make_app(case_study_run(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.push_screen(SnapshotDiffScreen(old, new, palette=app.palette))
        await pilot.pause()
        head = app.screen.query_one("#diff-header", Static).render().plain
        assert f"roofline  {DEMO_STRIP}  →  decode 48.0 tok/s" in head
        assert "bounds changed" not in head


async def test_diff_screen_without_a_roofline_change_says_nothing_of_it(clock) -> None:
    snap = Snapshot.from_run(case_study_run(), name="same")
    app = make_app(case_study_run(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.push_screen(SnapshotDiffScreen(snap, snap.model_copy(update={"name": "again"})))
        await pilot.pause()
        assert "roofline" not in app.screen.query_one("#diff-header", Static).render().plain


# --- pure parts ----------------------------------------------------------------------------------
def rf_with(ratio: float | None, bounds: bool = True) -> Roofline:
    rf = Roofline(
        bounds={"tp_aware": 200.0, "comm_aware": 100.0} if bounds else {},
        missing=[] if bounds else ["x"],
    )
    if ratio is not None:
        rf.measured_tok_s = 100 * ratio
        rf.ratios = {"tp_aware": ratio / 2, "comm_aware": ratio}
    return rf


@pytest.mark.parametrize(
    ("ratio", "bounds", "want"),
    [
        (0.6, True, Severity.OK),
        (0.5, True, Severity.OK),
        (0.3, True, Severity.WARNING),
        (0.2, True, Severity.WARNING),
        (0.1, True, Severity.CRITICAL),
        (None, True, Severity.INFO),
        (None, False, Severity.UNKNOWN),
    ],
)
def test_level_by_measured_over_the_most_realistic_bound(ratio, bounds, want) -> None:
    assert level(rf_with(ratio, bounds)) == want


def test_strip_line_is_cut_to_the_width_and_adds_the_hint_only_whole() -> None:
    rf = demo_roofline()  # frozen (tests/fixtures/tui): its strip is the one recorded then
    frozen = rf.strip
    assert strip_line(rf, width=200, hint="p: how").plain == f"✖ roofline  {frozen}  ·  p: how"
    assert strip_line(rf, width=72, hint="p: how").plain == f"✖ roofline  {frozen}"
    cut = strip_line(rf, width=40)
    assert cut.cell_len == 40 and cut.plain.endswith("…")


def test_target_text_is_shown_never_interpreted() -> None:
    rf = demo_roofline()
    rf.inputs["model"] = "[red]x[/red] \x1b]0;pwned\x07/models/evil"
    rf.missing = ["engine said [bold]no[/bold]"]
    text = plain(roofline_detail(rf), width=300)
    assert (
        "[red]x[/red]" in text
        and "[bold]no[/bold]" in text
        and "\x1b" not in text
        and "\x07" not in text
    )
    assert "\x1b" not in roofline_summary(rf).plain


def test_diff_line_names_a_side_without_a_roofline() -> None:
    change = RooflineChange(old_strip="", new_strip="roofline unknown: no serving engine")
    assert (
        roofline_change_line(change).plain
        == "roofline  (not in this snapshot)  →  unknown: no serving engine"
    )


def test_the_pending_line_of_the_first_frame_is_the_strip_lines() -> None:
    """The strip says "pending" without the roofline module on the dashboard's first frame (issue 30): the same
    line, cut the same way, as `strip_line` of an unknown roofline while the audit runs."""
    for width in (None, 20, 60, 78, 200):
        assert roofline_pending(width) == strip_line(Roofline(), width=width, pending=True), width
    assert roofline_pending().plain == f"… {ROOFLINE_PENDING}"


def test_roofline_is_cached_by_what_it_reads(monkeypatch) -> None:
    calls = []
    monkeypatch.setattr(
        roofline_view, "roofline_for_run", lambda run: calls.append(run) or demo_roofline()
    )
    run = synthetic_run()
    first = roofline_of(run)
    assert (
        roofline_of(run.model_copy()) is first and len(calls) == 1
    )  # an equal run: no recomputation
    probes = list(run.probes)
    probes[8] = probes[8].model_copy(update={"records": probes[8].records[:0]})
    roofline_of(run.model_copy(update={"probes": probes}))
    assert len(calls) == 2
    live = (
        running_run()
    )  # a running probe's commands finishing one by one: no recomputation until it ends
    roofline_of(live)
    grown = list(live.probes)
    grown[8] = grown[8].model_copy(
        update={"records": [*grown[8].records, *synthetic_run().probes[4].records]}
    )
    assert grown[8].status == "running" and len(grown[8].records) != len(live.probes[8].records)
    roofline_of(live.model_copy(update={"probes": grown}))
    assert len(calls) == 3


def test_an_engine_error_shows_as_unknown_not_a_crash(monkeypatch) -> None:
    def boom(run):
        raise ValueError("bad config")

    monkeypatch.setattr(roofline_view, "roofline_for_run", boom)
    rf = roofline_of(synthetic_run())
    assert (
        rf.status == "unknown"
        and rf.strip == "roofline unknown: roofline error: ValueError: bad config"
    )
    assert level(rf) == Severity.UNKNOWN
