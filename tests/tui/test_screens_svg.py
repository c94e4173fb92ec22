"""Screen baselines (SVG) from the SYNTHETIC static fixture with a fixed clock: never from live probes.

The main screens at 80×24 and 120×40: dashboard, a drill-down with a search hit on a real `lspci -vvv`
line (tabs), the plan, the diff and a failed-target run; the decode roofline (strip, python drill-down's tab)
with the demo's roofline frozen in tests/fixtures/tui/roofline-demo.json. Regenerate:
python -m pytest tests/tui/test_screens_svg.py --snapshot-update, and read the SVG diff.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gpuaudit.snapshots import store
from gpuaudit.snapshots.schema import Snapshot
from gpuaudit.tui.app import make_app
from gpuaudit.tui.views import roofline_view
from tui_support import FIXTURE, FixedClock, demo_roofline, failed_run, running_run, synthetic_run

SIZE = (120, 40)
SIZES = pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
LSPCI = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "system"
    / "lspci-vvv"
    / "hpe-xd665-h100-sxm5-no-driver-bound-rebar-128g.txt"
)


def app_for(run, **kw):
    app = make_app(run, clock=FixedClock(), theme="gpuaudit-dark", **kw)
    app.animation_level = "none"
    return app


def with_real_lspci():
    """The synthetic run with its PCIe record holding a real `lspci -vvv` capture (an H100 SXM5; tabs and all)."""
    run = synthetic_run()
    pcie = run.probe("pcie")
    rec = pcie.records[0].model_copy(update={"stdout": LSPCI.read_text()})
    run.probes[4] = pcie.model_copy(update={"records": [rec]})
    return run


@SIZES
def test_dashboard(snap_compare, size) -> None:
    assert snap_compare(app_for(synthetic_run()), terminal_size=size)


def test_dashboard_running(snap_compare) -> None:
    assert snap_compare(app_for(running_run()), terminal_size=SIZE)


@SIZES
def test_drilldown_search_hit_in_lspci(snap_compare, size) -> None:
    async def search(pilot) -> None:
        pilot.app.open_drilldown("pcie")
        await pilot.pause()
        await pilot.press("slash", *"maxreadreq", "enter")
        await pilot.pause()

    assert snap_compare(app_for(with_real_lspci()), terminal_size=size, run_before=search)


def test_drilldown_evidence(snap_compare) -> None:
    async def open_kernel(pilot) -> None:
        pilot.app.open_drilldown("kernel")
        await pilot.pause()
        await pilot.press(
            "down", "down", "enter"
        )  # dmesg finding -> its hostile (synthetic) output
        await pilot.pause()

    assert snap_compare(app_for(synthetic_run()), terminal_size=SIZE, run_before=open_kernel)


def test_help(snap_compare) -> None:
    assert snap_compare(app_for(synthetic_run()), terminal_size=SIZE, press=["question_mark"])


@SIZES
def test_plan(snap_compare, size) -> None:
    assert snap_compare(app_for(synthetic_run()), terminal_size=size, press=["a"])


@SIZES
def test_diff(snap_compare, size, tmp_path: Path) -> None:
    snap = Snapshot.model_validate_json(FIXTURE.read_text())
    kernel = snap.probes[3]
    older = snap.model_copy(
        update={
            "name": "before-upgrade",
            "probes": [
                *snap.probes[:3],
                kernel.model_copy(update={"findings": kernel.findings[1:]}),
                *snap.probes[4:],
            ],
        }
    )
    saved = store.save(older, "before-upgrade", tmp_path)

    async def diff(pilot) -> None:
        await pilot.press("d")
        await pilot.pause()
        pilot.app.screen.dismiss(saved)
        await pilot.pause()

    assert snap_compare(
        app_for(synthetic_run(), snapshot_dir=tmp_path), terminal_size=size, run_before=diff
    )


@SIZES
def test_failed_targets(snap_compare, size) -> None:
    assert snap_compare(app_for(failed_run()), terminal_size=size)


def test_light_theme_dashboard(snap_compare) -> None:
    app = make_app(synthetic_run(), clock=FixedClock(), theme="gpuaudit-light")
    app.animation_level = "none"
    assert snap_compare(app, terminal_size=SIZE)


@pytest.fixture
def demo_roofline_everywhere(monkeypatch):
    """The SYNTHETIC run shown with the demo's frozen roofline (the strip's colours, every input and step)."""
    monkeypatch.setattr(roofline_view, "roofline_for_run", demo_roofline)


def test_dashboard_roofline_strip(snap_compare, demo_roofline_everywhere) -> None:
    assert snap_compare(app_for(synthetic_run()), terminal_size=(80, 24))


@SIZES
def test_drilldown_roofline(snap_compare, size, demo_roofline_everywhere) -> None:
    assert snap_compare(app_for(synthetic_run()), terminal_size=size, press=["p"])
