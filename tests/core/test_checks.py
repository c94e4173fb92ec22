"""The checks framework: missing data is unknown (naming the command), never ok; one finding per check and target."""

from __future__ import annotations

from dataclasses import replace

from gpuaudit.probes.core.judge.checks import (
    BOTH,
    HOST,
    NO_GPU,
    Check,
    Ctx,
    critical,
    judge_checks,
    ok,
    source_problem,
)
from gpuaudit.probes.core.judge.combiners import nvidia_presence, virtual_machine
from gpuaudit.probes.core.models import CommandRecord, Severity
from pydantic import BaseModel


class Facts(BaseModel):
    value: int | None = None
    problems: dict[str, str] = {}


def rec(
    cid: str, stdout: str = "", exit_status: int | None = 0, role: str = "host", **kw: object
) -> CommandRecord:
    return CommandRecord(
        target=role,
        probe_id="t",
        command_id=cid,
        command=kw.pop("command", cid),  # type: ignore[arg-type]
        exit_status=exit_status,
        stdout=stdout,
        **kw,
    )  # type: ignore[arg-type]


def verdict(ctx: Ctx):
    return critical(f"value {ctx.f.value}") if ctx.f.value else ok("value 0")


CHECK = Check(
    id="t.value", title="Value", owner="host", why="w", fix="f", verdict=verdict, sources=("a",)
)


def judge(check: Check, outputs: dict, facts: dict | None = None):
    facts = facts or {role: Facts(value=1) for role in outputs}
    return list(judge_checks([check], facts, outputs))


def test_usable_source_reaches_the_verdict_with_evidence_and_owner():
    (f,) = judge(CHECK, {"host": {"a": rec("a", "1")}})
    assert (f.severity, f.observed, f.owner, f.id, f.probe) == (
        Severity.CRITICAL,
        "value 1",
        "host",
        "t.value",
        "t",
    )
    assert [(e.target, e.command_id) for e in f.evidence] == [("host", "a")]


def test_every_kind_of_missing_data_is_unknown_naming_the_command():
    cases = {
        "timed out": rec("a", timed_out=True, exit_status=None),
        "needs root": rec("a", exit_status=None, error="needs root (run with --sudo)"),
        "exit 1": rec("a", exit_status=1, stderr="boom"),
        "truncated": rec("a", "1", truncated=True),
        "not collected": None,
        "lspci not installed (package pciutils)": rec(
            "a", exit_status=127, stderr="sh: 1: lspci: not found"
        ),
    }
    for needle, record in cases.items():
        outputs = {"host": {"a": record} if record else {"b": rec("b")}}
        (f,) = judge(CHECK, outputs)
        assert f.severity == Severity.UNKNOWN, needle
        assert f.observed.startswith("a: ") and needle in f.observed, (needle, f.observed)


def test_a_parse_problem_noted_by_extract_makes_the_check_unknown():
    (f,) = judge(
        CHECK,
        {"host": {"a": rec("a", "garbage")}},
        {"host": Facts(value=1, problems={"a": "no header row"})},
    )
    assert f.severity == Severity.UNKNOWN and "no header row" in f.observed


def test_an_unreached_target_is_unknown_never_ok():
    failed = rec("a", exit_status=None, error="target failed: connection refused")
    (f,) = judge(CHECK, {"host": {"a": failed}}, {"host": Facts(value=0)})
    assert f.severity == Severity.UNKNOWN and f.observed == "target unreachable: connection refused"


def test_not_applicable_and_rule_errors():
    na = Check(
        id="t.na",
        title="NA",
        owner="bios",
        why="",
        fix="",
        verdict=verdict,
        sources=("a",),
        applies=lambda ctx: "virtual machine",
    )
    (f,) = judge(na, {"host": {"a": rec("a")}})
    assert (f.severity, f.observed) == (Severity.NA, "virtual machine")
    boom = Check(
        id="t.boom",
        title="B",
        owner="host",
        why="",
        fix="",
        verdict=lambda ctx: 1 / 0,
        sources=("a",),
    )
    (f,) = judge(boom, {"host": {"a": rec("a")}})
    assert f.severity == Severity.UNKNOWN and "ZeroDivisionError" in f.observed


def test_any_of_takes_the_first_usable_alternative_else_unknown_listing_each():
    alt = Check(
        id="t.alt", title="A", owner="host", why="", fix="", verdict=verdict, any_of=("xml", "csv")
    )
    (f,) = judge(alt, {"host": {"xml": rec("xml", exit_status=9), "csv": rec("csv")}})
    assert f.severity == Severity.CRITICAL and [e.command_id for e in f.evidence] == ["csv"]
    (f,) = judge(
        alt, {"host": {"xml": rec("xml", exit_status=9), "csv": rec("csv", timed_out=True)}}
    )
    assert (
        f.severity == Severity.UNKNOWN
        and "xml: exit 9" in f.observed
        and "csv: timed out" in f.observed
    )


