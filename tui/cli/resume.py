"""`--resume FILE`: re-run what failed in a snapshot, merge, and store the result as a new snapshot. No Textual."""

from __future__ import annotations

import sys
from pathlib import Path

from gpuaudit.probes.core.collect.remote_line import remote_line
from gpuaudit.probes.core.collect.targets import TargetSpec, parse_container_spec, parse_host_spec
from gpuaudit.probes.core.errors import UsageError
from gpuaudit.probes.core.models import Target
from gpuaudit.probes.core.run.request import AuditRequest
from gpuaudit.probes.core.run.resume import ResumeTransport, rerun_plan, resume_bindings
from gpuaudit.probes.core.run.runner import Audit, TargetBinding
from gpuaudit.probes.core.run.session import live_bindings, run_sync
from gpuaudit.snapshots import store
from gpuaudit.snapshots.naming import default_name
from gpuaudit.snapshots.schema import Snapshot
from gpuaudit.tui.cli.setup_options import AuditSetup, audit_options, selected_probes, ssh_options

LIVE_KINDS = ("local", "ssh", "pct", "lxc", "docker")


def _store_dir(request: AuditRequest) -> Path | None:
    return Path(request.snapshot_dir).expanduser() if request.snapshot_dir else None


def target_specs(
    snapshot: Snapshot, request: AuditRequest
) -> tuple[TargetSpec | None, TargetSpec | None]:
    """The snapshot's targets as live specs; --host/--container override a recorded address."""
    by_role: dict[str, Target] = {t.role: t for t in snapshot.targets}
    host_t, cont_t = by_role.get("host"), by_role.get("container")
    host = None
    if request.host:
        host = parse_host_spec(request.host)
    elif host_t is not None and host_t.kind in LIVE_KINDS:
        host = parse_host_spec(None if host_t.kind == "local" else host_t.spec)
    container = None
    cont_text = request.container or (
        cont_t.spec if cont_t is not None and cont_t.kind in LIVE_KINDS else None
    )
    if cont_text and host is not None:
        container = parse_container_spec(cont_text, host=host)
    return host, container


def confirm_targets(
    snap: Snapshot, plan: dict[str, list[str]], request: AuditRequest, name: str
) -> None:
    """A snapshot may come from anyone: the machines it names are contacted only when the user named them
    too (--host/--container) or confirmed them (--yes). This machine (`local`) needs no confirmation."""
    roles = {r for r, ids in plan.items() if ids}
    by_role = {t.role: t for t in snap.targets}
    cont = by_role.get("container")
    if "container" in roles and cont is not None and cont.kind in ("pct", "lxc", "docker"):
        roles.add("host")  # entered through the host
    given = {"host": request.host, "container": request.container}
    unconfirmed = [
        by_role[r]
        for r in ("host", "container")
        if r in roles and r in by_role and by_role[r].kind != "local" and not given[r]
    ]
    if unconfirmed and not request.yes:
        shown = ", ".join(f"{t.role} {t.spec}" for t in unconfirmed)
        raise UsageError(
            f"{name} would connect to {shown} (named by the file, not by you); "
            "give them with --host/--container, or --yes to connect"
        )


IDENTITY_SHELL = "uname -n; cat /etc/machine-id 2>/dev/null || echo; cat /sys/class/dmi/id/board_serial 2>/dev/null || echo"
"""Who the live machine is (read-only): hostname, machine-id, board serial (root-only on most machines)."""
IDENTITY_FIELDS = ("hostname", "machine-id", "board serial")


def recorded_identity(snap: Snapshot) -> dict[str, str]:
    """What the snapshot knows of the host's identity: its hostname, machine-id and board serial when recorded."""
    out: dict[str, str] = {}
    state = (snap.target_states or {}).get("host")
    if state is not None and state.hostname:
        out["hostname"] = state.hostname
    for rec in snap.records:
        if rec.target != "host" or rec.exit_status != 0:
            continue
        if rec.command_id == "machine_id" and rec.stdout.strip():
            out["machine-id"] = rec.stdout.strip().splitlines()[0]
        elif rec.command_id == "dmidecode_bios" and "Base Board Information" in rec.stdout:
            board = rec.stdout.split("Base Board Information", 1)[1]
            for ln in board.splitlines():
                key, _, val = ln.strip().partition(":")
                if key == "Serial Number" and val.strip():
                    out["board serial"] = val.strip()
                    break
    return out


def live_identity(host: TargetSpec, request: AuditRequest) -> dict[str, str]:
    """Ask the live machine who it is (one read-only command over its own short-lived connection)."""

    async def ask() -> bytes:
        transport = live_bindings(host, None, ssh_options(request))[0].transport
        try:
            await transport.connect()
            raw = await transport.run(
                remote_line(IDENTITY_SHELL, timeout_s=request.timeout),
                command_id="resume_identity",
                timeout_s=request.timeout,
                max_bytes=64 * 1024,
            )
        finally:
            await transport.aclose()
        return bytes(raw.stdout)

    lines = run_sync(ask()).decode("utf-8", "replace").splitlines()
    return {k: v.strip() for k, v in zip(IDENTITY_FIELDS, lines, strict=False) if v.strip()}


def identity_mismatch(recorded: dict[str, str], live: dict[str, str]) -> str | None:
    """None when every identity field known on both sides matches (and one is known); else what differs."""
    both = [k for k in IDENTITY_FIELDS if k in recorded and k in live]
    differ = [f"{k} {recorded[k]} vs {live[k]}" for k in both if recorded[k] != live[k]]
    if differ:
        return ", ".join(differ)
    if not both:
        return "nothing to compare: " + (
            f"recorded {', '.join(recorded) or 'no identity'}, live {', '.join(live) or 'no answer'}"
        )
    return None


