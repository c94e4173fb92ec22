"""Pure helpers: models -> rich Text and table cells (no Textual, unit-testable without an App).

Everything that came from a target goes through `neutralise()` and into `Text` as plain text, never
markup: a remote `[red]` or `\\x1b]0;title\\x07` is shown, not interpreted.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from gpuaudit.probes.core.models import (
    SEVERITY_ORDER,
    AuditRun,
    CommandRecord,
    Finding,
    ProbeResult,
    Severity,
    TargetState,
)
from gpuaudit.probes.core.text import neutralise
from gpuaudit.tui.views.filtering import FindingFilter, as_filter, visible
from rich.text import Text

__all__ = ["neutralise", "visible"]  # re-exported: screens and widgets import them from here

SEV_ICON = {
    Severity.CRITICAL: "✖",
    Severity.WARNING: "▲",
    Severity.INFO: "●",
    Severity.OK: "✔",
    Severity.UNKNOWN: "?",
    Severity.NA: "–",
}
SEV_WORD = {
    Severity.CRITICAL: "CRIT",
    Severity.WARNING: "WARN",
    Severity.INFO: "INFO",
    Severity.OK: "OK",
    Severity.UNKNOWN: "UNKN",
    Severity.NA: "N/A",
}
SEV_VAR = {
    Severity.CRITICAL: "status-crit",
    Severity.WARNING: "status-warn",
    Severity.INFO: "status-info",
    Severity.OK: "status-ok",
    Severity.UNKNOWN: "status-unknown",
    Severity.NA: "status-na",
}
QUIET = (Severity.OK, Severity.NA)
"""Not listed as a pane's top findings: proven fine, or proven not to apply (counted, never called ok)."""
Palette = Mapping[Severity, str]
PLAIN: Palette = {s: "" for s in Severity}
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def palette_from(variables: Mapping[str, str]) -> Palette:
    """Theme CSS variables -> a rich style per severity (Python never picks the colours)."""
    return {
        s: f"bold {variables[v]}" if v in variables else "dim" if s == Severity.NA else "bold"
        for s, v in SEV_VAR.items()
    }


def sev_label(sev: Severity) -> str:
    """Icon and word, never colour alone: "✖ CRIT"."""
    return f"{SEV_ICON[sev]} {SEV_WORD[sev]}"


def sev_text(sev: Severity, palette: Palette = PLAIN, width: int = 6) -> Text:
    return Text(sev_label(sev).ljust(width), style=palette.get(sev, ""))


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
    return {
        Severity.CRITICAL: "-fail",
        Severity.WARNING: "-warn",
        Severity.UNKNOWN: "-unknown",
        Severity.NA: "-na",
    }.get(worst, "-ok")  # type: ignore[arg-type]


def na_text(f: Finding) -> str:
    """ "n/a — no NVIDIA GPU or driver on this host": how a not-applicable finding reads."""
    return f"n/a — {neutralise(f.observed) or 'does not apply'}"


def quiet_line(findings: Sequence[Finding]) -> str:
    """A pane with nothing to list: "all checks ok", "all checks ok · 3 n/a", or, when every check is
    n/a, "all checks n/a — <the reason>" (never "all checks ok" for checks that did not apply)."""
    na = [f for f in findings if f.severity == Severity.NA]
    if na and len(na) == len(findings):
        reasons = {f.observed for f in na}
        return (
            na_text(na[0]).replace("n/a", "all checks n/a", 1)
            if len(reasons) == 1
            else (f"all {len(na)} checks n/a")
        )
    return "all checks ok" + (f" · {len(na)} n/a" if na else "")


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
    """ "⠹ running 2.3s": the spinner frame follows the elapsed time, so redraws animate it."""
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


def _unreachable_line(roles: Sequence[str], unreachable: Mapping[str, str]) -> Text:
    """ "not audited: host unreachable" -- one line instead of a list of unknowns that only say so."""
    gone = [r for r in roles if r in unreachable]
    return Text("not audited: " + ", ".join(f"{r} unreachable" for r in gone), style="dim")


