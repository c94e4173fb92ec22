"""The long-lived session worker (probes/core/collect/worker.py) and its client (probes/core/collect/worker_transport.py), run as a
local process: byte-exact streams, exit statuses, caps, deadlines, kills of the whole process tree, its own exit
when the client goes, banners before it, fallback and replacement. The same code runs over SSH in
tests/reliability/test_sessions_ssh.py."""

from __future__ import annotations

import ast
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest
from gpuaudit.probes.core.collect import worker as w
from gpuaudit.probes.core.collect.session_channels import LocalSessionChannel
from gpuaudit.probes.core.collect.transport import LocalTransport
from gpuaudit.probes.core.collect.worker_transport import (
    SessionLine,
    SessionTransport,
    SessionUnavailable,
    WorkerSession,
)


def processes(tag: str) -> list[str]:
    res = subprocess.run(["pgrep", "-af", tag], capture_output=True, text=True, check=False)
    return [ln for ln in res.stdout.splitlines() if "pgrep" not in ln and "pytest" not in ln]


def kill_all(tag: str) -> None:
    for ln in processes(tag):
        try:
            os.kill(int(ln.split()[0]), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


@pytest.fixture
def sleeps():
    """Unique `sleep N` tags whose processes are killed after the test whatever happened."""
    tags: list[str] = []

    def make(n: int) -> str:
        tag = f"sleep {n}"
        tags.append(tag)
        return tag

    yield make
    for tag in tags:
        kill_all(tag)


async def local_session(prefix_shell: str = "", idle: int | None = None) -> WorkerSession:
    token = w.new_token()
    line = w.start_line(token)
    if idle is not None:
        line = line.rsplit(" ", 1)[0] + f" {idle}"
    channel = await LocalSessionChannel.open(prefix_shell + line)
    session = WorkerSession(channel, line, token)
    await session.start(10)
    return session


# --- the program itself --------------------------------------------------------------------------------------


def test_worker_source_is_old_python_compatible_and_touches_nothing_but_its_children():
    """Python 3.4+ (no f-strings, no walrus), no open(), and of os only read/write on its pipes and killpg."""
    tree = ast.parse(w.WORKER_SOURCE)
    kinds = {type(n).__name__ for n in ast.walk(tree)}
    assert not kinds & {"JoinedStr", "NamedExpr", "AsyncFunctionDef", "Await"}
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert "eval" not in names and "exec" not in names
    opens = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "open"
    ]
    # only the session sweep reads /proc/N/stat (issue 29), read-only
    assert all(isinstance(o.args[1], ast.Constant) and o.args[1].value == "rb" for o in opens)
    os_calls = {
        n.attr
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "os"
    }
    assert os_calls <= {"write", "read", "killpg", "listdir", "kill"}, os_calls
    # no __pycache__ written, no user site or PYTHON* variables, no site-packages or .pth code
    assert w.INTERPRETER == "python3 -I -S -B"


def test_the_worker_interpreter_runs_no_site_code():
    """The worker's python3 imports no `site`: no site-packages on its path, no .pth file's code run (issue 30)."""
    import shlex
    import subprocess

    probe = "import sys; print(sys.flags.no_site, 'site' in sys.modules, any('-packages' in p for p in sys.path))"
    out = subprocess.run(
        [*shlex.split(w.INTERPRETER), "-c", probe], capture_output=True, text=True, timeout=30
    )
    assert out.stdout.split() == ["1", "False", "False"], out


def test_start_line_is_one_exec_and_the_container_scope_passes_stdin():
    line = w.start_line("ab" * 8)
    login = f"printf '%s\\n' @@gpuaudit-login-{'ab' * 8}@@; "  # the rc files are done (issue 29)
    assert line.startswith(login + "exec python3 -I -S -B -c '") and line.endswith(
        f" {'ab' * 8} {w.IDLE_EXIT_S}"
    )
    assert w.start_line("t", "sudo -n pct exec 101 --").startswith(
        "printf '%s\\n' @@gpuaudit-login-t@@; exec sudo -n pct exec 101 -- python3 -I -S -B -c "
    )
    assert w.session_prefix("docker exec sglang", sudo=False) == "docker exec -i sglang"
    assert w.session_prefix("lxc-attach -n ct --", sudo=True) == "sudo -n lxc-attach -n ct --"


def test_frame_reader_splits_frames_across_chunks_and_refuses_garbage():
    data = b'1 O 3\na\x00b2 E 0\n1 X 8\n{"rc":0}'
    reader = w.FrameReader()
    frames = [f for i in range(len(data)) for f in reader.feed(data[i : i + 1])]
    assert [(f.cmd_id, f.kind, f.data) for f in frames] == [
        (1, "O", b"a\x00b"),
        (2, "E", b""),
        (1, "X", b'{"rc":0}'),
    ]
    with pytest.raises(w.ProtocolError):
        w.FrameReader().feed(b"Welcome to gpu01\n")


# --- one session ---------------------------------------------------------------------------------------------


