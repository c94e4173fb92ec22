"""PlanScreen: the audit converged into one ranked action plan (probes.core.judge.plan), plus what couldn't be checked.

Enter opens a step's first finding in its drill-down; `c` copies the step's fix command (OSC 52),
`C` the whole plan as Markdown, `m` saves that Markdown to a file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gpuaudit.probes.core.judge.plan import PlanStep, build_plan, fix_commands, plan_markdown
from gpuaudit.probes.core.models import AuditRun
from gpuaudit.tui.views.render import PLAIN, Palette, neutralise, not_checked_text, sev_text
from gpuaudit.tui.views.wrap import hang
from gpuaudit.tui.widgets.roofline_strip import RooflineStrip
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

if TYPE_CHECKING:
    from gpuaudit.tui.app import GpuAuditApp


def plan_step_text(step: PlanStep, palette: Palette = PLAIN) -> Text:
    """One step of the plan: rank, severity, title, who, the fix and its commands, the findings it groups."""
    text = Text.assemble(
        (f"{step.rank:>2}. ", "bold"),
        sev_text(step.severity, palette),
        " ",
        (neutralise(step.title), "bold"),
        "\n",
    )
    if step.owners:
        text.append(f"    who: {', '.join(step.owners)}\n", style="italic")
    if step.relation:
        text.append(f"    grouped: {neutralise(step.relation)}\n", style="italic")
    if step.fix:
        text.append("    fix: ", style="bold")
        text.append(neutralise(step.fix).replace("\n", "\n         ") + "\n")
    for cmd in fix_commands(step.fix):
        text.append("      $ ", style="dim")
        text.append(neutralise(cmd) + "\n", style="bold")
    for f in step.findings:
        text.append("    • ")
        text.append_text(sev_text(f.severity, palette))
        text.append(
            f" {f.id} ({', '.join(f.targets) or '-'}{', ' + f.owner if f.owner else ''}): {neutralise(f.title)}\n"
        )
        if f.observed or f.expected:
            text.append(
                f"        observed {neutralise(f.observed) or '-'} · expected {neutralise(f.expected) or '-'}\n",
                style="dim",
            )
        for e in f.evidence:
            text.append(f"        evidence: {e.target} {neutralise(e.command_id)}\n", style="dim")
    return text


def plan_file_name(run: AuditRun) -> str:
    host = next((s.hostname for s in run.target_states.values() if s.hostname), None) or "audit"
    return f"gpuaudit-plan-{''.join(c if c.isalnum() or c in '-_.' else '_' for c in host)}.md"


class PlanScreen(Screen[None]):
    BINDINGS = [
        Binding("escape,a", "dismiss", "Back"),
        Binding("enter", "open", "Open finding"),
        Binding("c", "copy_fix", "Copy fix"),
        Binding("C", "copy_plan", "Copy plan"),
        Binding("m", "save_markdown", "Save .md"),
        Binding("p", "app.roofline", "Roofline", show=False),
    ]
    app: GpuAuditApp

    def __init__(
        self, run: AuditRun, palette: Palette = PLAIN, save_dir: Path | None = None
    ) -> None:
        super().__init__(id="plan")
        self.run = run
        self.plan = build_plan(run)
        self.palette = palette
        self.save_dir = save_dir
        self.wrap_width = 0
        """The steps' wrap width, from the laid-out list (0: not laid out yet)."""
        self.running = run.finished_at is None and any(
            p.status in ("running", "pending") for p in run.probes
        )

    def compose(self) -> ComposeResult:
        n = sum(len(s.findings) for s in self.plan)
        head = Text(
            f"Action plan: {len(self.plan)} step(s) resolving {n} finding(s) at warning or worse",
            style="bold",
        )
        if self.running:
            head.append("  (audit still running: partial)", style="italic")
        head.append(
            "\nEnter opens a step's finding · c copies its fix command · C the plan · m saves it as Markdown",
            style="dim",
        )
        yield Static(head, id="plan-title")
        yield RooflineStrip(id="plan-roofline")
        with VerticalScroll(id="plan-body"):
            if self.plan:
                yield OptionList(
                    *[Option(self._step(s), id=str(n)) for n, s in enumerate(self.plan)],
                    id="plan-steps",
                )
            else:
                yield Static(
                    Text(
                        "Nothing at warning or worse. Check what couldn't be checked (below) before trusting that."
                    )
                )
            yield Static(not_checked_text(self.run, self.palette), id="plan-not-checked")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        if self.plan:
            self.query_one("#plan-steps", OptionList).focus()
            self.call_after_refresh(self._rewrap)

    def _step(self, step: PlanStep) -> Text:
        """A step wrapped with hanging indentation: a long fix line stays under `fix:`, not at column 0."""
        width = self.wrap_width or self.app.size.width - 10
        return hang(plan_step_text(step, self.palette), width)

    def on_resize(self) -> None:
        self.call_after_refresh(self._rewrap)

    def _rewrap(self) -> None:
        """Re-wrap the steps at the list's real width (known only once it is laid out)."""
        if not self.plan:
            return
        steps = self.query_one("#plan-steps", OptionList)
        width = steps.scrollable_content_region.width - 2
        if width > 20 and width != self.wrap_width:
            self.wrap_width = width
            for n, step in enumerate(self.plan):
                steps.replace_option_prompt_at_index(n, self._step(step))

    @property
    def current(self) -> int | None:
        if not self.plan:
            return None
        highlighted = self.query_one("#plan-steps", OptionList).highlighted
        return 0 if highlighted is None else highlighted

    @on(RooflineStrip.Selected)
    def _open_roofline(self) -> None:
        self.app.action_roofline()

    @on(OptionList.OptionSelected, "#plan-steps")
    def _selected(self) -> None:
        self.action_open()

    def action_open(self) -> None:
        if self.current is None:
            return
        f = self.plan[self.current].findings[0]
        self.app.open_drilldown(f.probe, f.id)

    def action_copy_fix(self) -> None:
        if self.current is None:
            return
        step = self.plan[self.current]
        commands = fix_commands(step.fix)
        text = "\n".join(commands) if commands else step.fix
        self.app.copy_to_clipboard(text)
        self.notify(
            f"copied {'the fix command' if commands else 'the fix text'} of step {step.rank} (OSC 52)"
        )

    def markdown(self) -> str:
        return plan_markdown(self.plan, self.run)

    def action_copy_plan(self) -> None:
        self.app.copy_to_clipboard(self.markdown())
        self.notify("copied the plan as Markdown (OSC 52)")

    def action_save_markdown(self) -> None:
        path = (self.save_dir or Path.cwd()) / plan_file_name(self.run)
        try:
            path.parent.mkdir(
                parents=True, exist_ok=True
            )  # plan_folder()'s fallback may not exist yet
            path.write_text(self.markdown(), encoding="utf-8")
        except OSError as exc:
            self.notify(f"could not save the plan: {exc}", severity="error", timeout=10)
            return
        self.notify(f"saved the plan: {path}")
