"""Runs a target's commands through a few long-lived remote sessions (probes/core/collect/worker.py) instead of one SSH
channel per command: the login shell's rc files and a container wrapper (`pct exec`) are paid once per session.

`SessionTransport` wraps a transport that can open a long-lived process (`open_session`: an SSH channel, or a
local subprocess). Per scope, the login itself ("") or one container wrapper (`sudo -n pct exec 101 --`), it
starts one worker and sends it every command of that scope as soon as the runner asks (a burst in one write); the
worker runs up to WORKER_PARALLEL at once and queues the rest, slowest first (collect/schedule.py's rank). Where a
scope cannot host a worker (no python3 there, the wrapper refused stdin, the start failed), that scope falls back
to the inner transport's one channel per command, with the full wrapped line. A session that dies (the
connection, the wrapper or the worker) is replaced; a command it was running never reached its end and is read-only
by the lint, so it runs once more on the replacement (never on the same session twice).
"""

from __future__ import annotations

import asyncio
import time
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from gpuaudit.probes.core.collect.schedule import RankedSlots, launch_rank, queue_rank
from gpuaudit.probes.core.collect.transport import (
    Gate,
    MarkedCap,
    RawResult,
    StreamCap,
    Transport,
    TransportBase,
    not_run,
)
from gpuaudit.probes.core.collect.worker import (
    BACKSTOP_S,
    KEEPALIVE,
    KEEPALIVE_S,
    FrameReader,
    ProtocolError,
    end_status,
    kill_request,
    login_line,
    new_token,
    ready_line,
    release_request,
    request,
    start_line,
)

WORKER_PARALLEL = 16
"""Commands in flight in one worker: what two SSH connections with 8 channels each ran before."""
START_WAIT_S = 30.0
"""The longest the login shell (rc files) may take before it starts the worker; a command's own budget (its
timeout, e.g. the preflight's) bounds it further (issue 29: `--timeout 5` does not wait 30 s on a hung login)."""
PYTHON_WAIT_S = 10.0
"""After the login, how long python3 (and a container wrapper) may take to say the worker is ready."""
PYTHON_WAIT_MIN_S = 3.0


def python_wait(budget_s: float) -> float:
    """python3's share of a session's start budget: a third of it, 3-10 s (issue 29: `--timeout 5` gives the
    preflight 15 s, so a python3 that never answers costs 5 s before the fallback, not 10; python3 and a
    container wrapper such as `pct exec` start in well under a second)."""
    return max(min(PYTHON_WAIT_MIN_S, budget_s), min(PYTHON_WAIT_S, budget_s / 3))


KILL_WAIT_S = 2.0
"""After asking the worker to stop a command, how long its end may take before the session counts as dead."""
STALL_S = 1.5
"""With commands in flight and nothing heard from the worker for this long, the client asks it for an answer..."""
PONG_WAIT_S = 2.5
"""...and without one this much later the session (and the connection under it) counts as dead: a cut network
is noticed in seconds, not at the SSH keepalive's 15 s."""
SESSION_ENDED = "session ended: "
REPLACEMENT_OPEN_S = 2.0
"""A replacement session's channel open may wait this long: its predecessor just died, maybe with the network."""
MAX_STARTS = 3
"""Sessions started per scope in one audit (the first and two replacements); after that the scope falls back."""
STDERR_KEEP = 4096


class SessionChannel(Protocol):
    """A long-lived process with piped stdin/stdout/stderr (an SSH channel or a local subprocess)."""

    async def read_out(self, n: int) -> bytes: ...

    async def read_err(self, n: int) -> bytes: ...

    def write(self, data: bytes) -> None: ...

    async def aclose(self) -> None:
        """End of stdin (the worker stops its commands and exits), then close; bounded."""

    def abort(self, reason: str) -> None:
        """The session stopped answering: drop what carries it (an SSH connection is declared dead)."""

    def kill(self) -> None:
        """KILL what runs on the channel now (a login or a python3 that never answered)."""


@dataclass(frozen=True, slots=True)
class SessionLine:
    """How the runner asks for a command inside a container entered through the host: the scope's wrapper and
    the line the worker runs inside it (the full wrapped line stays the fallback)."""

    scope: str
    line: str


