"""Pure helpers: models -> rich Text and table cells (no Textual, unit-testable without an App).

Everything that came from a target goes through `neutralise()` and into `Text` as plain text, never
markup: a remote `[red]` or `\\x1b]0;title\\x07` is shown, not interpreted.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from rich.text import Text

from gpuaudit.probes.core.models import SEVERITY_ORDER, AuditRun, CommandRecord, Finding, ProbeResult, Severity
from gpuaudit.probes.core.text import neutralise

__all__ = ["neutralise"]  # re-exported: screens and widgets import it from here

SEV_ICON = {Severity.CRITICAL: "✖", Severity.WARNING: "▲", Severity.INFO: "●", Severity.OK: "✔", Severity.UNKNOWN: "?"}
SEV_WORD = {Severity.CRITICAL: "CRIT", Severity.WARNING: "WARN", Severity.INFO: "INFO", Severity.OK: "OK", Severity.UNKNOWN: "UNKN"}
SEV_VAR = {Severity.CRITICAL: "status-crit", Severity.WARNING: "status-warn", Severity.INFO: "status-info",
           Severity.OK: "status-ok", Severity.UNKNOWN: "status-unknown"}
Palette = Mapping[Severity, str]
PLAIN: Palette = {s: "" for s in Severity}
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

def palette_from(variables: Mapping[str, str]) -> Palette:
    """Theme CSS variables -> a rich style per severity (Python never picks the colours)."""
    return {s: f"bold {variables[v]}" if v in variables else "bold" for s, v in SEV_VAR.items()}


def sev_label(sev: Severity) -> str:
    """Icon and word, never colour alone: "✖ CRIT"."""
    return f"{SEV_ICON[sev]} {SEV_WORD[sev]}"


def sev_text(sev: Severity, palette: Palette = PLAIN, width: int = 6) -> Text:
    return Text(sev_label(sev).ljust(width), style=palette.get(sev, ""))


def visible(findings: Iterable[Finding], min_severity: Severity | None) -> list[Finding]:
    """Findings at or above the filter (None = all), worst first, stable within a severity."""
    keep = [f for f in findings if min_severity is None or f.severity.rank >= min_severity.rank]
    return sorted(keep, key=lambda f: -f.severity.rank)


def counts(findings: Iterable[Finding], role: str | None) -> dict[Severity, int]:
    """Findings per severity that concern one target (None = findings naming no target)."""
    out: dict[Severity, int] = {}
    for f in findings:
        if (role in f.targets) if role is not None else not f.targets:
            out[f.severity] = out.get(f.severity, 0) + 1
    return out


def state_class(result: ProbeResult | None) -> str:
    """The one CSS state class of a pane: -pending, -running, -error, -skipped, -fail, -warn, -unknown, -ok."""
    if result is None or result.status == "pending":
        return "-pending"
    if result.status == "running":
        return "-running"
    if result.status == "failed":
        return "-error"
    if result.status in ("skipped", "cancelled"):
        return "-skipped"
    worst = result.worst
    return {Severity.CRITICAL: "-fail", Severity.WARNING: "-warn", Severity.UNKNOWN: "-unknown"}.get(worst, "-ok")  # type: ignore[arg-type]


def format_elapsed(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f}s"
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def elapsed(result: ProbeResult, now: datetime) -> float:
    """Seconds a probe has run: the recorded duration when done, else now - start (clamped at 0)."""
    if result.status != "running" or result.started_at is None:
        return result.duration_s
    return max(0.0, (now - result.started_at).total_seconds())


def running_line(result: ProbeResult, now: datetime) -> str:
    """"⠹ running 2.3s": the spinner frame follows the elapsed time, so redraws animate it."""
    t = elapsed(result, now)
    return f"{SPINNER[int(t * 10) % len(SPINNER)]} running {format_elapsed(t)}"


def pane_subtitle(result: ProbeResult, now: datetime) -> str:
    if result.status == "running":
        return running_line(result, now)
    if result.status == "done":
        return f"done {format_elapsed(result.duration_s)}"
    return result.status


def _counts_line(findings: list[Finding], roles: Sequence[str], palette: Palette) -> Text:
    line = Text()
    for role in [*roles, None]:
        c = counts(findings, role)
        if not c and role is None:
            continue
        if line:
            line.append("  │  ", style="dim")
        line.append(f"{role or 'all'} ")
        if not c:
            line.append("no findings", style="dim")
        for sev in SEVERITY_ORDER:
            if c.get(sev):
                line.append(f"{SEV_ICON[sev]}{c[sev]} ", style=palette.get(sev, ""))
    return line


def pane_body(result: ProbeResult, *, roles: Sequence[str], now: datetime,
              running: Sequence[tuple[str, str]] = (), min_severity: Severity | None = None,
              palette: Palette = PLAIN, height: int | None = None, width: int | None = None) -> Text:
    """What a dashboard pane shows: live progress, or counts per target, key facts and top findings."""
    lines: list[Text] = []
    if result.status == "pending":
        lines.append(Text("waiting to start", style="dim"))
    elif result.status == "running":
        lines.append(Text(f"{running_line(result, now)} · {len(result.records)} command(s) done"))
        for role, cid in running[:3]:
            lines.append(Text.assemble((f"{role}: ", "dim"), neutralise(cid)))
    else:
        if result.status == "failed":
            lines.append(Text.assemble(("✖ FAILED ", palette.get(Severity.CRITICAL, "")), neutralise(result.error or "")))
        if result.summary:
            lines.append(Text(neutralise(result.summary)))
        if result.findings or result.status != "failed":
            lines.append(_counts_line(result.findings, roles, palette))
        shown = [f for f in visible(result.findings, min_severity) if f.severity != Severity.OK]
        room = max(1, (height or len(lines) + 3) - len(lines))
        if len(shown) > room:
            room -= 1
        for f in shown[:room]:
            lines.append(Text.assemble(sev_text(f.severity, palette), " ", neutralise(f.title)))
        if len(shown) > room:
            lines.append(Text(f"… {len(shown) - room} more (Enter)", style="dim"))
        if not shown and result.findings:
            lines.append(Text("nothing at or above the filter" if min_severity else "all checks ok", style="dim"))
    if width:  # one line per fact: cut with an ellipsis rather than wrap into the next line
        for line in lines:
            line.truncate(width, overflow="ellipsis")
    return Text("\n").join(lines)


def header_text(run: AuditRun, palette: Palette = PLAIN, min_severity: Severity | None = None) -> Text:
    """The target line (state + reason per target) and, for demo/replay, the note stated plainly."""
    text = Text.assemble(("gpuaudit-tui ", "bold"), (f"[{run.mode.upper()}] ", "reverse bold" if run.mode != "live" else "bold"))
    for t in run.targets:
        st = run.target_states.get(t.role)
        state = st.state if st else "pending"
        icon = {"connected": "✔", "failed": "✖", "connecting": "…"}.get(state, "·")
        style = {"connected": palette.get(Severity.OK, ""), "failed": palette.get(Severity.CRITICAL, "")}.get(state, "")
        text.append("  ")
        text.append(neutralise(t.label), style="bold")
        text.append(f" {icon} {state}", style=style)
        if st and st.hostname:
            text.append(f" ({neutralise(st.hostname)}{', root' if st.is_root else ''})")
        if st and st.reason:
            text.append(f": {neutralise(st.reason)}", style=style)
    if min_severity is not None:
        text.append(f"   filter ≥ {sev_label(min_severity)}", style="italic")
    if run.note:
        text.append("\n")
        text.append(f" {neutralise(run.note)} ", style="reverse")
    return text


def finding_detail(f: Finding, palette: Palette = PLAIN, evidence_lines: Sequence[str] = ()) -> Text:
    """Severity, title, observed vs expected, why, fix and evidence of one finding."""
    text = Text.assemble(sev_text(f.severity, palette), " ", (neutralise(f.title), "bold"), "\n", (f.id, "dim"),
                         (f"  targets: {', '.join(f.targets) or '-'}", "dim"), "\n\n")
    for label, value in (("observed", f.observed), ("expected", f.expected), ("why", f.why), ("fix", f.fix)):
        if value:
            text.append(f"{label:>9}: ", style="bold")
            text.append(neutralise(value) + "\n")
    if evidence_lines:
        text.append(" evidence: ", style="bold")
        text.append("\n           ".join(neutralise(e) for e in evidence_lines) + "\n           (Enter or e on the finding jumps there)\n")
    return text


def facts_text(facts: Mapping[str, Mapping[str, object]]) -> Text:
    """Each target's facts as indented JSON (neutralised)."""
    text = Text()
    for role, data in facts.items():
        text.append(f"{role}\n", style="bold underline")
        text.append(neutralise(json.dumps(data, indent=2, default=str, ensure_ascii=False)) + "\n\n")
    return text or Text("no facts", style="dim")


