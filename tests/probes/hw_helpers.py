"""Shared helpers of the hardware-probe tests (driver, nvlink, pcie, firmware, power).

`sev` judges facts and returns the one finding's severity, `rec` builds a CommandRecord, `run`
replays a probe over a recorded directory (the case study) and returns its ProbeResult.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from gpuaudit.probes.core.models import CommandRecord, ProbeResult
from gpuaudit.probes.core.run.events import ProbeFinished
from gpuaudit.probes.core.run.runner import Audit
from gpuaudit.probes.core.run.session import directory_bindings
from gpuaudit.probes.core.spec import Probe

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "snapshots" / "examples" / "case-study"


def rec(
    probe_id: str, cid: str, stdout: str = "", exit_status: int | None = 0, stderr: str = ""
) -> CommandRecord:
    return CommandRecord(
        target="host",
        probe_id=probe_id,
        command_id=cid,
        command=cid,
        exit_status=exit_status,
        stdout=stdout,
        stderr=stderr,
    )


def run(probe: Probe, directory: Path | str) -> ProbeResult:
    """Replay `probe` over a recorded directory (a path, or a case-study phase name: "before"/"after")."""
    path = CASE / directory if isinstance(directory, str) else directory

    async def go() -> ProbeResult:
        async for ev in Audit(directory_bindings(path), [probe]).events():
            if isinstance(ev, ProbeFinished):
                return ev.result
        raise AssertionError(f"{probe.id}: no ProbeFinished event")

    return asyncio.run(go())
