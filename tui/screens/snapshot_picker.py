"""SnapshotPickerScreen: choose a saved (or bundled example) snapshot; dismisses with its Path or None."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label

from snapshots.listing import SEVERITY_ORDER, SnapshotInfo, list_snapshots


def counts_text(info: SnapshotInfo) -> str:
    return " ".join(f"{info.counts[s]} {s}" for s in SEVERITY_ORDER if info.counts.get(s)) or "none"


class SnapshotPickerScreen(ModalScreen[Path | None]):
    """Saved snapshots (newest first) and the two case-study examples; enter picks, escape cancels."""

    DEFAULT_CSS = """
    SnapshotPickerScreen { align: center middle; }
    SnapshotPickerScreen > Vertical { width: 90%; height: 80%; border: thick $primary; background: $surface; padding: 0 1; }
    SnapshotPickerScreen DataTable { height: 1fr; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, directory: Path, title: str = "Pick a snapshot to compare with") -> None:
        super().__init__(id="snapshot-picker")
        self.directory = Path(directory)
        self.title_text = title
        self.infos: list[SnapshotInfo] = []

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text.assemble(self.title_text, (f"  ({self.directory})", "dim")), id="picker-title")
            yield DataTable(id="picker-table", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        self.infos = [i for i in list_snapshots(self.directory, examples=True) if i.error is None]
        table = self.query_one(DataTable)
        table.add_columns("name", "date (UTC)", "kernel", "driver", "findings")
        for n, info in enumerate(self.infos):
            name = f"{info.name} (example)" if info.example else info.name
            date = info.created_at.strftime("%Y-%m-%d %H:%M") if info.created_at else ""
            table.add_row(name, date, info.kernel or "?", info.driver or "?", counts_text(info), key=str(n))
        if not self.infos:
            self.query_one("#picker-title", Label).update(Text(f"No snapshots in {self.directory} (press s on the dashboard to save one)"))
        table.focus()

    @on(DataTable.RowSelected, "#picker-table")
    def _picked(self, event: DataTable.RowSelected) -> None:
        self.dismiss(self.infos[int(event.row_key.value or 0)].path)

    def action_cancel(self) -> None:
        self.dismiss(None)
