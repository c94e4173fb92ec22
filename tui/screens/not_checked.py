"""NotCheckedScreen: what couldn't be checked (unknown findings with their reasons, unreachable targets)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuaudit.probes.core.models import AuditRun, Finding
from gpuaudit.tui.views.render import PLAIN, Palette, neutralise, not_checked, unreachable_roles
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

if TYPE_CHECKING:
    from gpuaudit.tui.app import GpuAuditApp


def unknown_option(f: Finding) -> Text:
    """Two lines: the check and where, then the reason it couldn't be judged."""
    return Text.assemble(
        ("? ", "bold"),
        (f.id, "bold"),
        f"  ({', '.join(f.targets) or '-'})  ",
        (neutralise(f.title), "dim"),
        "\n    ",
        neutralise(f.observed or "no reason recorded"),
    )


class NotCheckedScreen(Screen[None]):
    """Every unknown finding; Enter opens it in its probe's drill-down."""

    BINDINGS = [
        Binding("escape,u", "app.pop_screen", "Back"),
        Binding("enter", "open", "Open in drill-down", show=False),
    ]
    app: GpuAuditApp

    def __init__(self, run: AuditRun, palette: Palette = PLAIN) -> None:
        super().__init__(id="not-checked")
        self.findings = not_checked(run)
        self.gone = unreachable_roles(run)
        self.failed = [p for p in run.probes if p.status == "failed" and not self.gone]

    def compose(self) -> ComposeResult:
        head = Text(f"Not checked: {len(self.findings)} check(s) could not be judged", style="bold")
        for role, why in self.gone.items():
            head.append(f"\ntarget {role} unreachable: {neutralise(why)} (none of its checks ran)")
        for p in self.failed:
            head.append(f"\nprobe {p.probe_id} failed: {neutralise(p.error or 'unknown error')}")
        yield Static(head, id="nc-title")
        yield OptionList(
            *[Option(unknown_option(f), id=str(n)) for n, f in enumerate(self.findings)],
            id="nc-list",
        )
        yield Footer(compact=True)

    @on(OptionList.OptionSelected, "#nc-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        f = self.findings[int(event.option.id or 0)]
        self.app.open_drilldown(f.probe, f.id)

    def action_open(self) -> None:
        lst = self.query_one(OptionList)
        if lst.highlighted is not None:
            f = self.findings[lst.highlighted]
            self.app.open_drilldown(f.probe, f.id)
