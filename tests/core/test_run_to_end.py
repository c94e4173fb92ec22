"""run_to_end (probes/core/run/session.py): the engine-side fold that headless, fleet, resume and the scripts share."""

from __future__ import annotations

import asyncio

from gpuaudit.probes.catalogue import REGISTRY
from gpuaudit.probes.core.models import AuditRun
from gpuaudit.probes.core.run.events import fold_events, initial_run
from gpuaudit.probes.core.run.runner import Audit, AuditOptions
from gpuaudit.probes.core.run.session import replay_bindings, run_to_end
from gpuaudit.snapshots import store


def _audit() -> Audit:
    snap = store.load(store.EXAMPLES_DIR / "case-study-before.json")
    return Audit(
        replay_bindings(snap.targets, snap.records, states=snap.target_states),
        list(REGISTRY),
        AuditOptions(),
    )


def test_run_to_end_folds_every_event_and_reports_each_one() -> None:
    seen: list[object] = []
    partial: list[AuditRun] = []

    async def go() -> AuditRun:
        return await run_to_end(_audit(), on_event=seen.append, partial=partial)

    run = asyncio.run(go())
    assert seen and len(run.probes) == len(REGISTRY)
    assert all(p.status != "pending" for p in run.probes)
    assert partial == [run]  # the run so far, for an interrupted --save: at the end, the whole run
    assert run.mode != "demo"  # not stamped: the front end labels it (tui/headless.collect)


def test_without_a_partial_run_the_result_is_the_fold_of_every_event() -> None:
    """Without `partial` run_to_end skips folding each CommandFinished (issue 30: a fleet host's probes bring their
    records whole with ProbeFinished); the run it returns is the one folding every event gives."""
    seen: list[object] = []

    async def go() -> AuditRun:
        return await run_to_end(_audit(), on_event=seen.append)

    run = asyncio.run(go())
    audit = _audit()
    full = fold_events(initial_run(audit.targets, [(p.id, p.title) for p in audit.probes]), seen)
    assert sum(type(e).__name__ == "CommandFinished" for e in seen) > 50
    assert all(p.records for p in run.probes if p.status == "done")
    assert run.model_dump() == full.model_dump()


def test_with_no_reader_the_runner_makes_no_command_events_and_the_run_is_the_same() -> None:
    """No on_event and no partial run (a fleet host): the runner makes no CommandStarted/CommandFinished (issue
    30); each probe's records and findings are those of a run whose every event was read."""
    audit = _audit()
    kinds: list[str] = []
    events = audit.events

    async def spied(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        async for event in events(*args, **kwargs):  # type: ignore[arg-type]
            kinds.append(type(event).__name__)
            yield event

    audit.events = spied  # type: ignore[method-assign]
    quiet = asyncio.run(run_to_end(audit))
    read = asyncio.run(run_to_end(_audit(), on_event=lambda event: None))
    assert "ProbeFinished" in kinds
    assert "CommandStarted" not in kinds and "CommandFinished" not in kinds
    assert [(p.probe_id, p.status, p.records, p.findings) for p in quiet.probes] == [
        (p.probe_id, p.status, p.records, p.findings) for p in read.probes
    ]
    assert sum(len(p.records) for p in quiet.probes) > 50
