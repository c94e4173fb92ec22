"""HelpScreen: every key binding of the app, the dashboard and the drill-down, in one table."""

from __future__ import annotations

from collections.abc import Iterable

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEY_NAMES = {"question_mark": "?", "slash": "/", "escape": "esc", "enter": "enter"}


def key_display(key: str) -> str:
    return " / ".join(KEY_NAMES.get(k.strip(), k.strip()) for k in key.split(","))


def binding_rows(groups: Iterable[tuple[str, Iterable[BindingType]]]) -> list[tuple[str, str, str]]:
    """(where, key, what) for every declared Binding, in declaration order (each action once)."""
    rows = []
    for where, bindings in groups:
        for b in bindings:
            if not isinstance(b, Binding) or b.action.startswith(("app.", "move(")):
                continue  # shortcuts to app actions are listed under "app"; arrows have their own row
            rows.append((where, b.key_display or key_display(b.key), b.description or b.action))
    return rows


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close")]

    def __init__(self, rows: list[tuple[str, str, str]]) -> None:
        super().__init__(id="help")
        self.rows = rows

    def compose(self) -> ComposeResult:
        table = Table(
            title="gpuaudit-tui keys (also in the command palette: ctrl+p)", expand=True, box=None
        )
        for col in ("where", "key", "action"):
            table.add_column(col)
        for row in self.rows:
            table.add_row(*row)
        table.add_row("", "", "")
        table.add_row("all", "arrows / tab", "move between panes and tables")
        table.add_row("all", "click", "open a pane / select a row")
        with VerticalScroll(id="help-body"):
            yield Static(table)
            yield Static(
                "Severity is always written as a word and an icon: ✖ CRIT  ▲ WARN  ? UNKN  ● INFO  ✔ OK. "
                "Output from targets is shown with control characters made visible (\\x1b), never interpreted. "
                "Esc closes this screen.",
                id="help-note",
            )