def pane_body(
    result: ProbeResult,
    *,
    roles: Sequence[str],
    now: datetime,
    running: Sequence[tuple[str, str]] = (),
    min_severity: FindingFilter | Severity | None = None,
    palette: Palette = PLAIN,
    height: int | None = None,
    width: int | None = None,
    unreachable: Mapping[str, str] | None = None,
) -> Text:
    """What a dashboard pane shows: live progress, or counts per target, key facts and top findings.

    `unreachable`: role -> reason for targets that were never reached; their findings are all
    "unknown: target unreachable", so the pane says that once instead of listing them.
    """
    flt = as_filter(min_severity)
    gone = {r: why for r, why in (unreachable or {}).items() if r in roles}
    reached = [r for r in roles if r not in gone]
    lines: list[Text] = []
    if result.status == "pending":
        lines.append(Text("waiting to start", style="dim"))
    elif result.status == "running":
        lines.append(Text(f"{running_line(result, now)} · {len(result.records)} command(s) done"))
        for role, cid in running[:3]:
            lines.append(Text.assemble((f"{role}: ", "dim"), neutralise(cid)))
    elif gone and not reached:
        lines.append(_unreachable_line(roles, gone))
    else:
        findings = [f for f in result.findings if not f.targets or set(f.targets) & set(reached)]
        if result.status == "failed":
            lines.append(
                Text.assemble(
                    ("✖ FAILED ", palette.get(Severity.CRITICAL, "")),
                    neutralise(result.error or ""),
                )
            )
        if result.summary:
            lines.append(Text(neutralise(result.summary)))
        if gone:
            lines.append(_unreachable_line(roles, gone))
        if findings or result.status != "failed":
            lines.append(_counts_line(findings, reached, palette))
        shown = [f for f in visible(findings, flt, result) if f.severity not in QUIET]
        room = max(1, (height or len(lines) + 3) - len(lines))
        if len(shown) > room:
            room -= 1
        for f in shown[:room]:
            lines.append(Text.assemble(sev_text(f.severity, palette), " ", neutralise(f.title)))
        if len(shown) > room:
            lines.append(Text(f"… {len(shown) - room} more (Enter)", style="dim"))
        if not shown and findings:
            lines.append(
                Text(
                    "nothing matches the filter" if flt.active else quiet_line(findings),
                    style="dim",
                )
            )
    if width:  # one line per fact: cut with an ellipsis rather than wrap into the next line
        for line in lines:
            line.truncate(width, overflow="ellipsis")
    return Text("\n").join(lines)


def compact_pane_body(
    result: ProbeResult,
    *,
    roles: Sequence[str],
    now: datetime,
    title: str,
    min_severity: FindingFilter | Severity | None = None,
    palette: Palette = PLAIN,
    width: int | None = None,
    unreachable: Mapping[str, str] | None = None,
) -> Text:
    """Two lines for small terminals: "▲ WARN PCIe · <key facts>", then the worst finding's title."""
    flt = as_filter(min_severity)
    worst = result.worst if result.status == "done" else None
    head = Text()
    if worst is not None:
        head.append_text(sev_text(worst, palette))
        head.append(" ")
    head.append(title, style="bold")
    gone = {r: why for r, why in (unreachable or {}).items() if r in roles}
    if result.status == "running":
        second = Text(running_line(result, now), style="dim")
    elif result.status == "pending":
        second = Text("waiting to start", style="dim")
    elif gone and len(gone) == len(roles):
        second = _unreachable_line(roles, gone)
    else:
        if result.summary:
            head.append(" · " + neutralise(result.summary), style="dim")
        reached = {r for r in roles if r not in gone}
        shown = [
            f
            for f in visible(result.findings, flt, result)
            if f.severity not in QUIET and (not f.targets or set(f.targets) & reached)
        ]
        if result.status == "failed":
            second = Text.assemble(
                ("✖ FAILED ", palette.get(Severity.CRITICAL, "")), neutralise(result.error or "")
            )
        elif shown:
            more = f"  +{len(shown) - 1} more" if len(shown) > 1 else ""
            second = Text.assemble(
                sev_text(shown[0].severity, palette), " ", neutralise(shown[0].title), (more, "dim")
            )
        else:
            second = Text(
                "nothing matches the filter"
                if flt.active and result.findings
                else quiet_line(result.findings),
                style="dim",
            )
    for line in (head, second):
        if width:
            line.truncate(width, overflow="ellipsis")
    return Text("\n").join([head, second])


