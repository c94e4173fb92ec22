"""Turns an AuditRequest (probes/core/run/request.py, built once by tui/cli/entry.py) into an Audit (live, replay or demo);
shared by headless and the TUI. No Textual."""

from __future__ import annotations

from collections.abc import Mapping
from types import ModuleType

from gpuaudit.probes.core.collect.replay_transport import keep_unasked
from gpuaudit.probes.core.collect.targets import parse_container_spec, parse_host_spec
from gpuaudit.probes.core.collect.transport import Transport
from gpuaudit.probes.core.models import AuditRun, Role
from gpuaudit.probes.core.run.request import AuditRequest
from gpuaudit.probes.core.run.runner import Audit
from gpuaudit.probes.core.run.session import live_bindings
from gpuaudit.tui.cli.setup_options import AuditSetup, audit_options, selected_probes, ssh_options


def build_setup(request: AuditRequest, made: Mapping[Role, Transport] | None = None) -> AuditSetup:
    """Live audit from --host/--container, or a replay of --replay FILE / --demo, or --resume (those three in
    tui/cli/recorded_setup.py). `made`: transports already connecting by role (collect/early.py)."""
    if request.replay or request.demo:
        return _recorded().replay_setup(request)
    if request.resume:  # failed commands live, the rest from the snapshot (tui/cli/resume.py)
        return _recorded().build_resume_setup(request)
    host = parse_host_spec(request.host)
    container = parse_container_spec(request.container, host=host) if request.container else None
    bindings = live_bindings(host, container, ssh_options(request), made)
    return AuditSetup(Audit(bindings, selected_probes(request), audit_options(request)), "live")


def _recorded() -> ModuleType:
    """tui/cli/recorded_setup.py, loaded for a replay, the demo or --resume only (the snapshot store and schema)."""
    from gpuaudit.tui.cli import recorded_setup

    return recorded_setup


def stamp(run: AuditRun, setup: AuditSetup) -> AuditRun:
    """Label a folded run with its mode and note; a replay keeps the records no probe asks for any more."""
    if setup.recorded:
        run = keep_unasked(run, setup.recorded)
    return run.model_copy(update={"mode": setup.mode, "note": setup.note})