def record_cells(rec: CommandRecord) -> tuple[Text, ...]:
    """Commands-table row: target, command id, exit, duration, flags."""
    exit_ = "-" if rec.exit_status is None else str(rec.exit_status)
    flags = [w for w, on in (("timed out", rec.timed_out), ("truncated", rec.truncated), ("needs root", rec.needs_root and bool(rec.error))) if on]
    if rec.error and not flags:
        flags.append(neutralise(rec.error)[:40])
    return (Text(rec.target), Text(neutralise(rec.command_id)), Text(exit_, justify="right"),
            Text(f"{rec.duration_s:.2f}s", justify="right"), Text(", ".join(flags)))


def record_output(rec: CommandRecord) -> str:
    """Plain, neutralised text for the raw-output viewer: the command line, its status, stdout, stderr."""
    status = "timed out" if rec.timed_out else f"exit {rec.exit_status}" if rec.exit_status is not None else "no exit status"
    head = [f"$ {rec.executed or rec.command}", f"# {rec.target} · {rec.command_id} · {status} · {rec.duration_s:.3f}s"
            + (" · TRUNCATED" if rec.truncated else "") + (f" · {rec.error}" if rec.error else "")]
    body = [*head, "── stdout ──", rec.stdout.rstrip("\n") or "(empty)", "── stderr ──", rec.stderr.rstrip("\n") or "(empty)"]
    return neutralise("\n".join(body))


