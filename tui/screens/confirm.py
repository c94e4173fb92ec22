"""ConfirmScreen: one yes/no question (quit during a live audit, diff two different machines)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label


class ConfirmScreen(ModalScreen[bool]):
    """Dismisses True on y/Enter, False on n/Esc/q."""

    BINDINGS = [
        Binding("y,enter", "answer(True)", "Yes"),
        Binding("n,escape,q", "answer(False)", "No"),
    ]
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    #confirm-box { width: 80%; max-width: 90; height: auto; border: round $warning;
                   background: $surface; padding: 1 2; }
    """

    def __init__(self, question: str) -> None:
        super().__init__(id="confirm")
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Label(self.question, markup=False)
            yield Label("y: yes   n / Esc: no", classes="confirm-keys")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
