"""Issue 23: a verdict reads only what its check declares, checked by running it.

Every check's `applies` and `verdict` run over a read-tracking view of the facts (each probe's facts per role) and
of the records: every fact field touched maps to its sources through the probe's `FIELD_SOURCES` table
(probes/<id>/extract.py), and each of those sources (and every record read directly) must be declared by the
check for that role (required, any-of, optional, fails-as-answer; role-qualified for another target's data).

Recordings: the case study (before, after), the real no-gpu-host capture and a live audit of the test machine
(the same sets as the partial-failure matrix), so checks run down their usual branches.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from gpuaudit.probes.catalogue import REGISTRY
from gpuaudit.probes.core.judge.checks import Check, Ctx, _gate, declared_sources
from gpuaudit.probes.core.models import CommandRecord, Role
from test_partial_failure_matrix import RECORDINGS, Records

PROBES = {p.id: p for p in REGISTRY}
TABLES: dict[str, dict[str, tuple[str, ...]]] = {
    pid: importlib.import_module(f"gpuaudit.probes.{pid}.extract").FIELD_SOURCES for pid in PROBES
}

Read = tuple[str, Role, str]
"""("fact", role, field) or ("record", role, command id)."""


class TrackedFacts:
    """A facts model that notes each attribute read (the model itself is untouched)."""

    def __init__(self, facts: Any, role: Role, log: set[Read]) -> None:
        object.__setattr__(self, "_facts", facts)
        object.__setattr__(self, "_role", role)
        object.__setattr__(self, "_log", log)

    def __getattr__(self, name: str) -> Any:
        # the framework's own reading (source_problem, behind ctx.problem/why/usable) is not the verdict's
        if name != "problems" or sys._getframe(1).f_code.co_name != "source_problem":
            self._log.add(("fact", self._role, name))
        return getattr(self._facts, name)


class TrackedRecords(dict[str, CommandRecord]):
    """A target's records that note each command id looked up."""

    def __init__(self, records: Mapping[str, CommandRecord], role: Role, log: set[Read]) -> None:
        super().__init__(records)
        self.role, self.log = role, log

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        self.log.add(("record", self.role, key))
        return super().get(key, default)

    def __getitem__(self, key: str) -> CommandRecord:
        self.log.add(("record", self.role, key))
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self.log.add(("record", self.role, str(key)))
        return super().__contains__(key)

    def values(
        self,
    ) -> Any:  # reading every record (the container probe's wrapper kind): not a source read
        return super().values()


def groups(check: Check, ran: list[Role]) -> Iterator[tuple[Role, ...]]:
    """The target sets judge_checks gives a check (same rules)."""
    roles = [r for r in ran if r in check.roles]
    if check.first_of:
        roles = [r for r in check.first_of if r in roles][:1]
    if not roles:
        return
    for g in [tuple(roles)] if check.cross else [(r,) for r in roles]:
        if not (check.cross and len(g) < len(check.roles)):
            yield g


def reads(records: Records) -> Iterator[tuple[Check, tuple[Role, ...], set[Read]]]:
    """Each check judged over the recording (when the framework lets its verdict run) and what it read."""
    for probe_id, by_role in records.items():
        probe = PROBES[probe_id]
        outputs = {role: {r.command_id: r for r in recs} for role, recs in by_role.items()}
        facts = {role: probe.extract(outputs[role], role) for role in outputs}
        ran = [r for r in ("host", "container") if r in outputs]
        for check in probe.checks:
            for group in groups(check, ran):
                gated, _ = _gate(check, group, facts, outputs)
                if gated is not None:
                    continue
                log: set[Read] = set()
                ctx = Ctx(
                    role=None if check.cross else group[0],
                    facts={r: TrackedFacts(f, r, log) for r, f in facts.items()},
                    outputs={r: TrackedRecords(o, r, log) for r, o in outputs.items()},
                )
                if check.applies is None or not check.applies(ctx):
                    check.verdict(ctx)
                yield check, group, log


def undeclared(check: Check, group: tuple[Role, ...], log: set[Read]) -> set[str]:
    """The reads whose sources the check does not declare: "role:field <- source" / "role:record source"."""
    declared = declared_sources(check, group)
    table = TABLES[check.probe]
    out: set[str] = set()
    for kind, role, name in log:
        if kind == "record":
            if (role, name) not in declared:
                out.add(f"{role}:record {name}")
        elif name != "problems" and name in table:
            out.update(f"{role}:{name} <- {s}" for s in table[name] if (role, s) not in declared)
    return out


def problem_readers(log: set[Read]) -> bool:
    return any(kind == "fact" and name == "problems" for kind, _, name in log)


@pytest.mark.parametrize("probe_id", sorted(PROBES))
def test_every_fact_field_has_its_sources(probe_id: str) -> None:
    model = PROBES[probe_id].extract({}, "host")
    fields = set(type(model).model_fields) - {"problems"}
    assert set(TABLES[probe_id]) == fields


@pytest.mark.parametrize("name", list(RECORDINGS))
def test_no_verdict_reads_facts_problems(name: str) -> None:
    """Why a source is unusable is the framework's answer (ctx.problem / ctx.why), never a verdict's reading."""
    records = RECORDINGS[name]()  # type: ignore[operator]
    assert sorted({check.id for check, _, log in reads(records) if problem_readers(log)}) == []


@pytest.mark.parametrize("name", list(RECORDINGS))
def test_verdicts_read_only_declared_sources(name: str) -> None:
    records = RECORDINGS[name]()  # type: ignore[operator]
    bad = {
        check.id: sorted(missing)
        for check, group, log in reads(records)
        if (missing := undeclared(check, group, log))
    }
    assert not bad, "\n".join(f"{k}: {v}" for k, v in sorted(bad.items()))


def test_the_tracker_sees_an_undeclared_read() -> None:
    """power.cpu_scaling_driver reads the CPU vendor (lscpu_json / cpuinfo_id): without its declarations it fails."""
    from dataclasses import replace

    records = RECORDINGS["case-study-before"]()  # type: ignore[operator]
    power = {"power": records["power"]}
    for check, group, log in reads(power):
        if check.id == "power.cpu_scaling_driver":
            bare = replace(check, optional=())
            assert any("lscpu_json" in m for m in undeclared(bare, group, log))
            break
    else:
        pytest.fail("power.cpu_scaling_driver not judged")


if __name__ == "__main__":
    for name, load in RECORDINGS.items():
        seen: dict[str, set[str]] = {}
        prob: set[str] = set()
        for check, group, log in reads(load()):  # type: ignore[operator]
            seen.setdefault(check.id, set()).update(undeclared(check, group, log))
            if problem_readers(log):
                prob.add(check.id)
        bad = {k: v for k, v in seen.items() if v}
        print(
            f"## {name}: {len(bad)} checks read undeclared sources; {len(prob)} read facts.problems"
        )
        for k, v in sorted(bad.items()):
            print(" ", k, sorted(v))
        print("  problems:", sorted(prob))
