"""Transports that answer from recordings: a saved snapshot's records, or a directory of outputs."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpuaudit.probes.core.collect.transport import PREFLIGHT_ID, Gate, RawResult, TransportBase
from gpuaudit.probes.core.models import AuditRun, CommandRecord

NOT_RECORDED_PREFIX = "not recorded"
"""Every answer for a command a recording lacks starts with this (`is_not_recorded`)."""
NOT_RECORDED = "not recorded in this snapshot (the probe's command is newer than the recording)"
NOT_RECORDED_DIR = "not recorded in this recording (the source is newer than the recording)"
NOT_RECORDED_LIST = "NOT-RECORDED.txt"
"""In a DirectoryTransport folder: the command ids the recording predates, one a line (`# ...` comments).
A missing `<id>.out` of an id NOT listed still reads as "command not found" (exit 127, a tool not installed)."""


def is_not_recorded(rec: CommandRecord) -> bool:
    """A record that says its recording lacks the command: nothing ran, no exit status, no output.

    `diff` treats it as the absence it stands for (a replay of an older recording materialises one per
    command that is newer than the recording; the recording itself has none)."""
    return (
        rec.exit_status is None
        and not rec.timed_out
        and not rec.stdout
        and (rec.error or "").startswith(NOT_RECORDED_PREFIX)
    )


def keep_unasked(run: AuditRun, recorded: Iterable[CommandRecord]) -> AuditRun:
    """`run` (a replay of `recorded`) with every recorded record no probe asked for today put back, as recorded.

    A replay asks each probe's commands of today; a recording may hold commands that no probe asks for any
    more (a source that was dropped or replaced). They stay in the replayed snapshot, unchanged and under the
    probe that recorded them, so that a replay never loses what the machine answered. Only probes that ran in
    this replay receive records (a replay of some probes does not bring the others' records back)."""
    have = {(r.target, r.command_id) for p in run.probes for r in p.records}
    extra: dict[str, list[CommandRecord]] = {}
    for rec in recorded:
        key = (rec.target, rec.command_id)
        if key not in have:
            have.add(key)
            extra.setdefault(rec.probe_id, []).append(rec)
    if not extra:
        return run
    probes = [
        p.model_copy(update={"records": [*p.records, *extra[p.probe_id]]})
        if p.probe_id in extra
        else p
        for p in run.probes
    ]
    return run.model_copy(update={"probes": probes})


class ReplayTransport(TransportBase):
    """Answers each command id with what a snapshot recorded for it; never contacts a machine."""

    def __init__(
        self,
        records: Iterable[CommandRecord],
        label: str = "replay",
        delay_s: float = 0.0,
        hostname: str = "replay",
    ) -> None:
        self.label = label
        self.hostname = hostname
        """What the preflight reports: the recorded target's hostname keeps replayed headers and names right."""
        self.delay_s = delay_s
        self._by_id: dict[str, CommandRecord] = {}
        for rec in records:
            self._by_id.setdefault(rec.command_id, rec)

    async def connect(self) -> None:
        return None

    def has_recorded(self, command_id: str) -> bool:
        return command_id in self._by_id

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
        if command_id == PREFLIGHT_ID:
            return RawResult(
                exit_status=0, stdout=b"0\n" + self.hostname.encode(errors="replace") + b"\n"
            )
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        rec = self._by_id.get(command_id)
        if (
            rec is None
        ):  # nothing ran: no executed line (the record says so, and a replay of it again too)
            return RawResult(exit_status=None, error=NOT_RECORDED, executed="")
        return RawResult(
            exit_status=rec.exit_status,
            stdout=rec.stdout.encode("utf-8", errors="surrogateescape"),
            stderr=rec.stderr.encode("utf-8", errors="surrogateescape"),
            started_at=rec.started_at or datetime.now(UTC),
            duration_s=rec.duration_s,
            timed_out=rec.timed_out,
            truncated=rec.truncated,
            error=rec.error,
            executed=rec.executed,  # provenance as recorded (a container's `pct exec 101 --`; '' kept)
        )

    async def aclose(self) -> None:
        return None


def records_by_role(records: Iterable[CommandRecord]) -> Mapping[str, list[CommandRecord]]:
    """Group records by target role."""
    out: dict[str, list[CommandRecord]] = {}
    for rec in records:
        out.setdefault(rec.target, []).append(rec)
    return out


class DirectoryTransport(TransportBase):
    """Answers from files `<dir>/<command_id>.out` (+ `.err`, `.exit`); a missing file means "not installed".

    Used for test fixtures and to build the case-study example snapshots from raw outputs.
    `.exit` holds an exit status, or `timeout` for a command that timed out.
    """

    def __init__(self, directory: Path, label: str = "directory") -> None:
        self.directory = Path(directory)
        self.label = label
        listed = self.directory / NOT_RECORDED_LIST
        self.not_recorded = frozenset(
            word
            for line in (
                listed.read_text(errors="replace").splitlines() if listed.is_file() else ()
            )
            for word in line.split("#", 1)[0].split()[:1]
        )
        """Command ids the recording predates: answered "not recorded", never "command not found"."""

    async def connect(self) -> None:
        return None

    def has_recorded(self, command_id: str) -> bool:
        return (self.directory / f"{command_id}.out").exists()

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
        if command_id == PREFLIGHT_ID:
            return RawResult(exit_status=0, stdout=b"0\n" + self.label.encode() + b"\n")
        if command_id in self.not_recorded:
            return RawResult(exit_status=None, error=NOT_RECORDED_DIR, executed="")
        out = self.directory / f"{command_id}.out"
        err = self.directory / f"{command_id}.err"
        code = self.directory / f"{command_id}.exit"
        if not out.exists() and not err.exists():
            return RawResult(exit_status=127, stderr=f"sh: 1: {command_id}: not found\n".encode())
        status_text = code.read_text(errors="replace").strip() if code.exists() else "0"
        timed_out = status_text == "timeout"
        if not timed_out and not status_text.lstrip("-").isdigit():
            return RawResult(
                exit_status=None, error=f"{code.name}: not an exit status: {status_text[:40]!r}"
            )
        stdout = out.read_bytes() if out.exists() else b""
        return RawResult(
            exit_status=None if timed_out else int(status_text),
            stdout=stdout[:max_bytes],
            stderr=err.read_bytes() if err.exists() else b"",
            timed_out=timed_out,
            truncated=len(stdout) > max_bytes,
            duration_s=0.01,
        )

    async def aclose(self) -> None:
        return None
