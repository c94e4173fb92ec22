"""~/.ssh/config lines asyncssh cannot evaluate here, made harmless once for the whole run.

`Match localnetwork CIDR` needs the optional `ifaddr` module; without it asyncssh refuses the whole file
and every SSH target fails. Such a criterion is treated as not matching (what OpenSSH does on a host that
is on none of the networks) in a private copy of the file, and the user is told once.
"""

from __future__ import annotations

import atexit
import os
import re
import shlex
import shutil
import tempfile
from functools import cache
from pathlib import Path

_MATCH = re.compile(r"^(?P<indent>\s*)match(?P<sep>\s+|\s*=\s*)(?P<rest>.*)$", re.IGNORECASE)
_INCLUDE = re.compile(r"^(?P<indent>\s*)include(?P<sep>\s+|\s*=\s*)(?P<rest>.*)$", re.IGNORECASE)


def ifaddr_available() -> bool:
    try:
        import ifaddr  # noqa: F401
    except ImportError:
        return False
    return True


def rewrite_localnetwork(text: str, ssh_dir: Path) -> tuple[str, int]:
    """Config text with every `localnetwork` criterion evaluated as not matching; and how many were.

    `Match localnetwork X ...` -> `Match !all ...` (never matches); `Match !localnetwork X ...` -> the
    criterion dropped (always true). Relative `Include`s are made absolute (asyncssh resolves them
    against ~/.ssh, and the copy lives elsewhere).
    """
    out, count = [], 0
    for line in text.splitlines():
        m = _MATCH.match(line)
        if m and "localnetwork" in m["rest"].lower():
            try:
                args = shlex.split(m["rest"], comments=True)
            except ValueError:
                out.append(line)
                continue
            kept: list[str] = []
            while args:
                word = args.pop(0)
                if word.lower().lstrip("!") == "localnetwork":
                    count += 1
                    if args:
                        args.pop(0)
                    if not word.startswith("!"):
                        kept.append("!all")
                    continue
                kept.append(word)
            out.append(f"{m['indent']}Match {' '.join(shlex.quote(a) for a in kept) or 'all'}")
            continue
        inc = _INCLUDE.match(line)
        if inc:
            try:
                paths = shlex.split(inc["rest"], comments=True)
            except ValueError:
                out.append(line)
                continue
            fixed = [p if os.path.isabs(os.path.expanduser(p)) else str(ssh_dir / p) for p in paths]
            out.append(f"{inc['indent']}Include {' '.join(shlex.quote(p) for p in fixed)}")
            continue
        out.append(line)
    return "\n".join(out) + "\n", count


@cache
def config_override(config: str | None = None) -> tuple[str | None, str | None]:
    """(path of a private rewritten copy of the user's ssh config or None, a one-line warning or None).

    None, None when nothing needs rewriting (no such file, no localnetwork, or ifaddr is installed).
    """
    path = Path(config) if config else Path.home() / ".ssh" / "config"
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return None, None
    if "localnetwork" not in text.lower() or ifaddr_available():
        return None, None
    new, count = rewrite_localnetwork(text, path.parent)
    if not count:
        return None, None
    tmp = Path(tempfile.mkdtemp(prefix="gpuaudit-sshcfg-"))
    atexit.register(shutil.rmtree, tmp, True)
    copy = tmp / "config"
    fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(new)
    return str(copy), (
        f"{path}: `Match localnetwork` needs the Python module ifaddr (not installed); "
        f"{count} such criterion(s) treated as not matching"
    )