async def test_streams_are_byte_exact_and_separate_with_exit_status():
    s = await local_session()
    try:
        raw = await s.run(
            r"printf 'a\000b\377\nno newline'; printf 'warn' >&2; exit 3",
            timeout_s=5,
            max_bytes=1000,
            marker=None,
        )
        sig = await s.run("kill -TERM $$", timeout_s=5, max_bytes=1000, marker=None)
    finally:
        await s.aclose()
    assert bytes(raw.stdout) == b"a\x00b\xff\nno newline" and bytes(raw.stderr) == b"warn"
    assert raw.exit_status == 3 and not raw.timed_out and not raw.truncated
    assert sig.exit_status == 128 + signal.SIGTERM


async def test_a_banner_before_the_worker_is_dropped_and_the_marker_starts_the_clock():
    s = await local_session(
        "echo 'Welcome to gpu01 (managed by ansible)'; echo 'bash: warning: setlocale' >&2; "
    )
    marker = "@@gpuaudit-0123456789abcdef@@"
    try:
        raw = await s.run(
            f"printf '%s\\n' {marker}; printf '%s\\n' {marker} >&2; exec uname -s",
            timeout_s=5,
            max_bytes=1000,
            marker=marker,
        )
    finally:
        await s.aclose()
    assert (
        bytes(raw.stdout) == f"{marker}\nLinux\n".encode()
        and bytes(raw.stderr) == f"{marker}\n".encode()
    )
    assert raw.exit_status == 0


async def test_timeout_kills_the_whole_tree_and_the_session_goes_on(sleeps):
    tag = sleeps(4871)
    s = await local_session()
    try:
        t0 = time.monotonic()
        raw = await s.run(f"sh -c '{tag} & {tag}; wait'", timeout_s=1, max_bytes=1000, marker=None)
        wall = time.monotonic() - t0
        await asyncio.sleep(0.5)
        left = processes(tag)
        after = await s.run("echo still here", timeout_s=5, max_bytes=1000, marker=None)
    finally:
        await s.aclose()
    assert raw.timed_out and raw.exit_status is None and 0.9 <= wall < 2.5, (raw, wall)
    assert left == []
    assert bytes(after.stdout) == b"still here\n" and after.exit_status == 0


async def test_the_deadline_counts_from_the_marker_and_wakes_the_command(sleeps):
    """Before its marker a command may wait START_WAIT_S (the login); once the marker arrived, its own timeout runs:
    the reader must wake the waiting command then, or a hung tool would be stopped 30 s late."""
    tag = sleeps(4877)
    marker = "@@gpuaudit-fedcba9876543210@@"
    s = await local_session()
    try:
        t0 = time.monotonic()
        raw = await s.run(
            f"sleep 0.3; printf '%s\\n' {marker}; exec {tag}",
            timeout_s=1,
            max_bytes=1000,
            marker=marker,
        )
        wall = time.monotonic() - t0
    finally:
        await s.aclose()
    assert raw.timed_out and raw.exit_status is None and 1.2 <= wall < 3, (raw, wall)
    assert bytes(raw.stdout) == f"{marker}\n".encode()


async def test_a_command_costs_no_task_of_its_own():
    """The frame reader wakes each command's one waiter: no task per condition (issue 30: three tasks and an
    asyncio.wait per command were about half the loop callbacks of a fleet host)."""
    s = await local_session()
    loop = asyncio.get_running_loop()
    created: list[object] = []
    factory = loop.get_task_factory()

    def counting(lp, coro, **kw):
        created.append(coro)
        return factory(lp, coro, **kw) if factory is not None else asyncio.Task(coro, loop=lp, **kw)

    loop.set_task_factory(counting)
    try:
        raws = [
            await s.run(f"echo {n}", timeout_s=5, max_bytes=1000, marker=None) for n in range(20)
        ]
    finally:
        loop.set_task_factory(factory)
        await s.aclose()
    assert [bytes(r.stdout) for r in raws] == [f"{n}\n".encode() for n in range(20)]
    assert created == [], created[:3]


async def test_output_cap_stops_the_command_and_marks_it_truncated():
    s = await local_session()
    try:
        raw = await s.run(
            "head -c 300000 /dev/zero; sleep 5", timeout_s=10, max_bytes=1000, marker=None
        )
    finally:
        await s.aclose()
    assert (
        raw.truncated and len(raw.stdout) == 1000 and raw.exit_status is None and not raw.timed_out
    )


async def test_many_commands_at_once_keep_their_own_outputs():
    s = await local_session()
    try:
        raws = await asyncio.gather(
            *(
                s.run(
                    f"i=0; while [ $i -lt 200 ]; do echo {n}-$i; i=$((i+1)); done; exit {n % 7}",
                    timeout_s=10,
                    max_bytes=1 << 20,
                    marker=None,
                )
                for n in range(40)
            )
        )
    finally:
        await s.aclose()
    for n, raw in enumerate(raws):
        assert bytes(raw.stdout) == "".join(f"{n}-{i}\n" for i in range(200)).encode()
        assert raw.exit_status == n % 7


