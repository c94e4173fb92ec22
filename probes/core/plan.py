"""The action plan: findings at warning or worse, ranked and grouped by shared fix (skeleton)."""

from __future__ import annotations

from probes.core.models import AuditRun, Finding, Severity


def build_plan(run: AuditRun) -> list[Finding]:
    findings = [f for f in run.findings if f.severity in (Severity.CRITICAL, Severity.WARNING)]
    return sorted(findings, key=lambda f: -f.severity.rank)


def plan_markdown(plan: list[Finding], run: AuditRun) -> str:
    lines = ["# gpuaudit-tui action plan", ""]
    for n, f in enumerate(plan, 1):
        lines.append(f"{n}. **{f.severity.value}** `{f.id}` {f.title}: {f.fix}")
    return "\n".join(lines) + "\n"
