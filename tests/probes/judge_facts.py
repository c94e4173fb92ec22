"""Shared test helper: judge a probe's declared checks over facts alone (the python and nccl rule tables).

Every command the probe declares on a role gets a clean, empty record, so the framework's source gate
passes unless the facts list the command in `problems` (as extract does for a failed or unreadable one).
ACTIVE commands get a record only with `active=True` (an audit without --active never has one).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpuaudit.probes.core.judge.checks import judge_checks
from gpuaudit.probes.core.models import CommandRecord, Finding, Role
from gpuaudit.probes.core.spec import Probe


def judge(probe: Probe, facts: Mapping[Role, Any], active: bool = False) -> list[Finding]:
    outputs = {
        role: {
            c.id: CommandRecord(
                target=role, probe_id=probe.id, command_id=c.id, command=c.shell, exit_status=0
            )
            for c in probe.commands
            if role in c.on and (active or not c.active)
        }
        for role in facts
    }
    return list(judge_checks(probe.checks, facts, outputs))


def one(probe: Probe, facts: Mapping[Role, Any], fid: str, active: bool = False) -> Finding:
    found = [f for f in judge(probe, facts, active) if f.id == fid]
    assert len(found) == 1, [f.id for f in judge(probe, facts, active)]
    return found[0]
