"""TUI test helpers: a fixed clock, the SYNTHETIC run fixture, app factories."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from gpuaudit.probes.core.models import AuditRun, Finding, Severity, TargetState
from gpuaudit.snapshots.schema import Snapshot

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "tui" / "synthetic-done.json"
T_FIXED = datetime(2026, 1, 2, 10, 15, 3, 400000, tzinfo=UTC)


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
        probes[i] = p.model_copy(
            update={
                "status": "running",
                "findings": [],
                "summary": "",
                "error": None,
                "records": p.records[:1],
                "duration_s": 0.0,
            }
        )
    return run.model_copy(update={"probes": probes, "finished_at": None})


CASE_STUDY = (
    Path(__file__).resolve().parents[2] / "snapshots" / "examples" / "case-study-before.json"
)


def case_study_run() -> AuditRun:
    """The bundled demo (raw outputs built from real captures, e.g. a real `lspci -vvv` with its tabs)."""
    return Snapshot.model_validate_json(CASE_STUDY.read_text()).to_run()


def failed_run() -> AuditRun:
    """The synthetic run as if neither target had been reached (SYNTHETIC: the host refused the connection)."""
    run = synthetic_run()
    states = {
        "host": TargetState(
            role="host", state="failed", reason="root@10.0.0.5: connection refused"
        ),
        "container": TargetState(
            role="container",
            state="failed",
            reason="the host it is entered through is unreachable: root@10.0.0.5: connection refused",
        ),
    }
    probes = []
    for p in run.probes:
        unknown = [
            Finding(
                id=f.id,
                severity=Severity.UNKNOWN,
                probe=p.probe_id,
                targets=f.targets,
                title=f.title,
                observed="not checked: target unreachable",
            )
            for f in p.findings
        ]
        probes.append(
            p.model_copy(
                update={
                    "status": "failed",
                    "error": "every target failed",
                    "records": [],
                    "facts": {},
                    "summary": "",
                    "findings": unknown,
                }
            )
        )
    return run.model_copy(
        update={"target_states": states, "probes": probes, "mode": "live", "note": None}
    )


ROOFLINE_DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "tui" / "roofline-demo.json"


def demo_roofline(_run: AuditRun | None = None, **_kw: object):
    """The demo's roofline, frozen (tests/fixtures/tui/SOURCES.md): for baselines that must not move with the engine."""
    from gpuaudit.probes.core.roofline.report import Roofline

    return Roofline.model_validate_json(ROOFLINE_DEMO.read_text())
