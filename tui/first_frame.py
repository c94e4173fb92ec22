"""What the dashboard paints first, before the engine loads: the probes' panes by title and the mode.

`gpuaudit-tui` opens its screen from this skeleton and only then (in a thread, tui/app.py) loads the probe
catalogue, the runner and the recording and builds the audit; the panes then fill as usual. The titles are a copy
of the catalogue's (probes/catalogue.py), in its order: tests/tui/test_first_frame.py keeps the two equal, and a
mismatch at run time only costs a recomposed dashboard, never a wrong pane.
"""

from __future__ import annotations

from gpuaudit.probes.core.models import AuditRun, ProbeResult
from gpuaudit.probes.core.run.request import AuditRequest

PROBE_TITLES: tuple[tuple[str, str], ...] = (
    ("firmware", "Firmware / UEFI"),
    ("container", "Container"),
    ("driver", "NVIDIA driver & CUDA"),
    ("kernel", "Kernel"),
    ("pcie", "PCIe"),
    ("power", "Power management"),
    ("nccl", "NCCL / GPU-to-GPU"),
    ("numa", "NUMA"),
    ("python", "Python runtime"),
    ("nvlink", "NVLink / fabric"),
)
"""(probe id, pane title) of every probe, in the catalogue's display order."""


def skeleton_run(request: AuditRequest) -> AuditRun:
    """The run the first frame shows: every selected probe pending, no target yet, the mode and what is loading."""
    ids = request.probe_ids
    probes = [
        ProbeResult(probe_id=pid, title=title)
        for pid, title in PROBE_TITLES
        if ids is None or pid in ids
    ]
    if request.demo:
        mode, note = "demo", "DEMO: loading the case study…"
    elif request.replay:
        mode, note = "replay", f"REPLAY: loading {request.replay}…"
    else:
        mode, note = "live", None
    return AuditRun(probes=probes, mode=mode, note=note)
