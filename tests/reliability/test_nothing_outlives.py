"""Nothing an audit starts outlives its deadline (issue 29): the worker KILLs a command's whole process group
when it ends however it ends (a TERM-ignoring pipeline stage, a background child that closed its pipes), root
commands carry a root-side deadline, a remote python3 that never answers is killed and the login/worker wait is
bounded by the command's budget."""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import subprocess

import pytest
from gpuaudit.probes.core.collect import worker as w
from gpuaudit.probes.core.collect.remote_line import remote_line
from gpuaudit.probes.core.collect.session_channels import LocalSessionChannel
from gpuaudit.probes.core.collect.worker_transport import WorkerSession


def processes(tag: str) -> list[str]:
    res = subprocess.run(["pgrep", "-af", tag], capture_output=True, text=True, check=False)
    return [ln for ln in res.stdout.splitlines() if "pgrep" not in ln and "pytest" not in ln]


@pytest.fixture
def tags():
    made: list[str] = []

    def make(n: int) -> str:
        made.append(f"sleep {n}")
        return made[-1]

    yield make
    for tag in made:
        for ln in processes(tag):
            try:
                os.kill(int(ln.split()[0]), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass


async def _session() -> WorkerSession:
    token = w.new_token()
    line = w.start_line(token)
    session = WorkerSession(await LocalSessionChannel.open(line), line, token)
    await session.start(10)
    return session


async def test_a_term_ignoring_pipeline_stage_dies_at_the_deadline(tags):
    tag = tags(4881)
    s = await _session()
    try:
        raw = await s.run(
            f"x=$(sh -c 'trap \"\" TERM; {tag}' 2>/dev/null | tr a b); echo $x",
            timeout_s=1,
            max_bytes=1000,
            marker=None,
        )
        await asyncio.sleep(1.0)
        left = processes(tag)
    finally:
        await s.aclose()
    assert raw.timed_out
    assert left == []


async def test_a_background_child_that_closed_its_pipes_dies_with_the_command(tags):
    tag = tags(4882)
    s = await _session()
    try:
        raw = await s.run(
            f"{tag} </dev/null 1>/dev/null 2>&1 & echo started",
            timeout_s=10,
            max_bytes=1000,
            marker=None,
        )
        await asyncio.sleep(0.5)
        left = processes(tag)
    finally:
        await s.aclose()
    assert raw.exit_status == 0 and bytes(raw.stdout) == b"started\n"
    assert left == []


def test_every_root_command_carries_a_root_side_deadline():
    simple = remote_line("dmidecode -t bios", sudo=True, timeout_s=5)
    assert "sudo -n timeout -k 1 -s KILL 6 dmidecode -t bios" in simple
    piped = remote_line("dmesg | grep -E 'NVRM' || test $? -eq 1", sudo=True, timeout_s=5)
    assert "sudo -n timeout -k 1 -s KILL 6 dmesg" in piped
    shell = remote_line("grep -H . /etc/pve/lxc/*.conf", sudo=True, timeout_s=5)
    assert "sudo -n timeout -k 1 -s KILL 6 sh -c" in shell


async def test_no_other_process_of_the_user_can_write_into_the_worker_stream(tmp_path):
    """The worker is non-dumpable: /proc/<worker>/fd/1 cannot be opened by another process of its user, so no
    frame can be injected into the stream the client trusts."""
    import pwd
    import shutil as _sh

    from sshd_server import TEST_USER, ensure_user

    if os.geteuid() != 0 or _sh.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the worker as an ordinary user")
    ensure_user()
    pw = pwd.getpwnam(TEST_USER)
    drop = f"setpriv --reuid={pw.pw_uid} --regid={pw.pw_gid} --clear-groups -- "
    token = w.new_token()
    line = w.start_line(token)
    # its stdout a pipe the user owns (as under sshd, whose session process runs as the user): `| cat`
    channel = await LocalSessionChannel.open(drop + "sh -c " + shlex.quote(f"({line}) | cat"))
    session = WorkerSession(channel, line, token)
    await session.start(10)
    try:
        pids = [ln.split()[0] for ln in processes(token) if ln.split()[1:2] == ["python3"]]
        assert pids
        attack = subprocess.run(
            drop + f"sh -c 'printf \"1 O 6\\nforged\" 1>/proc/{pids[0]}/fd/1'",
            shell=True,
            capture_output=True,
            text=True,
            timeout=10,
        )
        raw = await session.run("echo genuine", timeout_s=5, max_bytes=1000, marker=None)
    finally:
        await session.aclose()
    assert attack.returncode != 0 and "Permission denied" in attack.stderr, attack
    assert bytes(raw.stdout) == b"genuine\n" and raw.exit_status == 0