def check_identity(
    snap: Snapshot, host: TargetSpec, request: AuditRequest, name: str
) -> str | None:
    """--resume with a different --host merges two machines into one snapshot unless it is the same machine:
    refuse (UsageError) unless hostname/machine-id/board serial match, or --yes (the mismatch is returned, and
    the resumed snapshot's note records it)."""
    recorded_t = next((t for t in snap.targets if t.role == "host"), None)
    if not request.host or recorded_t is None or recorded_t.spec == request.host:
        return None
    try:
        live = live_identity(host, request)
    except Exception as exc:  # noqa: BLE001 - an unreachable machine: the audit says so itself
        live = {}
        why: str | None = f"{exc.__class__.__name__}: {exc}"
    else:
        why = None
    mismatch = identity_mismatch(recorded_identity(snap), live)
    if mismatch is None:
        return None
    if request.yes:
        return mismatch
    raise UsageError(
        f"{name} was recorded on {recorded_t.spec}, --host {request.host} may be another machine "
        f"({why or mismatch}); give --yes to merge anyway (the snapshot records it)"
    )


def build_resume_setup(request: AuditRequest):
    """An AuditSetup whose transports answer from the snapshot and reach the machine only for failures."""

    path = store.resolve(request.resume, _store_dir(request))
    snap = store.load(path)
    if snap.mode == "demo":
        raise UsageError(
            f"{path.name}: a demo snapshot describes no real machine; there is nothing to resume"
        )
    if not snap.targets:
        raise UsageError(f"{path.name}: the snapshot has no targets to resume")
    probes = selected_probes(request)
    options = audit_options(request)
    plan = rerun_plan(snap.records, probes, [t.role for t in snap.targets], active=options.active)
    live: list[TargetBinding] = []
    if any(plan.values()):
        host, container = target_specs(snap, request)
        missing = [
            r
            for r, ids in plan.items()
            if ids and (host is None or (r == "container" and container is None))
        ]
        if missing:
            raise UsageError(
                f"{path.name}: cannot reach the {missing[0]} again (recorded as "
                f"{next(t.spec for t in snap.targets if t.role == missing[0])}); give --host/--container"
            )
        assert host is not None
        confirm_targets(snap, plan, request, path.name)
        mismatch = check_identity(snap, host, request, path.name)
        live = live_bindings(host, container, ssh_options(request))
    else:
        mismatch = None
    bindings = resume_bindings(snap.targets, snap.records, plan, live, snap.target_states)
    todo = sum(len(ids) for ids in plan.values())
    note = f"RESUME of {path.name}: {todo} command(s) re-run live, the rest from the recording"
    if mismatch:
        note += f"; --yes: merged although the machine differs ({mismatch})"
    return AuditSetup(
        Audit(bindings, probes, options), "resume", note, path, recorded=tuple(snap.records)
    )


def ran_live(setup) -> dict[str, list[str]]:
    """role -> command ids actually run on the machine during the resume."""
    out: dict[str, list[str]] = {}
    for b in setup.audit.bindings.values():
        if isinstance(b.transport, ResumeTransport):
            out[b.target.role] = list(b.transport.ran_live)
    return out


def merge(original: Snapshot, resumed: Snapshot) -> Snapshot:
    """The resumed probes replace the original's; probes not re-judged (outside --probes) are kept, and so are
    those whose every record is "target failed" in the resume (the target is still down: its recorded answers
    stay as recorded, never replaced by "target failed")."""
    down = {r for r, st in (resumed.target_states or {}).items() if st.state == "failed"}

    def lost(p) -> bool:
        return bool(p.records) and all(
            r.target in down and (r.error or "").startswith("target failed") for r in p.records
        )

    new_by_id = {p.probe_id: p for p in resumed.probes}
    probes = [
        p if lost(new := new_by_id.pop(p.probe_id, p)) else new for p in original.probes
    ] + list(new_by_id.values())
    return resumed.model_copy(
        update={"probes": probes, "findings": [f for p in probes for f in p.findings]}
    )


def merged_resume(snapshot: Snapshot, setup, request: AuditRequest) -> Snapshot:
    """The resumed run merged with the original, named (not stored yet)."""
    assert setup.source is not None
    merged = merge(store.load(setup.source), snapshot)
    name = request.save or f"{default_name(merged)}_resumed"
    return merged.model_copy(update={"name": name})


def store_resumed(merged: Snapshot, setup, request: AuditRequest) -> Path:
    """Store the merged snapshot as a new one and say what was re-run (stderr)."""
    path = store.save(merged, merged.name or "resumed", _store_dir(request))
    live = {role: ids for role, ids in ran_live(setup).items() if ids}
    down = {
        role: st.reason or "failed"
        for role, st in (merged.target_states or {}).items()
        if st.state == "failed"
    }
    for role, why in down.items():  # still down: say so, never "all recorded answers were usable"
        print(f"still unreachable: {role} ({why}): nothing was re-run for it", file=sys.stderr)
    done = "; ".join(f"{role}: {', '.join(ids)}" for role, ids in live.items()) or (
        "nothing (the target(s) that needed it were unreachable)"
        if down
        else "nothing (all recorded answers were usable)"
    )
    print(f"re-ran live: {done}", file=sys.stderr)
    print(f"saved resumed snapshot: {path}", file=sys.stderr)
    return path


def finish(snapshot: Snapshot, setup, request: AuditRequest) -> tuple[Snapshot, Path]:
    """Merge with the original, store as a new snapshot, print its path on stderr."""
    merged = merged_resume(snapshot, setup, request)
    return merged, store_resumed(merged, setup, request)