async def test_a_child_left_holding_the_pipes_is_stopped_after_the_exit(sleeps):
    tag = sleeps(4874)
    s = await local_session()
    try:
        t0 = time.monotonic()
        raw = await s.run(f"{tag} & echo started", timeout_s=10, max_bytes=1000, marker=None)
        wall = time.monotonic() - t0
        await asyncio.sleep(0.5)
        left = processes(tag)
    finally:
        await s.aclose()
    assert raw.exit_status == 0 and bytes(raw.stdout) == b"started\n" and wall < 2
    assert left == []


async def test_cancelling_a_command_and_closing_the_session_leave_nothing(sleeps):
    tag_a, tag_b = sleeps(4872), sleeps(4873)
    s = await local_session()
    running = asyncio.ensure_future(s.run(tag_a, timeout_s=60, max_bytes=1000, marker=None))
    other = asyncio.ensure_future(s.run(tag_b, timeout_s=60, max_bytes=1000, marker=None))
    await asyncio.sleep(0.5)
    assert processes(tag_a) and processes(tag_b)
    running.cancel()
    await asyncio.gather(running, return_exceptions=True)
    await asyncio.sleep(0.6)
    assert processes(tag_a) == [] and processes(tag_b)
    other.cancel()
    await asyncio.gather(other, return_exceptions=True)
    t0 = time.monotonic()
    await s.aclose()
    assert time.monotonic() - t0 < 2.5
    await asyncio.sleep(0.5)
    assert processes(tag_b) == [] and processes(s.token) == []


async def test_the_worker_stops_everything_when_its_client_goes_silent(sleeps):
    """A cut network that sshd has not noticed: no request, no keepalive -> the worker exits and kills its commands."""
    tag = sleeps(4875)
    s = await local_session(idle=2)
    for t in s._tasks:  # the client stalls: no keepalive any more
        t.cancel()
    s.channel.write(w.request(1, tag, 60, 1000))
    await asyncio.sleep(0.5)
    assert processes(tag)
    await asyncio.sleep(2.5)
    assert processes(tag) == [] and processes(s.token) == []
    await s.channel.aclose()


async def test_the_worker_refuses_nothing_silently_when_it_cannot_start():
    channel = await LocalSessionChannel.open("exec python3-not-there -c pass")
    session = WorkerSession(channel, "x", w.new_token())
    with pytest.raises(SessionUnavailable, match="not found"):
        await session.start(5)
    await session.aclose()


# --- the transport: scopes, fallback, replacement ------------------------------------------------------------


async def test_a_scope_without_a_worker_falls_back_to_one_channel_per_command():
    transport = SessionTransport(LocalTransport(), host_sessions=False)
    try:
        raw = await transport.run(
            "echo full line",
            command_id="c",
            timeout_s=5,
            max_bytes=1000,
            session=SessionLine("false --", "echo inner line"),
        )
    finally:
        await transport.aclose()
    assert (
        bytes(raw.stdout) == b"full line\n"
        and raw.executed == "echo full line"
        and raw.session is None
    )
    assert "false --" in transport.unavailable


async def test_a_container_scope_runs_its_commands_in_one_wrapper_call(tmp_path):
    """A stand-in wrapper that counts its calls: forty commands, one call."""
    calls = tmp_path / "calls"
    wrapper = tmp_path / "wrap"
    wrapper.write_text(f'#!/bin/sh\necho x >> {calls}\nshift\nexec "$@"\n')
    wrapper.chmod(0o755)
    transport = SessionTransport(LocalTransport(), host_sessions=False)
    try:
        raws = await asyncio.gather(
            *(
                transport.run(
                    f"{wrapper} -- sh -c 'echo {n}'",
                    command_id=f"c{n}",
                    timeout_s=5,
                    max_bytes=1000,
                    session=SessionLine(f"{wrapper} --", f"echo {n}"),
                )
                for n in range(40)
            )
        )
    finally:
        await transport.aclose()
    assert [bytes(r.stdout) for r in raws] == [f"{n}\n".encode() for n in range(40)]
    assert calls.read_text() == "x\n" and all(r.executed == f"echo {n}" for n, r in enumerate(raws))
    assert all(r.session and f"; exec {wrapper} -- python3 -I -S -B -c " in r.session for r in raws)


async def test_a_session_that_dies_mid_command_is_replaced_and_the_command_runs_again(sleeps):
    tag = sleeps(4876)
    transport = SessionTransport(LocalTransport(), host_sessions=False)
    scope = SessionLine("env --", f"{tag}; echo done")
    try:
        task = asyncio.ensure_future(
            transport.run(
                "echo fallback", command_id="c", timeout_s=1.5, max_bytes=1000, session=scope
            )
        )
        await asyncio.sleep(0.5)
        first = transport._sessions["env --"]
        for ln in processes(first.token):  # the worker dies (OOM killer, a wrapper crash)
            os.kill(int(ln.split()[0]), signal.SIGKILL)
        raw = await task
    finally:
        await transport.aclose()
    assert raw.timed_out and raw.executed == f"{tag}; echo done" and raw.session != first.line
    assert not raw.not_started


