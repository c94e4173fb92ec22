"""A command's duration over a real OpenSSH sshd is its run on the target (issue 30): the worker times each command
itself and says so in its end frame, so a command's duration_s is never shorter than what it did there."""

from __future__ import annotations

import pytest
from gpuaudit.probes.core.run.runner import AuditOptions
from gpuaudit.probes.core.spec import Command
from reliability.faultkit import fake_probe, run_audit

pytestmark = pytest.mark.sshd


async def test_durations_over_ssh_are_the_commands_runs_on_the_target(sshd):
    probe = fake_probe(
        "durations",
        Command("c_sleep", "sleep 0.3; echo slept"),
        Command("c_quick", "echo quick"),
        Command("c_big", "head -c 2000000 /dev/zero | tr '\\0' x"),
    )
    run = await run_audit(sshd.spec, None, sshd.options(), [probe], AuditOptions(timeout_s=10))
    recs = {r.command_id: r for r in run.probe("durations").records}
    assert any("gpuaudit-worker" in line for line in run.target_states["host"].executed), run
    assert recs["c_sleep"].stdout == "slept\n" and recs["c_sleep"].exit_status == 0
    assert 0.3 <= recs["c_sleep"].duration_s < 3, recs["c_sleep"]
    assert recs["c_quick"].exit_status == 0 and 0 < recs["c_quick"].duration_s < 3
    assert recs["c_big"].exit_status == 0 and 0 < recs["c_big"].duration_s < 5
    assert all(r.started_at is not None for r in recs.values())
