"""Reading and writing snapshot files: atomic, 0600 in a 0700 store, with clear one-line errors."""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from pathlib import Path

from gpuaudit.probes.core.errors import SnapshotError
from gpuaudit.snapshots.migrate import MigrationError, migrate
from gpuaudit.snapshots.plain import ENV_DIR as ENV_DIR
from gpuaudit.snapshots.plain import default_dir as default_dir
from gpuaudit.snapshots.plain import store_problem as store_problem
from gpuaudit.snapshots.schema import SCHEMA_VERSION, Snapshot

MAX_SNAPSHOT_BYTES = 512 * 1024 * 1024
EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"
_FAST_HEADER = re.compile(rb'^\s*\{\s*"schema_version"\s*:\s*(\d+)\s*[,}]')


def safe_name(name: str) -> str:
    """A file-name-safe version of a snapshot name."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")
    return cleaned[:120] or "snapshot"


def ensure_dir(directory: Path) -> None:
    """Create the store (and missing parents) private to the user: snapshots hold raw outputs.

    An existing store is refused (SnapshotError) when store_problem() names a reason.
    """
    if (why := store_problem(directory)) is not None:
        raise SnapshotError(f"snapshot store {directory} {why}")
    missing = []
    d = directory
    while not d.exists() and d != d.parent:
        missing.append(d)
        d = d.parent
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    for created in missing:  # mkdir's mode is filtered by the umask; only touch what we created
        os.chmod(created, 0o700)


def write_atomic(path: Path, data: bytes) -> None:
    """Write to a temp file in the same directory, fsync, then rename over the target (0600).

    A failure at any point leaves an existing file at `path` untouched and no temp file behind.
    """
    ensure_dir(path.parent)
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


def save(
    snapshot: Snapshot, name: str, directory: Path | None = None, *, overwrite: bool = False
) -> Path:
    """Store a snapshot as `<dir>/<name>.json` (`<name>-2.json`... if taken); SnapshotError on failure."""
    directory = Path(
        os.path.abspath(directory or default_dir())
    )  # the path said back to the user is absolute
    stem = safe_name(name)
    path = directory / f"{stem}.json"
    n = 2
    while not overwrite and path.exists():
        path = directory / f"{stem}-{n}.json"
        n += 1
    try:
        ensure_dir(
            directory
        )  # refuses a symlinked, foreign or world-writable store before anything is written
        write_atomic(path, snapshot.model_dump_json(indent=1).encode())
    except OSError as exc:
        raise SnapshotError(f"cannot save snapshot to {path}: {exc.strerror or exc}") from None
    return path


def load(path: Path) -> Snapshot:
    """Read, migrate and validate a snapshot file; every problem becomes a one-line SnapshotError."""
    path = Path(path)
    try:
        if path.is_dir():
            raise SnapshotError(f"{path}: is a directory, not a snapshot file")
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):  # /dev/zero, a FIFO: never opened (endless or blocking)
            raise SnapshotError(f"{path}: not a regular file, not a snapshot")
        size = st.st_size
    except OSError as exc:
        raise SnapshotError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if size > MAX_SNAPSHOT_BYTES:
        raise SnapshotError(f"{path}: too large ({size} bytes, limit {MAX_SNAPSHOT_BYTES})")
    if size == 0:
        raise SnapshotError(f"{path}: empty file, not a snapshot")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SnapshotError(f"{path}: cannot read: {exc.strerror or exc}") from None
    m = _FAST_HEADER.match(raw[:200])
    if (
        m and int(m[1]) == SCHEMA_VERSION and b'"probes"' in raw
    ):  # current schema: pydantic's parser, no intermediate dicts
        try:
            return Snapshot.model_validate_json(raw)
        except (ValueError, RecursionError):  # pydantic's ValidationError is a ValueError
            pass  # fall through for a precise message
    return parse_document(raw, path)


def parse_document(raw: bytes, path: Path) -> Snapshot:
    """The slow, careful path: JSON, shape, version, migration, validation."""
    try:
        data = json.loads(raw)
    except UnicodeDecodeError:
        raise SnapshotError(f"{path}: not a snapshot (binary, not UTF-8 JSON)") from None
    except RecursionError:  # hostile: `[[[[...` thousands deep blows Python's JSON parser's stack
        raise SnapshotError(f"{path}: not a snapshot (JSON nested too deeply)") from None
    except json.JSONDecodeError as exc:
        # an error at the very end of the text means the file stops early (an interrupted copy)
        what = "truncated JSON" if exc.pos >= len(exc.doc.rstrip()) else "not valid JSON"
        raise SnapshotError(
            f"{path}: {what} ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    try:
        doc = migrate(data)
    except MigrationError as exc:
        raise SnapshotError(f"{path}: {exc}") from None
    if "probes" not in doc:
        raise SnapshotError(f"{path}: JSON but not a gpuaudit-tui snapshot (no probes)")
    from pydantic import (
        ValidationError,  # reading a snapshot validates it: pydantic loads here, not at import
    )

    try:
        return Snapshot.model_validate(doc)
    except RecursionError:
        raise SnapshotError(f"{path}: not a snapshot (JSON nested too deeply)") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise SnapshotError(f"{path}: not a valid snapshot: {loc}: {first['msg']}") from None


def resolve(ref: str, directory: Path | None = None) -> Path:
    """A snapshot given by path, or by name in the store (with or without .json), or a bundled example."""
    p = Path(ref).expanduser()
    if p.is_file() or (p.exists() and (os.sep in ref or ref.endswith(".json"))):
        return p
    directory = directory or default_dir()
    for cand in (
        directory / ref,
        directory / f"{ref}.json",
        directory / f"{safe_name(ref)}.json",
        EXAMPLES_DIR / f"{ref}.json",
    ):
        if cand.is_file():
            return cand
    raise SnapshotError(
        f"{ref}: no such snapshot file or saved snapshot name (looked in {directory})"
    )


def load_ref(ref: str, directory: Path | None = None) -> tuple[Path, Snapshot]:
    """resolve() then load()."""
    path = resolve(ref, directory)
    return path, load(path)