def test_worker_runs_on_the_system_python_too():
    """The worker is started by whatever `python3` the login finds: this machine's system one must run it."""
    system = "/usr/bin/python3"
    if not os.path.exists(system):
        pytest.skip("no /usr/bin/python3")
    proc = subprocess.Popen(
        [system, "-I", "-B", "-c", w.WORKER_SOURCE, "tok", "5"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(w.request(1, "echo hi", 5, 100))
    proc.stdin.flush()
    out = b""
    while b"1 X " not in out:
        chunk = os.read(proc.stdout.fileno(), 4096)
        assert chunk, out
        out += chunk
    proc.stdin.close()  # end of stdin: the worker exits
    assert proc.wait(timeout=10) == 0 and proc.stderr.read() == b""
    assert out.startswith(b"@@gpuaudit-worker-tok@@\n1 O 3\nhi\n1 X "), out


_COUNT_WRITES = """
import atexit, os, sys
writes = [0]
_write = os.write
def counted(fd, data):
    if fd == 1:
        writes[0] += 1
    return _write(fd, data)
os.write = counted
atexit.register(lambda: _write(2, ("writes=%d" % writes[0]).encode()))
exec(compile(sys.argv.pop(1), "<worker>", "exec"), {"__name__": "__main__"})
"""


def test_the_frames_of_a_burst_go_out_in_few_writes():
    """Issue 30: every frame was its own write, so its own SSH packet for the client to decrypt and dispatch. Ten
    commands started together, each with stdout, stderr and an end frame (30 frames): one write per pass of the
    worker's loop, output held up to HOLD_S for company. Byte-exact frames all the same."""
    proc = subprocess.Popen(
        [sys.executable, "-I", "-B", "-c", _COUNT_WRITES, w.WORKER_SOURCE, "tok", "5"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(
        b"".join(
            w.request(i, f"printf o{i}; printf e{i} >&2; exit {i}", 5, 100) for i in range(1, 11)
        )
    )
    proc.stdin.flush()
    ready = w.ready_line("tok")
    out = b""
    while len(out) < len(ready):
        out += os.read(proc.stdout.fileno(), 4096)
    assert out.startswith(ready)
    reader = w.FrameReader()
    frames = reader.feed(out[len(ready) :])
    while sum(f.kind == "X" for f in frames) < 10:
        chunk = os.read(proc.stdout.fileno(), 4096)
        assert chunk, frames
        frames += reader.feed(chunk)
    proc.stdin.close()
    assert proc.wait(timeout=10) == 0
    writes = int(proc.stderr.read().decode().rsplit("writes=", 1)[1])
    got = {(f.cmd_id, f.kind): f.data for f in frames}
    assert len(frames) == 30 and all(
        got[(i, "O")] == f"o{i}".encode() and got[(i, "E")] == f"e{i}".encode()
        for i in range(1, 11)
    )
    assert [w.end_status(got[(i, "X")])["rc"] for i in range(1, 11)] == list(range(1, 11))
    assert writes <= 1 + 15, writes  # the ready line, then far fewer writes than the 30 frames


# --- durations measured on the target (issue 30) -------------------------------------------------------------


def test_the_end_frame_carries_the_run_time_measured_on_the_target():
    """The worker times each command itself (spawn to end, monotonic clock) and says so in its end frame."""
    proc = subprocess.Popen(
        [sys.executable, "-I", "-B", "-c", w.WORKER_SOURCE, "tok", "5"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(w.request(1, "sleep 0.3", 5, 100) + w.request(2, "exit 4", 5, 100))
    proc.stdin.flush()
    out = b""
    while len(out) < len(w.ready_line("tok")):
        out += os.read(proc.stdout.fileno(), 4096)
    reader = w.FrameReader()
    frames = reader.feed(out[len(w.ready_line("tok")) :])
    while sum(f.kind == "X" for f in frames) < 2:
        chunk = os.read(proc.stdout.fileno(), 4096)
        assert chunk, frames
        frames += reader.feed(chunk)
    proc.stdin.close()
    assert proc.wait(timeout=10) == 0
    ends = {f.cmd_id: w.end_status(f.data) for f in frames if f.kind == "X"}
    assert ends[1]["rc"] == 0 and 0.3 <= ends[1]["run_s"] < 3, ends
    assert ends[2]["rc"] == 4 and 0 <= ends[2]["run_s"] < ends[1]["run_s"], ends


async def test_a_duration_is_the_run_on_the_target_while_the_client_was_busy():
    """The client's loop parses other outputs while a command runs: its start marker, output and end then reach
    the client together, and a clock started at the marker's arrival reads ~0 s. The duration is the target's."""
    marker = "@@gpuaudit-00112233445566ff@@"
    s = await local_session()
    try:
        task = asyncio.ensure_future(
            s.run(
                f"printf '%s\\n' {marker}; sleep 0.3; echo done",
                timeout_s=10,
                max_bytes=1000,
                marker=marker,
            )
        )
        for _ in range(3):
            await asyncio.sleep(0)  # the request is out (its write is a call_soon)
        time.sleep(0.8)  # the loop is busy (parsing a big output): nothing is read meanwhile
        raw = await task
    finally:
        await s.aclose()
    assert bytes(raw.stdout) == f"{marker}\ndone\n".encode() and raw.exit_status == 0
    assert 0.3 <= raw.duration_s < 3, raw.duration_s


async def test_a_timed_out_command_reads_at_least_its_timeout(sleeps):
    tag = sleeps(4878)
    s = await local_session()
    try:
        raw = await s.run(tag, timeout_s=0.5, max_bytes=1000, marker=None)
    finally:
        await s.aclose()
    assert raw.timed_out and raw.exit_status is None
    assert 0.5 <= raw.duration_s <= 0.5 + 2.0, raw.duration_s  # KILL_WAIT_S caps it as before


class ScriptedChannel:
    """A session channel whose worker is a script: the ready lines at once, then `answer(request)` -> the chunk
    the client reads and how long after the request it arrives (late, coalesced frames on demand)."""

    def __init__(self, token: str, answer) -> None:
        self.answer = answer
        self.chunks: asyncio.Queue[bytes] = asyncio.Queue()
        self.chunks.put_nowait(w.login_line(token) + w.ready_line(token))

    async def read_out(self, n: int) -> bytes:
        return await self.chunks.get()

    async def read_err(self, n: int) -> bytes:
        await asyncio.Event().wait()
        return b""

    def write(self, data: bytes) -> None:
        for line in data.splitlines():
            req = json.loads(line)
            if "i" in req:
                for delay, chunk in self.answer(req["i"]):
                    asyncio.get_running_loop().call_later(delay, self.chunks.put_nowait, chunk)

    async def aclose(self) -> None:
        self.chunks.put_nowait(b"")

    def abort(self, reason: str) -> None:
        self.chunks.put_nowait(b"")

    def kill(self) -> None:
        self.chunks.put_nowait(b"")


def frame(i: int, kind: str, data: bytes) -> bytes:
    return b"%d %s %d\n" % (i, kind.encode(), len(data)) + data


async def scripted_run(answer, marker: str):
    token = w.new_token()
    s = WorkerSession(ScriptedChannel(token, answer), "scripted", token)  # type: ignore[arg-type]
    await s.start(5)
    before = datetime.now(UTC)
    try:
        raw = await s.run("x", timeout_s=10, max_bytes=1000, marker=marker)
    finally:
        await s.aclose()
    return raw, before, datetime.now(UTC)


async def test_the_client_takes_the_run_time_from_the_end_frame_even_when_the_marker_comes_late():
    """Marker, output and end in one chunk 0.6 s after the request, the worker's run 0.4 s: the duration is 0.4 s
    (not the ~0 s between the marker's arrival and the end's) and the start is the end's arrival less the run."""
    marker = "@@gpuaudit-aabbccddeeff0011@@"
    end = json.dumps({"rc": 0, "trunc": False, "why": None, "run_s": 0.4}).encode()

    def answer(i):
        return [(0.6, frame(i, "O", f"{marker}\nok\n".encode()) + frame(i, "X", end))]

    raw, before, after = await scripted_run(answer, marker)
    assert raw.exit_status == 0 and bytes(raw.stdout) == f"{marker}\nok\n".encode()
    assert raw.duration_s == 0.4
    assert before + timedelta(seconds=0.19) <= raw.started_at
    assert raw.started_at + timedelta(seconds=raw.duration_s) <= after


@pytest.mark.parametrize("run_s", ["absent", "0.4", -1, True], ids=str)
async def test_an_end_frame_without_a_usable_run_time_falls_back_to_the_clients_figure(run_s):
    marker = "@@gpuaudit-1100ffeeddccbbaa@@"
    status: dict[str, object] = {"rc": 0, "trunc": False, "why": None}
    if run_s != "absent":
        status["run_s"] = run_s

    def answer(i):
        return [
            (0.0, frame(i, "O", f"{marker}\n".encode())),
            (0.3, frame(i, "X", json.dumps(status).encode())),
        ]

    raw, before, _ = await scripted_run(answer, marker)
    assert raw.exit_status == 0 and 0.29 <= raw.duration_s < 3, raw.duration_s
    assert before <= raw.started_at


# --- the worker's queue (issue 30: a host's requests in a few writes) ----------------------------------------


class RawWorker:
    """The worker program on pipes, spoken to in raw requests."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-B", "-c", w.WORKER_SOURCE, "tok", "10"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert self.proc.stdout is not None
        self.reader = w.FrameReader()
        out = b""
        while len(out) < len(w.ready_line("tok")):
            out += os.read(self.proc.stdout.fileno(), 4096)
        self.frames = self.reader.feed(out[len(w.ready_line("tok")) :])

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def until_ends(self, n: int) -> list[w.Frame]:
        assert self.proc.stdout is not None
        while sum(f.kind == "X" for f in self.frames) < n:
            chunk = os.read(self.proc.stdout.fileno(), 4096)
            assert chunk, self.frames
            self.frames += self.reader.feed(chunk)
        return self.frames

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.wait(timeout=10) == 0


def test_a_request_without_a_queue_limit_starts_at_once_beside_a_full_queue():
    # the protocol: only a request with "n" waits in the worker's queue; one without it starts at once, even
    # while queued-mode commands fill their limit and others wait
    worker = RawWorker()
    try:
        worker.send(
            w.request(1, "sleep 0.5", 5, 100, rank=0, parallel=1)
            + w.request(2, "echo queued", 5, 100, rank=0, parallel=1)
            + w.request(3, "echo now", 5, 100)
        )
        frames = worker.until_ends(3)
    finally:
        worker.close()
    assert [f.cmd_id for f in frames if f.kind == "X"] == [3, 1, 2]


def test_queued_requests_start_lowest_rank_first_then_in_arrival_order():
    worker = RawWorker()
    try:
        worker.send(w.request(1, "sleep 0.3", 5, 100, rank=2, parallel=1))
        time.sleep(0.1)  # 1 runs; the others queue behind it
        worker.send(
            w.request(2, "echo a", 5, 100, rank=2, parallel=1)
            + w.request(3, "echo b", 5, 100, rank=0, parallel=1)
            + w.request(4, "echo c", 5, 100, rank=1, parallel=1)
            + w.request(5, "echo d", 5, 100, rank=0, parallel=1)
        )
        # queued while 1 runs as well: the rank orders the queue across writes
        worker.send(
            w.request(6, "echo e", 5, 100, rank=2, parallel=1)
            + w.request(7, "echo f", 5, 100, rank=0, parallel=1)
        )
        frames = worker.until_ends(7)
    finally:
        worker.close()
    assert [f.cmd_id for f in frames if f.kind == "X"] == [1, 3, 5, 7, 4, 2, 6]
    assert {f.cmd_id: f.data for f in frames if f.kind == "O"} == {
        2: b"a\n",
        3: b"b\n",
        4: b"c\n",
        5: b"d\n",
        6: b"e\n",
        7: b"f\n",
    }


def test_a_pool_caps_its_calls_in_the_queue_and_the_others_pass_them(tmp_path):
    # a hang-prone tool's calls (pool "tool", cap 2): never more than two at once, the next one starts as one
    # ends (in the worker, not a round trip later), and a command of no pool queued behind them starts meanwhile
    log = tmp_path / "log"
    call = f"echo start >> {log}; sleep 0.3; echo end >> {log}"
    worker = RawWorker()
    try:
        worker.send(
            b"".join(
                w.request(i, call, 5, 100, rank=0, parallel=8, pool=("tool", 2))
                for i in range(1, 6)
            )
            + w.request(6, "echo other", 5, 100, rank=2, parallel=8)
        )
        frames = worker.until_ends(6)
    finally:
        worker.close()
    ends = [f.cmd_id for f in frames if f.kind == "X"]
    assert ends[0] == 6  # not held behind the pool's queue
    assert sorted(ends[1:]) == [1, 2, 3, 4, 5]
    running = peak = 0
    for line in log.read_text().split():
        running += 1 if line == "start" else -1
        peak = max(peak, running)
    assert peak == 2  # and all five ran: each next one started as one ended, in the worker


def test_a_request_with_a_pool_still_obeys_the_queues_limit_and_rank():
    worker = RawWorker()
    try:
        worker.send(w.request(1, "sleep 0.3", 5, 100, rank=2, parallel=1))
        time.sleep(0.1)
        worker.send(
            w.request(2, "echo a", 5, 100, rank=2, parallel=1, pool=("tool", 4))
            + w.request(3, "echo b", 5, 100, rank=0, parallel=1, pool=("tool", 4))
        )
        frames = worker.until_ends(3)
    finally:
        worker.close()
    assert [f.cmd_id for f in frames if f.kind == "X"] == [1, 3, 2]


def test_a_kill_of_a_queued_command_answers_and_it_never_runs(sleeps, tmp_path):
    tag = sleeps(4879)
    witness = tmp_path / "ran"
    worker = RawWorker()
    try:
        worker.send(
            w.request(1, tag, 30, 100, rank=0, parallel=1)
            + w.request(2, f"echo x > {witness}", 30, 100, rank=0, parallel=1)
        )
        time.sleep(0.3)
        assert processes(tag)
        worker.send(w.kill_request(2))
        ends = worker.until_ends(1)
        worker.send(w.kill_request(1))
        ends = worker.until_ends(2)
    finally:
        worker.close()
    got = [(f.cmd_id, w.end_status(f.data)) for f in ends if f.kind == "X"]
    assert got[0] == (2, {"rc": None, "trunc": False, "why": "kill", "run_s": 0, "queued": True})
    assert got[1][0] == 1 and got[1][1]["why"] == "kill"
    time.sleep(0.3)  # the slot freed by 1 must not start 2 after its kill
    assert not witness.exists() and processes(tag) == []


async def test_a_queued_command_keeps_its_whole_timeout_and_nothing_outlives_one(sleeps):
    """Parallel 1: a hung command times out after its own timeout; the one queued behind it then runs with its own
    timeout counted from its marker, not from its request."""
    tag = sleeps(4881)
    marker = "@@gpuaudit-0a1b2c3d4e5f6a7b@@"
    s = await local_session()
    try:
        hung, queued = await asyncio.gather(
            s.run(tag, timeout_s=0.6, max_bytes=1000, marker=None, parallel=1),
            s.run(
                f"printf '%s\\n' {marker}; sleep 0.4; echo late",
                timeout_s=0.6,
                max_bytes=1000,
                marker=marker,
                parallel=1,
            ),
        )
        left = processes(tag)
    finally:
        await s.aclose()
    assert hung.timed_out and hung.exit_status is None and left == []
    assert not queued.timed_out and queued.exit_status == 0, queued
    assert bytes(queued.stdout) == f"{marker}\nlate\n".encode() and queued.duration_s >= 0.4


async def test_a_cancelled_queued_command_never_starts(sleeps, tmp_path):
    tag = sleeps(4882)
    witness = tmp_path / "ran"
    s = await local_session()
    try:
        first = asyncio.ensure_future(
            s.run(f"{tag} & sleep 0.5", timeout_s=5, max_bytes=1000, marker=None, parallel=1)
        )
        queued = asyncio.ensure_future(
            s.run(f"echo x > {witness}", timeout_s=5, max_bytes=1000, marker=None, parallel=1)
        )
        await asyncio.sleep(0.2)
        queued.cancel()
        await asyncio.gather(queued, return_exceptions=True)
        raw = await first
        await asyncio.sleep(0.3)
    finally:
        await s.aclose()
    assert raw.exit_status == 0 and not witness.exists()


async def test_a_scopes_commands_go_out_in_a_few_writes_and_at_most_parallel_run_at_once(tmp_path):
    """Issue 30: a freed slot cost the client one request write (an SSH packet, its encryption, a send) per
    command. The worker queues them: forty commands, a few writes; still at most `parallel` running at once."""
    transport = SessionTransport(LocalTransport(), host_sessions=False, parallel=4)
    writes: list[bytes] = []
    log = tmp_path / "log"
    body = f"echo start >> {log}; sleep 0.05; echo end >> {log}"

    async def one(n: int):
        return await transport.run(
            "echo fallback",
            command_id=f"c{n}",
            timeout_s=10,
            max_bytes=1000,
            session=SessionLine("env --", f"{body}; echo {n}"),
        )

    try:
        first = await one(0)
        session = transport._sessions["env --"]
        write = session.channel.write

        def counted(data: bytes) -> None:
            writes.append(data)
            write(data)

        session.channel.write = counted  # type: ignore[method-assign]
        raws = await asyncio.gather(*(one(n) for n in range(1, 41)))
    finally:
        await transport.aclose()
    assert bytes(first.stdout) == b"0\n"
    assert [bytes(r.stdout) for r in raws] == [f"{n}\n".encode() for n in range(1, 41)]
    requests = [ln for data in writes for ln in data.splitlines() if ln.startswith(b'{"i"')]
    assert len(requests) == 40 and len(writes) <= 4, [d.count(b"\n") for d in writes]
    running = peak = 0
    for ln in log.read_text().split():
        running += 1 if ln == "start" else -1
        peak = max(peak, running)
    assert peak <= 4, peak


async def test_a_queued_command_waits_for_the_running_ones_not_for_start_wait_s(monkeypatch):
    """Queued behind a command that runs longer than START_WAIT_S (within its timeout): it waits and runs."""
    import gpuaudit.probes.core.collect.worker_transport as wt

    monkeypatch.setattr(wt, "START_WAIT_S", 0.3)
    marker = "@@gpuaudit-5a5a5a5a5a5a5a5a@@"
    s = await local_session()
    try:
        first, queued = await asyncio.gather(
            s.run("sleep 0.8; echo a", timeout_s=5, max_bytes=100, marker=None, parallel=1),
            s.run(
                f"printf '%s\\n' {marker}; echo b",
                timeout_s=5,
                max_bytes=100,
                marker=marker,
                parallel=1,
            ),
        )
    finally:
        await s.aclose()
    assert bytes(first.stdout) == b"a\n" and bytes(queued.stdout) == f"{marker}\nb\n".encode(), (
        queued
    )
    assert queued.exit_status == 0 and not queued.not_started


async def test_a_command_queued_past_every_running_ones_deadline_is_not_run(sleeps, monkeypatch):
    """No command of the session ended within START_WAIT_S or the queued one's timeout + backstop: it leaves the
    queue, never started, and says so; the running one keeps its own timeout and leaves nothing."""
    import gpuaudit.probes.core.collect.worker_transport as wt

    monkeypatch.setattr(wt, "START_WAIT_S", 0.3)
    monkeypatch.setattr(wt, "BACKSTOP_S", 0.1)
    monkeypatch.setattr(wt, "KILL_WAIT_S", 0.4)
    tag = sleeps(4883)
    marker = "@@gpuaudit-6b6b6b6b6b6b6b6b@@"
    s = await local_session()
    try:
        hung, queued = await asyncio.gather(
            s.run(tag, timeout_s=1.5, max_bytes=100, marker=None, parallel=1),
            s.run(
                f"printf '%s\\n' {marker}; echo b",
                timeout_s=0.1,
                max_bytes=100,
                marker=marker,
                parallel=1,
            ),
        )
        after = await s.run("echo c", timeout_s=5, max_bytes=100, marker=None, parallel=1)
        left = processes(tag)
    finally:
        await s.aclose()
    assert queued.not_started and "in the session's queue" in (queued.error or ""), queued
    assert hung.timed_out and hung.exit_status is None and left == []
    assert bytes(after.stdout) == b"c\n"


# --- a timeout holds the queue until the gates were asked again (issue 30: the hung-tool gate) ----------------


def test_a_kill_with_hold_starts_nothing_queued_until_released(sleeps, tmp_path):
    """The client's hold: the slot the stopped command frees is not taken until `{"u": ID}`."""
    tag = sleeps(4884)
    witness = tmp_path / "ran"
    worker = RawWorker()
    try:
        worker.send(
            w.request(1, tag, 30, 100, rank=0, parallel=1)
            + w.request(2, f"echo x > {witness}", 30, 100, rank=0, parallel=1)
        )
        time.sleep(0.3)
        worker.send(w.kill_request(1, hold=True))
        worker.until_ends(1)
        time.sleep(0.5)
        held = witness.exists()
        worker.send(w.release_request(1))
        frames = worker.until_ends(2)
    finally:
        worker.close()
    assert not held and witness.exists() and processes(tag) == []
    assert [f.cmd_id for f in frames if f.kind == "X"] == [1, 2]


def test_the_workers_own_deadline_holds_its_queue_until_released(sleeps, tmp_path):
    """A queued-mode command the worker stops at its own deadline (the client stalled) holds the queue the same
    way: the client asks the gates when it hears of the timeout."""
    tag = sleeps(4885)
    witness = tmp_path / "ran"
    worker = RawWorker()
    try:
        worker.send(
            json.dumps({"i": 1, "c": tag, "t": 0.3, "m": 100, "r": 0, "n": 1}).encode()
            + b"\n"
            + w.request(2, f"echo x > {witness}", 30, 100, rank=0, parallel=1)
        )
        ends = worker.until_ends(1)
        time.sleep(0.5)
        held = witness.exists()
        worker.send(w.release_request(1))
        worker.until_ends(2)
    finally:
        worker.close()
    assert w.end_status([f for f in ends if f.kind == "X"][0].data)["why"] == "deadline"
    assert not held and witness.exists() and processes(tag) == []


async def test_a_queued_call_of_a_tool_that_just_hung_is_never_started(sleeps, tmp_path):
    """The runner's hung-tool gate is asked when a command is sent; queued in the worker, a call of the tool that
    then hangs would start the moment the hung one is stopped and wait out its own timeout too. The timeout holds
    the queue, the queued calls' gates are asked again once the runner knows (it notes the hang before its next
    await, as here), the refused one leaves the queue never started; the others run (fails without the hold)."""
    tag = sleeps(4886)
    witness = tmp_path / "ran"
    marker = "@@gpuaudit-7c7c7c7c7c7c7c7c@@"
    hung: dict[str, str] = {}

    def gate() -> str | None:
        return f"nvidia-smi hung in {hung['id']} (not started)" if hung else None

    s = await local_session()

    async def runner_like(line: str, gated: bool) -> object:
        raw = await s.run(
            f"printf '%s\\n' {marker}; {line}",
            timeout_s=0.5,
            max_bytes=1000,
            marker=marker,
            parallel=1,
            rank=0,
            gate=gate if gated else None,
        )
        if raw.timed_out:
            hung["id"] = "smi_q"  # what the runner does with a hang-prone tool's timeout
        return raw

    try:
        hanging, refused, other = await asyncio.gather(
            runner_like(tag, True),
            runner_like(f"echo x > {witness}", True),
            runner_like("echo y", False),
        )
        left = processes(tag)
    finally:
        await s.aclose()
    assert hanging.timed_out and left == []
    assert refused.not_started and "nvidia-smi hung in smi_q" in (refused.error or ""), refused
    assert not witness.exists()
    assert other.exit_status == 0 and bytes(other.stdout) == f"{marker}\ny\n".encode(), other


def test_a_chained_tools_call_goes_first_within_its_rank_in_the_workers_queue():
    """The runner lets a few nvidia-smi calls run at a time: each waits for an earlier one, so in the worker's
    queue it goes before the burst's commands of its launch rank (a wait there lengthens the audit's chain)."""
    from gpuaudit.probes.core.collect.schedule import launch_rank, queue_rank

    lines = [
        "cat /proc/cmdline",
        "lspci -vvv",
        "nvidia-smi --query-gpu=name --format=csv",
        "for d in /proc/[0-9]*; do :; done",
        "nvidia-smi -q -x",
    ]
    ordered = sorted(lines, key=queue_rank)
    assert ordered == [lines[4], lines[3], lines[2], lines[1], lines[0]]
    # the launch order across ranks is kept
    assert [launch_rank(x) for x in ordered] == sorted(launch_rank(x) for x in lines)
