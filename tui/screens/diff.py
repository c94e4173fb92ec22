"""SnapshotDiffScreen: the `gpuaudit-tui diff` report in the TUI, changed probes listed on the left."""

from __future__ import annotations

from gpuaudit.probes.core.models import Severity
from gpuaudit.snapshots.diff import ProbeDiff, SnapshotDiff, diff_snapshots
from gpuaudit.snapshots.schema import Snapshot
from gpuaudit.tui.views.diff_report import (
    KIND_MARK,
    SEVERITY_STYLE,
    SeverityStyles,
    header,
    probe_block,
    summary_line,
)
from gpuaudit.tui.views.roofline_view import roofline_change_line
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

_WORST_KIND = ("new", "severity", "resolved", "observed", "added", "removed")
_STYLED_KINDS = ("new", "severity", "resolved")
"""The kinds that colour a probe's list entry (its worst one wins), in KIND_MARK's colour."""


def without_ok_churn(diff: SnapshotDiff) -> SnapshotDiff:
    """Drop `observed` changes of a check that is ok on both sides (a new pid, a reworded ok): not a change
    anyone acts on. Counted in `hidden`; a probe left with nothing else drops out of the list."""
    probes, hidden = [], diff.hidden
    for pd in diff.probes:
        kept = [
            f
            for f in pd.findings
            if not (f.kind == "observed" and f.old_severity == f.new_severity == Severity.OK)
        ]
        hidden += len(pd.findings) - len(kept)
        pd = pd.model_copy(update={"findings": kept})
        if pd.changed:
            probes.append(pd)
    return diff.model_copy(update={"probes": probes, "hidden": hidden})


def probe_label(pd: ProbeDiff) -> Text:
    """ "✗ PCIe  2 new · 3 facts" — the list entry of one changed probe, coloured by its worst change."""
    kinds = [f.kind for f in pd.findings]
    style = next((KIND_MARK[k][1] for k in _STYLED_KINDS if k in kinds), "")
    parts = [f"{kinds.count(k)} {k}" for k in _WORST_KIND if k in kinds]
    if pd.facts:
        parts.append(f"{len(pd.facts)} facts")
    if pd.raw:
        parts.append(f"{len(pd.raw)} raw")
    t = Text(pd.title, style=style or "bold")
    t.append("  " + " · ".join(parts), style="dim")
    return t


class SnapshotDiffScreen(Screen[None]):
    """What changed from `old` to `new`: header, summary, one block per changed probe."""

    DEFAULT_CSS = """
    SnapshotDiffScreen #diff-header { height: auto; padding: 0 1; border-bottom: solid $primary; }
    SnapshotDiffScreen #diff-probes { width: 30%; max-width: 38; height: 1fr; }
    SnapshotDiffScreen #diff-body { height: 1fr; padding: 0 1; }
    """
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("v", "toggle_raw", "View raw diffs"),
    ]
    """`v`, not `r`: everywhere else `r` re-runs a probe."""

    def __init__(
        self, old: Snapshot, new: Snapshot, palette: SeverityStyles = SEVERITY_STYLE
    ) -> None:
        super().__init__(id="snapshot-diff")
        self.old, self.new = old, new
        self.palette = palette
        """Severity styles: the app passes its theme palette."""
        self.show_raw = False
        self.diff: SnapshotDiff = without_ok_churn(diff_snapshots(old, new))
        self._with_raw: SnapshotDiff | None = None
        """Computed on the first `r`: unified diffs of big outputs cost time the first view need not pay."""

    def head(self) -> Text:
        head = header(self.diff)
        head.append_text(summary_line(self.diff))
        if (
            self.diff.roofline is not None
        ):  # the decode speed before -> after (e.g. an upgrade's effect)
            head.rstrip()
            head.append("\n")
            head.append_text(roofline_change_line(self.diff.roofline, self.palette))
        return self._compact(head)

    def _compact(self, head: Text) -> Text:
        """Small terminals (80x24): each header line cut to the width instead of wrapped, so the header takes
        7 rows, not 13, and the changes keep the rest of the screen."""
        size = self.app.size if self.is_attached else None
        if size is None or (size.width >= 100 and size.height >= 34):
            return head
        width = max(20, size.width - 2)
        lines = head.split("\n", allow_blank=False)
        for line in lines:
            line.truncate(width, overflow="ellipsis")
        return Text("\n").join(lines)

    def on_resize(self) -> None:
        self.query_one("#diff-header", Static).update(self.head())

    def rename_new(self, name: str) -> None:
        """B was just saved under `name`: say so in the header."""
        self.new = self.new.model_copy(update={"name": name})
        self.diff = self.diff.model_copy(
            update={"new": self.diff.new.model_copy(update={"name": name})}
        )
        self.query_one("#diff-header", Static).update(self.head())

    def compose(self) -> ComposeResult:
        yield Static(self.head(), id="diff-header")
        with Horizontal():
            yield OptionList(
                *[Option(probe_label(pd), id=pd.probe_id) for pd in self.diff.probes],
                id="diff-probes",
            )
            with VerticalScroll(id="diff-body"):
                for pd in self.diff.probes:
                    yield Static(
                        probe_block(pd, palette=self.palette),
                        id=f"diff-{pd.probe_id}",
                        classes="diff-probe",
                    )
                if not self.diff.probes:
                    yield Static(Text("No probe changed.", style="green"))
        yield Footer(compact=True)

    @property
    def changed_probes(self) -> list[str]:
        return [pd.probe_id for pd in self.diff.probes]

    @on(OptionList.OptionHighlighted, "#diff-probes")
    def _jump(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id:
            self.query_one(f"#diff-{event.option.id}", Static).scroll_visible(
                top=True, animate=False
            )

    def action_toggle_raw(self) -> None:
        """Show or hide the unified diffs of the raw outputs that differ."""
        self.show_raw = not self.show_raw
        shown = self.diff
        if self.show_raw:
            if self._with_raw is None:
                self._with_raw = without_ok_churn(diff_snapshots(self.old, self.new, raw_diff=True))
            shown = self._with_raw
        for pd in shown.probes:
            block = probe_block(pd, show_unified=self.show_raw, palette=self.palette)
            self.query_one(f"#diff-{pd.probe_id}", Static).update(block)
