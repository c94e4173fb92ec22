"""The partial-failure matrix (issue 23): every recorded command failed one at a time (timed out), every probe
re-judged from the records, each finding compared with the unfailed judgement.

A finding may change because a command failed only when its check declares that command (required, any-of,
optional, or the framework's GPU-presence sources for a `needs_gpu` check): a verdict reads only what its check
declares. A change *to unknown* is always allowed (the framework's gate, or a verdict that says it cannot tell).

Recordings: the case study (before and after, host + container; built from real corpus captures), the real
GPU-less host of tests/fixtures/engine/no-gpu-host, and a live audit of the machine running the tests (a real
recording of whatever it is: the CI runner, a GPU-less VM, a GPU server).

Run as a script for the figures: `python tests/core/test_partial_failure_matrix.py`.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from gpuaudit.probes.catalogue import REGISTRY
from gpuaudit.probes.core.collect.transport import LocalTransport
from gpuaudit.probes.core.judge.checks import Check, declared_sources
from gpuaudit.probes.core.judge.probe import judge_probe
from gpuaudit.probes.core.models import CommandRecord, Finding, Role, Severity, Target
from gpuaudit.probes.core.run.runner import Audit, AuditOptions, TargetBinding
from gpuaudit.probes.core.run.session import directory_bindings, run_to_end

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "snapshots" / "examples" / "case-study"
NO_GPU_HOST = ROOT / "tests" / "fixtures" / "engine" / "no-gpu-host"

Records = dict[str, dict[Role, list[CommandRecord]]]
"""probe id -> role -> that probe's records."""

CHECKS: dict[str, Check] = {c.id: c for p in REGISTRY for c in p.checks}
PROBES = {p.id: p for p in REGISTRY}


@dataclass(frozen=True)
class Change:
    recording: str
    role: Role
    command_id: str
    finding: str
    targets: tuple[str, ...]
    before: str
    after: str
    observed_before: str
    observed_after: str

    @property
    def severity_changed(self) -> bool:
        return self.before != self.after

    @property
    def declared(self) -> bool:
        check = CHECKS.get(self.finding)
        return check is not None and (self.role, self.command_id) in declared_sources(
            check, self.targets
        )

    def line(self) -> str:
        what = (
            f"{self.before} -> {self.after}"
            if self.severity_changed
            else f"observed {self.observed_before[:60]!r} -> {self.observed_after[:60]!r}"
        )
        return f"{self.recording}: {self.role}:{self.command_id} fails -> {self.finding} {what}"


def records_of_run(run) -> Records:
    out: Records = {}
    for p in run.probes:
        for r in p.records:
            out.setdefault(p.probe_id, {}).setdefault(r.target, []).append(r)
    return out


async def _audit(bindings: list[TargetBinding]) -> Records:
    audit = Audit(bindings, list(REGISTRY), AuditOptions())
    return records_of_run(await run_to_end(audit))


def records_of_directory(root: Path) -> Records:
    return asyncio.run(_audit(directory_bindings(root)))


def records_of_this_machine() -> Records:
    target = Target(role="host", spec="local", kind="local", label="host (local)")
    return asyncio.run(_audit([TargetBinding(target, LocalTransport())]))


def timed_out(r: CommandRecord) -> CommandRecord:
    return r.model_copy(update={"timed_out": True, "exit_status": None, "stdout": "", "stderr": ""})


def judge_all(records: Records) -> dict[tuple[str, tuple[str, ...]], Finding]:
    out: dict[tuple[str, tuple[str, ...]], Finding] = {}
    for probe_id, by_role in records.items():
        result = judge_probe(PROBES[probe_id], by_role)
        for f in result.findings:
            out[(f.id, tuple(f.targets))] = f
    return out


def failing_one(records: Records, role: Role, command_id: str) -> Records:
    return {
        pid: {
            r: [timed_out(x) if (r, x.command_id) == (role, command_id) else x for x in recs]
            for r, recs in by_role.items()
        }
        for pid, by_role in records.items()
    }


def matrix(name: str, records: Records) -> list[Change]:
    """Every change of a finding (severity or observed text) caused by failing one command."""
    base = judge_all(records)
    commands = sorted(
        {
            (r, x.command_id)
            for by_role in records.values()
            for r, recs in by_role.items()
            for x in recs
        }
    )
    changes: list[Change] = []
    for role, cid in commands:
        if all(
            x.timed_out
            for by_role in records.values()
            for x in by_role.get(role, [])
            if x.command_id == cid
        ):
            continue  # already failed in the recording
        now = judge_all(failing_one(records, role, cid))
        for key, old in base.items():
            new = now.get(key)
            if new is None or (new.severity, new.observed) == (old.severity, old.observed):
                continue
            changes.append(
                Change(
                    name,
                    role,
                    cid,
                    old.id,
                    key[1],
                    old.severity.value,
                    new.severity.value,
                    old.observed,
                    new.observed,
                )
            )
    return changes


def undeclared_verdicts(changes: Iterable[Change]) -> list[Change]:
    """Severity changes to a real verdict (not unknown) caused by a command the check does not declare."""
    return [
        c
        for c in changes
        if c.severity_changed and c.after != Severity.UNKNOWN.value and not c.declared
    ]


def undeclared_observed(changes: Iterable[Change]) -> list[Change]:
    return [c for c in changes if not c.severity_changed and not c.declared]


def _once(load):  # noqa: ANN001, ANN202 - each recording is audited / read once per test session
    return functools.lru_cache(maxsize=1)(load)


RECORDINGS: Mapping[str, object] = {
    "case-study-before": _once(lambda: records_of_directory(CASE / "before")),
    "case-study-after": _once(lambda: records_of_directory(CASE / "after")),
    "no-gpu-host": _once(lambda: records_of_directory(NO_GPU_HOST)),
    "this-machine": _once(records_of_this_machine),
}


@pytest.mark.parametrize("name", list(RECORDINGS))
def test_no_verdict_changes_because_of_an_undeclared_command(name: str) -> None:
    records = RECORDINGS[name]()  # type: ignore[operator]
    assert records, name
    bad = undeclared_verdicts(matrix(name, records))
    assert not bad, "\n".join(c.line() for c in bad)


def test_the_matrix_can_fail() -> None:
    """A check that forgets a source it reads shows up: power.cpu_scaling_driver without lscpu_json."""
    from dataclasses import replace

    records = records_of_directory(CASE / "before")
    check = CHECKS["power.cpu_scaling_driver"]
    stripped = replace(check, sources=(), any_of=(), optional=())
    CHECKS[check.id] = stripped
    try:
        changes = matrix("case-study-before", records)
        assert any(c.finding == check.id and c.severity_changed and not c.declared for c in changes)
    finally:
        CHECKS[check.id] = check


if __name__ == "__main__":
    total_v = total_o = 0
    for name, load in RECORDINGS.items():
        ch = matrix(name, load())  # type: ignore[operator]
        v, o = undeclared_verdicts(ch), undeclared_observed(ch)
        total_v += len(v)
        total_o += len(o)
        print(
            f"## {name}: {len(ch)} changes, {len(v)} undeclared verdicts, {len(o)} undeclared texts"
        )
        for c in v:
            print("  V", c.line())
        for c in o:
            print("  O", c.line())
    print(f"TOTAL undeclared verdict changes {total_v}, undeclared observed-text changes {total_o}")
