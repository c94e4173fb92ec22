"""A hang-prone tool (nvidia-smi, dcgmi) never takes more than half of a target's channels.

With one connection of 8 channels (a fleet host) a wedged driver may hold 4 of them, not all 8: the quick reads
of that host keep running instead of each waiting out the timeout behind hung nvidia-smi calls.
"""

from __future__ import annotations

import asyncio
import time

from gpuaudit.probes.core.collect.pool import PooledTransport
from gpuaudit.probes.core.collect.schedule import queue_rank
from gpuaudit.probes.core.collect.ssh_transport import SshOptions, SshTransport
from gpuaudit.probes.core.collect.targets import parse_host_spec
from gpuaudit.probes.core.collect.transport import LocalTransport, RawResult
from gpuaudit.probes.core.collect.worker_transport import SessionLine, SessionTransport
from gpuaudit.probes.core.judge.checks import BOTH, Check, info
from gpuaudit.probes.core.models import Target
from gpuaudit.probes.core.run.runner import (
    HANG_PRONE_PARALLEL,
    PREFLIGHT,
    Audit,
    AuditOptions,
    TargetBinding,
    hang_prone_slots,
    tool_slot,
)
from gpuaudit.probes.core.spec import Command, Probe
from pydantic import BaseModel


def _ssh(channels: int) -> SshTransport:
    spec = parse_host_spec("audit@127.0.0.1:1")
    return SshTransport(
        spec.ssh, SshOptions(max_channels=channels, use_ssh_config=False, use_agent=False)
    )


def test_one_connection_of_eight_channels_gives_four_slots() -> None:
    assert hang_prone_slots(_ssh(8)) == 4
    assert hang_prone_slots(SessionTransport(_ssh(8), parallel=8)) == 4


def test_two_connections_give_the_cap() -> None:
    pool = PooledTransport([_ssh(8), _ssh(8)])
    assert pool.channels == 16
    assert hang_prone_slots(pool) == HANG_PRONE_PARALLEL == 8
    assert hang_prone_slots(SessionTransport(pool, parallel=16)) == 8


def test_a_single_channel_still_runs_the_tool() -> None:
    assert hang_prone_slots(_ssh(1)) == 1


def test_a_transport_without_a_limit_gets_the_cap() -> None:
    assert hang_prone_slots(LocalTransport()) == HANG_PRONE_PARALLEL
    assert PooledTransport([LocalTransport()]).channels is None


def test_process_scans_wait_in_slots_of_their_own() -> None:
    scan = "apps=$(nvidia-smi --query-compute-apps=pid); for d in /proc/[0-9]*; do :; done"
    assert tool_slot(_ssh(16), scan, "nvidia-smi") == ("nvidia-smi (process scans)", 2)
    assert tool_slot(_ssh(8), scan, "nvidia-smi") == ("nvidia-smi (process scans)", 1)
    assert tool_slot(_ssh(4), scan, "nvidia-smi") == ("nvidia-smi", 2)  # too few channels: shared
    assert tool_slot(_ssh(16), "nvidia-smi -q -x", "nvidia-smi") == ("nvidia-smi", 8)


class _Tracking(LocalTransport):
    """The local shell, 16 channels, counting how many scans and plain queries run at once."""

    def __init__(self) -> None:
        super().__init__()
        self.now = {"scan": 0, "query": 0}
        self.peak = {"scan": 0, "query": 0}

    @property
    def channels(self) -> int | None:
        return 16

    async def run(self, line, **kw):
        kind = "scan" if "/proc/[0-9]" in line else "query"
        self.now[kind] += 1
        self.peak[kind] = max(self.peak[kind], self.now[kind])
        try:
            return await super().run(line, **kw)
        finally:
            self.now[kind] -= 1


def test_two_long_scans_leave_every_query_slot_to_the_queries() -> None:
    """Two 1 s process scans beside eight short nvidia-smi queries: all eight queries run at once (in the common
    slots the scans held two of the eight and the queries ran in two waves)."""
    scans = [Command(f"scan{i}", f": nvidia-smi; : /proc/[0-9]; sleep 1; : {i}") for i in range(2)]
    queries = [Command(f"q{i}", f": nvidia-smi --query {i}; sleep 0.4") for i in range(8)]
    transport = _Tracking()
    target = Target(role="host", spec="local", kind="local", label="host")
    audit = Audit(
        [TargetBinding(target, transport)], [_probe("p", *scans, *queries)], AuditOptions()
    )

    async def run() -> None:
        async for _ in audit.events():
            pass
        await audit.aclose()

    asyncio.run(run())
    assert transport.peak == {"scan": 2, "query": 8}


