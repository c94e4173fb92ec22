"""What the app needs only after the dashboard's first frame: the screens not shown first, the snapshot actions,
the baseline, the audit's setup (the probe catalogue, the runner, the snapshot store), the decode roofline (the
roofline strip computes through `roofline_view` once the run has a record) and the snapshot schema (a node opened
from the fleet screen, tui/fleet_app.py: tui/interactive.py's import would load it otherwise).

tui/app.py imports this module through `later()` (its one function-level import of a project module, listed in
tests/core/test_import_contracts.py): a thread loads it right after the first frame, so the setup and the first
key press find it loaded. Keeping it off the first frame is what makes the dashboard paint within a second
(tests/bench/bench_first_paint.py, docs/PERFORMANCE.md).
"""

from __future__ import annotations

from gpuaudit.probes.core.collect.replay_transport import keep_unasked
from gpuaudit.snapshots.baseline import apply_baseline
from gpuaudit.snapshots.schema import Snapshot
from gpuaudit.tui import snapshot_actions
from gpuaudit.tui.cli.preflight import plan_folder
from gpuaudit.tui.cli.session_setup import build_setup
from gpuaudit.tui.screens.diff import SnapshotDiffScreen
from gpuaudit.tui.screens.drilldown import ROOFLINE_PROBE, DrilldownScreen
from gpuaudit.tui.screens.help import HelpScreen, binding_rows, key_display
from gpuaudit.tui.screens.not_checked import NotCheckedScreen
from gpuaudit.tui.screens.pictures import PROBE_TAB, PicturesScreen
from gpuaudit.tui.screens.plan import PlanScreen
from gpuaudit.tui.screens.snapshot_picker import SnapshotPickerScreen
from gpuaudit.tui.views import roofline_view

__all__ = [
    "PROBE_TAB",
    "ROOFLINE_PROBE",
    "DrilldownScreen",
    "HelpScreen",
    "NotCheckedScreen",
    "PicturesScreen",
    "PlanScreen",
    "SnapshotDiffScreen",
    "Snapshot",
    "SnapshotPickerScreen",
    "apply_baseline",
    "binding_rows",
    "build_setup",
    "keep_unasked",
    "key_display",
    "plan_folder",
    "roofline_view",
    "snapshot_actions",
]
