"""Issue 23: "not applicable" is its own answer (severity n/a), never counted as ok: the pane, the plan,
--prom and --health each show it as its own figure; a probe whose checks are all n/a says so."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from gpuaudit.probes.core.fleet.prometheus import from_snapshot, render
from gpuaudit.probes.core.judge.plan import build_plan, plan_markdown
from gpuaudit.probes.core.models import Finding, ProbeResult, Severity
from gpuaudit.snapshots import store
from gpuaudit.tui.cli.health import health_line
from gpuaudit.tui.views.render import (
    compact_pane_body,
    finding_detail,
    pane_body,
    sev_label,
    state_class,
)

ROOT = Path(__file__).resolve().parents[2]
BEFORE = ROOT / "snapshots" / "examples" / "case-study-before.json"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
NO_GPU = "no NVIDIA GPU or driver on this host"


def finding(fid: str, severity: Severity, observed: str) -> Finding:
    return Finding(
        id=fid,
        severity=severity,
        probe=fid.split(".")[0],
        targets=["host"],
        title=fid,
        observed=observed,
    )


def result(*findings: Finding) -> ProbeResult:
    return ProbeResult(probe_id="nvlink", title="NVLink", status="done", findings=list(findings))


def test_a_probe_whose_checks_are_all_n_a_says_so_never_all_ok() -> None:
    r = result(
        finding("nvlink.presence", Severity.NA, NO_GPU),
        finding("nvlink.errors", Severity.NA, NO_GPU),
    )
    body = pane_body(r, roles=["host"], now=NOW).plain
    assert "all checks n/a — no NVIDIA GPU or driver on this host" in body
    assert "all checks ok" not in body and "–2" in body  # its own count, its own glyph
    assert "all checks n/a" in compact_pane_body(r, roles=["host"], now=NOW, title="NVLink").plain
    assert state_class(r) == "-na" and sev_label(Severity.NA) == "– N/A"


def test_mixed_ok_and_n_a_counts_the_n_a_apart() -> None:
    r = result(
        finding("nvlink.presence", Severity.OK, "18 links up"),
        finding("nvlink.nvls", Severity.NA, "no NVSwitch system"),
    )
    body = pane_body(r, roles=["host"], now=NOW).plain
    assert "all checks ok · 1 n/a" in body and "✔1" in body and "–1" in body
    assert state_class(r) == "-ok"


def test_detail_reads_n_a_and_the_reason() -> None:
    text = finding_detail(finding("nvlink.nvls", Severity.NA, "no NVSwitch system")).plain
    assert "n/a — no NVSwitch system" in text and "observed" not in text


def test_case_study_n_a_in_prom_health_and_plan() -> None:
    snap = store.load(BEFORE)
    na = [f for f in snap.findings if f.severity == Severity.NA]
    assert na and not [
        f for f in snap.findings if f.severity == Severity.OK and "not applicable" in f.observed
    ]
    prom = render({None: from_snapshot(snap)})
    nvls = next(
        line for line in prom.splitlines() if 'check="nvlink.nvls"' in line and line[0] != "#"
    )
    assert nvls.endswith(" -1")  # n/a has its own value, below ok (0)
    assert 'gpuaudit_findings{target="host",severity="n/a"}' in prom
    run = snap.to_run()
    assert f"{len(na)} n/a" in health_line(run)
    md = plan_markdown(build_plan(run), run)
    assert f"## Not applicable ({len(na)} check(s)" in md
    assert all(f.severity != Severity.NA for step in build_plan(run) for f in step.findings)
