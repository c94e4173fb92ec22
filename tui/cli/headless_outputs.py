"""What a headless audit prints and writes once it has ended: the baseline's regression findings, the snapshot
document, --plan, --health, --prom, --save, --html, --share, --resume's store (tui/cli/headless.py runs the audit).

Loaded after the audit has started: tui/cli/output_modules.py imports these modules on the audit's loop while it
waits on its targets, so none of them holds the audit's start back (issue 30).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from gpuaudit.probes.core.fleet.prometheus import from_snapshot, write_prom_file
from gpuaudit.probes.core.judge.plan import build_plan, plan_markdown
from gpuaudit.probes.core.models import AuditRun
from gpuaudit.probes.core.run.request import AuditRequest
from gpuaudit.snapshots import store
from gpuaudit.snapshots.baseline import apply_baseline
from gpuaudit.snapshots.naming import default_name
from gpuaudit.snapshots.schema import Snapshot
from gpuaudit.tui.cli.exit_codes import EXIT_OUTPUT_FAILED, EXIT_TARGET_FAILED, exit_code
from gpuaudit.tui.cli.health import health_line
from gpuaudit.tui.cli.resume import finish, merged_resume, store_resumed
from gpuaudit.tui.cli.session_setup import stamp
from gpuaudit.tui.cli.setup_options import AuditSetup
from gpuaudit.tui.cli.share_outputs import share_snapshot, write_html


def write_json(snapshot: Snapshot) -> None:
    """The document as UTF-8 bytes (Record.to_json), written to the byte stream as they are."""
    data = snapshot.to_json(indent=2)
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    del data
    sys.stdout.buffer.write(b"\n")


def write_prom(snapshot: Snapshot, path: object) -> None:
    """--prom FILE: the audit as node_exporter textfile metrics, written atomically."""
    write_prom_file(Path(str(path)), {None: from_snapshot(snapshot)})


INCOMPLETE_NOTE = "incomplete: interrupted before the audit finished; --resume runs what is missing"


def save_incomplete(run: AuditRun, setup: AuditSetup, request: AuditRequest) -> None:
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


def side_outputs(
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


def show(run: AuditRun, setup: AuditSetup, request: AuditRequest) -> int:
    """Everything after the audit: stdout's document first (a failing --save/--prom never takes the audit's
    output with it), then the side outputs; the exit status."""
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
    if side_outputs(snapshot, run, setup, request) and status != EXIT_TARGET_FAILED:
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


def stored_resume(run: AuditRun, setup: AuditSetup, request: AuditRequest) -> Path:
    """--resume in the TUI: the resumed run stored as a new snapshot; its path (opened as a replay)."""
    _, path = finish(Snapshot.from_run(run), setup, request)
    return path
