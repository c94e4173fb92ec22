"""run_to_end (probes/core/run/session.py): the engine-side fold that headless, fleet, resume and the scripts share."""

from __future__ import annotations

import asyncio

from gpuaudit.probes.catalogue import REGISTRY
from gpuaudit.probes.core.models import AuditRun
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
