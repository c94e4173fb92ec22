"""SnapshotPickerScreen: choose a saved (or bundled example) snapshot; dismisses with its Path or None."""

from __future__ import annotations

from pathlib import Path

from gpuaudit.probes.core.text import neutralise
from gpuaudit.snapshots.listing import SnapshotInfo, counts_text, list_snapshots
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label

TITLE = "Pick a snapshot to compare with"


def cell(text: str) -> Text:
    """A table cell from untrusted text (names, kernel from the target's `uname -r`): plain, neutralised."""
    return Text(neutralise(text))


def fit(text: Text, width: int) -> Text:
    """Cut to `width` cells with an ellipsis."""
    text.truncate(width, overflow="ellipsis")
    return text


def taken_cell(mode: str) -> Text:
    """ "live" for an audit of a machine; demos and replays are marked as recordings, never as live."""
    if mode in ("demo", "replay"):
        return Text(f"recorded ({mode})", style="italic")
    return Text(mode or "?")


class SnapshotPickerScreen(ModalScreen[Path | None]):
    """Saved snapshots (newest first) and the two case-study examples; enter picks, escape cancels."""

    DEFAULT_CSS = """
    SnapshotPickerScreen { align: center middle; }
    SnapshotPickerScreen > Vertical { width: 100%; max-width: 140; height: 80%; border: thick $primary; background: $surface; padding: 0 1; }
    SnapshotPickerScreen DataTable { height: 1fr; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, directory: Path) -> None:
        super().__init__(id="snapshot-picker")
        self.directory = Path(directory)
        self.infos: list[SnapshotInfo] = []

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(
                Text.assemble(TITLE, (f"  ({neutralise(str(self.directory))})", "dim")),
                id="picker-title",
            )
            yield DataTable(id="picker-table", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        self.infos = [i for i in list_snapshots(self.directory, examples=True) if i.error is None]
        table: DataTable[Text] = self.query_one(DataTable)
        table.add_columns("name", "date (UTC)", "kernel", "driver", "findings", "taken")
        room = max(12, self.app.size.width - 66)
        """The name column's share: default names (host_kernel_driver_time) repeat the other columns, so at
        80 columns they are cut (…) and every column stays on screen."""
        for n, info in enumerate(self.infos):
            name = f"{info.name} (example)" if info.example else info.name
            date = info.created_at.strftime("%Y-%m-%d %H:%M") if info.created_at else ""
            table.add_row(
                fit(cell(name), room),
                Text(date),
                fit(cell(info.kernel or "?"), 16 if room < 40 else 80),
                cell(info.driver or "?"),
                Text(counts_text(info.counts, short=self.app.size.width < 140)),
                taken_cell(info.mode),
                key=str(n),
            )
        if not self.infos:
            self.query_one("#picker-title", Label).update(
                Text(
                    f"No snapshots in {neutralise(str(self.directory))} (press s on the dashboard to save one)"
                )
            )
        table.focus()

    @on(DataTable.RowSelected, "#picker-table")
    def _picked(self, event: DataTable.RowSelected) -> None:
        self.dismiss(self.infos[int(event.row_key.value or 0)].path)

    def action_cancel(self) -> None:
        self.dismiss(None)
