"""Errors before work: every output path and key file is checked before an audit starts (one line, exit 2).

An audit can take minutes; finding out afterwards that `--prom` points into a missing folder (and getting a
traceback) wastes all of it. No Textual, no rich: `tui/cli/entry.py` calls `problems(args)` and raises each as a
CliError. Nothing here contacts a target; the only thing written is a probe file in the output folder, removed at
once (the folder will be written to anyway).
"""

from __future__ import annotations

import difflib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gpuaudit.probes.core.collect.targets import parse_container_spec, parse_host_spec
from gpuaudit.probes.core.errors import GpuAuditError
from gpuaudit.snapshots import plain

PSEUDO_FS = ("/proc", "/sys", "/dev")
"""Kernel file systems: a report written there is never what the user meant, and some writes succeed oddly."""
CONTAINER_KINDS = ("pct", "lxc", "docker")
CONTAINER_HINT = "--container takes pct:ID, lxc:NAME, docker:NAME or [user@]host[:port]"


def output_file_problem(flag: str, path: Path) -> str | None:
    """Why `path` cannot receive an output file (one line naming the flag), or None."""
    path = Path(path).expanduser()
    shown = f"{flag} {path}"
    absolute = Path(os.path.abspath(path))
    if any(str(absolute) == p or str(absolute).startswith(p + "/") for p in PSEUDO_FS):
        return (
            f"{shown}: /{absolute.parts[1]} is a kernel file system; give a file in a real folder"
        )
    if path.is_dir():
        return f"{shown}: is a folder; give a file name (e.g. {path / _example(flag)})"
    if path.exists() and not path.is_file():
        return f"{shown}: exists and is not a regular file"
    folder = absolute.parent
    if not folder.exists():
        return f"{shown}: folder {folder} does not exist"
    if not folder.is_dir():
        return f"{shown}: {folder} is not a folder"
    if (why := folder_write_problem(folder)) is not None:
        return f"{shown}: cannot write into {folder}: {why}"
    if path.exists() and not os.access(path, os.W_OK):
        return f"{shown}: exists and is not writable"
    return None


def folder_write_problem(folder: Path) -> str | None:
    """Create and remove a probe file in `folder`: the only proof that a write will succeed (root ignores modes)."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".gpuaudit-probe.", dir=folder)
    except OSError as exc:
        return exc.strerror or str(exc)
    os.close(fd)
    try:
        os.unlink(probe)
    except OSError:
        pass
    return None


def store_problem(directory: Path | None) -> str | None:
    """--save: the snapshot store (or the nearest folder it would be created in) must be usable."""

    directory = Path(os.path.abspath(directory or plain.default_dir()))
    shown = f"--save: snapshot store {directory}"
    if (why := plain.store_problem(directory)) is not None:
        return f"{shown} {why}"
    existing = directory
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{shown}: {existing} is not a folder"
    if any(str(existing) == p or str(existing).startswith(p + "/") for p in PSEUDO_FS):
        return f"{shown}: {existing} is a kernel file system"
    if (why := folder_write_problem(existing)) is not None:
        return f"{shown}: cannot write into {existing}: {why}"
    return None


def key_file_problem(flag: str, path: str | None) -> str | None:
    """--identity: the key must be a readable regular file (as --known-hosts already is): exit 2, not 3."""
    if path is None:
        return None
    file = Path(path).expanduser()
    try:
        st = os.stat(file)
    except FileNotFoundError:
        return f"{flag} {file}: no such file"
    except OSError as exc:
        return f"{flag} {file}: cannot read: {exc.strerror or exc}"
    if not stat.S_ISREG(st.st_mode):
        return f"{flag} {file}: not a regular file"
    if not os.access(file, os.R_OK):
        return f"{flag} {file}: not readable"
    return None


def container_problem(text: str | None) -> str | None:
    """--container parsed now, so a malformed spec fails before any connection and names the accepted forms."""
    if text is None:
        return None

    try:
        parse_container_spec(text, host=parse_host_spec(None))
    except GpuAuditError as exc:
        message = str(exc)
        kind = text.strip().partition(":")[0].lower()
        if ":" in text and (near := difflib.get_close_matches(kind, CONTAINER_KINDS, 1, 0.6)):
            message += f"; did you mean {near[0]}:{text.partition(':')[2]}?"
        if not all(f"{k}:" in message for k in CONTAINER_KINDS):
            message += f" ({CONTAINER_HINT})"
        return message
    return None


def problems(args: Any) -> Iterator[str]:
    """Every reason the run would fail after the audit, in flag order (the CLI reports the first)."""
    for flag, attr in (("--prom", "prom"), ("--html", "html")):
        if (path := getattr(args, attr, None)) is not None and (
            why := output_file_problem(flag, Path(path))
        ):
            yield why
    if getattr(args, "share", None) and (why := output_file_problem("--share", Path(args.share))):
        yield why
    if getattr(args, "save", None) is not None and (why := store_problem(args.snapshot_dir)):
        yield why
    if (why := key_file_problem("--identity", getattr(args, "identity", None))) is not None:
        yield why
    if (why := container_problem(getattr(args, "container", None))) is not None:
        yield why


def _example(flag: str) -> str:
    return {"--prom": "gpuaudit.prom", "--html": "report.html"}.get(flag, "out")


def plan_folder() -> Path:
    """Where the TUI's `m` writes the plan: the current folder when writable, else the user data dir's plans/.

    Decided when the TUI starts, so `m` after a long audit does not fail on a read-only working folder."""
    cwd = Path.cwd()
    if os.access(
        cwd, os.W_OK | os.X_OK
    ):  # no probe file: opening the TUI writes nothing into the cwd
        return cwd
    import platformdirs

    return platformdirs.user_data_path("gpuaudit-tui") / "plans"
