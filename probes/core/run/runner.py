"""The Audit runner: every probe x every target concurrently, streamed as events, failures as data."""

from __future__ import annotations

import asyncio
import functools
import shlex
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from gpuaudit.probes.core.collect.early import PREFLIGHT_TIMEOUT_S, login_budget
from gpuaudit.probes.core.collect.redfish import BMC_LINE_PREFIX, BMC_SOURCE_IDS
from gpuaudit.probes.core.collect.remote_line import (
    cut_at_marker,
    new_marker,
    remote_line,
    sudo_refusal,
)
from gpuaudit.probes.core.collect.schedule import RankedSlots, is_process_scan, launch_rank
from gpuaudit.probes.core.collect.transport import (
    DEFAULT_MAX_BYTES,
    PREFLIGHT_ID,
    RawResult,
    Transport,
)
from gpuaudit.probes.core.collect.worker import session_prefix
from gpuaudit.probes.core.collect.worker_transport import SessionLine
from gpuaudit.probes.core.errors import TransportError
from gpuaudit.probes.core.models import CommandRecord, ProbeResult, Role, Target
from gpuaudit.probes.core.record import Record
from gpuaudit.probes.core.run.events import (
    AuditFinished,
    CommandFinished,
    CommandStarted,
    ProbeFinished,
    ProbeStarted,
    TargetConnected,
    TargetConnecting,
    TargetExecuted,
    TargetFailed,
)
from gpuaudit.probes.core.run.records import (
    REDACT_CHUNK,
    decode_output,
    record_from_text,
    text_of,
)
from gpuaudit.probes.core.spec import Command, Probe

DEFAULT_TIMEOUT_S = 20.0
RC_ROOM = 64 * 1024
"""Extra bytes a stream may bring before the cap: what the login shell printed before the start marker."""
DEFAULT_OUTPUT_BUDGET = 256 * 1024 * 1024
"""Bytes of command output one audit keeps in all (stdout + stderr, every target); past it outputs are cut and
marked truncated. Commands in flight when it runs out may each still bring up to --max-output."""
HANG_PRONE_TOOLS = ("nvidia-smi", "dcgmi")
"""Tools that hang as a whole when the GPU or driver is wedged: after one call times out on a target, its other
calls there are not started (each would wait out the full timeout too)."""
HANG_PRONE_PARALLEL = 8
"""At most this many calls of one hang-prone tool in flight per target (a container counts with its host: one
driver), and never more than half of the target's channels (`hang_prone_slots`): if the tool hangs, the other
half keeps serving quick reads instead of waiting out the timeout, and a production box never sees more than 8
NVML clients of ours at once. 4 cost 0.5 s of a 2 s audit with typical nvidia-smi durations
(tests/bench/bench_audit.py: 2.05 s at 4, 1.6 s at 8, 1.25 s at 16, 16 channels)."""


