"""PlanScreen: the audit converged into one ranked action plan (probes.core.plan)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from gpuaudit.probes.core.models import AuditRun
from gpuaudit.probes.core.plan import build_plan
from gpuaudit.tui.render import PLAIN, Palette, plan_text


class PlanScreen(Screen[None]):
    BINDINGS = [Binding("escape,a", "dismiss", "Back")]

    def __init__(self, run: AuditRun, palette: Palette = PLAIN) -> None:
        super().__init__(id="plan")
        self.plan = build_plan(run)
        self.palette = palette
        self.running = run.finished_at is None and any(p.status in ("running", "pending") for p in run.probes)

    def compose(self) -> ComposeResult:
        n = sum(len(s.findings) for s in self.plan)
        head = Text(f"Action plan: {len(self.plan)} step(s) resolving {n} finding(s) at warning or worse"
                    " · `gpuaudit-tui --plan` prints it as Markdown", style="bold")
        if self.running:
            head.append("  (audit still running: partial)", style="italic")
        yield Static(head, id="plan-title")
        with VerticalScroll(id="plan-body"):
            yield Static(plan_text(self.plan, self.palette))
        yield Footer()
