"""The whole catalogue, fed only failed data: no check may say ok, warning or critical from it.

Every declared command of every probe, on host and container, gets the same failure (timed out, refused for want
of root, tool missing, a bare non-zero exit, target never reached). The only verdict allowed is the one the issue
asks for: a hung nvidia-smi is itself a critical sign of a wedged GPU or driver (driver.gpu_health).
"""

from __future__ import annotations

import pytest
from gpuaudit.probes.catalogue import REGISTRY
from gpuaudit.probes.core.judge.probe import judge_probe
from gpuaudit.probes.core.models import CommandRecord

FAILURES = {
    "timed out": dict(exit_status=None, timed_out=True),
    "needs root": dict(exit_status=None, error="needs root (run with --sudo)"),
    "missing tool": dict(exit_status=127, stderr="sh: 1: x: not found"),
    "bare exit 1": dict(exit_status=1, stderr="boom"),
    "permission denied": dict(exit_status=2, stderr="cat: /sys/x: Permission denied"),
    "unreachable": dict(exit_status=None, error="target failed: connection refused"),
}
ALLOWED = {("timed out", "driver.gpu_health")}  # a hung nvidia-smi is the finding


@pytest.mark.parametrize("kind", FAILURES)
@pytest.mark.parametrize("probe", REGISTRY, ids=lambda p: p.id)
def test_failed_data_never_gives_a_verdict(probe, kind):
    records = {
        role: [
            CommandRecord(
                target=role, probe_id=probe.id, command_id=c.id, command=c.shell, **FAILURES[kind]
            )
            for c in probe.commands_for(role)
        ]
        for role in ("host", "container")
        if probe.commands_for(role)
    }
    result = judge_probe(probe, records)
    assert result.findings, "every check still answers (unknown), none disappears"
    judged = [
        (f.id, f.severity.value, f.observed)
        for f in result.findings
        if f.severity.value in ("ok", "warning", "critical") and (kind, f.id) not in ALLOWED
    ]
    assert judged == []