class _Concurrent(LocalTransport):
    """The local shell, 16 channels, counting the calls of each command id prefix running at once."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0
        self.peak = 0

    @property
    def channels(self) -> int | None:
        return 16

    async def run(self, line, **kw):
        counted = kw["command_id"].startswith("q")
        self.now += counted
        self.peak = max(self.peak, self.now)
        try:
            return await super().run(line, **kw)
        finally:
            self.now -= counted


def test_a_wrapped_containers_tool_calls_are_not_process_scans() -> None:
    """A container entered through its host (`pct exec`): its wrapper's guard walks /proc/[0-9]* itself, and read
    from the line instead of the declared command, every nvidia-smi call through the wrapper counted as a process
    scan and ran in the scans' two slots, two at a time (the case study's layout: a CLI audit 2.39 -> 1.50 s)."""
    queries = [
        Command(f"q{i}", f": nvidia-smi --query {i}; sleep 0.3", on=frozenset({"container"}))
        for i in range(8)
    ]
    transport = _Concurrent()
    host = Target(role="host", spec="local", kind="local", label="host")
    container = Target(role="container", spec="pct:101", kind="pct", label="ct")
    audit = Audit(
        [
            TargetBinding(host, transport),
            TargetBinding(container, transport, wrap_prefix="env --", via="host"),
        ],
        [_probe("p", *queries)],
        AuditOptions(),
    )

    async def run() -> None:
        async for _ in audit.events():
            pass
        await audit.aclose()

    asyncio.run(run())
    assert transport.peak == hang_prone_slots(transport) == HANG_PRONE_PARALLEL


class _Calls(SessionTransport):
    """A login session on this machine (a local worker, as over SSH), noting when the runner asks for each line."""

    def __init__(self) -> None:
        super().__init__(LocalTransport(), host_sessions=True)
        self.asked: dict[str, float] = {}

    async def run(self, line, **kw):
        self.asked.setdefault(kw["command_id"], time.monotonic())
        return await super().run(line, **kw)


def test_a_login_sessions_worker_keeps_the_tools_cap_and_the_runner_asks_at_once(tmp_path) -> None:
    """Twelve 0.5 s nvidia-smi queries on a target alone on its login session: the runner hands all twelve over
    at once and the worker runs eight, the next one as soon as one ends (with the runner's slots the last four were
    asked for a wave later, each wave a round trip through the client: issue 30)."""
    log = tmp_path / "log"
    queries = [
        Command(
            f"q{i}", f": nvidia-smi --query {i}; echo start >> {log}; sleep 0.5; echo end >> {log}"
        )
        for i in range(12)
    ]
    transport = _Calls()
    target = Target(role="host", spec="local", kind="local", label="host")
    audit = Audit([TargetBinding(target, transport)], [_probe("p", *queries)], AuditOptions())

    async def run() -> None:
        async for _ in audit.events():
            pass
        await audit.aclose()

    asyncio.run(run())
    asked = [transport.asked[f"q{i}"] for i in range(12)]
    assert max(asked) - min(asked) < 0.35, [round(t - min(asked), 2) for t in asked]
    running = peak = 0
    for line in log.read_text().split():
        running += 1 if line == "start" else -1
        peak = max(peak, running)
    assert peak == hang_prone_slots(transport) == HANG_PRONE_PARALLEL


class _Ranks:
    """A worker session that notes the rank each line is queued at."""

    line = "worker"
    dead = None

    def __init__(self) -> None:
        self.ranks: dict[str, int] = {}

    async def run(self, line: str, **kw) -> RawResult:
        self.ranks[line] = kw["rank"]
        return RawResult(exit_status=0)


def test_a_session_transport_queues_a_command_by_what_it_is_not_by_its_line() -> None:
    """The worker's queue ranks the declared command: a line whose wrapper walks /proc/[0-9]* itself is not a
    process scan (the class of 8a4598e, one layer down); without a declared command, the line ranks itself."""
    worker = _Ranks()
    transport = SessionTransport(LocalTransport(), host_sessions=True)

    async def session(scope: str, budget_s: float = 0.0) -> _Ranks:
        return worker

    transport._session = session  # type: ignore[method-assign]
    read = "cat /etc/os-release"
    guarded = "for d in /proc/[0-9]*; do :; done; " + read  # a wrapper's guard around a quick read
    kw = dict(command_id="c", timeout_s=5.0, max_bytes=1024)
    asyncio.run(transport.run(guarded, session=SessionLine("pct", guarded), declared=read, **kw))
    assert worker.ranks[guarded] == queue_rank(read) > queue_rank(guarded)
    asyncio.run(transport.run("x", session=SessionLine("pct", guarded + " "), **kw))
    assert worker.ranks[guarded + " "] == queue_rank(guarded)


def test_the_runner_tells_a_session_transport_each_declared_command() -> None:
    seen: dict[str, str] = {}

    class _Declared(SessionTransport):
        def __init__(self) -> None:
            super().__init__(LocalTransport(), host_sessions=True)

        async def run(self, line, **kw):
            seen[kw["command_id"]] = kw.get("declared")
            return await super().run(line, **kw)

    commands = [Command("a", "echo a"), Command("b", ": nvidia-smi --query; echo b")]
    target = Target(role="host", spec="local", kind="local", label="host")
    audit = Audit([TargetBinding(target, _Declared())], [_probe("p", *commands)], AuditOptions())

    async def run() -> None:
        async for _ in audit.events():
            pass
        await audit.aclose()

    asyncio.run(run())
    assert seen == {
        "preflight": PREFLIGHT.shell,
        "a": "echo a",
        "b": ": nvidia-smi --query; echo b",
    }


def _probe(pid: str, *commands: Command) -> Probe:
    class Facts(BaseModel):
        n: int = 0

    seen = Check(
        id=f"{pid}.seen",
        title="seen",
        owner="host",
        why="",
        fix="",
        verdict=lambda ctx: info("seen"),
        roles=BOTH,
        no_input="a test probe",
    )
    return Probe(id=pid, title=pid, commands=commands, extract=lambda o, r: Facts(), checks=(seen,))
