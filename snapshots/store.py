"""Reading and writing snapshot files: atomic, 0600, with clear one-line errors."""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from pydantic import ValidationError

from probes.core.errors import SnapshotError
from snapshots.schema import SCHEMA_VERSION, Snapshot

MAX_SNAPSHOT_BYTES = 512 * 1024 * 1024
ENV_DIR = "GPUAUDIT_SNAPSHOT_DIR"


def default_dir() -> Path:
    """$GPUAUDIT_SNAPSHOT_DIR, else the platformdirs user data dir's snapshots/."""
    env = os.environ.get(ENV_DIR)
    if env:
        return Path(env)
    import platformdirs

    return platformdirs.user_data_path("gpuaudit-tui") / "snapshots"


def safe_name(name: str) -> str:
    """A file-name-safe version of a snapshot name."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")
    return cleaned[:120] or "snapshot"


def write_atomic(path: Path, data: bytes) -> None:
    """Write to a temp file in the same directory, fsync, then rename over the target (0600)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), 0o600)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def save(snapshot: Snapshot, name: str, directory: Path | None = None) -> Path:
    """Store a snapshot as `<dir>/<name>.json`; raise SnapshotError with a clear reason on failure."""
    directory = directory or default_dir()
    path = directory / f"{safe_name(name)}.json"
    try:
        write_atomic(path, snapshot.model_dump_json(indent=1).encode())
    except OSError as exc:
        raise SnapshotError(f"cannot save snapshot to {path}: {exc.strerror or exc}") from None
    return path


def load(path: Path) -> Snapshot:
    """Read and validate a snapshot file; every problem becomes a one-line SnapshotError."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise SnapshotError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if size > MAX_SNAPSHOT_BYTES:
        raise SnapshotError(f"{path}: too large ({size} bytes, limit {MAX_SNAPSHOT_BYTES})")
    if size == 0:
        raise SnapshotError(f"{path}: empty file, not a snapshot")
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise SnapshotError(f"{path}: not valid JSON (truncated or not a snapshot): {str(exc)[:120]}") from None
    if not isinstance(data, dict) or "schema_version" not in data or "probes" not in data:
        raise SnapshotError(f"{path}: JSON but not a gpuaudit-tui snapshot (no schema_version/probes)")
    version = data.get("schema_version")
    if not isinstance(version, int):
        raise SnapshotError(f"{path}: schema_version is not an integer")
    if version > SCHEMA_VERSION:
        raise SnapshotError(f"{path}: written by a newer gpuaudit-tui (schema {version}, this one reads up to {SCHEMA_VERSION})")
    try:
        return Snapshot.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise SnapshotError(f"{path}: not a valid snapshot: {loc}: {first['msg']}") from None


def resolve(ref: str, directory: Path | None = None) -> Path:
    """A snapshot given by path, or by name in the store (with or without .json)."""
    p = Path(ref).expanduser()
    if p.exists():
        return p
    directory = directory or default_dir()
    for cand in (directory / ref, directory / f"{ref}.json", directory / f"{safe_name(ref)}.json"):
        if cand.exists():
            return cand
    raise SnapshotError(f"{ref}: no such snapshot file or saved snapshot name (looked in {directory})")
