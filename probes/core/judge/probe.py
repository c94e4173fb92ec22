"""One probe judged from its records: extract (records -> facts), the checks, the summary. Pure: the same code
path for live runs, replay and resume."""

from __future__ import annotations

from datetime import UTC, datetime

from gpuaudit.probes.core.judge.checks import judge_checks
from gpuaudit.probes.core.models import CommandRecord, ProbeResult, Role
from gpuaudit.probes.core.spec import Probe


def judge_probe(
    probe: Probe, records_by_role: dict[Role, list[CommandRecord]], started: datetime | None = None
) -> ProbeResult:
    """Interpret and judge one probe from its records (pure): the same code path for live runs and replay."""
    result = ProbeResult(probe_id=probe.id, title=probe.title, started_at=started)
    try:
        outputs = {role: {r.command_id: r for r in recs} for role, recs in records_by_role.items()}
        facts = {role: probe.extract(outputs[role], role) for role in outputs}
        findings = list(judge_checks(probe.checks, facts, outputs))
        summary = probe.summarize(facts)
    except Exception as exc:  # a parser/rule bug fails this probe only, visibly
        return result.model_copy(
            update={
                "status": "failed",
                "error": f"{exc.__class__.__name__}: {exc}",
                "duration_s": _elapsed(started),
            }
        )
    all_failed = bool(records_by_role) and all(
        r.error and r.error.startswith("target failed")
        for recs in records_by_role.values()
        for r in recs
    )
    return result.model_copy(
        update={
            "status": "failed" if all_failed else "done",
            "error": "every target failed" if all_failed else None,
            "facts": {role: f.model_dump(mode="json") for role, f in facts.items()},
            "findings": findings,
            "summary": summary,
            "duration_s": _elapsed(started),
        }
    )


def _elapsed(started: datetime | None) -> float:
    if started is None:
        return 0.0
    return round((datetime.now(UTC) - started).total_seconds(), 4)
