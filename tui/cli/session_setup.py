"""Turns an AuditRequest (probes/core/run/request.py, built once by tui/cli/entry.py) into an Audit (live, replay or demo);
shared by headless and the TUI. No Textual."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpuaudit.probes import REGISTRY
from gpuaudit.probes.core.collect.ssh_transport import SshOptions
from gpuaudit.probes.core.collect.targets import parse_container_spec, parse_host_spec
from gpuaudit.probes.core.models import AuditRun
from gpuaudit.probes.core.run.request import AuditRequest
from gpuaudit.probes.core.run.runner import Audit, AuditOptions
from gpuaudit.probes.core.run.session import live_bindings, replay_bindings

DEMO_NOTE = "DEMO: illustrative example (case study), not a capture of a real machine"
"""One line at 80 columns: the 80x24 dashboard has room for the note, the roofline strip and all ten panes."""


@dataclass
class AuditSetup:
    """What a front end needs to run and show an audit."""

    audit: Audit
    mode: str
    note: str | None = None
    source: Path | None = None


def audit_options(request: AuditRequest) -> AuditOptions:
    return AuditOptions(
        timeout_s=request.timeout,
        max_bytes=request.max_output,
        sudo=request.sudo,
        active=request.active,
        python=request.python,
        output_budget=request.output_budget,
    )


def ssh_options(request: AuditRequest) -> SshOptions:
    return SshOptions(
        known_hosts=request.known_hosts,
        identity=request.identity,
        accept_new_host_keys=request.accept_new_host_keys,
        max_channels=request.max_channels,
        connections=request.connections,
        sessions=request.sessions,
        connect_timeout_s=min(30.0, max(5.0, request.timeout)),
    )


def selected_probes(request: AuditRequest) -> list:
    ids = request.probe_ids
    return [p for p in REGISTRY if ids is None or p.id in ids]


def build_setup(request: AuditRequest) -> AuditSetup:
    """Live audit from --host/--container, or a replay of --replay FILE / --demo."""

    if request.replay or request.demo:
        from gpuaudit.snapshots import store

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
            Audit(bindings, selected_probes(request), audit_options(request)), mode, note, path
        )
    if request.resume:  # failed commands live, the rest from the snapshot (tui/cli/resume.py)
        from gpuaudit.tui.cli.resume import build_resume_setup

        return build_resume_setup(request)
    host = parse_host_spec(request.host)
    container = parse_container_spec(request.container, host=host) if request.container else None
    bindings = live_bindings(host, container, ssh_options(request))
    return AuditSetup(Audit(bindings, selected_probes(request), audit_options(request)), "live")


def _dir(request: AuditRequest) -> Path | None:
    return request.snapshot_dir  # already a Path with ~ expanded (tui/cli/entry.py)


def stamp(run: AuditRun, setup: AuditSetup) -> AuditRun:
    """Label a folded run with its mode and note."""
    return run.model_copy(update={"mode": setup.mode, "note": setup.note})