def test_one_finding_per_role_or_one_cross_target_finding():
    both = Check(
        id="t.both",
        title="B",
        owner="host",
        why="",
        fix="",
        verdict=verdict,
        sources=("a",),
        roles=BOTH,
    )
    outs = {"host": {"a": rec("a")}, "container": {"a": rec("a", role="container")}}
    assert [f.targets for f in judge(both, outs)] == [["host"], ["container"]]
    cross = Check(
        id="t.x",
        title="X",
        owner="host",
        why="",
        fix="",
        verdict=verdict,
        sources=("a",),
        roles=BOTH,
        cross=True,
    )
    (f,) = judge(cross, outs)
    assert f.targets == ["host", "container"]
    outs["container"] = {
        "a": rec("a", role="container", exit_status=None, error="target failed: no route")
    }
    (f,) = judge(cross, outs)
    assert f.severity == Severity.UNKNOWN and "container unreachable" in f.observed
    assert (
        judge(cross, {"host": {"a": rec("a")}}) == []
    )  # no container in this audit: nothing to compare


NO_MODULE = rec(
    "proc_driver_version",
    exit_status=1,
    stderr="cat: /proc/driver/nvidia/version: No such file or directory",
)


def test_gpu_checks_are_not_applicable_only_when_absence_is_proven():
    gpu = Check(
        id="t.gpu",
        title="G",
        owner="host",
        why="",
        fix="",
        verdict=verdict,
        sources=("a",),
        needs_gpu=True,
    )
    absent = {
        "a": rec("a"),
        "proc_driver_version": NO_MODULE,
        "pci_nvidia_sysfs": rec("pci_nvidia_sysfs", "", exit_status=1),
    }
    (f,) = judge(gpu, {"host": absent})
    assert (f.severity, f.observed) == (Severity.NA, NO_GPU)
    unreadable = {**absent, "pci_nvidia_sysfs": rec("pci_nvidia_sysfs", exit_status=2)}
    (f,) = judge(gpu, {"host": unreadable})
    assert f.severity == Severity.CRITICAL  # presence unknown: the check judges as usual
    assert nvidia_presence(unreadable)[0] is None
    present = {
        **absent,
        "pci_nvidia_sysfs": rec("pci_nvidia_sysfs", "/sys/bus/pci/devices/0000:01:00.0/vendor\n"),
    }
    assert nvidia_presence(present)[0] is True


def test_tolerated_exit_statuses_come_from_the_source_registry():
    assert source_problem(rec("pci_nvidia_sysfs", exit_status=1)) is None
    assert source_problem(rec("pci_nvidia_sysfs", exit_status=2)) == "exit 2"


def test_virtual_machine_from_the_hypervisor_flag():
    assert (
        virtual_machine({"cpu_hypervisor_flag": rec("cpu_hypervisor_flag", "hypervisor\n")})[0]
        is True
    )
    assert (
        virtual_machine({"cpu_hypervisor_flag": rec("cpu_hypervisor_flag", "", exit_status=1)})[0]
        is False
    )
    assert (
        virtual_machine(
            {"cpu_hypervisor_flag": rec("cpu_hypervisor_flag", exit_status=None, timed_out=True)}
        )[0]
        is None
    )


def test_host_only_check_ignores_the_container():
    (f,) = judge(CHECK, {"host": {"a": rec("a")}, "container": {"a": rec("a", role="container")}})
    assert f.targets == ["host"] and CHECK.roles == HOST


def test_every_check_declares_its_inputs():
    """Issue 23: a check with no declared source gates nothing; each one names what it reads (or says why not)."""
    from gpuaudit.probes.catalogue import REGISTRY

    bare = [
        c.id
        for p in REGISTRY
        for c in p.checks
        if not (c.sources or c.any_of or c.optional or c.fails_as_answer or c.no_input)
    ]
    assert bare == []


def test_applies_first_needs_none_of_the_gated_sources():
    """A VM is n/a for firmware.memory_population even when dmidecode failed; on bare metal the gate names it."""
    na = Check(
        id="t.vm",
        title="VM",
        owner="hardware",
        why="",
        fix="",
        verdict=verdict,
        sources=("a",),
        applies=lambda ctx: "virtual machine",
        applies_first=True,
    )
    (f,) = judge(na, {"host": {"a": rec("a", exit_status=2)}})
    assert (f.severity, f.observed) == (Severity.NA, "virtual machine")
    metal = replace(na, applies=lambda ctx: None)
    (g,) = judge(metal, {"host": {"a": rec("a", exit_status=2)}})
    assert g.severity == Severity.UNKNOWN and "a:" in g.observed