def hang_prone_slots(transport: Transport) -> int:
    """Calls of one hang-prone tool in flight at once on a target: half its channels, at most HANG_PRONE_PARALLEL
    (a fleet's one connection of 8 channels: 4; the default 2 × 8: 8; a transport without a limit: 8)."""
    channels = transport.channels
    return (
        HANG_PRONE_PARALLEL if channels is None else max(1, min(HANG_PRONE_PARALLEL, channels // 2))
    )


SCAN_PARALLEL = 2
"""The process scans (engine_procs, engine_proc_status: one `nvidia-smi --query-compute-apps` at their start,
then ~1 s walking /proc) count in slots of their own, one per 8 channels, at most 2 (`scan_slots`). In the
tool's common slots they held 2 of the 8 for their whole walk beside the two `nvidia-smi -q` dumps, and the other
twelve queries of a host ran in three waves behind them: the last nvidia-smi call ended 0.3-0.5 s after the
slowest command (tests/bench/timeline_audit.py --all). The tool then holds at most half a target's channels plus
one per 8 channels; a wedged driver still leaves the rest to the quick reads."""


def scan_slots(transport: Transport) -> int:
    """Process scans in flight at once on a target apart from the tool's common slots (0: they share those)."""
    channels = transport.channels
    return SCAN_PARALLEL if channels is None else min(SCAN_PARALLEL, channels // 8)


def tool_slot(transport: Transport, shell: str, tool: str) -> tuple[str, int]:
    """The slot pool a hang-prone line waits in: (key, capacity)."""
    if is_process_scan(shell) and (n := scan_slots(transport)) > 0:
        return f"{tool} (process scans)", n
    return tool, hang_prone_slots(transport)


PREFLIGHT = Command(
    PREFLIGHT_ID,
    "id -u; command -v timeout >/dev/null 2>&1 && echo timeout=yes; uname -n",
    on=frozenset({"host", "container"}),
    timeout_s=PREFLIGHT_TIMEOUT_S,
    description="who am I, is timeout(1) there, hostname: decides root-only commands and remote kill",
)


_Fetched = tuple[RawResult, str, str]
"""One line's result: its raw result and its redacted stdout and stderr."""


async def _launched(rank: int, start: Callable[[], Awaitable[_Fetched]]) -> _Fetched:
    """Longest first: a line of launch rank r starts r turns of the loop after the audit asks for it, so quick
    reads queue behind driver queries (collect/schedule.py launch_rank). Counted in the line's own task: the
    probes that ask for a line already out wait on its task without turning the loop (~600 asks, ~250 lines)."""
    for _ in range(rank):
        await asyncio.sleep(0)
    return await start()


@dataclass(frozen=True, slots=True)
class AuditOptions:
    """Knobs of one audit run (the CLI fills them)."""

    timeout_s: float = DEFAULT_TIMEOUT_S
    max_bytes: int = DEFAULT_MAX_BYTES
    sudo: bool = False
    active: bool = False
    """Run load-generating (ACTIVE) commands such as nccl-tests; never on by default."""
    python: str | None = None
    """Interpreter the python probe inspects; None lets the probe find the engine's, else python3."""
    output_budget: int = DEFAULT_OUTPUT_BUDGET
    """Audit-wide cap on kept output bytes (see DEFAULT_OUTPUT_BUDGET)."""
    bmc: Any = None
    """--bmc: a probes.core.collect.redfish.BmcReader answering the host's `redfish GET` sources; None: those
    sources are not run (a recording still answers them)."""


@dataclass(slots=True)
class TargetBinding:
    """A target, the transport that reaches it, and the wrapper that enters a container through its host."""

    target: Target
    transport: Transport
    wrap_prefix: str | None = None
    via: Role | None = None
    """For a container entered through the host: the host role whose connection it shares."""


@dataclass(slots=True)
class _TargetInfo:
    """What the preflight learned about a target: reachable or why not, root, timeout(1), hostname."""

    ok: bool
    reason: str | None = None
    is_root: bool = False
    has_timeout: bool = False
    hostname: str | None = None
    inner_timeout: bool = False
    """A container entered through its host has timeout(1) inside (killing the wrapper does not kill its command)."""


def render_shell(command: Command, options: AuditOptions) -> str:
    """Fill a declared command's template parameters, always through shlex.quote."""
    shell = command.shell
    if "{python}" in shell:
        shell = shell.replace("{python}", shlex.quote(options.python or "python3"))
    return shell


def hang_prone_tool(shell: str) -> str | None:
    """The hang-prone tool a command line calls, if any."""
    return next((t for t in HANG_PRONE_TOOLS if t in shell), None)


def parse_preflight(stdout: str) -> tuple[bool, bool, str | None]:
    """`id -u` / `timeout=yes` / hostname lines -> (is_root, has_timeout, hostname)."""
    lines = [ln.strip() for ln in stdout.splitlines() if ln.strip()]
    is_root = bool(lines) and lines[0] == "0"
    has_timeout = "timeout=yes" in lines
    rest = [ln for ln in lines[1:] if ln != "timeout=yes"]
    return is_root, has_timeout, (rest[0] if rest else None)


def judging() -> Callable[..., ProbeResult]:
    """probes/core/judge/probe.py's judge_probe, imported on first use: with the checks and the parsers it loads
    while the targets run the first commands (Audit._load_judging), never before them (issue 30)."""
    from gpuaudit.probes.core.judge.probe import judge_probe

    return judge_probe


DISPATCH_TURNS = 8
"""Loop turns from a target's preflight answer until its commands are written to the channel: the probes' command
coroutines resume, wait their launch rank (collect/schedule.py: up to 2 turns), start their fetches, and the
session writes the burst (worker_transport's outbox); counted with margin."""


class Audit:
    """Runs probes over targets; `events()` streams what happens. Connections stay open for re-runs."""

    def __init__(
        self,
        bindings: Sequence[TargetBinding],
        probes: Sequence[Probe],
        options: AuditOptions | None = None,
    ) -> None:
        self.bindings = {b.target.role: b for b in bindings}
        self.probes = list(probes)
        self._first_output = asyncio.Event()
        """Set at the first command's output of a run (each run makes its own): the judging halves load from then on."""
        self.options = options or AuditOptions()
        self._connect_tasks: dict[Role, asyncio.Task[_TargetInfo]] = {}
        self._closed = False
        self._marker = new_marker()
        self._hung: dict[Role, tuple[str, str]] = {}
        """role -> (tool, command id) of a hang-prone tool that timed out there."""
        self._lost: set[Role] = set()
        self._budget_left = self.options.output_budget
        self._tool_slots: dict[tuple[Role, str], RankedSlots] = {}
        self._runs: set[asyncio.Task[None]] = set()
        self._executed: dict[Role, set[str]] = {}
        self.command_events = True
        """CommandStarted / CommandFinished events (a live view's in-flight list and records as they come); off
        when nothing reads them (run_to_end without a reader: a fleet host), as each probe's ProbeFinished carries
        its records anyway (issue 30: ~240 events per host built, queued and dropped)."""

    @property
    def targets(self) -> list[Target]:
        return [b.target for b in self.bindings.values()]

    async def events(self, probe_ids: Iterable[str] | None = None) -> AsyncIterator[Record]:
        """Run the chosen probes (all by default) and yield events until AuditFinished."""
        wanted = set(probe_ids) if probe_ids is not None else None
        probes = [p for p in self.probes if wanted is None or p.id in wanted]
        queue: asyncio.Queue[Record | None] = asyncio.Queue()
        task = asyncio.create_task(self._run(probes, queue))
        self._runs.add(task)
        task.add_done_callback(self._runs.discard)
        try:
            while True:
                event = await queue.get()
                if event is None:
                    break
                yield event
            await task
        finally:
            if not task.done():
                task.cancel()
                try:
                    await task
                except (asyncio.CancelledError, Exception):
                    pass

    async def _run(self, probes: list[Probe], queue: asyncio.Queue[Record | None]) -> None:
        cache: dict[tuple[Role, str], asyncio.Task[tuple[RawResult, str, str]]] = {}
        self._first_output = asyncio.Event()
        loading = asyncio.create_task(self._load_judging(probes))
        try:
            for role in self.bindings:
                self._ensure_connect(role, queue)
            await asyncio.gather(*(self._run_probe(p, cache, queue) for p in probes))
            queue.put_nowait(AuditFinished(at=datetime.now(UTC)))
        finally:
            loading.cancel()
            pending = [t for t in cache.values() if not t.done()]
            for t in pending:
                t.cancel()
            if pending:  # each one kills its remote command (TERM, then KILL) before the connection may close
                await asyncio.wait(pending, timeout=3)
            queue.put_nowait(None)

    def _ensure_connect(
        self, role: Role, queue: asyncio.Queue[Record | None]
    ) -> asyncio.Task[_TargetInfo]:
        task = self._connect_tasks.get(role)
        if task is None or (task.done() and not task.cancelled() and not task.result().ok):
            task = asyncio.create_task(self._connect(role, queue))
            self._connect_tasks[role] = task
        return task

    async def _connect(self, role: Role, queue: asyncio.Queue[Record | None]) -> _TargetInfo:
        binding = self.bindings[role]
        queue.put_nowait(TargetConnecting(role=role))
        try:
            if binding.via is not None:
                host_info = await self._ensure_connect(binding.via, queue)
                if not host_info.ok:
                    raise TransportError(
                        f"the {binding.via} it is entered through is unreachable: {host_info.reason}"
                    )
            else:
                await binding.transport.connect()
                self._prestart_container_sessions(role)
            host_timeout = (
                (await self._connect_tasks[binding.via]).has_timeout
                if binding.via is not None
                else False
            )
            line = remote_line(
                PREFLIGHT.shell,
                marker=self._marker_for(binding),
                wrap_prefix=binding.wrap_prefix,
                wrap_sudo=self._wrap_needs_sudo(role),
                inner_timeout=False,
                timeout_s=PREFLIGHT.timeout_s if host_timeout else None,
            )
            preflight_timeout = login_budget(self.options.timeout_s)
            if binding.transport.executes_lines:
                extra = self._session_kw(role, PREFLIGHT.shell, None)
                raw = await binding.transport.run(
                    line,
                    command_id=PREFLIGHT.id,
                    timeout_s=preflight_timeout,
                    max_bytes=64 * 1024,
                    marker=self._marker_for(binding),
                    **extra,
                )
                self._note_executed(role, raw, line, queue)
            else:
                raw = await binding.transport.run(
                    line, command_id=PREFLIGHT.id, timeout_s=preflight_timeout, max_bytes=64 * 1024
                )
            raw = self._unmark(binding, raw)
            if raw.exit_status != 0 or raw.not_started:
                detail = (
                    decode_output(raw.stderr).strip() or raw.error or f"exit {raw.exit_status}"
                ).splitlines()
                raise TransportError(
                    f"{binding.target.spec}: cannot run commands: {detail[0][:200] if detail else 'no output'}"
                )
            is_root, has_timeout, hostname = parse_preflight(decode_output(raw.stdout))
            inner_timeout = False
            if (
                binding.via is not None
            ):  # the outer timeout(1) runs on the host, the inner one in the container
                inner_timeout, has_timeout = has_timeout, host_timeout
        except TransportError as exc:
            queue.put_nowait(TargetFailed(role=role, reason=str(exc)))
            return _TargetInfo(ok=False, reason=str(exc))
        except Exception as exc:  # a transport bug must not take the audit down
            reason = f"{exc.__class__.__name__}: {exc}"
            queue.put_nowait(TargetFailed(role=role, reason=reason))
            return _TargetInfo(ok=False, reason=reason)
        queue.put_nowait(TargetConnected(role=role, is_root=is_root, hostname=hostname))
        return _TargetInfo(
            ok=True,
            is_root=is_root,
            has_timeout=has_timeout,
            hostname=hostname,
            inner_timeout=inner_timeout,
        )

    async def _load_judging(self, probes: list[Probe]) -> None:
        """Import the probes' judging halves (parsers, facts models, checks: ~0.1 s of CPU) while the targets run
        the audit's commands: after the first command's output is in (the commands have left by then), a probe
        at a time, yielding to the loop between two (what is ready to run goes first). Before the first command
        they delayed every command; at each probe's own end they would follow the slowest command, which every
        probe waits for (issue 30). A probe whose data comes first loads its own (`_run_probe`)."""
        await self._first_output.wait()
        # ...and every target has answered its preflight (or failed), like the outputs' preload (tui/cli/headless.py):
        # a preflight answer still on its way takes a loop turn per step, each one behind a module's import here,
        # and that target's commands, its slowest among them, left ~0.2 s late (issue 30)
        if self._connect_tasks:
            await asyncio.wait(list(self._connect_tasks.values()))
        for _ in range(DISPATCH_TURNS):  # the commands those answers release leave first
            await asyncio.sleep(0)
        try:
            judging()  # the framework first: the checks, the parsers

            for probe in probes:
                await asyncio.sleep(0)
                probe.load()
        except Exception:  # noqa: BLE001, S110 - the probe's own judging reports it (judge_probe)
            pass

    async def _run_probe(
        self,
        probe: Probe,
        cache: dict[tuple[Role, str], asyncio.Task[tuple[RawResult, str, str]]],
        queue: asyncio.Queue[Record | None],
    ) -> None:
        started = datetime.now(UTC)
        queue.put_nowait(ProbeStarted(probe_id=probe.id, at=started))
        roles = [r for r in self.bindings if probe.commands_for(r)]
        per_role = await asyncio.gather(
            *(self._run_commands(probe, r, cache, queue) for r in roles)
        )
        records = [rec for recs in per_role for rec in recs]
        result = judging()(probe, {r: recs for r, recs in zip(roles, per_role)}, started)
        queue.put_nowait(ProbeFinished(result=result.model_copy(update={"records": records})))

    async def _run_commands(
        self,
        probe: Probe,
        role: Role,
        cache: dict[tuple[Role, str], asyncio.Task[tuple[RawResult, str, str]]],
        queue: asyncio.Queue[Record | None],
    ) -> list[CommandRecord]:
        info = await self._connect_tasks[role]
        commands = [c for c in probe.commands_for(role) if self.options.active or not c.active]
        if not self._bmc_answered(role):  # no --bmc: the BMC reads are not sources of this audit
            commands = [c for c in commands if not c.shell.startswith(BMC_LINE_PREFIX)]
        return list(
            await asyncio.gather(
                *(self._run_one(probe, c, role, info, cache, queue) for c in commands)
            )
        )

    async def _run_one(
        self,
        probe: Probe,
        command: Command,
        role: Role,
        info: _TargetInfo,
        cache: dict[tuple[Role, str], asyncio.Task[tuple[RawResult, str, str]]],
        queue: asyncio.Queue[Record | None],
    ) -> CommandRecord:
        binding = self.bindings[role]
        shell = render_shell(command, self.options)
        timeout_s = command_timeout(command, self.options)
        use_sudo = command.needs_root and self.options.sudo and not info.is_root
        line = remote_line(
            shell,
            marker=self._marker_for(binding),
            wrap_prefix=binding.wrap_prefix,
            sudo=use_sudo,
            wrap_sudo=self._wrap_needs_sudo(role),
            timeout_s=timeout_s if info.has_timeout else None,
            inner_timeout=info.inner_timeout,
        )
        base: dict[str, Any] = dict(
            target=role,
            probe_id=probe.id,
            command_id=command.id,
            command=shell,
            executed=line,
            needs_root=command.needs_root,
        )
        if command.shell.startswith(BMC_LINE_PREFIX) and self.options.bmc is not None:
            # read from the client over HTTPS (never through the target's shell), GET only
            if self.command_events:
                queue.put_nowait(
                    CommandStarted(probe_id=probe.id, role=role, command_id=command.id)
                )
            raw = await self.options.bmc.read(command.id, via=binding.transport)
            stdout, stderr = text_of(raw)
            base.update(executed=raw.executed or shell, needs_root=False)
            rec = record_from_text(base, raw, stdout, stderr)
        elif not info.ok:
            rec = CommandRecord(**base, error=f"target failed: {info.reason}")
        elif command.needs_root and not info.is_root and not self.options.sudo:
            rec = CommandRecord(**base, error="needs root (run as root or with --sudo)")
        else:
            if self.command_events:
                queue.put_nowait(
                    CommandStarted(probe_id=probe.id, role=role, command_id=command.id)
                )
            key = (role, line)
            task = cache.get(key)
            if task is None:  # the same line asked by two probes runs once, and its text is shared
                fetch = functools.partial(
                    self._fetch,
                    binding,
                    role,
                    line,
                    command.id,
                    timeout_s,
                    self._session_kw(role, shell, timeout_s if info.inner_timeout else None),
                    shell=shell,
                )
                task = asyncio.create_task(_launched(launch_rank(shell), fetch))
                cache[key] = task
            raw, stdout, stderr = await asyncio.shield(task)
            self._first_output.set()
            base["executed"] = (
                line if raw.executed is None else raw.executed
            )  # a replay: as recorded
            self._note_executed(role, raw, None, queue)
            rec = record_from_text(
                base,
                raw,
                stdout,
                stderr,
                sudo=use_sudo or self._wrap_needs_sudo(role),
                timeout_s=timeout_s,
            )
            self._note_lost(role, queue)
        if self.command_events:
            queue.put_nowait(CommandFinished(record=rec))
        return rec

    def _bmc_answered(self, role: Role) -> bool:
        """Whether `redfish GET` sources run on this target: the host with --bmc, or any recording (replay, demo,
        resume: the recorded BMC records answer; a recording without them says so like any missing source)."""
        if self.options.bmc is not None and role == "host":
            return True
        return any(self.bindings[role].transport.has_recorded(cid) for cid in BMC_SOURCE_IDS)

    def _note_lost(self, role: Role, queue: asyncio.Queue[Record | None]) -> None:
        """Once every connection to a target died, its state says so (and that of a container entered through it)."""
        binding = self.bindings[role]
        transport_role = binding.via or role
        if transport_role in self._lost or not self.bindings[transport_role].transport.lost:
            return
        reason = self.bindings[transport_role].transport.lost_reason or "connection closed"
        for r, b in self.bindings.items():
            if r == transport_role or b.via == transport_role:
                self._lost.add(r)
                queue.put_nowait(
                    TargetFailed(
                        role=r,
                        reason=f"{b.target.spec}: connection lost during the audit: {reason}",
                    )
                )

    def _prestart_container_sessions(self, role: Role) -> None:
        """Start the session of a container entered through this host now, alongside the host's own: its login and
        wrapper (`pct exec`, ~0.4 s of CPU) then overlap the host's instead of following them. With --sudo the
        wrapper's `sudo -n` depends on the host login's uid: that session starts with the container's preflight."""
        prestart = self.bindings[role].transport.prestart
        if self.options.sudo:
            return
        for other in self.bindings.values():
            if other.via == role and other.wrap_prefix:
                prestart(session_prefix(other.wrap_prefix, sudo=False))

    def _session_kw(self, role: Role, shell: str, inner_timeout_s: float | None) -> dict[str, Any]:
        """What a session transport is told beside the line: the declared command (it ranks the command by what it
        is, not by the line around it) and, for a container entered through its host, the container's scope and
        the line its worker runs there (the wrapper is paid once per session); nothing for other transports."""
        binding = self.bindings[role]
        if not binding.transport.runs_sessions:
            return {}
        if binding.wrap_prefix is None:
            return {"declared": shell}
        inner = remote_line(shell, marker=self._marker_for(binding), timeout_s=inner_timeout_s)
        return {
            "declared": shell,
            "session": SessionLine(
                session_prefix(binding.wrap_prefix, sudo=self._wrap_needs_sudo(role)), inner
            ),
        }

    def _note_executed(
        self, role: Role, raw: RawResult, line: str | None, queue: asyncio.Queue[Record | None]
    ) -> None:
        """Record the lines run outside the probes' records: a new session's start line, the preflight."""
        seen = self._executed.setdefault(role, set())
        for text in (raw.session, (raw.executed or line) if line is not None else None):
            if text and text not in seen:
                seen.add(text)
                queue.put_nowait(TargetExecuted(role=role, line=text))

    def _gate(self, role: Role, shell: str) -> str | None:
        """Why not to start a command now (a hang-prone tool already hung on this target), or None. `shell`: the
        declared command (never the remote line around it)."""
        tool = hang_prone_tool(shell)
        hung = self._hung.get(role)
        if tool and hung and hung[0] == tool:
            return f"{tool} hung in {hung[1]} (not started: it would wait out its timeout too)"
        return None

    def _pools_on_target(self, role: Role) -> bool:
        """Whether this target's transport keeps a hang-prone tool's cap itself (collect/worker_transport.py: the
        worker queues the calls beyond it and starts the next as one ends, without the round trip through here).
        Only for a target alone on its transport: a container entered through its host shares the host's driver,
        and one cap over two sessions' queues is kept here, in the runner's slots."""
        binding = self.bindings[role]
        return (
            binding.transport.runs_sessions
            and binding.via is None
            and binding.wrap_prefix is None
            and not any(b.via == role for b in self.bindings.values())
        )

    def _marker_for(self, binding: TargetBinding) -> str | None:
        """The start marker for lines that really run somewhere (a resume's live part included); recordings get none,
        so a replayed or rebuilt snapshot keeps the same executed lines."""
        return self._marker if binding.transport.live_lines else None

    def _unmark(self, binding: TargetBinding, raw: RawResult) -> RawResult:
        """Cut what the login shell printed before the command's marker; no marker from a live run = never started."""
        out, seen = cut_at_marker(raw.stdout, self._marker)
        err, _ = cut_at_marker(raw.stderr, self._marker)
        if seen:
            raw.stdout, raw.stderr = out, err
        elif binding.transport.executes_lines and not raw.not_started and raw.error is None:
            why = (
                "did not reach it before the timeout"
                if raw.timed_out
                else f"ended first (exit {raw.exit_status})"
            )
            text = decode_output(raw.stderr)
            first = text.strip().splitlines()[:1]
            refusal = sudo_refusal(text)
            raw.error = (
                f"needs root (sudo -n refused: {refusal[:120]})"
                if refusal
                else f"not run: the login shell or container wrapper {why}"
                + (f": {first[0][:160]}" if first else "")
            )
            raw.timed_out, raw.not_started = False, True
        return raw

    async def _fetch(
        self,
        binding: TargetBinding,
        role: Role,
        line: str,
        command_id: str,
        timeout_s: float,
        extra: dict[str, Any] | None = None,
        *,
        shell: str,
    ) -> tuple[RawResult, str, str]:
        """Run one line and turn its bytes into redacted text; the bytes are dropped so only the text stays alive.
        `shell`: the declared command the line runs, which says what it is (a hang-prone tool's call, a process
        scan, how slow); the line around it may say otherwise: a container wrapper's guard walks /proc/[0-9]*
        itself, and read as a process scan every call through `pct exec` waited in the scans' two slots."""
        gate_role = binding.via or role
        if self._budget_left <= 0:
            raw = RawResult(
                exit_status=None,
                truncated=True,
                not_started=True,
                error=f"not run: the audit's output budget ({self.options.output_budget} bytes) is spent",
            )
            return raw, "", ""
        reason = self._gate(gate_role, shell)
        max_bytes = max(1, min(self.options.max_bytes, self._budget_left))
        room = (
            max_bytes + RC_ROOM
        )  # the login shell's banner counts against the stream cap until it is cut
        if reason:
            raw = RawResult(exit_status=None, error=f"not run: {reason}", not_started=True)
        elif binding.transport.executes_lines:
            tool = hang_prone_tool(shell)
            held: AbstractAsyncContextManager[Any] = nullcontext()
            kw = dict(extra or {})
            if tool:
                pool, capacity = tool_slot(binding.transport, shell, tool)
                if self._pools_on_target(role):  # the worker's queue keeps the cap
                    kw["pool"] = (pool, capacity)
                else:  # a freed slot goes to the slowest call waiting (-q dumps first)
                    slots = self._tool_slots.setdefault((gate_role, pool), RankedSlots(capacity))
                    held = slots.held(launch_rank(shell))
            async with held:
                raw = await binding.transport.run(
                    line,
                    command_id=command_id,
                    timeout_s=timeout_s,
                    max_bytes=room,
                    gate=lambda: self._gate(gate_role, shell),
                    marker=self._marker_for(binding),
                    **kw,
                )
        else:
            raw = await binding.transport.run(
                line, command_id=command_id, timeout_s=timeout_s, max_bytes=room
            )
        raw = self._unmark(binding, raw)
        over_budget = False
        for stream in ("stdout", "stderr"):
            data = getattr(raw, stream)
            keep = min(
                max_bytes, max(0, self._budget_left)
            )  # checked again now: others may have spent it meanwhile
            if len(data) > keep:
                setattr(raw, stream, data[:keep])
                raw.truncated = True
                over_budget = over_budget or keep < max_bytes
            self._budget_left -= len(getattr(raw, stream))
        if over_budget and not raw.error:
            raw.error = (
                f"output truncated: the audit's output budget ({self.options.output_budget} bytes) ran out "
                f"({len(raw.stdout)} bytes kept)"
            )
        # no await between the transport's return and this note: a worker session holds its queue after a timeout
        # and asks the queued commands' gates again on the next loop turn (worker_transport.WorkerSession._release)
        tool = hang_prone_tool(shell)
        if raw.timed_out and tool and gate_role not in self._hung:
            self._hung[gate_role] = (tool, command_id)
        if (
            len(raw.stdout) + len(raw.stderr) > REDACT_CHUNK
        ):  # redacting MBs takes seconds: keep the loop free
            stdout, stderr = await asyncio.to_thread(text_of, raw)
        else:
            stdout, stderr = text_of(raw)
        return raw, stdout, stderr

    def _wrap_needs_sudo(self, role: Role) -> bool:
        """pct/lxc-attach/docker need root on the host: with --sudo and a non-root host login, use sudo -n."""
        binding = self.bindings[role]
        if binding.via is None or not self.options.sudo:
            return False
        host_task = self._connect_tasks.get(binding.via)
        host_info = (
            host_task.result()
            if host_task is not None and host_task.done() and not host_task.cancelled()
            else None
        )
        return not (host_info and host_info.is_root)

    async def aclose(self) -> None:
        """Close every connection (idempotent)."""
        if self._closed:
            return
        self._closed = True
        # cancel what still runs first: each command then kills its remote process tree (TERM, KILL) before the
        # connection goes; closing the connection alone would leave them running (a TUI quit mid-run)
        running = [r for r in self._runs if not r.done()]
        for r in running:
            r.cancel()
        if running:
            await asyncio.wait(running, timeout=3)
        for t in self._connect_tasks.values():
            if not t.done():
                t.cancel()
        for b in self.bindings.values():
            if b.via is None:
                try:
                    await b.transport.aclose()
                except Exception:
                    pass


def command_timeout(command: Command, options: AuditOptions) -> float:
    """A command's own timeout, capped by --timeout (load-generating --active commands keep theirs)."""
    own = command.timeout_s or options.timeout_s
    return own if command.active else min(own, options.timeout_s)