def unreachable_roles(run: AuditRun) -> dict[str, str]:
    """role -> reason, for every target that failed to connect."""
    return {
        role: st.reason or "unreachable"
        for role, st in run.target_states.items()
        if st.state == "failed"
    }


RECORDED_MODES = ("demo", "replay")


def _target_state(run: AuditRun, st: TargetState | None) -> tuple[str, str]:
    """(icon, word) of a target's state; recordings say "recorded", never "connected"."""
    state = st.state if st else "pending"
    if state == "connected" and run.mode in RECORDED_MODES:
        return "●", "recorded"
    if state == "failed":
        return "✖", "unreachable"
    return {"connected": "✔", "connecting": "…"}.get(state, "·"), state


def _short_reason(label: str, spec: str, reason: str) -> str:
    """ "root@10.0.0.9:22: connection refused" under a target already labelled with that address -> the cause."""
    for prefix in (f"{label}: ", f"{spec}: "):
        if reason.startswith(prefix):
            reason = reason[len(prefix) :]
    return reason.replace("host host unreachable", "host unreachable")


def _target_part(run: AuditRun, role: str, full: bool, palette: Palette) -> Text:
    t = next(x for x in run.targets if x.role == role)
    st = run.target_states.get(role)
    icon, word = _target_state(run, st)
    style = {"✔": palette.get(Severity.OK, ""), "✖": palette.get(Severity.CRITICAL, "")}.get(
        icon, ""
    )
    who = (st.hostname if st and st.hostname and not full else t.spec) or t.spec
    part = Text.assemble((f"{role} ", "bold"), neutralise(who))
    if full and st and st.hostname:
        part.append(f" ({neutralise(st.hostname)}{', root' if st.is_root else ''})", style="dim")
    part.append(f" {icon} {word}", style=style)
    if st and st.reason and st.state == "failed":
        host = run.target_states.get("host")
        through_host = role != "host" and host is not None and host.state == "failed"
        why = (
            "not reached, the host is unreachable"
            if through_host
            else _short_reason(t.label, t.spec, st.reason)
        )
        part.append(": " + neutralise(why), style=style)
    return part


def header_text(
    run: AuditRun,
    palette: Palette = PLAIN,
    min_severity: FindingFilter | Severity | None = None,
    width: int | None = None,
) -> Text:
    """The targets (state and cause, all on one line when it fits, else one line each) and, for a demo or
    a replay, its note: wrapped by the widget, never cut."""
    tag = Text.assemble(
        ("gpuaudit " if (width or 200) >= 100 else "", "bold"),
        (f"[{run.mode.upper()}]", "reverse bold" if run.mode != "live" else "bold"),
    )
    roles = [t.role for t in run.targets]
    room = (width or 10_000) - tag.cell_len - 2
    text = tag.copy()
    for full in (True, False):
        parts = [_target_part(run, r, full, palette) for r in roles]
        one_line = Text(" │ ", style="dim").join(parts)
        if one_line.cell_len <= room or not full and len(parts) < 2:
            text.append("  ")
            text.append_text(one_line)
            break
    else:
        for n, part in enumerate(parts):  # one line per target, cut rather than wrapped
            text.append("\n  " if n else "  ")
            part.truncate(
                max(20, (width or 10_000) - (2 if n else tag.cell_len + 2)), overflow="ellipsis"
            )
            text.append_text(part)
    flt = as_filter(min_severity)
    if flt.active:
        text.append(f"\n  filter: {flt.describe()}", style="italic")
    if run.note:
        text.append("\n")
        text.append(neutralise(run.note), style="reverse")
    return text


