"""Default snapshot names (host, kernel, driver, UTC time) and the key facts lists and headers show."""

from __future__ import annotations

from typing import Any

from gpuaudit.snapshots.schema import Snapshot

_DRIVER_KEYS = (
    "driver_version",
    "module_version",
    "smi_driver_version",
    "modinfo_version",
    "version",
)


def _facts(snapshot: Snapshot, probe_id: str, role: str = "host") -> dict[str, Any]:
    for p in snapshot.probes:
        if p.probe_id == probe_id:
            return p.facts.get(role) or {}
    return {}


def _record_line(snapshot: Snapshot, command_id: str, role: str = "host") -> str | None:
    """First stdout line of a clean recorded command: the fallback when a probe's facts lack the value."""
    for rec in snapshot.records:
        if rec.target == role and rec.command_id == command_id and rec.ok:
            lines = [ln.strip() for ln in rec.stdout.splitlines() if ln.strip()]
            return lines[0] if len(lines) == 1 else None  # two lines: malformed, no label
    return None


def kernel_of(snapshot: Snapshot) -> str | None:
    """The host's `uname -r`, e.g. "6.8.12-9-pve"."""
    value = _facts(snapshot, "kernel").get("release")
    return str(value) if value else _record_line(snapshot, "uname_r")


def driver_of(snapshot: Snapshot) -> str | None:
    """The host's NVIDIA driver version, e.g. "590.48.01"."""
    facts = _facts(snapshot, "driver")
    for key in _DRIVER_KEYS:
        value = facts.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def host_of(snapshot: Snapshot) -> str:
    """The host's name: its hostname when recorded, else the target spec (user and port dropped)."""
    state = snapshot.target_states.get("host")
    if state and state.hostname and state.hostname not in ("host", "replay"):
        return state.hostname
    for t in snapshot.targets:
        if t.role == "host" and t.kind == "ssh":
            return t.spec.rsplit("@", 1)[-1].split(":")[0] or "host"
    return "host"


def default_name(snapshot: Snapshot) -> str:
    """e.g. "pve1_6.8.12-9-pve_590.48.01_20261202T101500Z"."""
    parts = [
        host_of(snapshot),
        kernel_of(snapshot) or "kernel-unknown",
        driver_of(snapshot) or "driver-unknown",
        snapshot.created_at.strftime("%Y%m%dT%H%M%SZ"),
    ]
    return "_".join(parts)
