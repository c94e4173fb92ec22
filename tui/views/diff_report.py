"""Rich text of a SnapshotDiff: the same report for `gpuaudit-tui diff` and the TUI's diff screen."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gpuaudit.probes.core.models import Severity
from gpuaudit.probes.core.text import neutralise
from gpuaudit.snapshots.diff import FactChange, FindingChange, ProbeDiff, RawChange, SnapshotDiff
from rich.console import Console
from rich.text import Text

SeverityStyles = Mapping[Severity, str]
SEVERITY_STYLE: SeverityStyles = {
    Severity.CRITICAL: "bold red",
    Severity.WARNING: "yellow",
    Severity.UNKNOWN: "magenta",
    Severity.INFO: "cyan",
    Severity.OK: "green",
    Severity.NA: "dim",
}
"""The CLI's colours; the TUI passes its theme palette (tui.views.render.palette_from) instead."""
KIND_MARK = {
    "resolved": ("✓ resolved", "green"),
    "new": ("✗ new", "bold red"),
    "severity": ("~ severity", "yellow"),
    "observed": ("~ observed", "cyan"),
    "added": ("+ added", "cyan"),
    "removed": ("- removed", "dim"),
}
ABSENT = "(absent)"


def _value(v: Any, present: bool) -> str:
    if not present:
        return ABSENT
    text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
    text = neutralise(text)
    return text if len(text) <= 120 else text[:117] + "..."


def _sev(sev: Severity | None, palette: SeverityStyles = SEVERITY_STYLE) -> Text:
    if sev is None:
        return Text(ABSENT, style="dim")
    return Text(sev.value, style=palette.get(sev, ""))


def header(diff: SnapshotDiff) -> Text:
    t = Text()
    for label, side in (("A", diff.old), ("B", diff.new)):
        t.append(f"{label}: ", style="bold")
        t.append(
            neutralise(
                f"{side.name or '(unnamed)'}  {side.created_at[:19].replace('T', ' ')}  [{side.mode}]"
            )
            + "\n"
        )
        if side.note:
            t.append(f"   {neutralise(side.note)}\n", style="italic yellow")
    if diff.releases_differ:
        t.append(
            neutralise(
                f"checks of {diff.old.tool_version} (A) vs {diff.new.tool_version} (B): "
                "a difference may be the checks' alone"
            )
            + "\n",
            style="dim",
        )
    for tc in diff.targets:
        t.append(
            neutralise(f"target {tc.role}: {tc.old or ABSENT} → {tc.new or ABSENT}"),
            style="bold red" if tc.structural else "dim",
        )
        t.append("" if tc.structural else "  (matched by role)", style="dim")
        t.append("\n")
    return t


def hidden_note(diff: SnapshotDiff) -> str:
    """What the default view left out, and how to see it ("" when nothing was)."""
    if not diff.hidden:
        return ""
    return (
        f"{diff.hidden} change(s) of volatile facts, timings or raw text hidden "
        "(--all-facts shows them, --raw the raw outputs)"
    )


def summary_line(diff: SnapshotDiff) -> Text:
    note = hidden_note(diff)
    if diff.identical:
        t = Text("identical: no facts, findings or raw outputs changed", style="green")
        if note:
            t.append(f"\n{note}", style="dim")
        return t
    c = diff.counts()
    parts = [f"{len(diff.probes)} probe(s) changed"]
    parts += [
        f"{c[k]} {k}"
        for k in ("resolved", "new", "severity", "observed", "added", "removed")
        if c.get(k)
    ]
    parts += [f"{c['facts']} fact(s)", f"{c['raw']} raw output(s)"]
    t = Text(" · ".join(parts), style="bold")
    if note:
        t.append(f"\n{note}", style="dim")
    return t


def finding_line(fc: FindingChange, palette: SeverityStyles = SEVERITY_STYLE) -> Text:
    mark, style = KIND_MARK[fc.kind]
    t = Text("  ")
    t.append(f"{mark:<11}", style=style)
    t.append(f" {neutralise(fc.id)}", style="bold")
    t.append("  ")
    t.append_text(_sev(fc.old_severity, palette))
    t.append(" → ")
    t.append_text(_sev(fc.new_severity, palette))
    t.append(f"  {neutralise(fc.title)}")
    if fc.old_observed != fc.new_observed:
        t.append(
            f"\n      observed: {neutralise(fc.old_observed) or ABSENT} → {neutralise(fc.new_observed) or ABSENT}",
            style="dim",
        )
    return t


def fact_line(fc: FactChange) -> Text:
    t = Text(f"  {neutralise(fc.path)}", style="bold")
    t.append(f" ({neutralise(fc.role)})", style="dim")
    t.append(f": {_value(fc.old, fc.old_present)}", style="red")
    t.append(" → ")
    t.append(_value(fc.new, fc.new_present), style="green")
    return t


def raw_line(rc: RawChange, show_unified: bool) -> Text:
    t = Text(neutralise(f"  {rc.role}/{rc.command_id}"), style="bold")
    if rc.kind == "changed":
        t.append(f"  differs in {', '.join(rc.fields)}")
        if rc.old_status != rc.new_status:
            t.append(neutralise(f"  ({rc.old_status} → {rc.new_status})"), style="dim")
    else:
        t.append(neutralise(f"  {rc.kind}  ({rc.old_status or rc.new_status})"), style="dim")
    if show_unified and rc.unified:
        for line in neutralise(rc.unified).rstrip("\n").split("\n"):
            style = (
                "green"
                if line.startswith("+")
                else "red"
                if line.startswith("-")
                else "cyan"
                if line.startswith("@@")
                else "dim"
            )
            t.append("\n      " + line, style=style)
    return t


def probe_block(
    pd: ProbeDiff, *, show_unified: bool = False, palette: SeverityStyles = SEVERITY_STYLE
) -> Text:
    t = Text()
    t.append(neutralise(f"{pd.title} ({pd.probe_id})"), style="bold underline")
    if pd.old_status != pd.new_status:
        t.append(
            neutralise(f"  status {pd.old_status or ABSENT} → {pd.new_status or ABSENT}"),
            style="yellow",
        )
    t.append("\n")
    sections: list[tuple[str, list[Text]]] = [
        ("findings", [finding_line(f, palette) for f in pd.findings]),
        ("facts", [fact_line(f) for f in pd.facts]),
        ("raw outputs", [raw_line(r, show_unified) for r in pd.raw]),
    ]
    for title, lines in sections:
        if lines:
            t.append(f" {title}:\n", style="italic")
            for line in lines:
                t.append_text(line)
                t.append("\n")
    return t


def render(
    diff: SnapshotDiff, *, show_unified: bool = False, palette: SeverityStyles = SEVERITY_STYLE
) -> Text:
    """The whole report as one Text (header, summary, one block per changed probe)."""
    t = header(diff)
    t.append_text(summary_line(diff))
    t.append("\n")
    if diff.roofline is not None:
        t.append("\nroofline: ", style="bold")
        t.append(f"{diff.roofline.old_strip or '-'}  →  {diff.roofline.new_strip or '-'}\n")
    for pd in diff.probes:
        t.append("\n")
        t.append_text(probe_block(pd, show_unified=show_unified, palette=palette))
    return t


def print_report(
    diff: SnapshotDiff, *, show_unified: bool = False, console: Console | None = None
) -> None:
    """Print to stdout; Rich decides colour (a terminal, and NO_COLOR unset)."""
    console = console or Console(highlight=False, soft_wrap=True)
    console.print(render(diff, show_unified=show_unified))
