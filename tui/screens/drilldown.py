"""DrilldownScreen: one probe's findings, facts and every command record with its raw output."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gpuaudit.probes.core.judge.plan import evidence_line, fix_commands
from gpuaudit.probes.core.models import AuditRun, CommandRecord, EvidenceRef, Finding, ProbeResult
from gpuaudit.probes.core.roofline.report import Roofline
from gpuaudit.tui.views.render import (
    evidence_row,
    facts_rows,
    finding_detail,
    neutralise,
    pane_subtitle,
    record_cells,
    record_output,
    stdout_row,
    unreachable_roles,
    visible,
)
from gpuaudit.tui.views.roofline_view import (
    explanation_line,
    explanations_heading,
    findings_of,
    roofline_detail,
    roofline_of,
    roofline_summary,
)
from gpuaudit.tui.widgets.command_output import CommandOutput, Prepared, prepare
from gpuaudit.tui.widgets.findings_table import FindingsTable
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.events import Resize
from textual.screen import Screen
from textual.widgets import (
    DataTable,
    Footer,
    Input,
    Label,
    OptionList,
    ProgressBar,
    Static,
    TabbedContent,
    TabPane,
)
from textual.widgets.option_list import Option

if TYPE_CHECKING:
    from gpuaudit.tui.app import GpuAuditApp

NARROW_BELOW = 110
"""Narrower than this, findings and raw output take the whole width in turn (`o` switches)."""
ROOFLINE_PROBE = "python"
"""The probe whose drill-down has the Roofline tab: it reads the engine, the measured side of the roofline."""


def finding_as_text(f: Finding) -> str:
    """A finding as plain text for the clipboard (a ticket, a chat)."""
    lines = [
        f"[{f.severity.value}] {f.title}",
        f"check: {f.id} · on: {', '.join(f.targets) or '-'} · owner: {f.owner or '?'}",
    ]
    lines += [
        f"{label}: {value}"
        for label, value in (
            ("observed", f.observed),
            ("expected", f.expected),
            ("why", f.why),
            ("fix", f.fix),
        )
        if value
    ]
    lines += [f"  $ {c}" for c in fix_commands(f.fix)]
    return neutralise("\n".join(lines))


BIG_OUTPUT = 2_000_000
"""Characters of output above which the drill-down prepares the text in a worker thread (the screen stays live)."""
PROGRESS_AFTER_S = 0.3
"""A big output still loading after this long shows a progress bar (with the "loading N MB" line above it)."""


class DrilldownScreen(Screen[None]):
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("r", "rerun", "Re-run"),
        Binding("slash", "search", "Find", key_display="/"),
        Binding("n", "find_next", "Next match", show=False),
        Binding("N", "find_previous", "Previous match", show=False),
        Binding("e", "evidence", "Evidence"),
        Binding("o", "toggle_side", "Side"),
        Binding("z", "zoom_output", "Zoom", show=False),
        Binding("w", "wrap_output", "Wrap", show=False),
        Binding("c", "copy_finding", "Copy"),
    ]
    app: GpuAuditApp

    def __init__(
        self, probe_id: str, finding_id: str | None = None, tab: str | None = None
    ) -> None:
        super().__init__()  # no fixed id: a drill-down opens another one on top (a finding of another probe)
        self.probe_id = probe_id
        self.finding_id = finding_id
        self.initial_tab = tab
        """"finding", "facts" or "roofline" (python only): the tab shown first."""
        self.explanations: list[str] = []
        """The finding ids of the Roofline tab's list, in its order."""
        self._roofline: Roofline | None = None
        self.records: list[CommandRecord] = []
        self.query_text = ""
        self.shown: CommandRecord | None = None
        self._shown_key: tuple[object, ...] = ()
        self.preparing: CommandRecord | None = None
        """The big record being prepared in the worker thread (None: nothing loading)."""
        self._progress = 0.0
        """How much of `preparing` is prepared (0..1), written by the worker thread, read by a timer."""
        self.output_side = False
        """A narrow screen shows the raw-output side (else the findings side)."""
        self._then: Callable[[], None] | None = None
        """What runs once `preparing` is shown (the evidence jump)."""

    def compose(self) -> ComposeResult:
        yield Static(id="dd-title")
        with Horizontal(id="dd-body"):
            with Vertical(id="dd-left"):
                yield FindingsTable(id="findings")
                with TabbedContent(id="dd-tabs"):
                    with TabPane("Finding", id="tab-finding"):
                        yield VerticalScroll(Static(id="finding-detail"))
                    with TabPane("Facts", id="tab-facts"):
                        facts = DataTable[Text](id="facts", cursor_type="row", zebra_stripes=True)
                        facts.add_columns("on", "fact", "value", "seen in")
                        yield facts
                    if self.probe_id == ROOFLINE_PROBE:
                        with TabPane("Roofline", id="tab-roofline"):
                            with VerticalScroll(id="roofline-scroll"):
                                yield Static(id="roofline-summary")
                                yield Static(id="roofline-explain-title")
                                yield OptionList(id="roofline-findings")
                                yield Static(id="roofline-detail")
            with Vertical(id="dd-right"):
                commands = DataTable[Text](id="commands", cursor_type="row")
                commands.add_columns("on", "command", "exit", "time", "flags")
                yield commands
                with Horizontal(id="search-bar"):
                    yield Input(
                        placeholder="search raw output, any case (Enter: go, then n / N)",
                        id="search",
                        select_on_focus=False,
                    )
                    yield Label("", id="search-count")
                yield CommandOutput(id="output")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self._narrow(self.app.size.width < NARROW_BELOW)
        self.reload()
        self.watch(self.app, "audit_run", self._run_changed, init=False)
        self.watch(self.app, "finding_filter", lambda: self.reload(), init=False)
        table = self.query_one(FindingsTable)
        if self.finding_id is not None:
            index = next((n for n, f in enumerate(table.findings) if f.id == self.finding_id), None)
            if index is not None:
                table.move_cursor(row=index)
                self._show_finding()
        table.focus()
        if self.initial_tab:
            self.show_tab(self.initial_tab)

    def show_tab(self, tab: str) -> None:
        """Switch the left side's tab ("finding", "facts", "roofline"); on a narrow screen, show that side."""
        tabs = self.query_one("#dd-tabs", TabbedContent)
        if not tabs.query(f"#tab-{tab}"):
            return
        tabs.active = f"tab-{tab}"
        self.set_class(tab == "roofline", "-roofline")
        self.show_output_side(False)
        if tab == "roofline":
            self.query_one(
                "#roofline-scroll", VerticalScroll
            ).focus()  # arrows and PageDown read on; Tab: the list

    @on(TabbedContent.TabActivated, "#dd-tabs")
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        """The Roofline tab takes the findings table's room too (its inputs and steps are long)."""
        self.set_class(event.pane.id == "tab-roofline", "-roofline")

    def on_resize(self, event: Resize) -> None:
        self._narrow(event.size.width < NARROW_BELOW)

    def _narrow(self, narrow: bool) -> None:
        self.set_class(narrow, "-narrow")
        self.set_class(narrow and self.output_side, "-show-output")

    def show_output_side(self, output: bool) -> None:
        """Which side a narrow screen shows (`o`, the evidence jump, search, z). The class is set only when narrow:
        on a wide screen both sides show, and a class change restyles every widget of the screen (~0.1 s)."""
        self.output_side = output
        self.set_class(output and self.has_class("-narrow"), "-show-output")

    def _run_changed(self, run: AuditRun) -> None:
        """Reload only when what this screen shows changed: a start elsewhere (or here) changes nothing."""
        if self.shown_key(run.probe(self.probe_id)) != self._shown_key:
            self.reload()
        elif self.probe_id == ROOFLINE_PROBE and roofline_of(run) is not self._roofline:
            self.show_roofline()  # other probes' records and findings feed it

    @staticmethod
    def shown_key(result: ProbeResult | None) -> tuple[object, ...]:
        if result is None:
            return ()
        return (
            result.status,
            len(result.records),
            result.summary,
            tuple((f.id, f.severity, f.observed) for f in result.findings),
        )

    @property
    def result(self) -> ProbeResult | None:
        return self.app.audit_run.probe(self.probe_id)

    def reload(self) -> None:
        """Re-read this probe from the app's AuditRun (after a re-run or a filter change)."""
        result = self.result
        self._shown_key = self.shown_key(result)
        if result is None:
            return
        palette = self.app.palette
        title = Text.assemble(
            (result.title, "bold"),
            f"  ·  {pane_subtitle(result, self.app.clock())}  ·  ",
            neutralise(result.summary or ""),
        )
        gone = unreachable_roles(self.app.audit_run)
        if gone:
            title.append(
                "\n" + " · ".join(f"{r} not audited: unreachable" for r in gone), style="italic"
            )
        elif result.error:
            title.append(f"\n✖ FAILED: {neutralise(result.error)}")
        self.query_one("#dd-title", Static).update(title)
        self.query_one(FindingsTable).set_findings(
            visible(result.findings, self.app.finding_filter, result), palette
        )
        facts = self.query_one("#facts", DataTable)
        facts.clear()
        for role, name, value, source in facts_rows(result.facts, result.records, self.probe_id):
            facts.add_row(Text(role), Text(name), Text(value), Text(source, style="dim"))
        table = self.query_one("#commands", DataTable)
        row = table.cursor_row
        if [r.command_id for r in result.records] != [
            r.command_id for r in self.records
        ] or not table.row_count:
            table.clear()
            for n, rec in enumerate(result.records):
                table.add_row(*record_cells(rec), key=str(n))
        self.records = list(result.records)
        if self.records:
            self.show_record(min(max(row, 0), len(self.records) - 1))
        else:
            self._stop_loading()
            self.query_one(CommandOutput).show("no commands ran for this probe on any target")
        self._show_finding()
        if self.probe_id == ROOFLINE_PROBE:
            self.show_roofline()

    def show_roofline(self) -> None:
        """Fill the Roofline tab from the app's run: summary, the explaining findings (openable), the details."""
        rf = self._roofline = roofline_of(self.app.audit_run)
        palette = self.app.palette
        self.query_one("#roofline-summary", Static).update(roofline_summary(rf, palette))
        self.query_one("#roofline-explain-title", Static).update(explanations_heading(rf))
        ids = [e["id"] for e in rf.explanations]
        box = self.query_one("#roofline-findings", OptionList)
        if ids != self.explanations or box.option_count != len(ids):
            self.explanations = ids
            box.clear_options()
            box.add_options(
                [Option(explanation_line(e, palette), id=e["id"]) for e in rf.explanations]
            )
        box.display = bool(ids)
        self.query_one("#roofline-detail", Static).update(roofline_detail(rf))

    @on(OptionList.OptionSelected, "#roofline-findings")
    def _explanation_selected(self, event: OptionList.OptionSelected) -> None:
        """Open an explaining finding: here when it is this probe's, else in its own drill-down."""
        fid = event.option.id or ""
        probe = findings_of(self.app.audit_run, [fid]).get(fid)
        if probe is None:
            self.notify(f"{fid} is no longer in this audit", severity="warning")
            return
        if probe != self.probe_id:
            self.app.open_drilldown(probe, fid)
            return
        table = self.query_one(FindingsTable)
        index = next((n for n, f in enumerate(table.findings) if f.id == fid), None)
        if index is None:
            self.notify(
                f"{fid} is hidden by the filter ({self.app.finding_filter.describe()})",
                severity="warning",
            )
            return
        table.move_cursor(row=index)
        self._show_finding()
        self.show_tab("finding")
        table.focus()

    def _show_finding(self) -> None:
        f = self.query_one(FindingsTable).current
        detail = self.query_one("#finding-detail", Static)
        if f is None:
            detail.update(Text("no findings match the filter", style="dim"))
            return
        detail.update(
            finding_detail(
                f, self.app.palette, [evidence_line(self.app.audit_run, e) for e in f.evidence]
            )
        )

    def show_record(self, index: int, then: Callable[[], None] | None = None) -> None:
        table = self.query_one("#commands", DataTable)
        if table.cursor_row != index:
            table.move_cursor(row=index)
        self._load(index, then)

    def _load(self, index: int, then: Callable[[], None] | None = None) -> None:
        """Show a record's output; `then` runs once it is shown. A big one says "loading N MB…" at once and is
        prepared in a thread (a progress bar after PROGRESS_AFTER_S), so opening it never looks like a hang."""
        record = self.records[index]
        if self.shown is record:  # a highlight event after move_cursor must not reload 10 MB
            if self.preparing is record:
                self._then = then or self._then  # runs once the text is shown
            elif then is not None:
                then()
            return
        self.shown = record
        output = self.query_one(CommandOutput)
        size = len(record.stdout) + len(record.stderr)
        if size < BIG_OUTPUT:
            self._stop_loading()
            output.show(record_output(record))
            if then is not None:
                then()
            return
        output.show(f"loading {record.command_id}: {size / 1e6:.1f} MB of output…")
        self.preparing, self._progress, self._then = record, 0.0, then
        self.set_timer(PROGRESS_AFTER_S, lambda: self._show_progress(record))
        self._prepare(record)

    def _stop_loading(self) -> None:
        self.preparing, self._then = None, None
        self.query("#output-progress").remove()

    @work(thread=True, exclusive=True, group="output", exit_on_error=False)
    def _prepare(self, record: CommandRecord) -> None:
        """In a thread: the viewer's text of a big record (neutralised, tabs expanded, split), with progress."""

        def progress(fraction: float) -> None:
            self._progress = 0.25 + 0.75 * fraction

        text = record_output(record)
        self._progress = 0.25
        prepared = prepare(text, progress)
        self._progress = 1.0
        if self.preparing is record:  # not replaced by another record meanwhile
            self.app.call_from_thread(self._prepared, record, prepared)

    def _prepared(self, record: CommandRecord, prepared: Prepared) -> None:
        if self.preparing is not record or self.shown is not record:
            return
        then = self._then
        self._stop_loading()
        self.query_one(CommandOutput).show_prepared(prepared)
        if then is not None:
            then()

    def _show_progress(self, record: CommandRecord) -> None:
        """Still loading after PROGRESS_AFTER_S: a progress bar, updated until the text is shown."""
        if self.preparing is not record:
            return
        shown = self.query("#output-progress")
        if shown:
            bar = shown.first(ProgressBar)
        else:  # mounted only while a big output loads: a drill-down never pays for it otherwise
            bar = ProgressBar(total=1.0, show_eta=False, id="output-progress")
            self.query_one("#dd-right").mount(bar, before=self.query_one(CommandOutput))
        bar.update(progress=self._progress)
        self.set_timer(0.1, lambda: self._show_progress(record))

    def record_index(self, ref: EvidenceRef) -> int | None:
        return next(
            (
                n
                for n, r in enumerate(self.records)
                if r.target == ref.target and r.command_id == ref.command_id
            ),
            None,
        )

    @on(DataTable.RowHighlighted, "#findings")
    def _finding_highlighted(self) -> None:
        self._show_finding()

    @on(DataTable.RowSelected, "#findings")
    def _finding_selected(self) -> None:
        self.action_evidence()

    @on(DataTable.RowHighlighted, "#commands")
    def _record_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if 0 <= event.cursor_row < len(self.records):
            self._load(event.cursor_row)

    def action_evidence(self) -> None:
        """Jump from the highlighted finding to its evidence and scroll to the line that shows it."""
        f = self.query_one(FindingsTable).current
        if f is None or not f.evidence:
            self.notify("this finding names no evidence", severity="warning")
            return
        index = self.record_index(f.evidence[0])
        if index is None:
            self.notify(
                f"no record for {f.evidence[0].target}:{f.evidence[0].command_id}",
                severity="warning",
            )
            return
        output = self.query_one(CommandOutput)
        self.show_output_side(True)
        output.focus()

        def jump() -> None:
            # the line the parser read the value from, when the finding names it
            line = f.evidence[0].line
            row = stdout_row(output.text, line, output.lines) if line is not None else None
            if row is None:
                row = evidence_row(output.text, f, output.lines)
            if row is not None:  # after the layout: on a narrow screen the viewer had no size
                output.call_after_refresh(output.goto_line, row)

        self.show_record(index, then=jump)

    def action_toggle_side(self) -> None:
        """On narrow terminals: switch between the findings side and the raw-output side."""
        showing = self.output_side
        self.show_output_side(not showing)
        if showing:
            self.query_one(FindingsTable).focus()
        else:
            self.query_one(CommandOutput).focus()

    def action_wrap_output(self) -> None:
        """w: soft-wrap long output lines (lspci's capability lines, a JSON blob) or scroll them sideways."""
        out = self.query_one(CommandOutput)
        out.toggle_wrap()
        self.app.clear_notifications()  # one toast, never a stack
        self.notify(f"raw output: {'wrapped' if out.wrap else 'not wrapped'} (w)")

    def action_zoom_output(self) -> None:
        """z: the raw output alone on the whole screen (z or Esc again: back to the drill-down)."""
        if self.maximized is not None:
            self.minimize()
            return
        out = self.query_one(CommandOutput)
        self.show_output_side(True)  # narrow terminals: the output side must be the shown one
        self.maximize(out, container=False)
        out.focus()

    def action_copy_finding(self) -> None:
        f = self.query_one(FindingsTable).current
        if f is None:
            return
        self.app.copy_to_clipboard(finding_as_text(f))
        self.notify(f"copied {f.id} (OSC 52)")

    def action_search(self) -> None:
        self.show_output_side(True)
        box = self.query_one("#search", Input)
        self.query_one("#search-bar").add_class("-visible")
        box.focus()
        self.call_after_refresh(box.focus)  # the bar was display: none a moment ago

    @on(Input.Submitted, "#search")
    def _search(self, event: Input.Submitted) -> None:
        self.query_text = event.value
        if self.action_find_next():
            self.query_one(CommandOutput).focus()  # so n / N navigate instead of typing

    def action_find_next(self, backwards: bool = False) -> bool:
        if not self.query_text:
            return False
        output = self.query_one(CommandOutput)
        found = output.find(self.query_text, backwards=backwards)
        current, total = output.match_position(self.query_text)
        self.query_one("#search-count", Label).update(f"{current}/{total}" if found else "0/0")
        if not found:
            self.notify(
                f"not found: {self.query_text}", severity="warning"
            )  # the app neutralises, markup off
        return found

    def action_find_previous(self) -> None:
        self.action_find_next(backwards=True)

    def action_back(self) -> None:
        if self.maximized is not None:  # z's full-screen output: back to the drill-down first
            self.minimize()
            return
        bar = self.query_one("#search-bar")
        if bar.has_class("-visible"):
            bar.remove_class("-visible")
            self.query_one(CommandOutput).focus()
            return
        if self.has_class("-narrow") and self.output_side:
            self.action_toggle_side()
            return
        self.dismiss()

    def action_rerun(self) -> None:
        self.app.rerun([self.probe_id])
