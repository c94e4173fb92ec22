"""The standing fault matrix (issue 29): whatever stops an audit, nothing it started is left 5 s later.

A real sshd on 127.0.0.1, real sudo (NOPASSWD for the test user), sessions and --no-sessions. One audit per cell
runs, at once: a tool that dies on TERM and one that ignores it, as the user and as root under sudo, plus a
TERM-ignoring stage inside a command substitution pipeline. Stop paths: the command deadline, a cancelled audit
(SIGTERM, SIGINT and quitting the TUI all cancel the audit task), and the client SIGKILLed mid-run (--timeout 3:
with sessions the worker sees its client go at once; with --no-sessions the remote deadlines, timeout(1) as the user
and `sudo -n timeout -s KILL` as root, are the backstop). The count of processes left (user and root) 5 s after
the stop must be 0.

`test_nothing_is_left_at_5s_and_60s_in_any_cell` (slow, in CI: .ci/run runs every marker) is the 60 s column:
fourteen cells started one second apart, one 60 s wait: deadline, cancel, client SIGKILL, SIGTERM and SIGINT to a
client running the audit the way the headless CLI does, a network cut (a namespace's link taken down mid-audit),
each with and without sessions; and a busybox LXC container entered with `sudo -n lxc-attach` (LXC + sudo),
deadline and client SIGKILL. The `--no-sessions` client-SIGKILL cells run at --timeout 30: only the remote guard
(remote_line.GUARD), not the remote deadline, can stop their tools within 5 s.
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
    """A real offline busybox LXC container (no network), destroyed after the test (tests/lxc_kit.py)."""
    from lxc_kit import busybox_container

    yield from busybox_container("h29ct")


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


# --- 5 s and 60 s: every cell started together, one wait (issue 29) -------------------------------------------


def tagged(bases: list[int]) -> dict[int, list[str]]:
    """base -> the tool processes of that cell still running (exact `sleep N` words)."""
    res = subprocess.run(["pgrep", "-af", "sleep"], capture_output=True, text=True, check=False)
    out: dict[int, list[str]] = {b: [] for b in bases}
    for ln in res.stdout.splitlines():
        words = ln.split()
        for b in bases:
            if any(
                w == str(b + k) and words[i - 1].endswith("sleep")
                for i, w in enumerate(words)
                if i
                for k in range(10)
            ):
                out[b].append(ln)
    return out


def _lxc_sudo_audit(server, name: str, base: int, timeout_s: float) -> Audit:
    """The host over SSH as the user with --sudo, the busybox container entered by `sudo -n lxc-attach`; a
    TERM-ignoring tool and a TERM-ignoring pipeline stage inside the container (busybox timeout signals only its
    child)."""
    from gpuaudit.probes.core.collect.targets import parse_container_spec
    from pydantic import BaseModel

    class F(BaseModel):
        pass

    cmds = (
        Command("c_ign", f"sh -c 'trap \"\" TERM; exec sleep {base}'", on=frozenset({"container"})),
        Command(
            "c_pipe",
            f"x=$(sh -c 'trap \"\" TERM; exec sleep {base + 1}' | cat); echo $x",
            on=frozenset({"container"}),
        ),
    )
    host = parse_host_spec(server.spec)
    return Audit(
        live_bindings(host, parse_container_spec(f"lxc:{name}", host=host), server.options()),
        [Probe(id="c", title="c", commands=cmds, extract=lambda o, r: F())],
        AuditOptions(sudo=True, timeout_s=timeout_s),
    )


def _cancel_after_start(make, base: int, n: int) -> int:
    seen = 0

    async def go() -> None:
        nonlocal seen
        task = asyncio.ensure_future(_drain(make()))
        end = time.monotonic() + 60
        while len(left_exact(base)) < n and not task.done() and time.monotonic() < end:
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.3)
        seen = len(left_exact(base))
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(go())
    return seen


def left_exact(base: int) -> list[str]:
    return tagged([base])[base]


@pytest.mark.slow
@pytest.mark.netns
def test_nothing_is_left_at_5s_and_60s_in_any_cell(sudo_user, tools, lxc_busybox, sshd_factory):
    """The standing matrix's 60 s column, every cell at once: stop paths deadline, cancel (SIGTERM/SIGINT/TUI
    quit), client SIGKILL and a network cut (the namespace's link taken down mid-audit: sshd never notices, the
    worker's idle exit and the remote deadlines must hold) x sessions / --no-sessions, tools that die on TERM and
    tools that ignore it as the user and as root (sudo); and a busybox LXC container entered with `sudo -n
    lxc-attach` (LXC + sudo), deadline and client SIGKILL. Processes left 5 s after each stop and 60 s after: 0."""
    import threading

    from netns import Netns

    server = sudo_user
    cells: list[tuple[str, bool]] = [
        (stop, sessions)
        for stop in ("deadline", "cancel", "client-kill", "sigterm", "sigint", "netcut")
        for sessions in (True, False)
    ] + [("lxc-sudo-deadline", True), ("lxc-sudo-client-kill", True)]
    bases = [5100 + 10 * i for i in range(len(cells))]
    stops: dict[int, float] = {}
    at5: dict[int, list[str]] = {}
    errors: list[str] = []
    seen: dict[int, tuple[int, int]] = {}
    began: dict[int, float] = {}
    workers: dict[int, list[str]] = {}
    """network-cut cells with sessions: the tokens of the workers that ran there (sshd never sees the cut)"""
    workers_at5: dict[int, list[str]] = {}
    """base -> (tool processes running when the cell was stopped, how many it starts)"""
    nets = [Netns(60), Netns(61)]

    def observe5(base: int) -> None:
        time.sleep(max(0.0, stops[base] + 5 - time.monotonic()))
        at5[base] = left_exact(base)
        workers_at5[base] = worker_processes(workers.get(base, []))

    def cell(i: int, stop: str, sessions: bool) -> None:
        base = bases[i]
        began[base] = time.monotonic()
        try:
            if stop == "deadline":
                asyncio.run(_drain(audit(server, tools, base, sessions, timeout_s=2)))
            elif stop == "cancel":
                seen[base] = (
                    _cancel_after_start(lambda: audit(server, tools, base, sessions, 30), base, 5),
                    5,
                )
            elif stop == "client-kill":
                seen[base] = (_client_kill(server, tools, base, sessions, n=5), 5)
            elif stop in (
                "sigterm",
                "sigint",
            ):  # the CLI's own handling: run_to_end cancels the audit
                sig = signal.SIGTERM if stop == "sigterm" else signal.SIGINT
                seen[base] = (_client_kill(server, tools, base, sessions, 5, sig=sig), 5)
            elif stop == "netcut":
                ns = nets[0 if sessions else 1]
                srv = netsrv[ns.name]

                async def cut() -> None:
                    a = audit(srv, tools, base, sessions, 5)
                    task = asyncio.ensure_future(_drain(a))
                    while len(left_exact(base)) < 5 and not task.done():
                        await asyncio.sleep(0.1)
                    await asyncio.sleep(0.3)
                    seen[base] = (len(left_exact(base)), 5)
                    transport = a.bindings["host"].transport
                    if transport.runs_sessions:  # the worker's token: is it still running later?
                        workers[base] = [
                            w.split()[-2]
                            for ws in transport.session_lines().values()  # type: ignore[attr-defined]
                            for w in ws
                        ]
                    subprocess.run(["ip", "-n", ns.name, "link", "set", "eth0", "down"], check=True)
                    await asyncio.gather(task, return_exceptions=True)

                asyncio.run(cut())
            elif stop == "lxc-sudo-deadline":
                asyncio.run(_drain(_lxc_sudo_audit(server, lxc_busybox, base, 2)))
            else:
                seen[base] = (_client_kill(server, tools, base, sessions, 2, lxc_busybox), 2)
        except Exception as exc:  # noqa: BLE001 - reported with the cell
            errors.append(f"{stop}/{sessions}: {exc!r}")
        stops[base] = time.monotonic()
        observe5(base)

    with nets[0], nets[1]:
        netsrv = {ns.name: sshd_factory(listen=ns.address, netns=ns.name) for ns in nets}
        sweep_all(bases)
        try:
            threads = [
                threading.Thread(target=cell, args=(i, stop, sessions))
                for i, (stop, sessions) in enumerate(cells)
            ]
            for t in threads:  # one second apart: ten logins at once trip sshd's MaxStartups
                t.start()
                time.sleep(1.0)
            for t in threads:
                t.join(120)
            time.sleep(max(0.0, max(stops.values()) + 60 - time.monotonic()))
            at60 = tagged(bases)
            workers_at60 = {b: worker_processes(t) for b, t in workers.items()}
        finally:
            sweep_all(bases)
    names = [f"{stop}-{'sessions' if s else 'no-sessions'}" for stop, s in cells]
    table = {n: (len(at5.get(b, ["?"])), len(at60[b])) for n, b in zip(names, bases, strict=True)}
    print(
        "\nprocesses left (5 s, 60 s): " + ", ".join(f"{n} {a}/{b}" for n, (a, b) in table.items())
    )
    print(
        "worker processes after the network cut (5 s, 60 s): "
        + ", ".join(f"{len(workers_at5[b])}/{len(workers_at60[b])}" for b in workers)
    )
    assert not errors, errors
    assert workers and all(workers[b] for b in workers), workers
    # the worker itself exits IDLE_EXIT_S after its client's last keepalive (it runs nothing by then)
    assert all(v == [] for v in workers_at60.values()), workers_at60
    # every cell really ran its tools; a cell that did not says which, what it saw and how long it took to its stop
    # (a wait that ran out, or tools that ended or never started)
    short = {
        names[bases.index(b)]: f"saw {got} of {want}, stopped after {stops[b] - began[b]:.1f} s"
        for b, (got, want) in seen.items()
        if got < want
    }
    assert not short, short
    assert all(v == (0, 0) for v in table.values()), (table, at5, at60)


def sweep_all(bases: list[int]) -> None:
    for lines in tagged(bases).values():
        for ln in lines:
            try:
                os.kill(int(ln.split()[0]), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass


def _client_kill(
    server,
    tools: Path,
    base: int,
    sessions: bool,
    n: int,
    lxc: str | None = None,
    sig: signal.Signals = signal.SIGKILL,
) -> int:
    """A client process running the audit, sent `sig` once its tools run (SIGKILL: nothing of it runs on;
    SIGTERM/SIGINT: the headless CLI's handling, run_to_end with a partial run, cancels the audit)."""
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _CLIENT_LXC if lxc else _CLIENT if sig == signal.SIGKILL else _CLIENT_CLI,
            server.spec,
            server.known_hosts,
            server.client_key,
            lxc or str(tools),
            str(base),
            "1" if sessions else "0",
        ],
        cwd=REPO,
    )
    end = (
        time.monotonic() + 60
    )  # ten cells start at once on two cores: a client takes 10-15 s to get there
    while time.monotonic() < end and len(left_exact(base)) < n:
        time.sleep(0.1)
    time.sleep(0.3)
    seen = len(left_exact(base))
    child.send_signal(sig)
    child.wait(30)
    return seen


