"""Default snapshot names: host, kernel, driver and UTC time."""

from __future__ import annotations

from snapshots.schema import Snapshot


def _fact(snapshot: Snapshot, probe_id: str, key: str) -> str | None:
    for p in snapshot.probes:
        if p.probe_id == probe_id:
            value = p.facts.get("host", {}).get(key)
            return str(value) if value else None
    return None


def default_name(snapshot: Snapshot) -> str:
    """e.g. "pve1_6.8.12-9-pve_590.48.01_20261202T101500Z"."""
    state = snapshot.target_states.get("host")
    host = (state.hostname if state and state.hostname else None) or "host"
    parts = [host, _fact(snapshot, "kernel", "release") or "kernel-unknown",
             _fact(snapshot, "driver", "driver_version") or "driver-unknown",
             snapshot.created_at.strftime("%Y%m%dT%H%M%SZ")]
    return "_".join(parts)
