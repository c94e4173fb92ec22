"""The audits that start from a saved snapshot: a replay (--replay FILE), the demo (the case study), --resume.

tui/cli/session_setup.py loads this module for them only: a live audit starts without the snapshot store and
schema, which its outputs load while it runs (tui/cli/output_modules.py; issue 30)."""

from __future__ import annotations

from pathlib import Path

from gpuaudit.probes.core.run.request import AuditRequest
from gpuaudit.probes.core.run.runner import Audit
from gpuaudit.probes.core.run.session import replay_bindings
from gpuaudit.snapshots import store
from gpuaudit.tui.cli.resume import build_resume_setup as build_resume_setup
from gpuaudit.tui.cli.setup_options import AuditSetup, audit_options, selected_probes

DEMO_NOTE = "DEMO: illustrative example (case study), not a capture of a real machine"
"""One line at 80 columns: the 80x24 dashboard has room for the note, the roofline strip and all ten panes."""


def replay_setup(request: AuditRequest) -> AuditSetup:
    """--replay FILE or --demo: the saved records answer every command."""
    path = (
        store.EXAMPLES_DIR / "case-study-before.json"
        if request.demo
        else store.resolve(request.replay, _dir(request))
    )
    snap = store.load(path)
    bindings = replay_bindings(snap.targets, snap.records, states=snap.target_states)
    mode = "demo" if request.demo else "replay"
    note = (
        DEMO_NOTE
        if request.demo
        else (snap.note or f"REPLAY of {path.name} (recorded {snap.created_at:%Y-%m-%d %H:%M} UTC)")
    )
    return AuditSetup(
        Audit(bindings, selected_probes(request), audit_options(request)),
        mode,
        note,
        path,
        recorded=tuple(snap.records),
    )


def _dir(request: AuditRequest) -> Path | None:
    return request.snapshot_dir  # already a Path with ~ expanded (tui/cli/entry.py)