_CLIENT_LXC = textwrap.dedent(
    """
    import asyncio, sys
    from gpuaudit.probes.core.collect.ssh_transport import SshOptions
    spec, kh, key, name, base, sessions = sys.argv[1:]
    sys.path.insert(0, "tests/reliability")
    sys.path.insert(0, "tests")
    import test_fault_matrix as m
    class S:
        pass
    s = S()
    s.spec = spec
    s.options = lambda: SshOptions(known_hosts=kh, identity=key, use_ssh_config=False, use_agent=False,
                                   connect_timeout_s=5.0, sessions=sessions == "1")
    asyncio.run(m._drain(m._lxc_sudo_audit(s, name, int(base), 30)))
    """
)


_CLIENT_CLI = _CLIENT.replace(
    "asyncio.run(m._drain(a))",
    # Ctrl-C as a terminal delivers it: a suite started in the background by a non-interactive shell (`cmd &`)
    # hands its children SIGINT ignored, and Python then installs no KeyboardInterrupt handler at all
    "import signal\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
    "from gpuaudit.probes.core.run.session import run_sync, run_to_end\n"
    "try:\n    run_sync(run_to_end(a, partial=[]))\nexcept (KeyboardInterrupt, asyncio.CancelledError):\n"
    "    sys.exit(143)",
)
"""The headless CLI's way to run an audit: SIGTERM cancels it (run_to_end's handler), SIGINT is Ctrl-C."""


def worker_processes(tokens: list[str]) -> list[str]:
    """Processes whose command line holds one of these worker tokens (the worker's argv)."""
    if not tokens:
        return []
    res = subprocess.run(["pgrep", "-af", "gpuaudit"], capture_output=True, text=True, check=False)
    return [
        ln[:120]
        for ln in res.stdout.splitlines()
        if any(f" {t} " in ln for t in tokens) and "pgrep" not in ln
    ]
