"""FleetScreen: one row per node (state, worst severity per probe, counts, outlier marks); sort, filter, open.

It renders a `FleetModel` (probes/core/fleet/model.py) and polls its `version`, so a live `--hosts` audit and a
set of saved snapshots look the same. Enter posts `NodeChosen`; the app opens the node's dashboard as a
`NodeDashboardScreen`, the normal dashboard whose Escape comes back here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuaudit.probes.core.fleet.model import (
    PROBE_ABBR,
    PROBES,
    FleetModel,
    NodeRow,
    next_sort,
)
from gpuaudit.probes.core.models import Severity
from gpuaudit.tui.screens.dashboard import DashboardScreen
from gpuaudit.tui.views.render import PLAIN, SEV_ICON, Palette, format_elapsed, neutralise
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.events import Key, Resize
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static

if TYPE_CHECKING:
    from gpuaudit.tui.app import GpuAuditApp

WIDE = 110
"""From this width on, a duration and a note column (first outlier fact or the reason) are shown."""
COUNT_COLUMNS = (
    (Severity.CRITICAL, "critical"),
    (Severity.WARNING, "warning"),
    (Severity.UNKNOWN, "unknown"),
)
SORT_NAMES = {
    "inventory": "inventory order",
    "worst": "worst first",
    "name": "name",
    "state": "state",
    "critical": "✖ criticals",
    "warning": "▲ warnings",
    "unknown": "? unknowns",
    "outliers": "≠ outliers",
    **{p: f"{p} ({PROBE_ABBR[p]})" for p in PROBES},
}
STATE_WORD = {
    "pending": "pending",
    "auditing": "auditing",
    "done": "done",
    "unreachable": "unreachable",
}


def fixed_widths(width: int, longest: int = 26) -> dict[str, int]:
    """Column widths for a terminal width; the node column takes what is left (cells carry their own spacing).

    Wide: the node column fits the `longest` name (12..28) and the note column takes the rest.
    """
    wide = width >= WIDE
    cols = {
        "state": 12 if wide else 9,
        **{p: 3 for p in PROBES},
        "critical": 4,
        "warning": 4,
        "unknown": 4,
        "outliers": 4,
    }
    if wide:
        cols["time"] = 8
    fixed = sum(cols.values()) + 2  # the vertical scrollbar, when there are more rows than lines
    if wide:
        name = min(28, max(12, longest + 2), max(12, width - fixed - 30))
        cols = {"name": name, **cols, "note": max(10, width - fixed - name)}
    else:
        cols = {"name": max(10, width - fixed), **cols}
    return cols


HEADERS = {
    "name": " node",
    "state": "state",
    **{p: f" {PROBE_ABBR[p]}" for p in PROBES},
    "critical": "   ✖",
    "warning": "   ▲",
    "unknown": "   ?",
    "outliers": "   ≠",
    "time": "    time",
    "note": " note",
}


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def row_cells(row: NodeRow, widths: dict[str, int], palette: Palette) -> list[Text]:
    """The cells of one row, in the column order of `widths` (pure: unit-tested without an app)."""
    cells: list[Text] = []
    for col, w in widths.items():
        if col == "name":
            cells.append(Text(" " + clip(neutralise(row.name), w - 2)))
        elif col == "state":
            word = STATE_WORD[row.state] if w >= 12 or row.state != "unreachable" else "unreach."
            style = {
                "pending": "dim",
                "auditing": palette.get(Severity.INFO, ""),
                "unreachable": palette.get(Severity.CRITICAL, ""),
            }.get(row.state, "")
            cells.append(Text(word, style=style))
        elif col in PROBE_ABBR:
            sev = row.worst.get(col)
            if row.state != "done" or sev is None:
                mark = {"pending": "·", "auditing": "…"}.get(row.state, "-")
                cells.append(Text(f" {mark}", style="dim"))
            else:
                cells.append(Text(f" {SEV_ICON[sev]}", style=palette.get(sev, "")))
        elif col in ("critical", "warning", "unknown"):
            sev = Severity(col)
            n = row.counts.get(sev, 0) if row.state == "done" else 0
            cells.append(
                Text(f"{n:>4}", style=palette.get(sev, "")) if n else Text("   ·", style="dim")
            )
        elif col == "outliers":
            n = len(row.outliers)
            cells.append(
                Text(f" ≠{n:<2}", style=palette.get(Severity.WARNING, ""))
                if n
                else Text("   ·", style="dim")
            )
        elif col == "time":
            cells.append(
                Text(f"{format_elapsed(row.duration_s):>8}" if row.duration_s is not None else "")
            )
        elif col == "note":
            cells.append(Text(" " + clip(neutralise(note_of(row)), w - 1), style="dim"))
    return cells


def reason_of(row: NodeRow) -> str:
    """Why it was not audited, without the spec the reason starts with (the row already names it)."""
    reason = row.reason or "unreachable"
    return reason[len(row.spec) + 2 :] if reason.startswith(f"{row.spec}: ") else reason


def note_of(row: NodeRow) -> str:
    if row.state == "unreachable":
        return reason_of(row)
    texts = row.outlier_texts()
    if texts:
        return texts[0] + (f"; +{len(texts) - 1} more" if len(texts) > 1 else "")
    return ""


def detail_text(row: NodeRow | None, palette: Palette = PLAIN) -> Text:
    """Two lines about the highlighted node: who and how it went, then why it differs (or is unreachable)."""
    if row is None:
        return Text("no node matches the filter", style="dim")
    head = Text(neutralise(row.name), style="bold", no_wrap=True, overflow="ellipsis")
    if row.spec != row.name:
        head.append(f"  {neutralise(row.spec)}", style="dim")
    head.append(f"  ·  {row.state}")
    if row.duration_s is not None:
        head.append(f" in {format_elapsed(row.duration_s)}")
    if row.state == "done":
        for sev in (Severity.CRITICAL, Severity.WARNING, Severity.UNKNOWN):
            if row.counts.get(sev):
                head.append(f"  {SEV_ICON[sev]}{row.counts[sev]}", style=palette.get(sev, ""))
    body = Text(no_wrap=True, overflow="ellipsis")
    if row.state == "unreachable":
        body.append(neutralise(reason_of(row)), style=palette.get(Severity.CRITICAL, ""))
    elif row.outliers:
        body.append("≠ ", style=palette.get(Severity.WARNING, ""))
        body.append("; ".join(neutralise(t) for t in row.outlier_texts()))
    elif row.state == "done":
        body.append(neutralise(row.peer_note) or "not compared yet", style="dim")
        if row.klass:
            body.append(f" ({neutralise(row.klass)})", style="dim")
    else:
        body.append(f"{row.state}…", style="dim")
    return Text("\n", no_wrap=True, overflow="ellipsis").join([head, body])


class FleetScreen(Screen[None]):
    DEFAULT_CSS = """
    FleetScreen #fleet-progress { height: 1; padding: 0 1; background: $panel; }
    FleetScreen #fleet-table { height: 1fr; }
    FleetScreen #fleet-detail { height: 2; padding: 0 1; background: $surface; }
    FleetScreen #fleet-sort { height: 1; padding: 0 1; color: $text-muted; }
    FleetScreen #fleet-filter { height: 1; border: none; padding: 0 1; }
    """
    BINDINGS = [
        Binding("o", "sort(1)", "Sort"),
        Binding("O", "sort(-1)", "Sort back", show=False),
        Binding("slash", "text_filter", "Find", key_display="/"),
        Binding("escape", "clear_text_filter", "Clear filter", show=False),
        Binding(
            "q", "app.back_or_quit", "Quit"
        ),  # the first screen: q quits (the app's q is hidden)
    ]
    app: GpuAuditApp

    class NodeChosen(Message):
        """Enter on a row: open that node's dashboard."""

        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    def __init__(self, model: FleetModel, sort: str | None = None) -> None:
        super().__init__(id="fleet")
        self.model = model
        self.sort = sort or ("inventory" if model.live else "worst")
        self.text = ""
        self._shown: tuple[int, str, str, int] | None = None
        """(model version, sort, filter, width) of what the table shows: re-rendered only when one changes."""
        self._keys: list[str] = []
        self._typing = False

    def compose(self) -> ComposeResult:
        yield Static(id="fleet-progress")
        yield DataTable(id="fleet-table", cursor_type="row", cell_padding=0, zebra_stripes=True)
        yield Static(id="fleet-detail")
        yield Input(
            placeholder="/ filter nodes by name, spec, class or outlier fact",
            id="fleet-filter",
            select_on_focus=False,
        )
        yield Static(id="fleet-sort")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.refresh_view()
        self.query_one(DataTable).focus()
        self.set_interval(0.2, self.refresh_view)

    def on_screen_resume(self) -> None:
        self._shown = None
        self.refresh_view()

    def on_resize(self, event: Resize) -> None:
        self.refresh_view()

    @property
    def palette(self) -> Palette:
        return getattr(self.app, "palette", PLAIN)

    # --- rendering ------------------------------------------------------------------------------------
    def refresh_view(self) -> None:
        """Progress line always (its clock moves); the table only when rows, sort, filter or width changed."""
        width = self.size.width or self.app.size.width
        self.query_one("#fleet-progress", Static).update(
            Text(self.model.progress_line(width - 2), no_wrap=True)
        )
        state = (self.model.version, self.sort, self.text, width)
        if state == self._shown:
            return
        self._shown = state
        table = self.query_one(DataTable)
        keep = self.current_key()
        widths = fixed_widths(
            width, max((len(r.name) for r in self.model.rows.values()), default=0)
        )
        table.clear(columns=True)
        for col, w in widths.items():
            label = HEADERS[col]
            if col == self.sort or (col == "name" and self.sort == "name"):
                label = (label.strip() + "▾").rjust(w) if col != "name" else label + " ▾"
            table.add_column(label, width=w, key=col)
        rows = self.model.visible(self.sort, self.text)
        self._keys = [r.key for r in rows]
        for r in rows:
            table.add_row(*row_cells(r, widths, self.palette), key=r.key)
        if keep in self._keys:
            table.move_cursor(row=self._keys.index(keep), animate=False, scroll=True)
        self.show_detail()
        self.query_one("#fleet-sort", Static).update(self.sort_line())

    def sort_line(self) -> Text:
        line = Text(f"sort: {SORT_NAMES[self.sort]} (o)", no_wrap=True, overflow="ellipsis")
        if self.text:
            line.append(f"  ·  {len(self._keys)} of {len(self.model.rows)} match")
        line.append("  ·  Enter: open node, Esc: back", style="dim")
        return line

    def current_key(self) -> str | None:
        table = self.query_one(DataTable)
        if (
            not self._keys
            or table.cursor_row is None
            or not 0 <= table.cursor_row < len(self._keys)
        ):
            return None
        return self._keys[table.cursor_row]

    def show_detail(self) -> None:
        key = self.current_key()
        row = self.model.rows.get(key) if key else None
        self.query_one("#fleet-detail", Static).update(detail_text(row, self.palette))

    @on(DataTable.RowHighlighted)
    def _highlighted(self) -> None:
        self.show_detail()

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        key = event.row_key.value
        row = self.model.rows.get(key) if key else None
        if row is None:
            return
        if not row.openable:
            self.notify(
                f"{row.name} is {row.state}: its dashboard opens once its audit has finished"
            )
            return
        self.post_message(self.NodeChosen(row.key))

    @on(DataTable.HeaderSelected)
    def _header(self, event: DataTable.HeaderSelected) -> None:
        col = str(event.column_key.value)
        if col in SORT_NAMES:
            self.sort = col
            self.refresh_view()

    # --- actions --------------------------------------------------------------------------------------
    def action_sort(self, step: int) -> None:
        self.sort = next_sort(self.sort, step)
        self.refresh_view()

    def on_key(self, event: Key) -> None:
        """Keys typed in one burst with `/` reach the table before the binding moves the focus: put them in
        the box (a paste, or a fast typist over a slow link)."""
        box = self.query_one("#fleet-filter", Input)
        if box.has_focus:
            self._typing = False
        elif event.key == "slash":
            self._typing = True
        elif self._typing and event.is_printable and event.character:
            box.insert_text_at_cursor(event.character)
            event.stop()
            event.prevent_default()
        else:
            self._typing = False

    def action_text_filter(self) -> None:
        # at once, not through focus() (a queued callback): keys typed right after / must land in the box
        self.set_focus(self.query_one("#fleet-filter", Input))

    @on(Input.Changed, "#fleet-filter")
    def _typed(self, event: Input.Changed) -> None:
        self.text = event.value
        self.refresh_view()

    @on(Input.Submitted, "#fleet-filter")
    def _kept(self, event: Input.Submitted) -> None:
        self.text = event.value
        self.refresh_view()
        self.query_one(DataTable).focus()

    def action_clear_text_filter(self) -> None:
        box = self.query_one("#fleet-filter", Input)
        if box.has_focus or self.text:
            box.value = ""
            self.text = ""
            self.refresh_view()
            self.query_one(DataTable).focus()


class NodeDashboardScreen(DashboardScreen):
    """The normal dashboard of one fleet node; Escape (with no text filter to clear) goes back to the fleet."""

    BINDINGS = [Binding("escape", "clear_text_filter", "Fleet", key_display="esc")]

    def action_clear_text_filter(self) -> None:
        box = self.query_one("#text-filter", Input)
        if box.has_class("-visible") or self.app.finding_filter.text:
            super().action_clear_text_filter()
        else:
            self.dismiss()
