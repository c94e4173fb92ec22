"""Headless mode: run the audit, print the snapshot JSON (or the plan) on stdout, progress on stderr.

This module runs the audit; what it prints and writes afterwards is tui/cli/headless_outputs.py, whose modules
(the snapshot, its roofline, the store, the plan, --prom, --share) load on the audit's loop while the audit waits
on its targets (tui/cli/output_modules.py), not before the audit starts (issue 30).
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from collections.abc import Callable
from types import ModuleType

from gpuaudit.probes.core.collect.early import EarlyStart
from gpuaudit.probes.core.models import AuditRun
from gpuaudit.probes.core.run.events import (
    CommandFinished,
    ProbeFinished,
    TargetConnected,
    TargetFailed,
)
from gpuaudit.probes.core.run.request import AuditRequest
from gpuaudit.probes.core.run.session import run_sync, run_to_end
from gpuaudit.tui.cli.exit_codes import EXIT_OUTPUT_FAILED as EXIT_OUTPUT_FAILED
from gpuaudit.tui.cli.exit_codes import EXIT_TARGET_FAILED as EXIT_TARGET_FAILED
from gpuaudit.tui.cli.exit_codes import EXIT_TERMINATED
from gpuaudit.tui.cli.exit_codes import exit_code as exit_code
from gpuaudit.tui.cli.output_modules import outputs_of, preload
from gpuaudit.tui.cli.session_setup import build_setup, stamp
from gpuaudit.tui.cli.setup_options import AuditSetup


async def collect(
    setup: AuditSetup,
    progress: bool = False,
    partial: list[AuditRun] | None = None,
    modules: tuple[str, ...] = (),
    saves_partial: bool = False,
) -> AuditRun:
    """Run the audit to completion and fold its events (`partial` holds the run so far, for an interrupted --save).

    A thin wrapper kept for its callers: the engine's `run_to_end` (probes/core/run/session.py) does the work; this adds
    the Rich progress line on stderr and stamps the run with the setup's mode and note. `modules`: what the outputs
    will import, loaded on this loop while the audit waits on its commands (output_modules.preload).
    `saves_partial`: an interrupted run is saved (--save), so `partial` keeps each command's record as it comes."""
    reporter = _Progress(len(setup.audit.probes)) if progress else None
    if reporter is None and not saves_partial:
        # nothing reads a command's events then (the preload waits on the targets' events only): the runner makes
        # none and each probe's records come whole with its ProbeFinished, as for a fleet host (issue 30)
        setup.audit.command_events = False
    # the imports start once every target is connected (or failed): a login's steps would otherwise wait behind
    # a module's import each, and the audit's first commands are out by then
    waiting = {t.role for t in setup.audit.targets}
    loading: asyncio.Future[None] | None = None

    def on_event(event: object) -> None:
        nonlocal loading
        if reporter is not None:
            reporter.update(event)
        if modules and loading is None and isinstance(event, (TargetConnected, TargetFailed)):
            waiting.discard(event.role)
            if not waiting:
                loading = asyncio.ensure_future(preload(modules))

    # no progress line and nothing to preload (a fleet host): no reader, so run_to_end has the runner make no
    # CommandStarted/CommandFinished (issue 30: 264 events per host built, queued and dropped)
    reader = on_event if reporter is not None or modules else None
    try:
        run = await run_to_end(setup.audit, on_event=reader, partial=partial)
    except BaseException:
        if loading is not None:
            loading.cancel()
        raise
    finally:
        if reporter:
            reporter.stop()
    if modules:  # the rest of the list, when the audit ended first (a replay, a fast target)
        await (loading or preload(modules))
    return stamp(run, setup)


class _Progress:
    """A Rich progress line on stderr (only when stderr is a terminal)."""

    def __init__(self, total: int) -> None:
        # Rich loads only for a progress line on a terminal: `--json` in a pipe never pays for it
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total} probes"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self.task = self.progress.add_task("auditing", total=total)
        self.progress.start()

    def update(self, event: object) -> None:
        if isinstance(event, ProbeFinished):
            self.progress.advance(self.task)
        elif isinstance(event, CommandFinished):
            self.progress.update(
                self.task, description=f"{event.record.target}: {event.record.command_id}"
            )
        elif isinstance(event, TargetFailed):
            self.progress.console.print(f"[red]target {event.role} failed:[/] {event.reason}")

    def stop(self) -> None:
        self.progress.stop()


def outputs() -> ModuleType:
    """tui/cli/headless_outputs.py: already loaded by the audit's preload, unless the audit ended early."""
    from gpuaudit.tui.cli import headless_outputs

    return headless_outputs


def main(request: AuditRequest, early: EarlyStart | None = None) -> int:
    """One headless audit; `early`: its SSH targets began connecting while this module loaded (collect/early.py):
    the audit runs on that loop with those transports."""
    setup = build_setup(request, early.transports if early is not None else None)
    partial: list[AuditRun] = []
    saves_partial = (
        request.save is not None and setup.mode != "resume"
    )  # an interrupted run is saved
    modules = outputs_of(request)
    try:
        run = run_sync(
            collect(
                setup,
                progress=sys.stderr.isatty(),
                partial=partial,
                modules=modules,
                saves_partial=saves_partial,
            ),
            early.hand_over() if early is not None else None,
        )
    except (
        KeyboardInterrupt,
        asyncio.CancelledError,
    ) as exc:  # Ctrl-C, or SIGTERM (run_to_end's handler)
        if saves_partial and partial:
            outputs().save_incomplete(partial[0], setup, request)
        if isinstance(exc, asyncio.CancelledError):  # only SIGTERM cancels the audit's task
            print("gpuaudit-tui: terminated", file=sys.stderr)
            raise SystemExit(EXIT_TERMINATED) from None
        raise KeyboardInterrupt from None
    return outputs().show(run, setup, request)


def run_then_show(request: AuditRequest, run_app: Callable[[AuditRequest], int]) -> int:
    """TUI path of --resume: resume headless (progress on stderr), then open the stored result as a replay."""
    setup = build_setup(request)
    run = run_sync(collect(setup, progress=sys.stderr.isatty(), modules=outputs_of(request)))
    path = outputs().stored_resume(run, setup, request)
    return run_app(dataclasses.replace(request, resume=None, replay=str(path)))