def plan_text(plan: Sequence[object], palette: Palette = PLAIN) -> Text:
    """The action plan (list of probes.core.plan.PlanStep) as Text for the plan screen."""
    text = Text()
    if not plan:
        return Text("Nothing at warning or worse. Check the unknown findings before trusting that.")
    for step in plan:
        text.append_text(Text.assemble((f"{step.rank:>2}. ", "bold"), sev_text(step.severity, palette), " ",  # type: ignore[attr-defined]
                                       (neutralise(step.title), "bold"), "\n"))  # type: ignore[attr-defined]
        if step.relation:  # type: ignore[attr-defined]
            text.append(f"    grouped: {neutralise(step.relation)}\n", style="italic")  # type: ignore[attr-defined]
        if step.fix:  # type: ignore[attr-defined]
            text.append("    fix: ", style="bold")
            text.append(neutralise(step.fix).replace("\n", "\n         ") + "\n")  # type: ignore[attr-defined]
        for f in step.findings:  # type: ignore[attr-defined]
            text.append("    • ")
            text.append_text(sev_text(f.severity, palette))
            text.append(f" {f.id} ({', '.join(f.targets) or '-'}): {neutralise(f.title)}\n")
            if f.observed or f.expected:
                text.append(f"        observed {neutralise(f.observed) or '-'} · expected {neutralise(f.expected) or '-'}\n", style="dim")
            for e in f.evidence:
                text.append(f"        evidence: {e.target} {neutralise(e.command_id)}\n", style="dim")
        text.append("\n")
    return text
