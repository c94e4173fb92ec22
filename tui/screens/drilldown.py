"""DrilldownScreen: one probe's findings, facts and every command record with its raw output."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static, TabbedContent, TabPane

from gpuaudit.probes.core.models import CommandRecord, EvidenceRef, ProbeResult
from gpuaudit.probes.core.plan import evidence_line
from gpuaudit.tui.render import facts_text, finding_detail, neutralise, pane_subtitle, record_cells, record_output, visible
from gpuaudit.tui.widgets.command_output import CommandOutput
from gpuaudit.tui.widgets.findings_table import FindingsTable

if TYPE_CHECKING:
    from gpuaudit.tui.app import GpuAuditApp


class DrilldownScreen(Screen[None]):
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("r", "rerun", "Re-run"),
        Binding("slash", "search", "Search"),
        Binding("n", "find_next", "Next match", show=False),
        Binding("e", "evidence", "Evidence"),
    ]
    app: GpuAuditApp

    def __init__(self, probe_id: str) -> None:
        super().__init__(id="drilldown")
        self.probe_id = probe_id
        self.records: list[CommandRecord] = []
        self.query_text = ""
        self.shown: CommandRecord | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="dd-title")
        with Horizontal(id="dd-body"):
            with Vertical(id="dd-left"):
                yield FindingsTable(id="findings")
                with TabbedContent(id="dd-tabs"):
                    with TabPane("Finding", id="tab-finding"):
                        yield VerticalScroll(Static(id="finding-detail"))
                    with TabPane("Facts", id="tab-facts"):
                        yield VerticalScroll(Static(id="facts"))
            with Vertical(id="dd-right"):
                commands = DataTable[Text](id="commands", cursor_type="row")
                commands.add_columns("on", "command", "exit", "time", "flags")
                yield commands
                yield Input(placeholder="search the raw output (Enter: next, Esc: close)", id="search")
                yield CommandOutput(id="output")
        yield Footer()

    def on_mount(self) -> None:
        self.reload()
        self.query_one(FindingsTable).focus()

    @property
    def result(self) -> ProbeResult | None:
        return self.app.audit_run.probe(self.probe_id)

    def reload(self) -> None:
        """Re-read this probe from the app's AuditRun (after a re-run or a filter change)."""
        result = self.result
        if result is None:
            return
        palette = self.app.palette
        title = Text.assemble((result.title, "bold"), f"  ·  {pane_subtitle(result, self.app.clock())}  ·  ",
                              neutralise(result.summary or ""))
        if result.error:
            title.append(f"\n✖ FAILED: {neutralise(result.error)}")
        self.query_one("#dd-title", Static).update(title)
        self.query_one(FindingsTable).set_findings(visible(result.findings, self.app.min_severity), palette)
        self.query_one("#facts", Static).update(facts_text(result.facts))
        table = self.query_one("#commands", DataTable)
        row = table.cursor_row
        if [r.command_id for r in result.records] != [r.command_id for r in self.records] or not table.row_count:
            table.clear()
            for n, rec in enumerate(result.records):
                table.add_row(*record_cells(rec), key=str(n))
        self.records = list(result.records)
        if self.records:
            self.show_record(min(max(row, 0), len(self.records) - 1))
        else:
            self.query_one(CommandOutput).show("no commands ran for this probe on any target")
        self._show_finding()

    def _show_finding(self) -> None:
        f = self.query_one(FindingsTable).current
        detail = self.query_one("#finding-detail", Static)
        if f is None:
            detail.update(Text("no findings at or above the filter", style="dim"))
            return
        detail.update(finding_detail(f, self.app.palette, [evidence_line(self.app.audit_run, e) for e in f.evidence]))

    def show_record(self, index: int) -> None:
        table = self.query_one("#commands", DataTable)
        if table.cursor_row != index:
            table.move_cursor(row=index)
        self._load(index)

    def _load(self, index: int) -> None:
        record = self.records[index]
        if self.shown is not record:  # a highlight event after move_cursor must not reload 10 MB
            self.shown = record
            self.query_one(CommandOutput).show(record_output(record))

    def record_index(self, ref: EvidenceRef) -> int | None:
        return next((n for n, r in enumerate(self.records) if r.target == ref.target and r.command_id == ref.command_id), None)

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
        """Jump from the highlighted finding to the command output that is its evidence."""
        f = self.query_one(FindingsTable).current
        if f is None or not f.evidence:
            self.notify("this finding names no evidence", severity="warning")
            return
        index = self.record_index(f.evidence[0])
        if index is None:
            self.notify(f"no record for {f.evidence[0].target}:{f.evidence[0].command_id}", severity="warning")
            return
        self.show_record(index)
        self.query_one(CommandOutput).focus()

    def action_search(self) -> None:
        box = self.query_one("#search", Input)
        box.add_class("-visible")
        box.focus()

    @on(Input.Submitted, "#search")
    def _search(self, event: Input.Submitted) -> None:
        self.query_text = event.value
        self.action_find_next()

    def action_find_next(self) -> None:
        if self.query_text and not self.query_one(CommandOutput).find(self.query_text):
            self.notify(f"not found: {self.query_text}", severity="warning")  # the app neutralises, markup off

    def action_back(self) -> None:
        box = self.query_one("#search", Input)
        if box.has_class("-visible"):
            box.remove_class("-visible")
            self.query_one(CommandOutput).focus()
            return
        self.dismiss()

    def action_rerun(self) -> None:
        self.app.rerun([self.probe_id])
