"""Transports that answer from recordings: a saved snapshot's records, or a directory of outputs."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpuaudit.probes.core.collect.transport import PREFLIGHT_ID, Gate, RawResult, TransportBase
from gpuaudit.probes.core.models import CommandRecord

NOT_RECORDED = "not recorded in this snapshot (the probe's command is newer than the recording)"


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
        if rec is None:
            return RawResult(exit_status=None, error=NOT_RECORDED)
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
        out = self.directory / f"{command_id}.out"
        err = self.directory / f"{command_id}.err"
        code = self.directory / f"{command_id}.exit"
        if not out.exists() and not err.exists():
            return RawResult(exit_status=127, stderr=f"sh: 1: {command_id}: not found\n".encode())
        status_text = code.read_text().strip() if code.exists() else "0"
        timed_out = status_text == "timeout"
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
