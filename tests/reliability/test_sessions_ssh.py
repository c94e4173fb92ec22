"""Long-lived worker sessions over a real OpenSSH sshd: a few SSH sessions per target whatever the catalogue's
size, the same findings as one channel per command, failover when a connection dies, fallback when the target
has no python3 (issue 13)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from gpuaudit.probes.catalogue import REGISTRY
from gpuaudit.probes.core.collect.pool import PooledTransport
from gpuaudit.probes.core.collect.ssh_transport import SshTransport
from gpuaudit.probes.core.collect.targets import parse_host_spec
from gpuaudit.probes.core.collect.worker_transport import SessionTransport
from gpuaudit.probes.core.models import Target
from gpuaudit.probes.core.run.events import fold_events, initial_run
from gpuaudit.probes.core.run.runner import Audit, AuditOptions, TargetBinding
from gpuaudit.probes.core.spec import Command
from reliability.faultkit import fake_probe, run_audit
from sshd_server import ensure_user

pytestmark = pytest.mark.sshd

RC_USER = "gpuaudit-rc"
RC = (
    'echo "Welcome to gpu01 (managed by ansible)"\n'
    'echo "bash: warning: setlocale: LC_ALL: cannot change locale (en_US.UTF-8)" >&2\n'
    'i=0; while [ "$i" -lt 20000 ]; do i=$((i+1)); done  # CPU, like conda/pyenv init\n'
)


@pytest.fixture
def rc_server(sshd_factory):
    """A bash user whose ~/.bashrc prints a banner on both streams and burns CPU (no non-interactive guard)."""
    ensure_user(RC_USER, shell="/bin/bash")
    subprocess.run(["usermod", "-s", "/bin/bash", RC_USER], check=True)
    rc = Path(os.path.expanduser(f"~{RC_USER}")) / ".bashrc"
    rc.write_text(RC)
    try:
        yield sshd_factory(user=RC_USER)
    finally:
        rc.unlink(missing_ok=True)


def sessions_opened(server, before: int = 0) -> int:
    return server.log.count("Starting session") - before


def verdicts(run, *others) -> dict[tuple[str, tuple[str, ...]], str]:
    """Each finding's severity, leaving out those whose evidence timed out in any of the runs (a loaded machine)."""
    slow = {
        (r.target, r.command_id)
        for x in (run, *others)
        for p in x.probes
        for r in p.records
        if r.timed_out
    }
    return {
        (f.id, tuple(f.targets)): f.severity.value
        for f in run.findings
        if not {(e.target, e.command_id) for e in f.evidence} & slow
    }


async def test_full_audit_through_sessions_opens_a_few_ssh_sessions_and_judges_the_same(rc_server):
    """Host + container over SSH with a banner rc: <= 8 SSH sessions per target (one worker each here) instead of
    one per command, and every finding the same as with one channel per command."""
    options = AuditOptions(timeout_s=20)
    before = sessions_opened(rc_server)
    run = await run_audit(
        rc_server.spec, rc_server.spec, rc_server.options(connections=2), list(REGISTRY), options
    )
    with_sessions = sessions_opened(rc_server, before)
    before = sessions_opened(rc_server)
    per_command = await run_audit(
        rc_server.spec,
        rc_server.spec,
        rc_server.options(connections=2, sessions=False),
        list(REGISTRY),
        options,
    )
    without = sessions_opened(rc_server, before)
    records = [r for p in run.probes for r in p.records]
    ran = [r for r in records if r.exit_status is not None]
    assert with_sessions <= 2 * 8 and with_sessions == 2, with_sessions
    lines = {
        (r.target, r.executed)
        for p in per_command.probes
        for r in p.records
        if r.exit_status is not None
    }
    assert without >= len(lines) + 2 and without >= 50, (
        without,
        len(lines),
    )  # each line a session, preflights too
    assert all(s.state == "connected" and s.is_root is False for s in run.target_states.values())
    assert verdicts(run, per_command) == verdicts(per_command, run)
    assert not [r for r in records if "Welcome to gpu01" in r.stdout or "setlocale" in r.stderr]
    assert not [r for r in records if r.error and not r.error.startswith("needs root")], [
        (r.command_id, r.error) for r in records if r.error and not r.error.startswith("needs root")
    ][:5]
    print(
        f"\nSSH sessions: {with_sessions} with workers, {without} with one channel per command ({len(ran)} commands ran)"
    )


async def test_a_killed_connection_moves_its_session_and_loses_no_record(sshd_factory):
    """The session's connection dies mid-run: a new session on the live connection runs what was in flight."""
    from gpuaudit.probes.core.run.events import CommandFinished
    from reliability.test_collection_faults import COLL_USER, kill_sshd_tree

    async def audit_once(kill: bool) -> tuple[float, list]:
        a, b = sshd_factory(user=COLL_USER), sshd_factory(user=COLL_USER)
        members = [
            SshTransport(parse_host_spec(a.spec).ssh, a.options()),
            SshTransport(parse_host_spec(b.spec).ssh, b.options()),
        ]
        target = Target(role="host", spec=a.spec, kind="ssh", label="host")
        probe = fake_probe(
            "pool", *[Command(f"c_p{i}", f"sleep 0.25; echo p{i}") for i in range(40)]
        )
        audit = Audit(
            [TargetBinding(target, SessionTransport(PooledTransport(members)))],
            [probe],
            AuditOptions(timeout_s=10),
        )
        events, killed = [], 0
        t0 = time.monotonic()
        try:
            async for ev in audit.events():
                events.append(ev)
                if kill and isinstance(ev, CommandFinished) and not killed:
                    killed = kill_sshd_tree(a)
        finally:
            await audit.aclose()
        assert killed or not kill
        run = fold_events(initial_run(audit.targets, [("pool", "pool")]), events)
        return time.monotonic() - t0, run.probe("pool").records

    normal, _ = await audit_once(False)
    wall, recs = await audit_once(True)
    bad = [(r.command_id, r.error) for r in recs if r.error or r.stdout != f"p{r.command_id[3:]}\n"]
    assert bad == [] and len(recs) == 40
    assert wall <= max(1.5 * normal, normal + 1.0), (wall, normal)


async def test_a_login_without_python3_falls_back_to_one_channel_per_command(sshd_factory):
    """No worker can start (python3 is not on the login's PATH): every command still runs, one channel each."""
    tmp_path = Path(tempfile.mkdtemp(prefix="gpuaudit-nopy-"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "cat", "id", "uname", "timeout", "sleep", "printf", "echo"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    os.chmod(tmp_path, 0o755)
    os.chmod(bin_dir, 0o755)
    server = sshd_factory(extra_config=f"SetEnv PATH={bin_dir}")
    probe = fake_probe("nopy", *[Command(f"c_n{i}", f"echo n{i}") for i in range(12)])
    before = sessions_opened(server)
    run = await run_audit(
        server.spec, None, server.options(connections=1), [probe], AuditOptions(timeout_s=5)
    )
    recs = run.probe("nopy").records
    assert [
        (r.command_id, r.error) for r in recs if r.error or r.stdout != f"n{r.command_id[3:]}\n"
    ] == []
    assert sessions_opened(server, before) >= 12 + 1  # the preflight and each command: the fallback
    assert not any("python3 -I -S -B" in line for line in run.target_states["host"].executed)
    shutil.rmtree(tmp_path, ignore_errors=True)