class SessionUnavailable(Exception):
    """The scope cannot host a worker: fall back to one channel per command."""


@dataclass(slots=True)
class _Job:
    """One command in flight. The frame reader wakes the command's one waiter (`wait`) when the command ends, its
    output passes the cap, or its start marker arrives (its deadline then counts from there): one future and one
    timer per wait, no task per condition (three tasks and an `asyncio.wait` per command were ~12 loop callbacks,
    about half of a fleet host's, issue 30)."""

    out: MarkedCap
    err: StreamCap
    done: bool = False
    overflow: bool = False
    end: dict[str, Any] | None = None
    lost: str | None = None
    waiter: asyncio.Future[None] | None = None
    ended_at: float | None = None
    """When the end frame arrived (the chunk that carried it was read)."""
    gate: Gate | None = None
    """Asked again while the command waits in the worker's queue and another one timed out (`regate`)."""
    refused: str | None = None
    """Why the gate refused it after it was sent: stopped in the queue, reported not run for that reason."""

    def wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    async def wait(self, timeout_s: float) -> None:
        """Until the reader wakes this job or `timeout_s` passes (a cancellation propagates)."""
        loop = asyncio.get_running_loop()
        self.waiter = waiter = loop.create_future()
        timer = loop.call_later(timeout_s, _resolve, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self.waiter = None


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class WorkerSession:
    """One worker process and its frame stream."""

    def __init__(self, channel: SessionChannel, line: str, token: str) -> None:
        self.channel = channel
        self.line = line
        self.token = token
        self.dead: str | None = None
        self._jobs: dict[int, _Job] = {}
        self._next = 1
        self._tasks: list[asyncio.Task[None]] = []
        self._stderr = bytearray()
        self._heard = time.monotonic()
        self._ended = 0.0
        """When a command's end last arrived: a command queued in the worker waits for the others, not for ever."""
        self._outbox: list[bytes] = []
        """Requests written in this loop iteration: one channel write (one SSH packet, one send) for the burst."""
        self._flush_due = False
        self.login_hung = False
        """The login shell never reached the worker's start: one channel per command would hang the same way."""

    async def start(
        self, wait_s: float = START_WAIT_S, python_wait_s: float = PYTHON_WAIT_S
    ) -> None:
        """Wait for the login line (the rc files are done: `wait_s`), then the worker's ready line (python3 and a
        container wrapper starting: `python_wait_s`); whatever the login shell printed before is dropped. A wait
        that runs out kills what runs on the channel (a hung rc file or python3 is never left behind)."""
        self._tasks.append(asyncio.create_task(self._drain_stderr()))
        tags = (login_line(self.token), ready_line(self.token))
        seen = bytearray()
        phase = 0
        deadline = time.monotonic() + wait_s
        while True:
            at = seen.find(tags[phase])
            if at >= 0:
                seen = seen[at + len(tags[phase]) :]
                if phase == 1:
                    rest = bytes(seen)
                    break
                phase = 1
                deadline = time.monotonic() + python_wait_s
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                self.channel.kill()
                if phase == 0:
                    self.login_hung = True
                    raise SessionUnavailable(
                        f"the login shell did not finish within {wait_s:.0f} s (slow or hanging rc files)"
                    )
                raise SessionUnavailable(
                    f"python3 did not start the worker within {python_wait_s:.0f} s (killed)"
                )
            try:
                chunk = await asyncio.wait_for(self.channel.read_out(65536), left)
            except TimeoutError:
                continue
            except Exception as exc:  # noqa: BLE001 - any channel failure means no session here
                raise SessionUnavailable(f"{exc.__class__.__name__}: {exc}") from None
            if not chunk:
                await asyncio.sleep(0.05)  # let stderr's reader catch the reason
                first = bytes(self._stderr).decode("utf-8", "replace").strip().splitlines()
                raise SessionUnavailable(
                    f"the worker did not start ({first[-1][:160] if first else 'no output'})"
                )
            seen += chunk
            if len(seen) > 1 << 20:
                raise SessionUnavailable(
                    "the login shell printed over 1 MiB before the worker started"
                )
        self._tasks.append(asyncio.create_task(self._read(rest)))
        self._tasks.append(asyncio.create_task(self._keepalive()))

    async def _keepalive(self) -> None:
        """The worker exits when it hears nothing for a while (a cut network): tell it we are here. With commands
        in flight and a silent worker, ask for an answer: none in PONG_WAIT_S = the session is dead."""
        pinged: float | None = None
        last_sent = time.monotonic()
        while not self.dead:
            await asyncio.sleep(0.5)
            now = time.monotonic()
            if pinged is not None and self._heard >= pinged:
                pinged = None
            if pinged is not None and now - pinged > PONG_WAIT_S:
                reason = (
                    f"no answer from the session in {PONG_WAIT_S:.1f} s (connection not responding)"
                )
                self._die(reason)
                self.channel.abort(reason)
                return
            if pinged is None and (
                (self._jobs and now - self._heard > STALL_S) or now - last_sent > KEEPALIVE_S
            ):
                pinged = last_sent = now
                self._send(KEEPALIVE)

    async def _drain_stderr(self) -> None:
        """The channel's stderr (rc output, a worker crash) is kept short; reading it keeps the channel flowing."""
        try:
            while chunk := await self.channel.read_err(65536):
                self._stderr += chunk
                del self._stderr[:-STDERR_KEEP]
        except Exception:  # noqa: BLE001 - the stdout reader reports the end
            pass

    async def _read(self, first: bytes) -> None:
        reader = FrameReader()
        self._heard = time.monotonic()  # when `first` arrived, then each chunk's arrival
        try:
            chunk = first
            while True:
                for frame in reader.feed(chunk):
                    job = self._jobs.get(frame.cmd_id)
                    if job is None:
                        continue  # a command the client already gave up on
                    if frame.kind == "O":
                        unseen = job.out.seen_at is None
                        if not job.out.add(frame.data):
                            job.overflow = True
                            job.wake()
                        elif unseen and job.out.seen_at is not None:
                            job.wake()  # the command started: its deadline counts from now
                    elif frame.kind == "E":
                        if not job.err.add(frame.data):
                            job.overflow = True
                            job.wake()
                    else:
                        job.end = end_status(frame.data)
                        job.ended_at = self._ended = self._heard
                        job.done = True
                        job.wake()
                chunk = await self.channel.read_out(65536)
                self._heard = time.monotonic()
                if not chunk:
                    tail = bytes(self._stderr).decode("utf-8", "replace").strip().splitlines()
                    self._die("the session ended" + (f" ({tail[-1][:160]})" if tail else ""))
                    return
        except ProtocolError as exc:
            self._die(f"protocol error: {exc}")
        except asyncio.CancelledError:
            self._die("the session was closed")
            raise
        except Exception as exc:  # noqa: BLE001 - a dead channel ends the session, never the audit
            self._die(f"{exc.__class__.__name__}: {exc}")

    def _die(self, reason: str) -> None:
        self.dead = self.dead or reason
        for job in self._jobs.values():
            if not job.done:
                job.lost = self.dead
                job.done = True
                job.wake()

    def _send(self, data: bytes, *, batch: bool = False) -> bool:
        """Write a frame; `batch`: with the others of this loop iteration (the audit starts ~100 commands in a
        few iterations: one packet each cost an SSH packet, an encryption and a send per request, 21% of a fleet
        host's client CPU in sends). Kill requests and keepalives go at once, after what is queued."""
        if self.dead:
            return False
        self._outbox.append(data)
        if not batch:
            return self._flush()
        if not self._flush_due:
            self._flush_due = True
            asyncio.get_running_loop().call_soon(self._flush)
        return True

    def _flush(self) -> bool:
        self._flush_due = False
        if self.dead or not self._outbox:
            self._outbox.clear()
            return not self.dead
        data = b"".join(self._outbox)
        self._outbox.clear()
        try:
            self.channel.write(data)
            return True
        except Exception as exc:  # noqa: BLE001
            self._die(f"cannot write to the session: {exc.__class__.__name__}: {exc}")
            return False

    async def run(
        self,
        line: str,
        *,
        timeout_s: float,
        max_bytes: int,
        marker: str | None,
        rank: int = 0,
        parallel: int | None = None,
        gate: Gate | None = None,
        pool: tuple[str, int] | None = None,
    ) -> RawResult:
        """Run one line; the deadline counts from the line's start marker (the command itself), the duration is
        the worker's own measure of the run (its end frame's `run_s`). `parallel`: the worker runs at most that
        many at once and queues the rest, lowest `rank` first (`pool`, name and cap: and at most cap of that
        pool); before its marker a command may wait START_WAIT_S (or its timeout + the backstop, if longer) from
        its request or from the last end of another command of this session (it waits in the queue). `gate`:
        asked again while it waits in the queue whenever another command of the session timed out (a hung tool's
        queued calls are never started, `regate`)."""
        if self.dead:
            return not_run(f"session ended: {self.dead}")
        cmd_id = self._next
        self._next += 1
        job = _Job(MarkedCap(max_bytes, marker), StreamCap(max_bytes), gate=gate)
        self._jobs[cmd_id] = job
        opened_at = datetime.now(UTC)
        t_open = time.monotonic()
        timed_out = killed = hold = False
        # unstarted: its deadline came before its start marker (it waited in the queue): never a timeout of its own
        unstarted = False
        # queued in the worker, it waits for a running command to end: each ends within its own timeout and the
        # worker's backstop (a `--timeout 60` audit whose sixteen slots hang waits that long, not START_WAIT_S)
        unmarked_s = (
            START_WAIT_S
            if parallel is None
            else max(START_WAIT_S, timeout_s + BACKSTOP_S + KILL_WAIT_S)
        )
        try:
            body = request(
                cmd_id, line, timeout_s, max_bytes, rank=rank, parallel=parallel, pool=pool
            )
            if not self._send(body, batch=True):
                return not_run(f"session ended: {self.dead}")
            while not job.done and not job.overflow:
                now = time.monotonic()
                deadline = (
                    job.out.seen_at + timeout_s
                    if job.out.seen_at is not None
                    else max(t_open, self._ended) + unmarked_s
                )
                if now >= deadline:
                    timed_out = True
                    unstarted = job.out.seen_at is None
                    break
                await job.wait(deadline - now)
            if (timed_out or job.overflow) and not job.done:
                killed = True
                # a command that timed out may be a hung tool: the worker starts nothing from its queue (the
                # slot this one frees included) until the runner has heard of it and the queued commands' gates
                # were asked again (`_release`)
                hold = timed_out and not unstarted and parallel is not None
                await self._stop(cmd_id, job, hold=hold)
        except asyncio.CancelledError:
            # the worker stops it (TERM, KILL) and drops any hold on its queue (the client's or the worker's own,
            # from its deadline): the audit is going away, no gate to ask
            if parallel is not None:
                self._send(kill_request(cmd_id), batch=True)
                self._send(release_request(cmd_id))
            else:
                self._send(kill_request(cmd_id))
            raise
        finally:
            self._jobs.pop(cmd_id, None)
        raw = self._result(
            job,
            opened_at,
            t_open,
            timed_out=timed_out,
            killed=killed,
            timeout_s=timeout_s,
            unmarked_s=unmarked_s,
            unstarted=unstarted,
        )
        if hold or (parallel is not None and (job.end or {}).get("why") == "deadline"):
            # the worker holds its queue: once the caller has this result (the runner notes a hung tool before
            # its next await), stop the queued commands it now refuses, then let the others start
            asyncio.get_running_loop().call_soon(self._release, cmd_id)
        return raw

    def regate(self) -> None:
        """Ask the gates of the commands still waiting for their start again (another command timed out: the
        runner may now know their tool as hung); a refused one is taken out of the worker's queue, never started,
        and reported not run for the gate's reason."""
        for cmd_id, job in self._jobs.items():
            if job.gate is None or job.done or job.refused or job.out.seen_at is not None:
                continue
            try:
                reason = job.gate()
            except Exception:  # noqa: BLE001 - a gate that fails refuses nothing
                reason = None
            if reason:
                job.refused = reason
                self._send(kill_request(cmd_id), batch=True)

    def _release(self, cmd_id: int) -> None:
        """After a timed-out command's result reached its caller: refused queued commands out, then the hold off
        (one write, in that order)."""
        if self.dead:
            return
        self.regate()
        self._send(release_request(cmd_id))

    async def _stop(self, cmd_id: int, job: _Job, *, hold: bool = False) -> None:
        if not self._send(kill_request(cmd_id, hold=hold)):
            return
        until = time.monotonic() + KILL_WAIT_S
        while not job.done and (left := until - time.monotonic()) > 0:
            await job.wait(left)
        if not job.done:
            self._die(f"the worker did not stop a command within {KILL_WAIT_S:.0f} s")
            await self.aclose()

    def _result(
        self,
        job: _Job,
        opened_at: datetime,
        t_open: float,
        *,
        timed_out: bool,
        killed: bool,
        timeout_s: float,
        unmarked_s: float = START_WAIT_S,
        unstarted: bool = False,
    ) -> RawResult:
        t_start = job.out.seen_at if job.out.seen_at is not None else t_open

        def cut_short(error: str) -> RawResult:
            """What it printed before it was cut short, with no exit status of its own."""
            return RawResult(
                exit_status=None,
                stdout=job.out.value(),
                stderr=job.err.value(),
                started_at=opened_at + timedelta(seconds=t_start - t_open),
                duration_s=time.monotonic() - t_start,
                error=error,
            )

        if job.lost is not None and not timed_out and not killed:
            # never reached its end: read-only, so the caller may run it again on another session
            if job.out.seen_at is None and not job.out.value() and not job.err.value():
                return not_run(SESSION_ENDED + job.lost)
            return cut_short(SESSION_ENDED + job.lost)
        end = job.end or {}
        why = end.get("why")
        queued_why = (
            f"it waited {unmarked_s:.0f} s in the session's queue with no other command ending"
        )
        # its gate refused it before its start marker came
        if job.refused and job.out.seen_at is None:
            return not_run(job.refused)
        if end.get("queued"):  # stopped while it waited in the worker's queue: it never ran
            return not_run(
                queued_why if timed_out else "stopped while it waited in the session's queue"
            )
        if (job.refused or unstarted) and job.out.seen_at is not None:
            # stopped as it started (its start was on the way when the stop went out): what it printed is kept,
            # it has no exit status, and it is not a timeout of the tool (its own time had not begun)
            return cut_short(f"stopped at its start: {job.refused or queued_why}")
        if end.get("e"):
            return RawResult(exit_status=None, error=str(end["e"]), started_at=opened_at)
        rc = end.get("rc")
        status: int | None = rc if isinstance(rc, int) else None
        if status is not None and status < 0:
            status = 128 - status  # a signal, as a shell reports it
        if why == "deadline":
            timed_out = True
        if killed or why in ("deadline", "cap", "kill"):
            status = None  # stopped by us: no exit status of its own
        run_s = end.get("run_s")
        if isinstance(run_s, int | float) and not isinstance(run_s, bool) and run_s >= 0:
            # measured on the target, from its spawn to its end (issue 30): the marker's arrival can be late
            # (the worker holds output frames up to HOLD_S, the client's loop is parsing others), so the client's
            # own figure reads short; the start is the tighter of the two bounds the client knows (the marker's
            # arrival, the end frame's arrival less the run time), never before the request went out
            t_end = job.ended_at if job.ended_at is not None else time.monotonic()
            t_start = max(t_open, min(t_start, t_end - run_s))
            duration = float(run_s)
        else:  # a worker that does not say (none of today's): the client's own figure
            duration = time.monotonic() - t_start
        return RawResult(
            exit_status=status,
            stdout=job.out.value(),
            stderr=job.err.value(),
            started_at=opened_at + timedelta(seconds=t_start - t_open),
            duration_s=min(duration, timeout_s + KILL_WAIT_S) if timed_out else duration,
            timed_out=timed_out,
            truncated=job.out.truncated or job.err.truncated or bool(end.get("trunc")),
        )

    async def aclose(self) -> None:
        """End of stdin: the worker stops whatever still runs (TERM, KILL) and exits; then the channel closes."""
        self.dead = self.dead or "the session was closed"
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        try:
            await self.channel.aclose()
        except Exception:  # noqa: BLE001
            pass


class SessionTransport(TransportBase):
    """A transport that runs lines through long-lived workers, one per scope, over an inner transport that can
    open them; it falls back to the inner transport's one channel per command wherever a worker cannot run."""

    executes_lines = True
    runs_sessions = True

    def __init__(
        self, inner: Transport, *, host_sessions: bool = True, parallel: int = WORKER_PARALLEL
    ) -> None:
        self.inner = inner
        self.label = inner.label
        self.host_sessions = host_sessions
        """False for a local host: a local command costs no login; only container scopes get workers."""
        self._channels = parallel
        self._sessions: dict[str, WorkerSession] = {}
        self._starting: dict[str, asyncio.Task[WorkerSession | None]] = {}
        self._starts: dict[str, int] = {}
        self.unavailable: dict[str, str] = {}
        """scope -> why it runs one channel per command."""
        self.login_hung: dict[str, str] = {}
        """scope -> its login never finished: one channel per command would hang the same way, so none is tried."""
        self._closed = False
        self._prestarts: set[asyncio.Future[WorkerSession | None]] = set()
        self._begun: asyncio.Future[None] | None = None
        """The connect `begin()` started, until `connect()` takes its outcome."""
        self._pool_slots: dict[str, RankedSlots] = {}
        """A hang-prone tool's slots where its calls run one channel each (no worker enforces them there)."""

    @property
    def lost(self) -> bool:
        return self.inner.lost

    @property
    def lost_reason(self) -> str | None:
        return self.inner.lost_reason

    @property
    def channels(self) -> int | None:
        """Commands in flight at once per scope (the runner's hang-prone tool slots are half of it)."""
        return self._channels

    async def connect(self) -> None:
        begun, self._begun = self._begun, None
        if begun is not None:  # begun early: its outcome (a TransportError too) is this connect's
            await begun
            return
        await self.inner.connect()

    def begin(self, login_budget_s: float) -> None:
        if self._begun is None and not self._closed:
            self._begun = asyncio.ensure_future(self._connect_then_login(login_budget_s))

    async def _connect_then_login(self, login_budget_s: float) -> None:
        await self.inner.connect()
        # the login (rc files) and the worker start while the front end loads
        if self.host_sessions:
            self.prestart("", login_budget_s)

    async def _session(self, scope: str, budget_s: float = START_WAIT_S) -> WorkerSession | None:
        live = self._sessions.get(scope)
        if live is not None and not live.dead:
            return live
        if scope in self.unavailable or self._closed or (scope == "" and not self.host_sessions):
            return None
        task = self._starting.get(scope)
        if task is None or task.done():
            if self._starts.get(scope, 0) >= MAX_STARTS:
                self.unavailable[scope] = f"{MAX_STARTS} sessions ended early"
                return None
            self._starts[scope] = self._starts.get(scope, 0) + 1
            task = asyncio.create_task(self._start(scope, min(START_WAIT_S, budget_s)))
            self._starting[scope] = task
        return await asyncio.shield(task)

    async def _start(self, scope: str, wait_s: float = START_WAIT_S) -> WorkerSession | None:
        opener = self.inner.open_session
        token = new_token()
        line = start_line(token, scope or None)
        try:
            channel = await (
                opener(line, open_timeout_s=REPLACEMENT_OPEN_S)
                if scope in self._sessions and self.inner.reopens_quickly
                else opener(line)
            )
        except Exception as exc:  # noqa: BLE001 - no session: one channel per command
            if (
                not self.lost
            ):  # a lost connection says so on the next command, it is no reason to give up sessions
                self.unavailable[scope] = f"cannot open a session: {exc.__class__.__name__}: {exc}"
            return None
        session = WorkerSession(channel, line, token)
        try:
            await session.start(wait_s, python_wait(wait_s))
        except SessionUnavailable as exc:
            await session.aclose()
            if not self.lost:
                self.unavailable[scope] = str(exc)
                if session.login_hung:
                    self.login_hung[scope] = str(exc)
            return None
        except asyncio.CancelledError:
            await session.aclose()
            raise
        old = self._sessions.get(scope)
        self._sessions[scope] = session
        if old is not None:
            await old.aclose()
        if self._closed:
            await session.aclose()
            return None
        return session

    def prestart(self, scope: str, budget_s: float | None = None) -> None:
        """Start a scope's session in the background (the runner knows a container's wrapper before it is needed;
        a front end begins the login's while it loads, with the preflight's budget)."""
        if (
            scope in self._sessions
            or scope in self._starting
            or scope in self.unavailable
            or self._closed
        ):
            return
        task = asyncio.ensure_future(self._session(scope, budget_s or START_WAIT_S))
        self._prestarts.add(task)
        task.add_done_callback(self._prestarts.discard)

    def session_lines(self) -> dict[str, list[str]]:
        """scope -> the start line of every session that ran here (what the snapshot records)."""
        return {scope: [s.line] for scope, s in self._sessions.items()}

    async def run(
        self,
        line: str,
        *,
        command_id: str,
        timeout_s: float,
        max_bytes: int,
        gate: Gate | None = None,
        marker: str | None = None,
        session: SessionLine | None = None,
        pool: tuple[str, int] | None = None,
        declared: str | None = None,
    ) -> RawResult:
        """`pool` (name, cap): a hang-prone tool's call, at most cap of them at once (run/runner.py tool_slot):
        the worker enforces it in its queue, so the tool's next call starts as one ends, without a round trip;
        on one channel per command (no worker here) this transport does, in slots of its own. `declared`: the
        command the line runs (the runner's), which ranks it in the worker's queue and in those slots; the line
        around it may read otherwise (a wrapper's guard walks /proc itself: issue 30). Without it, the line."""
        scope, inner_line = (session.scope, session.line) if session is not None else ("", line)
        interrupted: RawResult | None = None
        for _ in range(MAX_STARTS):
            worker = await self._session(scope, timeout_s)
            if worker is None:
                break
            reason = gate() if gate is not None else None
            if reason:
                return not_run(reason)
            raw = await worker.run(
                inner_line,
                timeout_s=timeout_s,
                max_bytes=max_bytes,
                marker=marker,
                rank=queue_rank(inner_line if declared is None else declared),
                parallel=self._channels,
                gate=gate,
                pool=pool,
            )
            # a hung tool: the other scopes' queued calls are asked again too (one driver)
            if raw.timed_out:
                asyncio.get_running_loop().call_soon(self._regate, worker)
            raw.executed = inner_line
            raw.session = worker.line
            if not (raw.error or "").split("not run: ", 1)[-1].startswith(SESSION_ENDED):
                return raw
            interrupted = raw  # the session died under it: a replacement session runs it again
            await asyncio.sleep(
                0.05
            )  # the connection's own end, if that was the cause, lands first
            if self.lost:
                break
        if scope in self.login_hung:
            return not_run(self.login_hung[scope])
        if self.lost:
            why = f"connection lost: {self.lost_reason or 'connection closed'}"
            if interrupted is None or interrupted.not_started:
                return not_run(why)
            interrupted.error = why  # it ran partly: what it printed is kept, it has no exit status
            return interrupted
        held = (
            self._pool_slots.setdefault(pool[0], RankedSlots(pool[1])).held(
                launch_rank(line if declared is None else declared)
            )
            if pool is not None
            else nullcontext()
        )
        async with held:
            raw = await self.inner.run(
                line,
                command_id=command_id,
                timeout_s=timeout_s,
                max_bytes=max_bytes,
                gate=gate,
                marker=marker,
            )
        raw.executed = line
        return raw

    def _regate(self, done: WorkerSession) -> None:
        for session in self._sessions.values():
            if session is not done and not session.dead:
                session.regate()

    async def aclose(self) -> None:
        self._closed = True
        begun, self._begun = self._begun, None
        pending: list[asyncio.Future[Any]] = [*self._starting.values(), *self._prestarts]
        if begun is not None:
            pending.append(begun)
        for task in pending:
            if not task.done():
                task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        await asyncio.gather(*(s.aclose() for s in self._sessions.values()), return_exceptions=True)
        await self.inner.aclose()
