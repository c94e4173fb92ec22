"""Nothing an audit starts outlives its deadline (issue 29): the worker KILLs a command's whole process group
when it ends however it ends (a TERM-ignoring pipeline stage, a background child that closed its pipes), root
commands carry a root-side deadline, a remote python3 that never answers is killed and the login/worker wait is
bounded by the command's budget."""

from __future__ import annotations

import asyncio
import os
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
