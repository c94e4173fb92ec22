"""Declarations: a probe is data (its commands) plus pure functions (extract, judge, summarize)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import FrozenInstanceError, dataclass, replace
from typing import Any

from gpuaudit.probes.core.models import (
    CommandRecord,
    Role,
)
from gpuaudit.probes.core.record import Record

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


def _no_summary(facts: FactsByTarget) -> str:
    return ""


class Probe:
    """One of the ten probes: id, title, commands, and the pure functions behind it.

    The judging half (extract, summarize, checks, volatile_facts) is given either directly or as `judged_by`,
    the module whose `PROBE` holds it, imported on first use: the catalogue's probes name their package
    (probes/core/declared.py), so an audit launches its commands before any parser, facts model or check loads and
    imports them while the targets run the slowest commands (issue 30). Immutable, like the dataclass it was.
    """

    __slots__ = ("id", "title", "commands", "_judge", "_judged_by")

    id: str
    title: str
    commands: tuple[Command, ...]
    _judge: _Judge | None
    _judged_by: str | None

    def __init__(
        self,
        id: str,
        title: str,
        commands: tuple[Command, ...],
        extract: Callable[[Outputs, Role], Record] | None = None,
        summarize: Callable[[FactsByTarget], str] = _no_summary,
        checks: tuple[Any, ...] = (),
        volatile_facts: frozenset[str] = frozenset(),
        *,
        judged_by: str | None = None,
    ) -> None:
        if (extract is None) == (judged_by is None):
            raise TypeError("Probe needs extract or judged_by (one of them)")
        for name, value in (("id", id), ("title", title), ("commands", tuple(commands))):
            object.__setattr__(self, name, value)
        judge = (
            None
            if extract is None
            else _Judge(extract, summarize, tuple(checks), frozenset(volatile_facts))
        )
        object.__setattr__(self, "_judge", judge)
        object.__setattr__(self, "_judged_by", judged_by)

    def _judging(self) -> _Judge:
        judge = self._judge
        if judge is None:
            from importlib import import_module

            source: Probe = import_module(str(self._judged_by)).PROBE
            judge = _Judge(source.extract, source.summarize, source.checks, source.volatile_facts)
            object.__setattr__(self, "_judge", judge)
        return judge

    @property
    def extract(self) -> Callable[[Outputs, Role], Record]:
        """Raw outputs of one target -> typed facts. Pure; must not raise on odd output."""
        return self._judging().extract

    @property
    def summarize(self) -> Callable[[FactsByTarget], str]:
        """Facts -> the pane's one-line key facts."""
        return self._judging().summarize

    @property
    def checks(self) -> tuple[Any, ...]:
        """The probe's rows of the catalogue (probes.core.judge.checks.Check), judged by probes.core.judge.checks.judge_checks."""
        return self._judging().checks

    @property
    def volatile_facts(self) -> frozenset[str]:
        """Fact names that change on an unchanged machine (counters, pids, uptime): `diff` ignores them by default."""
        return self._judging().volatile_facts

    def load(self) -> Probe:
        """The probe, its judging half imported now (Audit._load_judging: once the first output is in)."""
        self._judging()
        return self

    def replace(self, **changes: Any) -> Probe:
        """A copy with some fields changed (dataclasses.replace's role); a judging half not loaded stays unloaded
        unless a change names one of its fields."""
        fields: dict[str, Any] = {"id": self.id, "title": self.title, "commands": self.commands}
        judged = {"extract", "summarize", "checks", "volatile_facts"}
        if self._judge is None and not judged & changes.keys():
            return Probe(**(fields | changes), judged_by=self._judged_by)
        j = self._judging()
        fields |= {
            "extract": j.extract,
            "summarize": j.summarize,
            "checks": j.checks,
            "volatile_facts": j.volatile_facts,
        }
        return Probe(**(fields | changes))

    def commands_for(self, role: Role) -> tuple[Command, ...]:
        """The commands this probe runs on a target of the given role."""
        return tuple(c for c in self.commands if role in c.on)

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Probe):
            return NotImplemented
        return (self.id, self.title, self.commands, self._judging()) == (
            other.id,
            other.title,
            other.commands,
            other._judging(),
        )

    def __hash__(self) -> int:
        return hash((self.id, self.title, self.commands))

    def __repr__(self) -> str:
        state = "loaded" if self._judge is not None else f"judged by {self._judged_by}, not loaded"
        return (
            f"Probe(id={self.id!r}, title={self.title!r}, {len(self.commands)} commands, {state})"
        )


@dataclass(frozen=True, slots=True)
class _Judge:
    """A probe's judging half, as its package declares it."""

    extract: Callable[[Outputs, Role], Record]
    summarize: Callable[[FactsByTarget], str]
    checks: tuple[Any, ...]
    volatile_facts: frozenset[str]


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