def finding_detail(
    f: Finding, palette: Palette = PLAIN, evidence_lines: Sequence[str] = ()
) -> Text:
    """Severity, title, observed vs expected, why, fix and evidence of one finding."""
    text = Text.assemble(
        sev_text(f.severity, palette),
        " ",
        (neutralise(f.title), "bold"),
        "\n",
        (f.id, "dim"),
        (f"  on: {', '.join(f.targets) or '-'}", "dim"),
        (f"  who fixes it: {f.owner}" if f.owner else "", "dim"),
        "\n\n",
    )
    if f.severity == Severity.NA:  # the reason is the answer: "n/a — no NVIDIA GPU or driver"
        text.append(na_text(f) + "\n", style=palette.get(Severity.NA, ""))
    for label, value in (
        ("observed", "" if f.severity == Severity.NA else f.observed),
        ("expected", f.expected),
        ("why", f.why),
        ("fix", f.fix),
    ):
        if value:
            text.append(f"{label:>9}: ", style="bold")
            text.append(neutralise(value) + "\n")
    if evidence_lines:
        text.append(" evidence: ", style="bold")
        text.append(
            "\n           ".join(neutralise(e) for e in evidence_lines)
            + "\n           (Enter or e on the finding jumps there)\n"
        )
    return text


UNIT_SUFFIXES = {
    "_tok_s": "tok/s",  # before "_s": decode_single_stream_tok_s is a rate, not seconds
    "_mib": "MiB",
    "_gib": "GiB",
    "_mb": "MB",
    "_kb": "kB",
    "_bytes": "B",
    "_b": "B",
    "_s": "s",
    "_ms": "ms",
    "_us": "µs",
    "_w": "W",
    "_mhz": "MHz",
    "_ghz": "GHz",
    "_pct": "%",
    "_percent": "%",
    "_gts": "GT/s",
    "_c": "°C",
}
"""Fact-name suffix -> unit, so `max_power_w: 600` reads "600 W"."""


def fact_value(name: str, value: object, limit: int = 120) -> str:
    """A fact's value for a table cell: scalars with their unit, collections summarised in one line."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        unit = next((u for suffix, u in UNIT_SUFFIXES.items() if name.endswith(suffix)), "")
        return f"{value} {unit}".strip()
    if isinstance(value, str):
        text = value
    elif isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value):
        text = ", ".join(str(v) for v in value) if value else "(none)"
    elif isinstance(value, (list, dict)):
        kind = "item" if isinstance(value, list) else "key"
        text = f"{len(value)} {kind}(s): " + json.dumps(value, default=str, ensure_ascii=False)
    else:
        text = str(value)
    text = neutralise(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def fact_source(value: object, records: Sequence[CommandRecord]) -> str:
    """The command whose output shows this value (first one that contains it), or "derived"."""
    if value is None or isinstance(value, (bool, list, dict)) or value == "":
        return "derived"
    needle = str(value)
    if len(needle) < 2:
        return "derived"
    return next((r.command_id for r in records if needle in r.stdout), "derived")


def field_sources(probe_id: str) -> Mapping[str, tuple[str, ...]]:
    """The probe's fact -> sources table (probes/<id>/extract.py FIELD_SOURCES), {} for an unknown probe."""
    try:
        module = importlib.import_module(f"gpuaudit.probes.{probe_id}.extract")
    except ImportError:
        return {}
    table = getattr(module, "FIELD_SOURCES", {})
    return table if isinstance(table, Mapping) else {}


