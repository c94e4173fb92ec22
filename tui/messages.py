"""Textual messages between the audit worker, widgets and screens (past tense, no logic)."""

from __future__ import annotations

from pathlib import Path

from gpuaudit.probes.core.record import Record
from textual.message import Message


class AuditEventReceived(Message):
    """One runner event, posted by the audit worker to the dashboard, which folds it.

    No `can_replace`: the dashboard tracks in-flight commands from CommandStarted/CommandFinished
    pairs, so dropping any event would leave a stale "running" line (events are a few hundred per run).
    """

    bubble = False  # for the dashboard only

    def __init__(self, event: Record) -> None:
        super().__init__()
        self.event = event


class AuditCompleted(Message):
    """The worker's event stream ended (normally or not)."""

    bubble = False

    def __init__(self, error: str | None = None) -> None:
        super().__init__()
        self.error = error


class SnapshotSaved(Message):
    """A snapshot of the current run was written."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
