"""The standing fault matrix (issue 29): whatever stops an audit, nothing it started is left 5 s later.

A real sshd on 127.0.0.1, real sudo (NOPASSWD for the test user), sessions and --no-sessions. One audit per cell
runs, at once: a tool that dies on TERM and one that ignores it, as the user and as root under sudo, plus a
TERM-ignoring stage inside a command substitution pipeline. Stop paths: the command deadline, a cancelled audit
(SIGTERM, SIGINT and quitting the TUI all cancel the audit task), and the client SIGKILLed mid-run (--timeout 3:
with sessions the worker sees its client go at once; with --no-sessions the remote deadlines, timeout(1) as the user
and `sudo -n timeout -s KILL` as root, are the backstop). The count of processes left (user and root) 5 s after
the stop must be 0.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
from gpuaudit.probes.core.collect.targets import parse_host_spec
from gpuaudit.probes.core.run.runner import Audit, AuditOptions
from gpuaudit.probes.core.run.session import live_bindings
from gpuaudit.probes.core.spec import Command, Probe

pytestmark = [
    pytest.mark.sshd,
    pytest.mark.skipif(
        shutil.which("sudo") is None or os.geteuid() != 0, reason="needs sudo and root"
    ),
]
SUDOERS = Path("/etc/sudoers.d/gpuaudit-h29-matrix")
REPO = Path(__file__).resolve().parents[2]
TAG = "sleep 49"


@pytest.fixture(scope="module")
def tools():
    d = Path(tempfile.mkdtemp(prefix="h29-tools-"))
    d.chmod(0o755)
    (d / "die").write_text('#!/bin/sh\nexec sleep "$1"\n')
    (d / "ign").write_text("#!/bin/sh\ntrap '' TERM\nexec sleep \"$1\"\n")
    for f in ("die", "ign"):
        (d / f).chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def sudo_user(sshd):
    SUDOERS.write_text(f"{sshd.user} ALL=(root) NOPASSWD: ALL\n")
    SUDOERS.chmod(0o440)
    yield sshd
    SUDOERS.unlink(missing_ok=True)


def left(base: int) -> list[str]:
    res = subprocess.run(["pgrep", "-af", TAG], capture_output=True, text=True, check=False)
    return [
        ln
        for ln in res.stdout.splitlines()
        if any(f"sleep {base + k}" in ln for k in range(10)) and "pgrep" not in ln
    ]


def sweep(base: int) -> None:
    for ln in left(base):
        try:
            os.kill(int(ln.split()[0]), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def probe(tools: Path, base: int) -> Probe:
    from pydantic import BaseModel

    class F(BaseModel):
        pass

    cmds = (
        Command("u_die", f"{tools}/die {base}"),
        Command("u_ign", f"{tools}/ign {base + 1}"),
        Command("u_pipe", f"x=$({tools}/ign {base + 2} | tr a b); echo $x"),
        Command("r_die", f"{tools}/die {base + 3}", needs_root=True),
        Command("r_ign", f"{tools}/ign {base + 4}", needs_root=True),
    )
    return Probe(id="m", title="m", commands=cmds, extract=lambda o, r: F())


def audit(server, tools: Path, base: int, sessions: bool, timeout_s: float) -> Audit:
    return Audit(
        live_bindings(parse_host_spec(server.spec), None, server.options(sessions=sessions)),
        [probe(tools, base)],
        AuditOptions(sudo=True, timeout_s=timeout_s),
    )


async def _drain(a: Audit) -> None:
    try:
        async for _ in a.events():
            pass
    finally:
        await a.aclose()


def wait_running(base: int, n: int, limit: float = 20) -> None:
    end = time.monotonic() + limit
    while time.monotonic() < end and len(left(base)) < n:
        time.sleep(0.1)


CELLS = [
    (stop, sessions) for stop in ("deadline", "cancel", "client-kill") for sessions in (True, False)
]


@pytest.mark.parametrize(
    "stop,sessions", CELLS, ids=[f"{s}-{'sessions' if x else 'no-sessions'}" for s, x in CELLS]
)
def test_nothing_is_left_5s_after_the_stop(sudo_user, tools, stop, sessions):
    server = sudo_user
    base = 4910 + 10 * CELLS.index((stop, sessions))
    sweep(base)
    try:
        if stop == "deadline":
            asyncio.run(_drain(audit(server, tools, base, sessions, timeout_s=2)))
            t_stop = time.monotonic()
        elif stop == "cancel":

            async def cancelled() -> None:
                task = asyncio.ensure_future(_drain(audit(server, tools, base, sessions, 30)))
                while len(left(base)) < 5 and not task.done():
                    await asyncio.sleep(0.1)
                await asyncio.sleep(0.3)
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

            asyncio.run(cancelled())
            t_stop = time.monotonic()
        else:
            child = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    _CLIENT,
                    server.spec,
                    server.known_hosts,
                    server.client_key,
                    str(tools),
                    str(base),
                    "1" if sessions else "0",
                ],
                cwd=REPO,
            )
            wait_running(base, 5)
            time.sleep(0.3)
            child.send_signal(signal.SIGKILL)
            child.wait(10)
            t_stop = time.monotonic()
        time.sleep(max(0.0, 5 - (time.monotonic() - t_stop)))
        remaining = left(base)
    finally:
        sweep(base)
    assert remaining == [], remaining


_CLIENT = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from gpuaudit.probes.core.collect.ssh_transport import SshOptions
    from gpuaudit.probes.core.collect.targets import parse_host_spec
    from gpuaudit.probes.core.run.runner import Audit, AuditOptions
    from gpuaudit.probes.core.run.session import live_bindings
    spec, kh, key, tools, base, sessions = sys.argv[1:]
    sys.path.insert(0, "tests/reliability")
    sys.path.insert(0, "tests")
    import test_fault_matrix as m
    opts = SshOptions(known_hosts=kh, identity=key, use_ssh_config=False, use_agent=False,
                      connect_timeout_s=5.0, sessions=sessions == "1")
    a = Audit(live_bindings(parse_host_spec(spec), None, opts), [m.probe(Path(tools), int(base))],
              AuditOptions(sudo=True, timeout_s=30))
    asyncio.run(m._drain(a))
    """
)


