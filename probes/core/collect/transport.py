"""The Transport protocol, the raw result of one command, and the local (subprocess) transport."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from gpuaudit.probes.core.collect.session_channels import LocalSessionChannel
from gpuaudit.probes.core.errors import TransportError

DEFAULT_MAX_BYTES = 8 * 1024 * 1024
READ_CHUNK = 64 * 1024
PREFLIGHT_ID = "preflight"
"""The runner's first command on every target (who am I, timeout(1)?); recordings answer it themselves."""


@dataclass(slots=True)
class RawResult:
    """What a transport saw for one command line; bytes are decoded later, in one place."""

    exit_status: int | None
    stdout: bytes | bytearray = b""
    stderr: bytes | bytearray = b""
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    duration_s: float = 0.0
    timed_out: bool = False
    truncated: bool = False
    error: str | None = None
    not_started: bool = False
    """The command never ran (no channel, connection gone, gate closed): safe to run elsewhere; `error` says why."""
    executed: str | None = None
    """The line that really ran, when the transport ran another form of it (a worker session runs the line
    inside the container; its wrapper was paid once, for the session)."""
    session: str | None = None
    """The start line of the long-lived session that ran it (probes/core/collect/worker.py), if any."""


Gate = Callable[[], "str | None"]
"""Asked right before a command starts (after waiting for a channel): a reason not to start it, or None."""


def not_run(reason: str) -> RawResult:
    """A command that never started: "not run: why" (never "timed out", never a duration)."""
    return RawResult(exit_status=None, error=f"not run: {reason}", not_started=True)


class Transport(Protocol):
    """Runs shell lines on one machine. The runner only knows this protocol; what a transport can do beyond
    `run` is declared here (TransportBase gives the defaults), never probed with getattr."""

    label: str
    executes_lines: bool
    """Runs lines for real: `run` accepts `gate` and `marker` (recordings answer by command id instead)."""
    runs_sessions: bool
    """Runs a container's lines inside a worker session: `run` accepts `session` (a SessionLine)."""
    reopens_quickly: bool
    """A replacement session opens over a live connection (SSH): a short open timeout is enough."""

    @property
    def channels(self) -> int | None:
        """Commands it runs at once on this target; None: no limit of its own."""

    @property
    def live_lines(self) -> bool:
        """Some of its lines really run (a resume's live part included), so outputs carry the start marker."""

    @property
    def lost(self) -> bool:
        """Every connection to the target died."""

    @property
    def lost_reason(self) -> str | None:
        """Why the connection was lost, when it was."""

    @property
    def sessions_open(self) -> int:
        """Long-lived session channels open now (a pool opens the next one on its least loaded member)."""

    async def connect(self) -> None:
        """Open the connection (raise TransportError with a clear reason on failure)."""

    async def run(
        self,
        line: str,
        *,
        command_id: str,
        timeout_s: float,
        max_bytes: int,
        gate: Gate | None = None,
        marker: str | None = None,
        session: Any = None,
    ) -> RawResult:
        """Run one shell line; never raise for command failures (they are data).

        Every transport accepts every keyword; `executes_lines` says whether it honours `gate` (asked right
        before the command starts) and `marker` (the start marker to cut the login's banner at), `runs_sessions`
        whether it honours `session` (a SessionLine: the line a container's worker runs)."""

    async def open_session(self, line: str, open_timeout_s: float | None = None) -> Any:
        """A long-lived channel for a worker session; TransportError when it cannot keep one open."""

    def prestart(self, scope: str, budget_s: float | None = None) -> None:
        """Start a scope's worker session in the background (no-op where there are no sessions); `budget_s`: how
        long its login may take (None: the session's own wait)."""

    def begin(self, login_budget_s: float) -> None:
        """Start connecting now, in the background, and the login's worker session with it within the preflight's
        budget (a front end that still has modules to load, collect/early.py); the next `connect()` awaits that
        attempt and says how it ended. No-op where connecting costs nothing worth overlapping."""

    def has_recorded(self, command_id: str) -> bool:
        """A recording answers this command id (replay, recorded directories, a resume's usable records)."""

    async def aclose(self) -> None:
        """Close the connection; idempotent."""


class TransportBase:
    """The defaults of every capability in `Transport`: a transport declares what it does differently."""

    label: str = ""
    executes_lines: bool = False
    runs_sessions: bool = False
    reopens_quickly: bool = False

    @property
    def channels(self) -> int | None:
        return None

    @property
    def live_lines(self) -> bool:
        return self.executes_lines

    @property
    def lost(self) -> bool:
        return False

    @property
    def lost_reason(self) -> str | None:
        return None

    sessions_open: int = 0

    async def connect(self) -> None:
        return None

    async def open_session(self, line: str, open_timeout_s: float | None = None) -> Any:
        raise TransportError("this transport cannot keep a session open")

    def prestart(self, scope: str, budget_s: float | None = None) -> None:
        return None

    def begin(self, login_budget_s: float) -> None:
        return None

    def has_recorded(self, command_id: str) -> bool:
        return False

    async def aclose(self) -> None:
        return None


