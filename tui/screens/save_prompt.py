"""SavePromptScreen: asks for a snapshot name (pre-filled with the default); dismisses with it or None."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class SavePromptScreen(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, default: str) -> None:
        super().__init__(id="save-prompt")
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical(id="save-box"):
            yield Label("Save a snapshot of this audit as (Enter to save, Esc to cancel):")
            yield Input(value=self.default, id="save-name")

    @on(Input.Submitted)
    def _submit(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or self.default)

    def action_cancel(self) -> None:
        self.dismiss(None)
