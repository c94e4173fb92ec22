"""Headless mode: run the audit, print the snapshot JSON (or the plan) on stdout, progress on stderr."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path

from gpuaudit.probes.core.collect.early import EarlyStart
from gpuaudit.probes.core.fleet.prometheus import from_snapshot, write_prom_file
from gpuaudit.probes.core.judge.plan import build_plan, plan_markdown
from gpuaudit.probes.core.models import AuditRun, Severity
from gpuaudit.probes.core.run.events import CommandFinished, ProbeFinished, TargetFailed
from gpuaudit.probes.core.run.request import AuditRequest
from gpuaudit.probes.core.run.session import run_sync, run_to_end
from gpuaudit.snapshots import store
from gpuaudit.snapshots.baseline import apply_baseline
from gpuaudit.snapshots.naming import default_name
from gpuaudit.snapshots.schema import Snapshot
from gpuaudit.tui.cli.health import health_line
from gpuaudit.tui.cli.resume import finish, merged_resume, store_resumed
from gpuaudit.tui.cli.session_setup import build_setup, stamp
from gpuaudit.tui.cli.setup_options import AuditSetup
from gpuaudit.tui.cli.share_outputs import share_snapshot, write_html

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR, EXIT_TARGET_FAILED = 0, 1, 2, 3
EXIT_OUTPUT_FAILED = 4
"""--save, --prom (or --resume's store) could not be written; stdout's --json/--plan/--health is complete."""
EXIT_TERMINATED = 143
"""SIGTERM: 128 + 15, what a shell and systemd expect of a terminated program."""
# The one exit rule of every mode: tui/cli/entry.py EXIT_RULE (--help's epilog).


async def collect(
    setup: AuditSetup, progress: bool = False, partial: list[AuditRun] | None = None
) -> AuditRun:
    """Run the audit to completion and fold its events (`partial` holds the run so far, for an interrupted --save).

    A thin wrapper kept for its callers: the engine's `run_to_end` (probes/core/run/session.py) does the work; this adds
    the Rich progress line on stderr and stamps the run with the setup's mode and note."""
    reporter = _Progress(len(setup.audit.probes)) if progress else None
    try:
        run = await run_to_end(
            setup.audit, on_event=reporter.update if reporter else None, partial=partial
        )
    finally:
        if reporter:
            reporter.stop()
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


def exit_code(run: AuditRun, fail_on: str) -> int:
    """EXIT_RULE: 3 when any requested target could not be audited, 1 when a finding reaches --fail-on, else 0."""
    if any(s.state == "failed" for s in run.target_states.values()):
        return EXIT_TARGET_FAILED
    if fail_on != "never":
        threshold = Severity(fail_on).rank
        if any(f.severity.rank >= threshold for f in run.findings):  # unknown ranks below warning
            return EXIT_FINDINGS
    return EXIT_OK


def write_json(snapshot: Snapshot) -> None:
    """The document as UTF-8 bytes straight from pydantic's serializer: no str copy, no re-encoding copy."""
    data = snapshot.__pydantic_serializer__.to_json(snapshot, indent=2)
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    del data
    sys.stdout.buffer.write(b"\n")


def write_prom(snapshot: Snapshot, path: object) -> None:
    """--prom FILE: the audit as node_exporter textfile metrics, written atomically."""
    write_prom_file(Path(str(path)), {None: from_snapshot(snapshot)})


INCOMPLETE_NOTE = "incomplete: interrupted before the audit finished; --resume runs what is missing"


def _save_incomplete(run: AuditRun, setup: AuditSetup, request: AuditRequest) -> None:
    """--save of an interrupted audit: what was collected, marked incomplete, so --resume can finish it."""
    snapshot = Snapshot.from_run(stamp(run, setup))
    snapshot = snapshot.model_copy(update={"note": INCOMPLETE_NOTE})
    name = request.save or default_name(snapshot)
    path = store.save(snapshot.model_copy(update={"name": name}), name, request.snapshot_dir)
    print(f"saved incomplete snapshot: {path}", file=sys.stderr)


def write_text(text: str) -> None:
    """A text output (--plan, --health) in the output's encoding; what it cannot show degrades to `?`, never a
    traceback (`PYTHONIOENCODING=ascii`, a C locale, a Latin-1 terminal)."""
    enc = getattr(sys.stdout, "encoding", None) or "utf-8"
    sys.stdout.flush()
    sys.stdout.buffer.write(text.encode(enc, errors="replace"))


def _side_outputs(
    snapshot: Snapshot, run: AuditRun, setup: AuditSetup, request: AuditRequest
) -> list[str]:
    """--save (or --resume's store), --prom: each after stdout's output is complete; a failure is one line on
    stderr naming the output, never a lost audit. Returns the failures."""
    failed: list[str] = []

    def attempt(label: str, action: Callable[[], object]) -> None:
        try:
            action()
        except Exception as exc:  # noqa: BLE001 - any failure of one output is reported, the rest go on
            why = str(exc) or type(exc).__name__
            print(f"gpuaudit-tui: {label} failed: {why} (the audit completed)", file=sys.stderr)
            failed.append(label)

    if setup.mode == "resume":  # always stored as a new snapshot (tui/cli/resume.py)
        attempt("--resume's store", lambda: store_resumed(snapshot, setup, request))
    elif request.save is not None:

        def save() -> None:
            name = request.save or default_name(snapshot)
            path = store.save(
                snapshot.model_copy(update={"name": name}), name, request.snapshot_dir
            )
            print(f"saved snapshot: {path}", file=sys.stderr)

        attempt("--save", save)
    if request.prom:
        attempt(f"--prom {request.prom}", lambda: write_prom(snapshot, request.prom))
    if request.html:
        attempt(f"--html {request.html}", lambda: write_html(snapshot, request.html))
    return failed


def main(request: AuditRequest, early: EarlyStart | None = None) -> int:
    """One headless audit; `early`: its SSH targets began connecting while this module loaded (collect/early.py):
    the audit runs on that loop with those transports."""
    setup = build_setup(request, early.transports if early is not None else None)
    partial: list[AuditRun] = []
    try:
        run = run_sync(
            collect(setup, progress=sys.stderr.isatty(), partial=partial),
            early.hand_over() if early is not None else None,
        )
    except (
        KeyboardInterrupt,
        asyncio.CancelledError,
    ) as exc:  # Ctrl-C, or SIGTERM (run_to_end's handler)
        if request.save is not None and partial and setup.mode != "resume":
            _save_incomplete(partial[0], setup, request)
        if isinstance(exc, asyncio.CancelledError):  # only SIGTERM cancels the audit's task
            print("gpuaudit-tui: terminated", file=sys.stderr)
            raise SystemExit(EXIT_TERMINATED) from None
        raise KeyboardInterrupt from None
    run = apply_baseline(run)  # regression.* findings against the host's last-known-good (issue 26)
    snapshot: Snapshot | None = None
    sharer = None
    if needs_snapshot(request, setup):
        snapshot = Snapshot.from_run(run)
        if setup.mode == "resume":
            snapshot = merged_resume(snapshot, setup, request)
        # --share: what leaves this machine carries placeholders (issue 28)
        if request.share is not None:
            snapshot, sharer = share_snapshot(snapshot, request)
    for state in run.target_states.values():
        if state.state == "failed":
            print(f"gpuaudit-tui: target {state.role} failed: {state.reason}", file=sys.stderr)
    # stdout's document first: a failing --save/--prom never takes the audit's output with it
    if request.health:
        write_text(health_line(run) + "\n")
    elif request.plan:
        plan = plan_markdown(build_plan(run), run)
        write_text(sharer.text(plan) if sharer is not None else plan)
    elif snapshot is not None and (request.json or not (request.prom or request.html)):
        write_json(snapshot)
    sys.stdout.flush()
    status = exit_code(run, request.fail_on)
    if snapshot is None:  # --health or --plan alone: nothing else to write
        return status
    if _side_outputs(snapshot, run, setup, request) and status != EXIT_TARGET_FAILED:
        return EXIT_OUTPUT_FAILED
    return status


def needs_snapshot(request: AuditRequest, setup: AuditSetup) -> bool:
    """Whether any output of this run is the snapshot document: --json, --save, --prom, --html, --share, --resume's
    store. `--health` and `--plan` alone print from the run: no Snapshot built (its roofline and packing cost
    ~60 ms of CPU on the case study, where the engine's checkpoint lists hundreds of excluded modules; issue 30)."""
    return bool(
        request.json
        or not (request.health or request.plan)
        or request.save is not None
        or request.prom
        or request.html
        or request.share is not None
        or setup.mode == "resume"
    )


def run_then_show(request: AuditRequest, run_app: Callable[[AuditRequest], int]) -> int:
    """TUI path of --resume: resume headless (progress on stderr), then open the stored result as a replay."""
    setup = build_setup(request)
    run = run_sync(collect(setup, progress=sys.stderr.isatty()))
    _, path = finish(Snapshot.from_run(run), setup, request)
    return run_app(dataclasses.replace(request, resume=None, replay=str(path)))
