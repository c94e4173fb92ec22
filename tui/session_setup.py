"""Turns parsed CLI arguments into an Audit (live, replay or demo); shared by headless and the TUI. No Textual."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from gpuaudit.probes import REGISTRY
from gpuaudit.probes.core.models import AuditRun
from gpuaudit.probes.core.runner import Audit, AuditOptions
from gpuaudit.probes.core.session import live_bindings, replay_bindings
from gpuaudit.probes.core.ssh_transport import SshOptions
from gpuaudit.probes.core.targets import parse_container_spec, parse_host_spec

DEMO_NOTE = "DEMO: illustrative example (case study), not a capture of a real machine"
"""One line at 80 columns: the 80x24 dashboard has room for the note, the roofline strip and all ten panes."""


@dataclass
class AuditSetup:
    """What a front end needs to run and show an audit."""

    audit: Audit
    mode: str
    note: str | None = None
    source: Path | None = None


def audit_options(args: argparse.Namespace) -> AuditOptions:
    return AuditOptions(timeout_s=args.timeout, max_bytes=args.max_output, sudo=args.sudo,
                        active=args.active, python=args.python)


def ssh_options(args: argparse.Namespace) -> SshOptions:
    return SshOptions(known_hosts=args.known_hosts, identity=args.identity,
                      accept_new_host_keys=args.accept_new_host_keys, max_channels=args.max_channels,
                      connections=getattr(args, "connections", 2),
                      connect_timeout_s=min(30.0, max(5.0, args.timeout)))


def selected_probes(args: argparse.Namespace) -> list:
    ids = getattr(args, "probe_ids", None)
    return [p for p in REGISTRY if ids is None or p.id in ids]


def build_setup(args: argparse.Namespace) -> AuditSetup:
    """Live audit from --host/--container, or a replay of --replay FILE / --demo."""

    if args.replay or args.demo:
        from gpuaudit.snapshots import store

        path = store.EXAMPLES_DIR / "case-study-before.json" if args.demo else store.resolve(args.replay, _dir(args))
        snap = store.load(path)
        bindings = replay_bindings(snap.targets, snap.records, states=snap.target_states)
        mode = "demo" if args.demo else "replay"
        note = DEMO_NOTE if args.demo else (snap.note or f"REPLAY of {path.name} (recorded {snap.created_at:%Y-%m-%d %H:%M} UTC)")
        return AuditSetup(Audit(bindings, selected_probes(args), audit_options(args)), mode, note, path)
    if args.resume:  # failed commands live, the rest from the snapshot (tui/resume.py)
        from gpuaudit.tui.resume import build_resume_setup

        return build_resume_setup(args)
    host = parse_host_spec(args.host)
    container = parse_container_spec(args.container, host=host) if args.container else None
    bindings = live_bindings(host, container, ssh_options(args))
    return AuditSetup(Audit(bindings, selected_probes(args), audit_options(args)), "live")


def _dir(args: argparse.Namespace) -> Path | None:
    return getattr(args, "snapshot_dir", None)  # already a Path with ~ expanded (tui/cli.py)


def stamp(run: AuditRun, setup: AuditSetup) -> AuditRun:
    """Label a folded run with its mode and note."""
    return run.model_copy(update={"mode": setup.mode, "note": setup.note})
