"""The TUI's replay keeps every recorded record too, the ones no probe asks for today included (issue 24), so a
replay saved from the TUI holds what the machine answered, like `--replay FILE --json`."""

from __future__ import annotations

from pathlib import Path

from gpuaudit.probes.core.run.request import AuditRequest
from gpuaudit.snapshots import store
from gpuaudit.tui.app import app_for

OLD = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "releases"
    / "0.1.0"
    / "case-study-before.json"
)


async def test_a_tui_replay_keeps_the_records_no_probe_asks_for() -> None:
    recorded = {(r.target, r.command_id): r for r in store.load(OLD).records}
    app = app_for(AuditRequest(replay=str(OLD)))
    async with app.run_test(size=(120, 40)) as pilot:
        have: dict = {}
        for _ in range(400):
            await pilot.pause(0.05)
            await app.workers.wait_for_complete()
            run = app.audit_run
            have = {(r.target, r.command_id): r for p in run.probes for r in p.records}
            if run.finished_at is not None and recorded.keys() <= have.keys():
                break
        missing = sorted(recorded.keys() - have.keys())
        assert not missing, missing  # e.g. lspci_acsctl, which no probe of today asks for
        assert all(have[k].stdout == r.stdout for k, r in recorded.items())
