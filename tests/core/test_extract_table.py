"""Issue 23: the framework's extract loop (`read_table`, probes/core/judge/probe.py) runs a probe's table of
source -> parser -> fields: usability is the framework's (ok_exits, missing tools, timeouts), a parser's error is
a problem of that source and never crashes the probe, and every field it fills is stamped with its source, which
the probe's FIELD_SOURCES must name (checked on the case-study recordings)."""

from __future__ import annotations

import asyncio
import functools
import importlib
from pathlib import Path

import pytest
from gpuaudit.probes.catalogue import REGISTRY
from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.judge.probe import Reads, extract_facts, judge_probe, read_table
from gpuaudit.probes.core.models import AuditRun, CommandRecord
from gpuaudit.probes.core.run.runner import Audit, AuditOptions
from gpuaudit.probes.core.run.session import directory_bindings, run_to_end
from gpuaudit.probes.core.spec import Outputs, Probe
from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "snapshots" / "examples" / "case-study"
TABLED = [
    p.id
    for p in REGISTRY
    if hasattr(importlib.import_module(f"gpuaudit.probes.{p.id}.extract"), "TABLE")
]


@functools.lru_cache(maxsize=2)
def audit(phase: str) -> AuditRun:
    async def go() -> AuditRun:
        return await run_to_end(
            Audit(directory_bindings(CASE / phase), list(REGISTRY), AuditOptions())
        )

    return asyncio.run(go())


def rec(cid: str, stdout: str = "", **kw: object) -> CommandRecord:
    base: dict[str, object] = dict(
        target="host", probe_id="t", command_id=cid, command="x", exit_status=0, stdout=stdout
    )
    return CommandRecord(**{**base, **kw})  # type: ignore[arg-type]


def test_probes_with_a_framework_table() -> None:
    assert set(TABLED) == {p.id for p in REGISTRY} - {"driver"}


@pytest.mark.parametrize("phase", ["before", "after"])
@pytest.mark.parametrize("probe_id", TABLED)
def test_every_field_a_table_fills_names_its_source_in_field_sources(
    probe_id: str, phase: str
) -> None:
    module = importlib.import_module(f"gpuaudit.probes.{probe_id}.extract")
    run = audit(phase)
    filled = 0
    for role in ("host", "container"):
        outputs = {
            r.command_id: r
            for p in run.probes
            if p.probe_id == probe_id
            for r in p.records
            if r.target == role
        }
        read = read_table(outputs, module.TABLE)
        for name, source in read.provenance.items():
            if name.startswith("_"):  # working values of the extract, not facts
                continue
            filled += 1
            assert source in module.FIELD_SOURCES.get(name, ()), (probe_id, role, name, source)
    assert filled


def test_parser_errors_are_problems_of_their_source_never_a_crash() -> None:
    def bug(text: str) -> dict[str, object]:
        raise RuntimeError("index out of range")

    def bad(text: str) -> dict[str, object]:
        raise ParseError("no header line")

    table = (
        Reads("a", bug),
        Reads("b", bad),
        Reads("c", lambda t: {"c": t.strip()}),
        Reads("d", lambda t: {"d": 1}),
        Reads("e", lambda t: {"e": 1}, when=lambda f: "c" not in f),
    )
    outputs = {
        "a": rec("a", "x"),
        "b": rec("b", "x"),
        "c": rec("c", "yes\n"),
        "d": rec("d", "", exit_status=1, stderr="cat: /x: No such file or directory"),
        "e": rec("e", "fallback"),
    }
    read = read_table(outputs, table)
    assert read.fields == {"c": "yes"}
    assert read.problems["a"] == "unparsable output: RuntimeError: index out of range"
    assert read.problems["b"] == "unreadable: no header line"
    assert read.problems["d"].startswith("exit 1")
    assert "e" not in read.problems  # a fallback that was not needed is not read
    assert read.provenance == {"c": "c"}
    quiet = read_table(outputs, table, note_unusable=False, why=str)
    assert "d" not in quiet.problems and quiet.problems["b"] == "no header line"


