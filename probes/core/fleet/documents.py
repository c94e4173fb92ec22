"""Fleet documents: saved snapshot files read as plain dicts (no models), and the host records peers compare."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpuaudit.probes.core.fleet.peers import Node, node_from_records
from gpuaudit.snapshots.compact import records_of
from gpuaudit.snapshots.store import default_dir

MAX_SNAPSHOT_BYTES = 256 * 1024 * 1024


def snapshot_files(paths: list[str], store: Path | None) -> list[Path]:
    if not paths:
        paths = [str(store or default_dir())]
    files: list[Path] = []
    for text in paths:
        path = Path(text).expanduser()
        if path.is_dir():
            files += sorted(p for p in path.glob("*.json") if p.is_file())
        elif path.is_file():
            files.append(path)
        else:
            raise ValueError(f"{path}: no such file or directory")
    return files


def host_records(doc: Mapping[str, Any]) -> dict[str, str]:
    """command id -> stdout of every usable host record of a snapshot document."""
    out: dict[str, str] = {}
    for r in records_of(doc):  # the stored shape (each record once) or an expanded one
        if (
            isinstance(r, dict)
            and r.get("target") == "host"
            and r.get("exit_status") == 0
            and not r.get("error")
            and not r.get("timed_out")
            and not r.get("truncated")
            and isinstance(r.get("stdout"), str)
        ):
            out.setdefault(str(r.get("command_id")), r["stdout"])
    return out


def load_document(path: Path) -> dict[str, Any]:
    """A snapshot file as a dict; ValueError (one line) for what is not one."""
    if path.stat().st_size > MAX_SNAPSHOT_BYTES:
        raise ValueError("larger than 256 MiB")
    try:
        doc = json.loads(path.read_bytes())
    except RecursionError:
        raise ValueError("nested too deeply to be a snapshot") from None
    if not isinstance(doc, dict) or "probes" not in doc:
        raise ValueError("not a gpuaudit snapshot")
    return doc


def node_name(doc: Mapping[str, Any], path: str) -> str:
    """The host's recorded hostname, else the snapshot's name, else the file's stem."""
    state = (doc.get("target_states") or {}).get("host") or {}
    return str(state.get("hostname") or doc.get("name") or Path(path).stem)


def load_node(path: Path) -> Node:
    doc = load_document(path)
    return node_from_records(node_name(doc, str(path)), str(path), host_records(doc))
