"""The TUI carries the regression.* findings against the host's last-known-good baseline (issue 26)."""

from __future__ import annotations

from gpuaudit.probes.core.models import Severity
from gpuaudit.snapshots import baseline as bl
from gpuaudit.snapshots.schema import Snapshot
from gpuaudit.tui.app import make_app
from gpuaudit.tui.screens.plan import PlanScreen
from textual.widgets import OptionList
from tui_support import case_study_run


async def test_a_pinned_baseline_adds_regression_findings_to_the_plan(clock, tmp_path, monkeypatch):
    monkeypatch.setenv(bl.ENV_DIR, str(tmp_path / "baselines"))
    run = case_study_run()
    good = Snapshot.from_run(run, name="known-good")
    faster = dict(good.roofline or {}, measured_tok_s=20.0)
    bl.set_baseline(good.model_copy(update={"roofline": faster}))
    app = make_app(run, clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        speed = next(f for f in app.audit_run.findings if f.id == "regression.decode_speed")
        assert speed.severity == Severity.CRITICAL  # 10.1 tok/s against 20.0 at the baseline
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, PlanScreen)
        assert any(f.id == "regression.decode_speed" for s in app.screen.plan for f in s.findings)


async def test_no_baseline_no_regression_findings(clock, tmp_path, monkeypatch):
    monkeypatch.setenv(bl.ENV_DIR, str(tmp_path / "none"))
    app = make_app(case_study_run(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert not [f for f in app.audit_run.findings if f.id.startswith("regression.")]


async def test_a_regression_step_opens_its_drilldown(clock, tmp_path, monkeypatch):
    monkeypatch.setenv(bl.ENV_DIR, str(tmp_path / "baselines"))
    run = case_study_run()
    good = Snapshot.from_run(run, name="known-good")
    bl.set_baseline(
        good.model_copy(update={"roofline": dict(good.roofline or {}, measured_tok_s=20.0)})
    )
    app = make_app(run, clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, PlanScreen)
        screen.query_one("#plan-steps", OptionList).highlighted = next(
            n
            for n, s in enumerate(screen.plan)
            if any(f.id == "regression.decode_speed" for f in s.findings)
        )
        screen.action_open()
        await pilot.pause()
        assert getattr(app.screen, "probe_id", None) == "baseline"
        await pilot.press("escape")
        await pilot.pause()