def declared_source(sources: Sequence[str], records: Sequence[CommandRecord]) -> str | None:
    """The first of a fact's declared sources that answered on this target (else the first recorded one)."""
    present = {r.command_id: r for r in records}
    answered = [c for c in sources if c in present and present[c].ok]
    recorded = [c for c in sources if c in present]
    first = answered or recorded
    return first[0] if first else None


def facts_rows(
    facts: Mapping[str, Mapping[str, object]],
    records: Sequence[CommandRecord],
    probe_id: str | None = None,
) -> list[tuple[str, str, str, str]]:
    """(target, fact, value with unit, seen in) for the Facts table, one row per top-level fact. "Seen in" is
    the fact's provenance (the probe's FIELD_SOURCES); a guess from the value only for a fact not in it."""
    table = field_sources(probe_id) if probe_id else {}
    rows = []
    for role, data in facts.items():
        mine = [r for r in records if r.target == role]
        for name, value in data.items():
            if name in table:
                source = declared_source(table[name], mine) or (
                    "derived" if not table[name] else "-"
                )
            else:
                source = fact_source(value, mine)
            rows.append((role, name, fact_value(name, value), source))
    return rows


def facts_text(facts: Mapping[str, Mapping[str, object]]) -> Text:
    """Each target's facts as indented JSON (neutralised): the whole structure, for the `j` toggle."""
    text = Text()
    for role, data in facts.items():
        text.append(f"{role}\n", style="bold underline")
        text.append(
            neutralise(json.dumps(data, indent=2, default=str, ensure_ascii=False)) + "\n\n"
        )
    return text or Text("no facts", style="dim")


def record_cells(rec: CommandRecord) -> tuple[Text, ...]:
    """Commands-table row: target, command id, exit, duration, flags."""
    exit_ = "-" if rec.exit_status is None else str(rec.exit_status)
    flags = [
        w
        for w, on in (
            ("timed out", rec.timed_out),
            ("truncated", rec.truncated),
            ("needs root", rec.needs_root and bool(rec.error)),
        )
        if on
    ]
    if rec.error and not flags:
        flags.append(neutralise(rec.error)[:40])
    return (
        Text(rec.target),
        Text(neutralise(rec.command_id)),
        Text(exit_, justify="right"),
        Text(format_duration(rec.duration_s), justify="right"),
        Text(", ".join(flags)),
    )


def format_duration(seconds: float) -> str:
    """ "0.12 s", "12.3 s", "2m05s": the unit always shows, in five or six cells."""
    if seconds < 10:
        return f"{seconds:.2f} s"
    return f"{seconds:.1f} s" if seconds < 60 else format_elapsed(seconds)


def record_output(rec: CommandRecord) -> str:
    """Plain, neutralised text for the raw-output viewer: the command line, its status, stdout, stderr."""
    status = (
        "timed out"
        if rec.timed_out
        else f"exit {rec.exit_status}"
        if rec.exit_status is not None
        else "no exit status"
    )
    head = [
        f"$ {rec.executed or rec.command}",
        f"# {rec.target} · {rec.command_id} · {status} · {rec.duration_s:.3f}s"
        + (" · TRUNCATED" if rec.truncated else "")
        + (f" · {rec.error}" if rec.error else ""),
    ]
    body = [
        *head,
        STDOUT_MARK,
        rec.stdout.rstrip("\n") or "(empty)",
        "── stderr ──",
        rec.stderr.rstrip("\n") or "(empty)",
    ]
    return neutralise("\n".join(body))


ROOFLINE_PENDING = "roofline pending: the audit is still reading the engine, the model and the GPUs"


