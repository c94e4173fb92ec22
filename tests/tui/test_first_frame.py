"""The dashboard paints from a skeleton before the engine loads, then the audit is set up after it (issue 30)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gpuaudit.probes.catalogue import REGISTRY
from gpuaudit.probes.core.errors import GpuAuditError
from gpuaudit.probes.core.run.request import AuditRequest
from gpuaudit.tui.app import app_for
from gpuaudit.tui.first_frame import PROBE_TITLES
from gpuaudit.tui.widgets.probe_pane import ProbePane

ROOT = Path(__file__).resolve().parents[2]


def test_the_skeleton_titles_are_the_catalogues() -> None:
    assert PROBE_TITLES == tuple((p.id, p.title) for p in REGISTRY)


FIRST_FRAME = """
import asyncio, json, sys
from gpuaudit.probes.core.run.request import AuditRequest
from gpuaudit.tui.app import app_for
from textual.app import App

app = app_for(AuditRequest(demo=True))
seen = {}
display = App._display


def first_frame(self, screen, renderable):
    if renderable is not None and not self._batch_count and not seen and screen.id == "dashboard":
        seen["modules"] = sorted(m for m in sys.modules if m.startswith("gpuaudit"))
        seen["panes"] = [str(p.border_title) for p in screen.query("ProbePane")]
        seen["strip"] = screen.query_one("RooflineStrip").render().plain
    return display(self, screen, renderable)


App._display = first_frame


async def main():
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.exit()


asyncio.run(main())
print(json.dumps(seen))
"""


def test_the_first_frame_shows_every_pane_before_the_engine_loads() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", FIRST_FRAME], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["panes"] == [title for _, title in PROBE_TITLES]
    loaded = set(seen["modules"])
    for heavy in (
        "gpuaudit.probes.catalogue",  # every probe, its facts models and checks
        "gpuaudit.probes.core.run.runner",
        "gpuaudit.snapshots.store",
        "gpuaudit.tui.deferred",
        "gpuaudit.tui.screens.drilldown",
        # the decode roofline: its parsers and models (~0.06 s of CPU); the strip says "pending" without it
        "gpuaudit.probes.core.roofline.report",
        "gpuaudit.probes.core.judge.plan",
        "gpuaudit.tui.views.roofline_view",
    ):
        assert heavy not in loaded, heavy
    assert seen["strip"].startswith("… roofline pending"), seen["strip"]


def test_the_bridge_to_textual_loads_no_engine() -> None:
    """`gpuaudit-tui` opens the dashboard through tui/interactive.py: importing it loads neither the snapshot
    schema (the fleet app reads a node's snapshot through tui/deferred.py) nor the roofline nor the catalogue."""
    code = "import json, sys, gpuaudit.tui.interactive; print(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = set(json.loads(proc.stdout))
    for heavy in (
        "gpuaudit.snapshots.schema",
        "gpuaudit.probes.core.roofline.report",
        "gpuaudit.probes.catalogue",
        "gpuaudit.probes.core.run.runner",
        "gpuaudit.tui.deferred",
    ):
        assert heavy not in loaded, heavy


async def wait_for_audit(app, pilot) -> None:
    for _ in range(200):
        await pilot.pause(0.05)
        await app.workers.wait_for_complete()
        run = app.audit_run
        if app.audit is not None and run.finished_at is not None:
            return
    raise AssertionError("the demo audit did not finish")


async def test_the_demo_is_set_up_after_the_first_frame_and_runs() -> None:
    app = app_for(AuditRequest(demo=True))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for_audit(app, pilot)
        run = app.audit_run
        assert run.mode == "demo" and run.note and "DEMO" in run.note
        assert [t.role for t in run.targets] == ["host", "container"]
        assert all(p.status == "done" for p in run.probes), [
            (p.probe_id, p.status) for p in run.probes
        ]
        panes = list(app.screen.query(ProbePane))
        assert [p.probe_id for p in panes] == [pid for pid, _ in PROBE_TITLES]
        assert all(p.roles == ["host", "container"] for p in panes)
        assert app.plan_dir is not None
        await pilot.press("enter")  # the drill-down (tui/deferred.py) opens as before
        await pilot.pause()
        assert app.screen.__class__.__name__ == "DrilldownScreen"


async def test_a_probe_subset_paints_only_its_panes() -> None:
    app = app_for(AuditRequest(demo=True, probe_ids=("pcie", "numa")))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for_audit(app, pilot)
        assert [p.probe_id for p in app.screen.query(ProbePane)] == ["pcie", "numa"]


async def test_a_bad_recording_exits_with_the_error_for_the_cli(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    app = app_for(AuditRequest(replay=str(bad)))
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(100):
            await pilot.pause(0.05)
            if app.setup_error is not None:
                break
    assert isinstance(app.setup_error, GpuAuditError), app.setup_error
    assert app.return_code == 2
