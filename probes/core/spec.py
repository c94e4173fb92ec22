"""Declarations: a probe is data (its commands) plus pure functions (extract, judge, summarize)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from gpuaudit.probes.core.models import (
    CommandRecord,
    Role,
)
from pydantic import BaseModel

Outputs = Mapping[str, CommandRecord]
"""command_id -> record, for one target. A command that was not run is absent."""

FactsByTarget = Mapping[Role, Any]
"""role -> that target's facts model (only the targets the probe ran on)."""


@dataclass(frozen=True, slots=True)
class Command:
    """One read-only shell command a probe runs. Declared once; a test lints it."""

    id: str
    shell: str
    on: frozenset[Role] = frozenset({"host"})
    timeout_s: float | None = None
    """Per-command override of the audit's --timeout."""
    needs_root: bool = False
    """Without root (and without a working --sudo) it is skipped: facts say "unknown (needs root)"."""
    description: str = ""
    active: bool = False
    """Generates load (nccl-tests and the like): runs only with --active, never by default."""
    ok_exits: frozenset[int] = frozenset({0})
    """Exit statuses that are normal answers (grep: 1 = no match; systemctl status: 3 inactive, 4 no unit)."""
    absent_text: tuple[str, ...] = ()
    """Output (stderr or stdout, any case) of a failed run that means "what it reads does not exist", itself
    an answer, like `ok_exits`: "No such file" for a module parameter of a module that is not loaded."""
    absent_without_tool: bool = False
    """A missing tool is the answer (a daemon that is not installed overrides nothing: tuned-adm)."""

    def with_roles(self, roles: frozenset[Role]) -> Command:
        """The same source, run on fewer roles (a probe that needs it only on the host, say)."""
        return replace(self, on=roles)


@dataclass(frozen=True, slots=True)
class Probe:
    """One of the ten probes: id, title, commands, and the pure functions behind it."""

    id: str
    title: str
    commands: tuple[Command, ...]
    extract: Callable[[Outputs, Role], BaseModel]
    """Raw outputs of one target -> typed facts. Pure; must not raise on odd output."""
    summarize: Callable[[FactsByTarget], str] = field(default=lambda facts: "")
    """Facts -> the pane's one-line key facts."""
    checks: tuple[Any, ...] = ()
    """The probe's rows of the catalogue (probes.core.judge.checks.Check), judged by probes.core.judge.checks.judge_checks."""
    volatile_facts: frozenset[str] = frozenset()
    """Fact names that change on an unchanged machine (counters, pids, uptime): `diff` ignores them by default."""

    def commands_for(self, role: Role) -> tuple[Command, ...]:
        """The commands this probe runs on a target of the given role."""
        return tuple(c for c in self.commands if role in c.on)


def record_absent(record: CommandRecord | None, source: Command | None) -> bool:
    """Whether a record is an absence its source declares an answer (`absent_text`, `absent_without_tool`);
    never for a record that timed out, was cut short, refused (permission) or did not run."""
    if record is None or source is None or record.error or record.timed_out or record.truncated:
        return False
    if record.exit_status in (None, *source.ok_exits):
        return False
    if source.absent_without_tool and record.missing_tool:
        return True
    text = (record.stderr + "\n" + record.stdout[:400]).lower()
    return any(t.lower() in text for t in source.absent_text)


def record_problem(record: CommandRecord | None) -> str | None:
    """Why a record cannot be trusted as a normal answer, or None when it can.

    Used by extract functions to turn failures into "unknown (...)" facts instead of guesses.
    """
    if record is None:
        return "not collected"
    if record.error:
        return record.error
    if record.timed_out:
        return "timed out"
    if record.truncated:  # a cut-off list or log would read as complete
        return f"output truncated at the --max-output cap ({len(record.stdout)} bytes kept)"
    if record.exit_status is None:
        return "no exit status (the command was killed or its channel closed)"
    if record.missing_tool:
        return "tool not installed"
    low = (record.stderr + record.stdout[:400]).lower()
    if record.exit_status not in (0, None) and (
        "permission denied" in low or "operation not permitted" in low
    ):
        return "needs root (permission denied)"
    if record.exit_status not in (0, None):
        first = (record.stderr.strip() or record.stdout.strip()).splitlines()[:1]
        return f"exit {record.exit_status}" + (f": {first[0][:160]}" if first else "")
    return None


def usable_stdout(outputs: Outputs, command_id: str, problems: dict[str, str]) -> str | None:
    """stdout of a command when it is usable; otherwise None, noting why in `problems` (absent = not run)."""
    rec = outputs.get(command_id)
    if rec is None:
        return None
    problem = record_problem(rec)
    if problem:
        problems[command_id] = problem
        return None
    return rec.stdout


def partial_grep_ok(outputs: Outputs, command_id: str) -> bool:
    """`grep -H` over several files exits 2 when one is missing; the other files' lines are still good."""
    rec = outputs.get(command_id)
    return (
        rec is not None
        and not rec.error
        and not rec.timed_out
        and rec.exit_status == 2
        and bool(rec.stdout.strip())
    )


def problem_text(problems: Mapping[str, str], *command_ids: str) -> str:
    """Why the given commands' data is missing ("cid: reason; ..."), for an `unknown` finding's observed."""
    return "; ".join(f"{c}: {problems[c]}" for c in command_ids if c in problems) or "not collected"


def usable_record(
    outputs: Outputs, command_id: str, problems: dict[str, str]
) -> CommandRecord | None:
    """The record of a command when usable; otherwise None, noting why in `problems` (absent = not run).

    A command already listed in `problems` (an error banner found earlier, say) counts as unusable.
    """
    rec = outputs.get(command_id)
    if rec is None or command_id in problems:
        return None
    if problem := record_problem(rec):
        problems[command_id] = problem
        return None
    return rec
