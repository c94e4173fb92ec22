"""Plain snapshot documents (dicts, no models): where the store is and where a document's records are.

Kept free of pydantic and the models so that readers of saved files (`fleet DIR`) start quickly, and the CLI's
checks before work (tui/cli/preflight.py: the store's path and whether it may hold snapshots) do not load the
snapshot schema before the dashboard's first frame; store.py and compact.py re-export these names.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

ENV_DIR = "GPUAUDIT_SNAPSHOT_DIR"


def default_dir() -> Path:
    """$GPUAUDIT_SNAPSHOT_DIR, else the platformdirs user data dir's snapshots/."""
    env = os.environ.get(ENV_DIR)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return platformdirs.user_data_path("gpuaudit-tui") / "snapshots"


def store_problem(directory: Path) -> str | None:
    """Why an existing directory must not hold snapshots (raw outputs of a machine), or None.

    A symlink may point anywhere (`/etc`); a directory of another user or writable by others lets them
    read, replace or plant snapshots. Only the last component is judged: parents are the system's.
    """
    try:
        st = os.lstat(directory)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot inspect it ({exc.strerror or exc})"
    if stat.S_ISLNK(st.st_mode):
        return f"is a symbolic link (to {os.readlink(directory)}); give the real directory"
    if not stat.S_ISDIR(st.st_mode):
        return "exists and is not a directory"
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        return f"is owned by uid {st.st_uid}, not by you (uid {os.geteuid()})"
    if st.st_mode & 0o002 or (st.st_mode & 0o020 and not _private_group(st.st_gid)):
        return f"is writable by others (mode {stat.S_IMODE(st.st_mode):o}); chmod go-w it or choose another"
    return None


def _private_group(gid: int) -> bool:
    """A user-private group (umask 002 systems): the user's primary group with no other listed member."""
    try:
        import grp

        return gid == os.getegid() and not grp.getgrgid(gid).gr_mem
    except (ImportError, KeyError):
        return False


def is_packed(doc: Mapping[str, Any]) -> bool:
    """True for a stored (schema 3) document: records at the top level."""
    return isinstance(doc.get("records"), list)


def records_of(doc: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Every record dict of a plain document: stored shape once each, expanded shape once per probe."""
    if is_packed(doc):
        yield from (r for r in doc["records"] if isinstance(r, Mapping))
        return
    for probe in doc.get("probes") or []:
        if isinstance(probe, Mapping):
            yield from (r for r in probe.get("records") or [] if isinstance(r, Mapping))
