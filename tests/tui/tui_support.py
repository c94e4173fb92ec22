"""TUI test helpers: a fixed clock, the SYNTHETIC run fixture, app factories."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path


from gpuaudit.probes.core.models import AuditRun
from gpuaudit.snapshots.schema import Snapshot

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "tui" / "synthetic-done.json"
T_FIXED = datetime(2026, 1, 2, 10, 15, 3, 400000, tzinfo=timezone.utc)


class FixedClock:
    """A clock that only moves when told to."""

    def __init__(self, now: datetime = T_FIXED) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def synthetic_run() -> AuditRun:
    return Snapshot.model_validate_json(FIXTURE.read_text()).to_run()


def running_run() -> AuditRun:
    """The synthetic run half way: the last five probes still running (no findings yet)."""
    run = synthetic_run()
    probes = list(run.probes)
    for i in range(5, 10):
        p = probes[i]
        probes[i] = p.model_copy(update={"status": "running", "findings": [], "summary": "", "error": None,
                                         "records": p.records[:1], "duration_s": 0.0})
    return run.model_copy(update={"probes": probes, "finished_at": None})


