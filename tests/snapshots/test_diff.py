"""diff_snapshots on crafted pairs: resolved/new/severity findings, facts, raw outputs, role matching."""

from __future__ import annotations

from gpuaudit.probes.core.models import Severity
from gpuaudit.snapshots.diff import diff_snapshots, flatten
from gpuaudit.tui.views.diff_report import render
from snapfactory import fnd, kernel_probe, probe, rec, snap


def test_identical_snapshots() -> None:
    a = snap(kernel_probe())
    d = diff_snapshots(
        a, a.model_copy(update={"name": "other", "created_at": a.created_at.replace(day=11)})
    )
    assert d.identical and d.probes == []


def test_kernel_upgrade_and_numa_fix() -> None:
    before = snap(kernel_probe("6.8.12-9-pve", "1", "warning"))
    after = snap(kernel_probe("6.14.11-1-pve", "0", "ok"))
    d = diff_snapshots(before, after)
    assert not d.identical
    (pd,) = d.probes
    facts = {(f.path, f.role): (f.old, f.new) for f in pd.facts}
    assert facts == {
        ("kernel.release", "host"): ("6.8.12-9-pve", "6.14.11-1-pve"),
        ("kernel.numa_balancing", "host"): (1, 0),
    }
    (fc,) = pd.findings
    assert (fc.id, fc.kind, fc.old_severity, fc.new_severity) == (
        "kernel.numa_balancing",
        "resolved",
        Severity.WARNING,
        Severity.OK,
    )
    assert pd.raw == [] and d.hidden == 2  # raw text alone is noise unless asked for
    (pd,) = diff_snapshots(before, after, raw_diff=True).probes
    assert {(r.role, r.command_id, tuple(r.fields)) for r in pd.raw} == {
        ("host", "uname_r", ("stdout",)),
        ("host", "numa_balancing", ("stdout",)),
    }
    text = render(d).plain
    assert "kernel.release (host): 6.8.12-9-pve → 6.14.11-1-pve" in text
    assert "resolved" in text and "kernel.numa_balancing" in text


def test_finding_kinds() -> None:
    a = probe(
        "pcie",
        findings=[
            fnd("pcie.a", "warning"),
            fnd("pcie.b", "ok"),
            fnd("pcie.c", "warning"),
            fnd("pcie.d", "ok", "x"),
            fnd("pcie.e", "info"),
            fnd("pcie.g", "unknown"),
        ],
    )
    b = probe(
        "pcie",
        findings=[
            fnd("pcie.a", "critical"),
            fnd("pcie.b", "warning"),
            fnd("pcie.d", "ok", "y"),
            fnd("pcie.f", "critical"),
            fnd("pcie.h", "ok"),
            fnd("pcie.g", "ok"),
        ],
    )
    (pd,) = diff_snapshots(snap(a), snap(b), all_facts=True).probes
    kinds = {f.id: f.kind for f in pd.findings}
    assert kinds == {
        "pcie.a": "severity",
        "pcie.b": "new",
        "pcie.c": "resolved",
        "pcie.d": "observed",
        "pcie.e": "removed",
        "pcie.f": "new",
        "pcie.g": "severity",
        "pcie.h": "added",
    }
    default = diff_snapshots(
        snap(a), snap(b)
    )  # ok -> ok with another observed text: hidden, counted
    (pd,) = default.probes
    assert "pcie.d" not in {f.id for f in pd.findings} and default.hidden >= 1


def test_repeated_finding_ids_are_told_apart_by_targets() -> None:
    a = probe(
        "driver",
        findings=[
            fnd("driver.x", "ok", targets=("host",)),
            fnd("driver.x", "warning", targets=("container",)),
        ],
    )
    b = probe(
        "driver",
        findings=[
            fnd("driver.x", "ok", targets=("host",)),
            fnd("driver.x", "ok", targets=("container",)),
        ],
    )
    (pd,) = diff_snapshots(snap(a), snap(b)).probes
    assert [(f.targets, f.kind) for f in pd.findings] == [(["container"], "resolved")]


def test_containers_match_by_role_not_by_address() -> None:
    a = snap(
        probe("driver", records=[rec("smi", "590", role="container", probe="driver")]),
        container="pct:101",
    )
    b = snap(
        probe("driver", records=[rec("smi", "590", role="container", probe="driver")]),
        container="root@10.0.0.101",
    )
    d = diff_snapshots(a, b)
    assert d.identical  # same outputs: a new way in to the same container is not a change
    assert [(t.role, t.old, t.new) for t in d.targets] == [
        ("container", "pct:101 (pct)", "root@10.0.0.101 (ssh)")
    ]
    assert "matched by role" in render(d).plain


def test_missing_container_is_a_difference() -> None:
    d = diff_snapshots(snap(kernel_probe()), snap(kernel_probe(), container=None))
    assert not d.identical and d.targets[0].new is None


