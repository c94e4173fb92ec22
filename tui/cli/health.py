"""`--health`: one line and an exit status for schedulers' node health checks (Slurm HealthCheckProgram, NHC,
Kubernetes Node Problem Detector custom plugins).

The line names the worst finding, who can fix it and the first fix line, e.g.
`CRITICAL [container] python.cuda_graphs (owner engine): CUDA graphs disabled — fix: drop --disable-cuda-graph`.
Exit status: the headless rules (0 fine, 1 a finding at --fail-on or worse, 2/3 input error / target not audited).
"""

from __future__ import annotations

from gpuaudit.probes.core.models import AuditRun, Finding
from gpuaudit.probes.core.text import neutralise

MAX_LINE = 300  # NHC and Slurm keep a short reason


def worst(run: AuditRun) -> Finding | None:
    findings = sorted(run.findings, key=lambda f: -f.severity.rank)
    return findings[0] if findings else None


def health_line(run: AuditRun) -> str:
    failed = [s for s in run.target_states.values() if s.state == "failed"]
    if failed:
        s = failed[0]
        return _one_line(f"UNREACHABLE [{s.role}]: {s.reason or 'target could not be audited'}")
    f = worst(run)
    counts = {
        sev: sum(1 for x in run.findings if x.severity.value == sev)
        for sev in ("critical", "warning", "unknown", "ok", "n/a")
    }
    tally = (
        f"{counts['critical']} critical, {counts['warning']} warning, {counts['unknown']} unknown,"
        f" {counts['ok']} ok, {counts['n/a']} n/a"
    )
    if f is None or f.severity.value not in ("critical", "warning"):
        return f"OK: {tally}"
    fix = (f.fix.strip().splitlines() or [""])[0]
    where = "+".join(f.targets) or "host"
    owner = f" (owner {f.owner})" if f.owner else ""
    line = f"{f.severity.value.upper()} [{where}] {f.id}{owner}: {f.title}" + (
        f" — fix: {fix}" if fix else ""
    )
    return _one_line(f"{line} ({tally})")


def _one_line(text: str) -> str:
    text = " ".join(neutralise(text).split())
    return text if len(text) <= MAX_LINE else text[: MAX_LINE - 1] + "…"
