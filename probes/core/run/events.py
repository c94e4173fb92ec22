"""Runner events: the one stream both the TUI and --json consume, and the fold into an AuditRun."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Literal

from gpuaudit.probes.core.models import (
    AuditRun,
    CommandRecord,
    ProbeResult,
    Role,
    Target,
    TargetState,
)
from gpuaudit.probes.core.record import Record


class TargetConnecting(Record):
    kind: Literal["target_connecting"] = "target_connecting"
    role: Role


class TargetConnected(Record):
    kind: Literal["target_connected"] = "target_connected"
    role: Role
    is_root: bool | None = None
    hostname: str | None = None


class TargetFailed(Record):
    kind: Literal["target_failed"] = "target_failed"
    role: Role
    reason: str


class TargetExecuted(Record):
    """A line run on the target outside the probes' records (the preflight, a session's start line)."""

    kind: Literal["target_executed"] = "target_executed"
    role: Role
    line: str


class ProbeStarted(Record):
    kind: Literal["probe_started"] = "probe_started"
    probe_id: str
    at: datetime


class CommandStarted(Record):
    kind: Literal["command_started"] = "command_started"
    probe_id: str
    role: Role
    command_id: str


class CommandFinished(Record):
    kind: Literal["command_finished"] = "command_finished"
    record: CommandRecord


class ProbeFinished(Record):
    kind: Literal["probe_finished"] = "probe_finished"
    result: ProbeResult


class AuditFinished(Record):
    kind: Literal["audit_finished"] = "audit_finished"
    at: datetime


AuditEvent = (
    TargetConnecting
    | TargetConnected
    | TargetFailed
    | TargetExecuted
    | ProbeStarted
    | CommandStarted
    | CommandFinished
    | ProbeFinished
    | AuditFinished
)


def initial_run(targets: Iterable[Target], probes: Iterable[tuple[str, str]]) -> AuditRun:
    """An AuditRun with every probe pending, before any event."""
    targets = list(targets)
    return AuditRun(
        targets=targets,
        target_states={t.role: TargetState(role=t.role) for t in targets},
        probes=[ProbeResult(probe_id=pid, title=title) for pid, title in probes],
    )


_FOLDED = (
    TargetConnecting,
    TargetConnected,
    TargetFailed,
    TargetExecuted,
    ProbeStarted,
    CommandFinished,
    ProbeFinished,
    AuditFinished,
)


def apply_event(run: AuditRun, event: Record) -> AuditRun:
    """Fold one event into the run (returns a new AuditRun; the input is not changed).

    An event that changes nothing here (CommandStarted: only the dashboard's in-flight list reads it) returns
    the input itself: the copy is made only for the events folded below.
    """
    if not isinstance(event, _FOLDED):
        return run
    run = run.model_copy(deep=False)
    if isinstance(event, (TargetConnecting, TargetConnected, TargetFailed)):
        states = dict(run.target_states)
        old = states.get(event.role, TargetState(role=event.role))
        if isinstance(event, TargetConnecting):
            new = old.model_copy(update={"state": "connecting"})
        elif isinstance(event, TargetConnected):
            new = old.model_copy(
                update={"state": "connected", "is_root": event.is_root, "hostname": event.hostname}
            )
        else:
            new = old.model_copy(update={"state": "failed", "reason": event.reason})
        states[event.role] = new
        run.target_states = states
    elif isinstance(event, TargetExecuted):
        states = dict(run.target_states)
        old = states.get(event.role, TargetState(role=event.role))
        states[event.role] = old.model_copy(update={"executed": [*old.executed, event.line]})
        run.target_states = states
    elif isinstance(event, ProbeStarted):
        run.probes = [
            p.model_copy(update={"status": "running", "started_at": event.at, "records": []})
            if p.probe_id == event.probe_id
            else p
            for p in run.probes
        ]
        if run.started_at is None:
            run.started_at = event.at
    elif isinstance(event, CommandFinished):
        rec = event.record
        run.probes = [
            p.model_copy(update={"records": [*p.records, rec]}) if p.probe_id == rec.probe_id else p
            for p in run.probes
        ]
    elif isinstance(event, ProbeFinished):
        run.probes = [
            event.result if p.probe_id == event.result.probe_id else p for p in run.probes
        ]
    elif isinstance(event, AuditFinished):
        run.finished_at = event.at
    return run


def fold_events(run: AuditRun, events: Iterable[Record]) -> AuditRun:
    """Apply a sequence of events; the same final state the TUI and --json see."""
    for event in events:
        run = apply_event(run, event)
    return run