def test_a_partial_grep_is_read_when_the_row_says_so_and_a_record_reader_sees_the_record() -> None:
    """`grep -H` over several files exits 2 when one is missing: the lines of the others are still good."""
    partial = rec(
        "cgroup_limits",
        "/sys/fs/cgroup/cpu.max:max 100000\n",
        exit_status=2,
        stderr="grep: /sys/fs/cgroup/cpuset.cpus.effective: No such file or directory",
    )
    seen: list[int | None] = []

    def status(r: CommandRecord) -> dict[str, object]:
        seen.append(r.exit_status)
        return {"lines": r.stdout.count("\n")}

    read = read_table(
        {"cgroup_limits": partial}, (Reads("cgroup_limits", record=status, partial_ok=True),)
    )
    assert read.fields == {"lines": 1} and seen == [2] and not read.problems
    strict = read_table({"cgroup_limits": partial}, (Reads("cgroup_limits", record=status),))
    assert not strict.fields and strict.problems["cgroup_limits"].startswith("exit 2")


def test_a_probe_whose_parser_breaks_is_still_judged(monkeypatch: pytest.MonkeyPatch) -> None:
    """A parser bug on one source of the pcie probe: that source is a problem, the other facts are read."""
    pcie = importlib.import_module("gpuaudit.probes.pcie.extract")

    def broken(text: str) -> dict[str, object]:
        raise KeyError("lnksta")

    table = tuple(
        Reads(r.source, broken) if r.source == "smi_query_pcie" else r for r in pcie.TABLE
    )
    monkeypatch.setattr(pcie, "TABLE", table)
    run = audit("before")
    outputs = {
        r.command_id: r
        for p in run.probes
        if p.probe_id == "pcie"
        for r in p.records
        if r.target == "host"
    }
    facts = pcie.extract(outputs, "host")
    assert facts.problems["smi_query_pcie"].startswith("unparsable output: KeyError")
    assert facts.devices and facts.gpu_bdfs and not facts.smi


def test_a_parser_bug_is_a_problem_of_that_source_and_the_rest_is_judged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A kernel reader raising on one source's output makes that source unusable (its checks unknown, naming the
    error), every other check is still judged (before, the whole probe failed)."""
    run = audit("before")  # judged with the real parsers first
    kernel = importlib.import_module("gpuaudit.probes.kernel.extract")

    def broken(t: str, d: dict[str, object], p: dict[str, str]) -> None:
        raise IndexError("list index out of range")

    rows = tuple(
        Reads(r.source, fill=broken) if r.source == "numa_balancing" else r for r in kernel.TABLE
    )
    monkeypatch.setattr(kernel, "TABLE", rows)
    records = {
        role: [
            r for p in run.probes if p.probe_id == "kernel" for r in p.records if r.target == role
        ]
        for role in ("host", "container")
    }
    result = judge_probe(next(p for p in REGISTRY if p.id == "kernel"), records)
    assert result.status == "done", result.error
    assert result.facts["host"]["problems"]["numa_balancing"] == (
        "unparsable output: IndexError: list index out of range"
    )
    before = {(f.id, tuple(f.targets)): f.severity for f in run.findings}
    changed = {f.id: f for f in result.findings if f.severity != before[(f.id, tuple(f.targets))]}
    # only the checks that read numa_balancing change, to unknown naming the error
    assert set(changed) == {"kernel.numa_balancing", "kernel.host_knobs_visible"}
    assert all(
        f.severity.value == "unknown" and "IndexError" in f.observed for f in changed.values()
    )


def test_an_extract_error_is_narrowed_to_the_source_that_caused_it() -> None:
    """A probe with its own loop (no table): judge_probe's extract_facts leaves one source out at a time and names
    the one whose output made the extract raise; an error no single source explains still fails the probe."""

    class Facts(BaseModel, frozen=True):
        read: list[str] = []
        problems: dict[str, str] = {}

    def extract(outputs: Outputs, role: str) -> Facts:
        if "bad" in outputs:
            raise IndexError("list index out of range")
        return Facts(read=sorted(outputs))

    probe = Probe(id="t", title="t", commands=(), extract=extract)
    facts = extract_facts(probe, {"good": rec("good"), "bad": rec("bad")}, "host")
    assert isinstance(facts, Facts)
    assert facts.read == ["good"]
    assert facts.problems == {"bad": "unparsable output: IndexError: list index out of range"}

    def always(outputs: Outputs, role: str) -> Facts:
        raise KeyError("bug")

    with pytest.raises(KeyError):
        extract_facts(
            Probe(id="t", title="t", commands=(), extract=always), {"a": rec("a")}, "host"
        )
