"""The action plan: warning-or-worse findings, grouped by known relations and same fix, ranked."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tui"))

from gpuaudit.probes.core.judge.plan import build_plan, plan_markdown  # noqa: E402
from gpuaudit.probes.core.models import AuditRun, Finding, ProbeResult, Severity  # noqa: E402
from tui_support import synthetic_run  # noqa: E402


def f(fid: str, sev: Severity, fix: str = "", targets=("host",)) -> Finding:
    return Finding(
        id=fid,
        severity=sev,
        probe=fid.split(".")[0],
        title=fid,
        targets=list(targets),
        fix=fix or f"fix {fid}",
    )


def run_of(*findings: Finding) -> AuditRun:
    by_probe: dict[str, list[Finding]] = {}
    for x in findings:
        by_probe.setdefault(x.probe, []).append(x)
    return AuditRun(
        probes=[
            ProbeResult(probe_id=p, title=p, status="done", findings=fs)
            for p, fs in by_probe.items()
        ]
    )


def test_kernel_upgrade_groups_the_amd_pstate_finding() -> None:
    plan = build_plan(synthetic_run())
    assert plan[0].ids == ["python.cuda_graphs"] and plan[0].severity == Severity.CRITICAL
    kernel = next(s for s in plan if "kernel.version" in s.ids)
    assert set(kernel.ids) == {"kernel.version", "power.cpu_scaling_driver"}
    assert "amd_pstate" in (kernel.relation or "")
    all_ids = [i for s in plan for i in s.ids]
    assert (
        len(all_ids) == len(set(all_ids)) == 6
    )  # every warning+ finding exactly once; ok/info/unknown left out
    assert [s.rank for s in plan] == list(range(1, len(plan) + 1))


def test_ranking_severity_then_impact_and_same_fix_grouping() -> None:
    plan = build_plan(
        run_of(
            f("kernel.swap", Severity.WARNING),
            f("pcie.max_read_req", Severity.WARNING),
            f("numa.topology", Severity.CRITICAL),
            f("container.memlock", Severity.WARNING, fix="Set ulimit -l unlimited."),
            f("container.nofile", Severity.WARNING, fix="set ulimit -l  unlimited"),
            f("driver.x", Severity.INFO),
        )
    )
    assert [s.ids for s in plan] == [
        ["numa.topology"],
        ["container.memlock", "container.nofile"],
        ["pcie.max_read_req"],
        ["kernel.swap"],
    ]
    assert plan[1].relation == "same fix"


def test_relation_needs_two_members_present() -> None:
    plan = build_plan(run_of(f("kernel.version", Severity.WARNING)))
    assert len(plan) == 1 and plan[0].relation is None and plan[0].title == "kernel.version"


def test_markdown_names_fix_evidence_and_neutralises_target_text() -> None:
    run = synthetic_run()
    md = plan_markdown(build_plan(run), run)
    assert md.startswith("# gpuaudit-tui action plan")
    assert "## 1. [CRITICAL] Engine runs without CUDA graphs" in md
    assert "evidence: host: uname_r 'uname -r' (exit 0, 0.25 s)" in md
    assert "probe `nvlink` failed" in md and "`nccl.p2p_matrix` unknown" in md
    hostile = run_of(
        Finding(
            id="kernel.cmdline",
            severity=Severity.WARNING,
            probe="kernel",
            title="t\x1b[2J",
            observed="`x`\x07",
        )
    )
    out = plan_markdown(build_plan(hostile), hostile)
    assert "\x1b" not in out and "\x07" not in out and "x1b\\[2J" in out  # shown, escaped, inert
    bidi = run_of(
        Finding(
            id="kernel.cmdline",
            severity=Severity.WARNING,
            probe="kernel",
            title="a\u202eb\u2066c\x9b",
        )
    )
    out = plan_markdown(
        build_plan(bidi), bidi
    )  # bidi overrides reorder what a terminal or viewer shows
    assert "\u202e" not in out and "\u2066" not in out and "\x9b" not in out
    assert "u202eb" in out and "u2066c" in out  # shown escaped, inert


def test_empty_plan_says_so() -> None:
    md = plan_markdown([], AuditRun())
    assert "0 step(s)" in md and "Nothing at warning or worse" in md