def roofline_pending(width: int | None = None) -> Text:
    """The roofline strip while the audit is still reading its inputs (no figure yet), cut to `width`.

    Here, not in tui/views/roofline_view.py, because the dashboard's first frame shows it: that module loads the
    engine's roofline (its parsers and models), which the first frame must not wait for (issue 30)."""
    line = Text("… ")
    line.append(ROOFLINE_PENDING, style="dim")
    if width:
        line.truncate(width, overflow="ellipsis")
    return line


def not_checked(run: AuditRun) -> list[Finding]:
    """Unknown findings, except the ones that only repeat "target unreachable" (the header says it once)."""
    gone = unreachable_roles(run)
    return [
        f
        for f in run.findings
        if f.severity == Severity.UNKNOWN and not (f.targets and set(f.targets) <= set(gone))
    ]


def not_checked_text(run: AuditRun, palette: Palette = PLAIN) -> Text:
    """What couldn't be checked, with the reason: unreachable targets, failed probes, unknown findings."""
    text = Text("Not checked\n", style="bold underline")
    gone = unreachable_roles(run)
    failed = [p for p in run.probes if p.status == "failed" and not gone]
    unknown = not_checked(run)
    for role, why in gone.items():
        text.append(f"  ✖ target {role} unreachable: {neutralise(why)} (none of its checks ran)\n")
    for p in failed:
        text.append(f"  ✖ probe {p.probe_id} failed: {neutralise(p.error or 'unknown error')}\n")
    for f in unknown:
        text.append("  ")
        text.append_text(sev_text(f.severity, palette))
        text.append(f" {f.id} ({', '.join(f.targets) or '-'}): ", style="bold")
        text.append(neutralise(f.observed or f.title) + "\n")
    if not (gone or failed or unknown):
        text.append("  everything was checked\n", style="dim")
    return text


_TOKEN = re.compile(r"[A-Za-z_][\w.-]{2,}|\d+(?:\.\d+)*")
_STOP = {
    "the",
    "and",
    "with",
    "not",
    "on",
    "for",
    "gpu",
    "gpus",
    "from",
    "than",
    "are",
    "was",
    "none",
    "all",
    "any",
    "cpu",
    "cpus",
    "host",
    "container",
    "enabled",
    "disabled",
    "expected",
    "bytes",
}


STDOUT_MARK = "── stdout ──"


def stdout_row(text: str, line: int, lines: Sequence[str] | None = None) -> int | None:
    """The viewer row of stdout line `line` in `record_output`'s text (None when it has no stdout section).
    `lines`: the text already split (the viewer's), not split again."""
    rows = text.split("\n") if lines is None else lines
    start = next((n for n, r in enumerate(rows) if r == STDOUT_MARK), None)
    if start is None or start + 1 + line >= len(rows):
        return None
    return start + 1 + line


def evidence_row(text: str, finding: Finding, lines: Sequence[str] | None = None) -> int | None:
    """The line of a raw output that best shows a finding: the one holding most of the words and numbers
    of its observed value (lspci's `DevCtl ... MaxReadReq 512 bytes` for "MaxReadReq 512 B on 8 GPUs"); the
    first of equals. `lines`: the text already split (the viewer's), not split again."""
    tokens = {t.lower().rstrip(".") for t in _TOKEN.findall(finding.observed)} - _STOP
    if not tokens:
        return None
    rows = text.split("\n") if lines is None else lines
    hit = re.compile("|".join(re.escape(t) for t in sorted(tokens, key=len, reverse=True)))
    best, best_score = None, 0.0
    # a line's score depends on its text alone: each distinct line is scored once, in the order of its first
    # row (a 10 MB output repeats its lines: lspci's 138k rows hold ~2k distinct ones); only lines holding a
    # token can score
    for raw in dict.fromkeys(rows):
        line = raw.lower()
        if hit.search(line) is None:
            continue
        words = set(_TOKEN.findall(line))
        score = sum(len(t) if t in words else 0.5 * len(t) if t in line else 0 for t in tokens)
        if score > best_score:
            best, best_score = raw, score
    return None if best is None else rows.index(best)