def test_raw_outputs_added_removed_status_and_unified_diff() -> None:
    a = probe(
        "power",
        records=[
            rec("drv", "acpi-cpufreq\n", probe="power"),
            rec("gone", "x", probe="power"),
            rec("slow", "", probe="power", exit_status=None, timed_out=True),
        ],
    )
    b = probe(
        "power",
        records=[
            rec("drv", "amd-pstate-epp\n", probe="power"),
            rec("fresh", "y", probe="power"),
            rec("slow", "ok\n", probe="power"),
        ],
    )
    (pd,) = diff_snapshots(snap(a), snap(b), raw_diff=True).probes
    by_id = {r.command_id: r for r in pd.raw}
    assert by_id["gone"].kind == "removed" and by_id["fresh"].kind == "added"
    assert by_id["slow"].fields == ["stdout", "exit_status", "timed_out"]
    assert (by_id["slow"].old_status, by_id["slow"].new_status) == ("timed out", "exit 0")
    assert "-acpi-cpufreq\n+amd-pstate-epp\n" in by_id["drv"].unified
    assert "--- a/host/drv.out" in by_id["drv"].unified
    assert diff_snapshots(snap(a), snap(b)).probes[0].raw[0].unified is None  # only on request


def test_shared_command_shows_once_under_its_first_probe() -> None:
    a = snap(
        probe("driver", records=[rec("smi", "1", probe="driver")]),
        probe("pcie", records=[rec("smi", "1", probe="pcie")]),
    )
    b = snap(
        probe("driver", records=[rec("smi", "2", probe="driver")]),
        probe("pcie", records=[rec("smi", "2", probe="pcie")]),
    )
    d = diff_snapshots(a, b, raw_diff=True)
    assert [(p.probe_id, len(p.raw)) for p in d.probes] == [("driver", 1)]


def test_probe_status_and_added_probe() -> None:
    a = snap(probe("nccl", status="failed"))
    b = snap(probe("nccl", status="done"), probe("numa"))
    d = diff_snapshots(a, b)
    assert [(p.probe_id, p.old_status, p.new_status) for p in d.probes] == [
        ("nccl", "failed", "done"),
        ("numa", None, "done"),
    ]


def test_flatten_paths() -> None:
    facts = {"gpus": [{"bus": "01:00.0", "mrrs": 512}], "flags": ["a", "b"], "empty": {}, "n": None}
    assert dict(flatten(facts)) == {
        "gpus[0].bus": "01:00.0",
        "gpus[0].mrrs": 512,
        "flags": ["a", "b"],
        "empty": {},
        "n": None,
    }


def test_report_neutralises_terminal_escapes() -> None:
    a = snap(probe("power", records=[rec("drv", "a\n", probe="power")]))
    b = snap(probe("power", records=[rec("drv", "\x1b]0;pwned\x07b\n", probe="power")]))
    text = render(diff_snapshots(a, b, raw_diff=True), show_unified=True).plain
    assert "\x1b" not in text and "\\x1b" in text


def test_report_neutralises_c1_bidi_statuses_errors_and_targets() -> None:
    a = snap(probe("power", records=[rec("drv", "a\n", probe="power")]), host="\u202eevil\x9b")
    b = snap(
        probe(
            "power",
            records=[
                rec(
                    "drv",
                    "a\u202e\x9b[2J\n",
                    probe="power",
                    exit_status=None,
                    error="boom\x1b]0;t\x07\u2066",
                )
            ],
        ),
        host="h",
    )
    text = render(diff_snapshots(a, b, raw_diff=True), show_unified=True).plain
    for raw in ("\x1b", "\x07", "\x9b", "\u202e", "\u2066"):
        assert raw not in text, repr(raw)
    assert "\\u202e" in text and "\\x9b" in text  # the unified diff (C1, bidi)
    assert "boom\\x1b]0;t\\x07\\u2066" in text  # the new record's status carries its error
    assert "\\u202eevil\\x9b" in text  # the header's target spec


def test_nested_fact_changes_added_and_removed_keys() -> None:
    a = probe(
        "pcie",
        facts={"host": {"gpus": [{"bus": "01:00.0", "mrrs": 512}], "same": {"x": 1}, "old": True}},
    )
    b = probe(
        "pcie",
        facts={
            "host": {"gpus": [{"bus": "01:00.0", "mrrs": 4096}], "same": {"x": 1}, "new": 1},
            "container": {"seen": 1},
        },
    )
    (pd,) = diff_snapshots(snap(a), snap(b)).probes
    got = {(f.role, f.path): (f.old, f.new, f.old_present, f.new_present) for f in pd.facts}
    assert got == {
        ("host", "pcie.gpus[0].mrrs"): (512, 4096, True, True),
        ("host", "pcie.new"): (None, 1, False, True),
        ("host", "pcie.old"): (True, None, True, False),
        ("container", "pcie.seen"): (None, 1, False, True),
    }
    assert "pcie.old (host): true → (absent)" in render(diff_snapshots(snap(a), snap(b))).plain
