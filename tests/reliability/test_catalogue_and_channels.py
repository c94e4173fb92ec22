"""Full audits of the real REGISTRY: every executed line is declared (ForceCommand logger); MaxSessions 2 survives."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from gpuaudit.probes.catalogue import REGISTRY
from gpuaudit.probes.core.collect.remote_line import unguarded
from gpuaudit.probes.core.collect.targets import build_command_line
from gpuaudit.probes.core.collect.worker import start_line
from gpuaudit.probes.core.run.runner import PREFLIGHT, AuditOptions, render_shell
from reliability.faultkit import run_audit
from sshd_server import leftover_processes

pytestmark = pytest.mark.sshd

_TIMEOUT_PREFIX = re.compile(
    r"^(?:printf '%s\\n' @@gpuaudit-[0-9a-f]+@@; printf '%s\\n' @@gpuaudit-[0-9a-f]+@@ >&2; )?"
    r"exec (?:timeout -s KILL [0-9]+ )?"
)


_WORKER = re.compile(
    "^" + re.escape(start_line("TOKEN")).replace("TOKEN", "[0-9a-f]{16}") + "$"
)  # the login line (printf), then exec of the worker


def declared_lines(options: AuditOptions) -> set[str]:
    """Every line the tool may send: declared commands (+ preflight) wrapped by build_command_line, deadline stripped."""
    lines = {build_command_line(PREFLIGHT.shell)}
    for probe in REGISTRY:
        for command in probe.commands:
            if command.active and not options.active:
                continue
            lines.add(build_command_line(render_shell(command, options)))
    return lines


@pytest.fixture
def public_dir():
    """A directory the unprivileged test user can reach (pytest's tmp dirs are 0700 root)."""
    d = Path(tempfile.mkdtemp(prefix="gpuaudit-rel-"))
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def logging_server(sshd_factory, tmp_path: Path, **kw):
    """An sshd whose every session goes through a logger that records the command, then runs it unchanged."""
    log = tmp_path / "commands.log"
    log.write_bytes(b"")
    os.chmod(log, 0o666)
    script = tmp_path / "logger.sh"
    # NUL-separated: declared commands may span several lines
    script.write_text(
        f'#!/bin/sh\nprintf \'%s\\0\' "$SSH_ORIGINAL_COMMAND" >> {log}\nexec /bin/sh -c "$SSH_ORIGINAL_COMMAND"\n'
    )
    os.chmod(script, 0o755)
    os.chmod(tmp_path, 0o755)
    server = sshd_factory(extra_config=f"ForceCommand {script}", **kw)
    return server, log


@pytest.mark.parametrize("sessions", [True, False], ids=["worker-sessions", "channel-per-command"])
async def test_full_audit_runs_only_declared_commands(sshd_factory, public_dir, sessions):
    """Over SSH only declared lines run, or the fixed worker program that runs them (worker.start_line): the
    lines the worker ran are the records' `executed`, and each of those is declared too."""
    server, log = logging_server(sshd_factory, public_dir)
    options = AuditOptions(timeout_s=5)
    t0 = time.monotonic()
    run = await run_audit(
        server.spec, server.spec, server.options(sessions=sessions), list(REGISTRY), options
    )
    elapsed = time.monotonic() - t0
    sent = [c for c in log.read_bytes().decode(errors="replace").split("\0") if c]
    # a channel per command runs its line under the fixed remote guard (remote_line.GUARD), which owns the job's
    # process group: the guarded line is the declared one
    executed = [unguarded(c) or c for c in sent]
    if not sessions:
        assert all(unguarded(c) is not None for c in sent), [c[:80] for c in sent][:3]
    allowed = declared_lines(options)
    workers = [c for c in executed if _WORKER.match(c)]
    outside = [
        c for c in executed if _TIMEOUT_PREFIX.sub("", c) not in allowed and c not in workers
    ]
    assert outside == [], outside[:3]
    records = [r for p in run.probes for r in p.records if r.exit_status is not None or r.timed_out]
    assert len(records) >= 20
    assert {_TIMEOUT_PREFIX.sub("", r.executed) for r in records} <= allowed
    if sessions:  # one worker per target: the preflight and every command ran in it
        assert len(workers) == 2 and len(executed) == 2, executed
        assert all(any(_WORKER.match(x) for x in s.executed) for s in run.target_states.values())
    else:
        assert workers == [] and {r.executed for r in records} <= set(executed)
    assert all(s.state == "connected" for s in run.target_states.values()), run.target_states
    print(
        f"\nread-only catalogue: {len(executed)} SSH lines, {len(records)} records, {len(outside)} undeclared, {elapsed:.1f}s"
    )
    assert not [
        p for p in leftover_processes(server.user) if "defunct" not in p and "logger.sh" in p
    ]


async def test_max_sessions_2_full_audit_completes_without_channel_failures(sshd_factory):
    server = sshd_factory(max_sessions=2)
    run = await run_audit(
        server.spec, server.spec, server.options(), list(REGISTRY), AuditOptions(timeout_s=10)
    )
    assert all(s.state == "connected" for s in run.target_states.values()), run.target_states
    records = [r for p in run.probes for r in p.records]
    refused = [
        r for r in records if r.error and ("channel" in r.error or "connection lost" in r.error)
    ]
    assert refused == []
    assert [p.probe_id for p in run.probes if p.status != "done"] == []
    assert sum(1 for r in records if r.exit_status is not None) >= 20