class StreamCap:
    """Collects at most `limit` bytes of a stream; remembers whether more arrived.

    One growing bytearray (mremap'd in place when large) instead of a list of chunks joined at the
    end: joining would hold the output twice at the peak.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.buf = bytearray()
        self.truncated = False

    def add(self, chunk: bytes) -> bool:
        """Keep what fits; return False once the cap is exceeded."""
        room = self.limit - len(self.buf)
        if len(chunk) > room:
            if room > 0:
                self.buf += chunk[:room]
            self.truncated = True
            return False
        self.buf += chunk
        return True

    def value(self) -> bytearray:
        return self.buf


class MarkedCap(StreamCap):
    """A StreamCap that notes when the runner's start marker arrives: the moment the command itself starts.

    Everything before it is the login shell (rc files): the command's clock starts here, not at channel open.
    """

    def __init__(self, limit: int, marker: str | None) -> None:
        super().__init__(limit)
        self.tag = (marker + "\n").encode() if marker else b""
        self.seen = asyncio.Event()
        self.seen_at: float | None = None
        if not marker:
            self.seen_at = time.monotonic()
            self.seen.set()

    def add(self, chunk: bytes) -> bool:
        before = len(self.buf)
        kept = super().add(chunk)
        if self.seen_at is None and self.tag in self.buf[max(0, before - len(self.tag)) :]:
            self.seen_at = time.monotonic()
            self.seen.set()
        return kept


async def read_capped(stream: Any, cap: StreamCap, on_overflow: asyncio.Event) -> None:
    """Read a stream in chunks into a cap; signal overflow so the command can be killed."""
    while True:
        chunk = await stream.read(READ_CHUNK)
        if not chunk:
            return
        if not cap.add(chunk):
            on_overflow.set()
            return


class LocalTransport(TransportBase):
    """The embedded default: runs commands on this machine with /bin/sh, no SSH involved."""

    executes_lines = True
    """Runs the exact line (so the runner's output markers are in the output); recordings do not."""

    def __init__(self, label: str = "local") -> None:
        self.label = label

    async def connect(self) -> None:
        return None

    async def run(
        self,
        line: str,
        *,
        command_id: str,
        timeout_s: float,
        max_bytes: int,
        gate: Gate | None = None,
        marker: str | None = None,
        session: Any = None,
    ) -> RawResult:
        reason = gate() if gate is not None else None
        if reason:
            return not_run(reason)
        started = datetime.now(UTC)
        t0 = time.monotonic()
        try:
            proc = await asyncio.create_subprocess_exec(
                "/bin/sh",
                "-c",
                line,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,  # own process group: a timeout kills the whole pipeline
            )
        except OSError as exc:
            return RawResult(
                exit_status=None, started_at=started, error=f"cannot start /bin/sh: {exc}"
            )
        out, err = StreamCap(max_bytes), StreamCap(max_bytes)
        overflow = asyncio.Event()
        assert proc.stdout is not None and proc.stderr is not None
        readers: asyncio.Future[Any] = asyncio.gather(
            read_capped(proc.stdout, out, overflow), read_capped(proc.stderr, err, overflow)
        )
        overflow_wait = asyncio.ensure_future(overflow.wait())
        timed_out = False
        try:
            done, _ = await asyncio.wait(
                {readers, overflow_wait}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
            )
            if not done:
                timed_out = True
            if timed_out or overflow.is_set():
                await _stop_group(proc)
            try:
                await asyncio.wait_for(proc.wait(), timeout=5)
            except TimeoutError:
                _kill_group(proc.pid)
            readers.cancel()
            try:
                await readers
            except (asyncio.CancelledError, Exception):
                pass
            await _drain(proc)
        except asyncio.CancelledError:
            await _stop_group(proc)
            raise
        finally:
            overflow_wait.cancel()
        return RawResult(
            exit_status=None
            if timed_out or overflow.is_set()
            else proc.returncode,  # killed by us: no status of its own
            stdout=out.value(),
            stderr=err.value(),
            started_at=started,
            duration_s=time.monotonic() - t0,
            timed_out=timed_out,
            truncated=out.truncated or err.truncated,
        )

    async def open_session(self, line: str, open_timeout_s: float | None = None) -> Any:
        """A long-lived local process for a worker session (a container entered from this machine)."""
        return await LocalSessionChannel.open(line)

    async def aclose(self) -> None:
        return None


async def _drain(proc: asyncio.subprocess.Process) -> None:
    """Read what is left in the pipes of a finished (or killed) process, discarding it.

    A reader stopped at the cap leaves its pipe open; draining to EOF lets asyncio close the
    subprocess transport now, not in a destructor after the event loop is gone.
    """
    for stream in (proc.stdout, proc.stderr):
        if stream is None:
            continue
        try:
            while await asyncio.wait_for(stream.read(READ_CHUNK), timeout=1):
                pass
        except (TimeoutError, OSError):
            pass


def _kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


async def _stop_group(proc: asyncio.subprocess.Process) -> None:
    """TERM first (sudo relays it to a root command the user cannot kill), KILL 0.3 s later."""
    _kill_group(proc.pid, signal.SIGTERM)
    try:
        await asyncio.wait_for(asyncio.shield(proc.wait()), timeout=0.3)
    except (TimeoutError, asyncio.CancelledError):
        pass
    _kill_group(proc.pid)
