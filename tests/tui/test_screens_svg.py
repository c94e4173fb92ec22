"""Screen baselines (SVG) from the SYNTHETIC static fixture with a fixed clock: never from live probes.

Regenerate: python -m pytest tests/tui/test_screens_svg.py --snapshot-update, and read the SVG diff.
"""

from __future__ import annotations

from gpuaudit.tui.app import make_app
from tui_support import FixedClock, running_run, synthetic_run

SIZE = (120, 40)


def app_for(run, **kw):
    app = make_app(run, clock=FixedClock(), theme="gpuaudit-dark", **kw)
    app.animation_level = "none"
    return app


def test_dashboard_done(snap_compare) -> None:
    assert snap_compare(app_for(synthetic_run()), terminal_size=SIZE)


def test_dashboard_running(snap_compare) -> None:
    assert snap_compare(app_for(running_run()), terminal_size=SIZE)


def test_dashboard_small_terminal(snap_compare) -> None:
    assert snap_compare(app_for(synthetic_run()), terminal_size=(80, 24))


def test_drilldown_evidence(snap_compare) -> None:
    async def open_kernel(pilot) -> None:
        pilot.app.open_drilldown("kernel")
        await pilot.pause()
        await pilot.press("down", "down", "enter")  # dmesg finding -> its hostile (synthetic) output
        await pilot.pause()

    assert snap_compare(app_for(synthetic_run()), terminal_size=SIZE, run_before=open_kernel)


def test_help(snap_compare) -> None:
    assert snap_compare(app_for(synthetic_run()), terminal_size=SIZE, press=["question_mark"])


def test_plan(snap_compare) -> None:
    assert snap_compare(app_for(synthetic_run()), terminal_size=SIZE, press=["a"])


def test_light_theme_dashboard(snap_compare) -> None:
    app = make_app(synthetic_run(), clock=FixedClock(), theme="gpuaudit-light")
    app.animation_level = "none"
    assert snap_compare(app, terminal_size=SIZE)