@pytest.fixture
def lxc_busybox():
    """A real offline busybox LXC container (no network), destroyed after the test."""
    import uuid

    if shutil.which("lxc-create") is None or not os.path.exists("/bin/busybox"):
        pytest.skip("needs Debian's lxc and busybox-static")
    name = f"h29ct-{uuid.uuid4().hex[:6]}"
    create = subprocess.run(
        ["lxc-create", "-n", name, "-t", "busybox"], capture_output=True, text=True
    )
    if create.returncode != 0:
        pytest.skip(f"lxc-create failed: {create.stderr[-300:]}")
    try:
        cfg = Path(f"/var/lib/lxc/{name}/config")
        lines = [ln for ln in cfg.read_text().splitlines() if not ln.startswith("lxc.net.")]
        cfg.write_text("\n".join(lines + ["lxc.net.0.type = empty", ""]))
        subprocess.run(["lxc-start", "-n", name, "-d"], check=True, capture_output=True)
        yield name
    finally:
        subprocess.run(["lxc-stop", "-k", "-n", name], capture_output=True)
        subprocess.run(["lxc-destroy", "-n", name], capture_output=True)


@pytest.mark.parametrize("stop", ["deadline", "cancel"])
def test_nothing_is_left_in_a_busybox_container(lxc_busybox, stop):
    """busybox timeout(1) signals only its child: a TERM-ignoring pipeline stage inside the container must still
    die with the command (the inner wrapper kills the command's whole group)."""
    from gpuaudit.probes.core.collect.targets import parse_container_spec
    from pydantic import BaseModel

    class F(BaseModel):
        pass

    base = 4990 if stop == "deadline" else 4995
    sweep(base)
    cmds = (
        Command("c_ign", f"sh -c 'trap \"\" TERM; exec sleep {base}'", on=frozenset({"container"})),
        Command(
            "c_pipe",
            f"x=$(sh -c 'trap \"\" TERM; exec sleep {base + 1}' | cat); echo $x",
            on=frozenset({"container"}),
        ),
    )
    pr = Probe(id="c", title="c", commands=cmds, extract=lambda o, r: F())
    host = parse_host_spec(None)

    def make(timeout_s: float) -> Audit:
        return Audit(
            live_bindings(host, parse_container_spec(f"lxc:{lxc_busybox}", host=host), None),
            [pr],
            AuditOptions(timeout_s=timeout_s),
        )

    try:
        if stop == "deadline":
            asyncio.run(_drain(make(2)))
        else:

            async def cancelled() -> None:
                task = asyncio.ensure_future(_drain(make(30)))
                while len(left(base)) < 2 and not task.done():
                    await asyncio.sleep(0.1)
                await asyncio.sleep(0.3)
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

            asyncio.run(cancelled())
        time.sleep(5)
        remaining = left(base)
    finally:
        sweep(base)
    assert remaining == [], remaining
