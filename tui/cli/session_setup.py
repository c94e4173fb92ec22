"""Turns an AuditRequest (probes/core/run/request.py, built once by tui/cli/entry.py) into an Audit (live, replay or demo);
shared by headless and the TUI. No Textual."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from gpuaudit.probes.core.collect.replay_transport import keep_unasked
from gpuaudit.probes.core.collect.targets import parse_container_spec, parse_host_spec
from gpuaudit.probes.core.collect.transport import Transport
from gpuaudit.probes.core.models import AuditRun, Role
from gpuaudit.probes.core.run.request import AuditRequest
from gpuaudit.probes.core.run.runner import Audit
from gpuaudit.probes.core.run.session import live_bindings, replay_bindings
from gpuaudit.snapshots import store
from gpuaudit.tui.cli.resume import build_resume_setup
from gpuaudit.tui.cli.setup_options import AuditSetup, audit_options, selected_probes, ssh_options

DEMO_NOTE = "DEMO: illustrative example (case study), not a capture of a real machine"
"""One line at 80 columns: the 80x24 dashboard has room for the note, the roofline strip and all ten panes."""


def build_setup(request: AuditRequest, made: Mapping[Role, Transport] | None = None) -> AuditSetup:
    """Live audit from --host/--container, or a replay of --replay FILE / --demo. `made`: transports already
    connecting by role (collect/early.py)."""

    if request.replay or request.demo:
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
            else (
                snap.note
                or f"REPLAY of {path.name} (recorded {snap.created_at:%Y-%m-%d %H:%M} UTC)"
            )
        )
        return AuditSetup(
            Audit(bindings, selected_probes(request), audit_options(request)),
            mode,
            note,
            path,
            recorded=tuple(snap.records),
        )
    if request.resume:  # failed commands live, the rest from the snapshot (tui/cli/resume.py)
        return build_resume_setup(request)
    host = parse_host_spec(request.host)
    container = parse_container_spec(request.container, host=host) if request.container else None
    bindings = live_bindings(host, container, ssh_options(request), made)
    return AuditSetup(Audit(bindings, selected_probes(request), audit_options(request)), "live")


def _dir(request: AuditRequest) -> Path | None:
    return request.snapshot_dir  # already a Path with ~ expanded (tui/cli/entry.py)


def stamp(run: AuditRun, setup: AuditSetup) -> AuditRun:
    """Label a folded run with its mode and note; a replay keeps the records no probe asks for any more."""
    if setup.recorded:
        run = keep_unasked(run, setup.recorded)
    return run.model_copy(update={"mode": setup.mode, "note": setup.note})
