"""The decode roofline (probes.core.roofline) as rich Text: the one-line strip and the drill-down's section.

Pure (no Textual): a Roofline in, Text out. Figures come from the engine's `Roofline` only; this module never
computes a bound. Strings that came from a target (model paths, engine arguments) go through `neutralise()`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gpuaudit.probes.core.models import AuditRun, Severity
from gpuaudit.probes.core.roofline.bounds import BOUND_LABELS
from gpuaudit.probes.core.roofline.report import Roofline, roofline_for_run, strip_text
from gpuaudit.tui.views.render import (
    PLAIN,
    SEV_ICON,
    Palette,
    neutralise,
    roofline_pending,
    sev_text,
)
from rich.console import Group
from rich.table import Table
from rich.text import Text

if (
    TYPE_CHECKING
):  # an annotation only: snapshots.diff loads the probe catalogue, not needed for the strip
    from gpuaudit.snapshots.diff import RooflineChange

REALISTIC_ORDER = ("comm_aware", "tp_aware_eta", "tp_aware")
"""The most realistic bound first: how far measured is from it colours the strip."""
NEAR, FAR = 0.5, 0.2
"""Measured ÷ the most realistic bound: ≥ NEAR is near physics (the best published single-stream runs reach
about half the TP-aware bound, ROOFLINE.md), below FAR the gap dwarfs any tuning (PROBES.md §13.5's 10–30×)."""


def run_key(run: AuditRun) -> tuple[object, ...]:
    """What the roofline reads from a run: the records and the findings. Equal keys give equal rooflines
    (records only grow during a run, and a re-run passes through `running`), so the key guards a cache. A running
    probe's records are left out: recomputing on each of a live audit's ~150 commands would cost the UI ~3 s;
    its start and its end are enough."""
    return (
        run.started_at,
        tuple(
            (
                p.probe_id,
                p.status,
                None if p.status == "running" else len(p.records),
                tuple((f.id, f.severity) for f in p.findings),
            )
            for p in run.probes
        ),
    )


_cache: tuple[tuple[object, ...], Roofline] | None = None


def roofline_of(run: AuditRun) -> Roofline:
    """The run's roofline, recomputed only when what it reads changed (a live audit changes the run ~100 times)."""
    global _cache
    key = run_key(run)
    if _cache is None or _cache[0] != key:
        try:
            rf = roofline_for_run(run)
        except (
            Exception
        ) as exc:  # an engine bug must not take the dashboard down; say so instead of a figure
            rf = Roofline(missing=[f"roofline error: {exc.__class__.__name__}: {exc}"])
            rf.strip = strip_text(rf)
        _cache = (key, rf)
    return _cache[1]


def clear_cache() -> None:
    """Forget the cached roofline (tests that swap the engine's function)."""
    global _cache
    _cache = None


def realistic_ratio(rf: Roofline) -> float | None:
    """Measured ÷ the most realistic bound present (None when either side is missing)."""
    return next((rf.ratios[k] for k in REALISTIC_ORDER if k in rf.ratios), None)


def level(rf: Roofline) -> Severity:
    """unknown (no bound) · info (a bound, no measured speed) · ok / warning / critical by measured ÷ bound."""
    if not rf.bounds:
        return Severity.UNKNOWN
    ratio = realistic_ratio(rf)
    if ratio is None:
        return Severity.INFO
    return Severity.OK if ratio >= NEAR else Severity.WARNING if ratio >= FAR else Severity.CRITICAL


def strip_line(
    rf: Roofline,
    palette: Palette = PLAIN,
    width: int | None = None,
    hint: str = "",
    pending: bool = False,
) -> Text:
    """ "✖ roofline  decode 10.1 tok/s · bound 98–195 tok/s · 5–10% of physics", cut to `width` with an ellipsis.

    `hint` (e.g. "p: how") is added only when it fits whole; the figures are never cut for it. `pending`: the
    audit is still running, so an unknown roofline is not yet a missing input.
    """
    sev = level(rf)
    if pending and sev == Severity.UNKNOWN:
        line = roofline_pending()
    else:
        line = Text(f"{SEV_ICON[sev]} ", style=palette.get(sev, ""))
        strip = neutralise(rf.strip or strip_text(rf))
        if not strip.startswith("roofline"):
            line.append("roofline  ", style="bold")
        line.append(strip, style=palette.get(sev, "") if sev != Severity.INFO else "")
    if hint and (width is None or line.cell_len + len(hint) + 4 <= width):
        line.append(f"  ·  {hint}", style="dim")
    if width:
        line.truncate(width, overflow="ellipsis")
    return line


def _table(*columns: str) -> Table:
    table = Table(
        *columns, box=None, show_header=False, pad_edge=False, padding=(0, 2, 0, 0), expand=False
    )
    table.columns[-1].overflow = "fold"
    return table


def _heading(title: str) -> Text:
    return Text(f"\n{title}", style="bold underline")


def roofline_summary(rf: Roofline, palette: Palette = PLAIN) -> Text:
    """The strip, the bounds with measured ÷ each, measured and its source, the unexplained time per token."""
    text = strip_line(rf, palette)
    text.append("\n")
    if not rf.bounds:
        text.append(
            "No bound without every input: nothing is guessed. What is missing is listed below.\n",
            style="dim",
        )
        return text
    for key, value in rf.bounds.items():
        text.append(f"  {BOUND_LABELS.get(key, key):<28}{value:>5.0f} tok/s")
        if key in rf.ratios:
            text.append(f"  measured is {100 * rf.ratios[key]:.1f}%", style="dim")
        text.append("\n")
    if rf.measured_tok_s is not None:
        text.append("  measured ", style="bold")
        text.append(f"{rf.measured_tok_s:.1f} tok/s", style=palette.get(level(rf), ""))
        text.append(f" · {neutralise(rf.measured_source or 'source not recorded')}\n", style="dim")
    else:
        text.append("  measured: not available (no single-stream decode log line)\n", style="dim")
    if rf.speculative_accept_len is not None:
        text.append(
            f"  speculative decoding: {rf.speculative_accept_len:.2f} accepted tokens per step\n"
        )
    if rf.unexplained_ms_per_token is not None:
        text.append("  unexplained ", style="bold")
        text.append(f"{rf.unexplained_ms_per_token:.1f} ms per token")
        text.append(" (measured time per token minus the all-reduce-aware bound's)\n", style="dim")
    return text


def explanation_line(e: dict[str, str], palette: Palette = PLAIN) -> Text:
    """One finding that plausibly explains the gap: "✖ CRIT CUDA graphs disabled …  python.cuda_graphs"."""
    try:
        sev = Severity(e.get("severity", "unknown"))
    except ValueError:
        sev = Severity.UNKNOWN
    return Text.assemble(
        sev_text(sev, palette), " ", neutralise(e.get("title", "")), (f"  {e.get('id', '')}", "dim")
    )


def explanations_heading(rf: Roofline) -> Text:
    if not rf.explanations:
        return Text(
            "No finding at warning or worse among those that usually explain a gap (docs/ROOFLINE-METHOD.md §5).",
            style="dim",
        )
    gap = "the gap" if rf.ratios else "a slow decode"  # no measured ÷ bound: no gap to explain yet
    return Text.assemble(
        (f"Findings that plausibly explain {gap}", "bold underline"),
        (", in the order to check them (Tab, then Enter opens one):", "dim"),
    )


def roofline_detail(rf: Roofline) -> Group:
    """The published reference row, every input, every step (label, value, how) and the missing inputs."""
    parts: list[Text | Table] = []
    if rf.reference:
        ref = rf.reference
        mtp = f", {ref['tok_s_mtp']} tok/s with MTP" if ref.get("tok_s_mtp") else ""
        parts += [
            _heading("Published on the same hardware"),
            Text(
                f"{ref.get('tok_s')} tok/s single stream{mtp} · {neutralise(str(ref.get('setup', '')))}\n"
                f"source: {neutralise(str(ref.get('source', '')))}"
            ),
        ]
    if rf.inputs:
        table = _table("input", "value")
        for label, value in rf.inputs.items():
            table.add_row(Text(neutralise(label), style="bold"), Text(neutralise(value)))
        parts += [_heading("Inputs"), table]
    if rf.steps:
        table = _table("step", "value", "how")
        for step in rf.steps:
            table.add_row(
                Text(neutralise(step.label), style="bold"),
                Text(neutralise(step.value), justify="right"),
                Text(neutralise(step.how), style="dim"),
            )
        parts += [_heading("Steps"), table]
    if rf.missing:
        parts += [
            _heading("Missing inputs (no figure is guessed)"),
            Text("\n".join(f"• {neutralise(m)}" for m in rf.missing)),
        ]
    return Group(*parts)


def roofline_change_line(change: RooflineChange, palette: Palette = PLAIN) -> Text:
    """ "roofline  decode 10.1 tok/s · … → decode 48.0 tok/s · …": a faster decode green, a slower one red."""

    def side(strip: str) -> str:
        return neutralise(strip.removeprefix("roofline ") or "(not in this snapshot)")

    text = Text("roofline  ", style="bold")
    text.append(side(change.old_strip), style="dim")
    text.append("  →  ")
    faster = (change.old_measured or 0) < (change.new_measured or 0)
    slower = change.old_measured is not None and (change.new_measured or 0) < change.old_measured
    style = (
        palette.get(Severity.OK, "")
        if faster
        else palette.get(Severity.CRITICAL, "")
        if slower
        else ""
    )
    text.append(side(change.new_strip), style=style)
    if change.bounds_changed:
        text.append("  (bounds changed: model, GPUs or layout differ)", style="italic")
    return text


def findings_of(run: AuditRun, ids: Sequence[str]) -> dict[str, str]:
    """finding id -> its probe, for the explaining findings that exist in the run (to open them)."""
    return {f.id: f.probe for f in run.findings if f.id in ids}
