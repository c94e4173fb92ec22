"""Target specs (`[user@]host[:port]`, `pct:ID`, `lxc:NAME`, `docker:NAME`) and the exact command lines built for them."""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpuaudit.probes.core.errors import UsageError
from gpuaudit.probes.core.redact import without_userinfo

if TYPE_CHECKING:
    from gpuaudit.probes.core.models import Role, Target

_HOSTNAME = r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,252})"
_SSH_SPEC = re.compile(
    rf"^(?:(?P<user>[A-Za-z_][A-Za-z0-9_.-]{{0,31}})@)?"
    rf"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>{_HOSTNAME}))"
    rf"(?::(?P<port>[0-9]{{1,5}}))?$"
)
_PCT_ID = re.compile(r"^[0-9]{1,9}$")
_CONTAINER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")

WRAP_PREFIX = {
    "pct": "pct exec {name} --",
    "lxc": "lxc-attach -n {name} --",
    "docker": "docker exec {name}",
}
UNSUPPORTED_KINDS = (
    "podman",
    "lxd",
    "incus",
    "nspawn",
    "machinectl",
    "kubectl",
    "k8s",
    "qm",
    "vm",
    "ct",
    "crictl",
    "nerdctl",
)
"""Container-ish prefixes we do not enter: refused by name, never looked up as a host called `podman`."""


def container_prefix(text: str) -> str | None:
    """`PCT:101` -> "pct": the lower-cased prefix when `text` looks like a container spec (known or not)."""
    prefix, sep, rest = text.partition(":")
    low = prefix.strip().lower()
    if sep and (low in WRAP_PREFIX or (low in UNSUPPORTED_KINDS and not rest.isdigit())):
        return low
    return None


@dataclass(frozen=True, slots=True)
class SshAddress:
    """Where to connect: host (an IP, name or ~/.ssh/config alias), optional user and port."""

    host: str
    user: str | None = None
    port: int | None = None


@dataclass(frozen=True, slots=True)
class TargetSpec:
    """A parsed --host/--container value."""

    role: Role
    raw: str
    kind: str
    """local | ssh | pct | lxc | docker"""
    ssh: SshAddress | None = None
    name: str | None = None
    """Container id/name for pct/lxc/docker (validated, still quoted when used)."""

    def to_target(self) -> Target:
        """The serialisable Target model for snapshots and headers (pydantic loads here, when an audit is bound:
        parsing --host/--container and the early connect load none of it, issue 30)."""
        from gpuaudit.probes.core.models import Target

        kind = self.kind
        label = f"{self.role} ({self.raw})"
        return Target(role=self.role, spec=self.raw, kind=kind, label=label)  # type: ignore[arg-type]

    @property
    def wrap_prefix(self) -> str | None:
        """`pct exec 101 --` etc. for containers entered through the host, else None."""
        if self.kind in WRAP_PREFIX:
            return WRAP_PREFIX[self.kind].format(name=shlex.quote(self.name or ""))
        return None


def parse_ssh_address(text: str) -> SshAddress:
    """Parse `[user@]host[:port]` (IPv6 as `[::1]:22`); raise UsageError on anything else."""
    m = _SSH_SPEC.match(text)
    if not m:
        raise UsageError(
            f"malformed target {without_userinfo(text)!r}: expected [user@]host[:port]"
        )
    port = int(m["port"]) if m["port"] else None
    if port is not None and not 1 <= port <= 65535:
        raise UsageError(f"malformed target {without_userinfo(text)!r}: port must be 1-65535")
    return SshAddress(host=m["v6"] or m["host"], user=m["user"], port=port)


def parse_host_spec(text: str | None) -> TargetSpec:
    """--host: None or "local" means this machine; otherwise an SSH address."""
    if text is None or text in ("local", "localhost-local"):
        return TargetSpec(role="host", raw="local", kind="local")
    text = text.strip()
    if not text:
        raise UsageError(
            "--host is empty: give [user@]host[:port], or leave it out for this machine"
        )
    if container_prefix(text):
        raise UsageError(f"--host {text!r}: pct:/lxc:/docker: specs are for --container")
    return TargetSpec(role="host", raw=text, kind="ssh", ssh=parse_ssh_address(text))


def parse_container_spec(text: str, *, host: TargetSpec) -> TargetSpec:
    """--container: `pct:ID`, `lxc:NAME`, `docker:NAME` (through the host) or `[user@]host[:port]`."""
    text = text.strip()
    if not text:
        raise UsageError(
            "--container is empty: give pct:ID, lxc:NAME, docker:NAME or [user@]host[:port]"
        )
    prefix = container_prefix(text)
    rest = text.partition(":")[2]
    if prefix in UNSUPPORTED_KINDS:
        raise UsageError(
            f"--container {text!r}: {prefix}: containers are not supported; give pct:ID, lxc:NAME, "
            "docker:NAME, or the container's own SSH address"
        )
    if prefix is not None:
        text = (
            f"{prefix}:{rest}"  # PCT:101 == pct:101: the kind is case-insensitive, the name is not
        )
        valid = _PCT_ID if prefix == "pct" else _CONTAINER_NAME
        if not valid.match(rest):
            what = (
                "a numeric VMID" if prefix == "pct" else "a name of letters, digits, '_', '.', '-'"
            )
            raise UsageError(f"malformed container {text!r}: {prefix}: needs {what}")
        return TargetSpec(role="container", raw=text, kind=prefix, name=rest)
    if host.kind == "local" and text == "local":
        raise UsageError(
            "--container local is not a container; give pct:ID, lxc:NAME, docker:NAME or an SSH address"
        )
    return TargetSpec(role="container", raw=text, kind="ssh", ssh=parse_ssh_address(text))


def build_command_line(
    shell: str,
    *,
    wrap_prefix: str | None = None,
    sudo: bool = False,
    remote_timeout_s: float | None = None,
) -> str:
    """The exact line sent to a target for one declared command.

    `LC_ALL=C` keeps outputs parseable; the container wrapper enters the container through the
    host; `sudo -n` never prompts; `timeout -s KILL` makes the remote side die with the client's
    deadline (asyncssh's own timeout leaves the remote process running).
    """
    line = "sh -c " + shlex.quote("LC_ALL=C; export LC_ALL; " + shell)
    if wrap_prefix:
        line = f"{wrap_prefix} {line}"
    if sudo:
        line = "sudo -n " + line
    if remote_timeout_s is not None:
        # exec: timeout(1) moves into its own process group; as the session leader it cannot, so the
        # client-side KILL (sent to the session's group) still reaches the whole command tree.
        line = f"exec timeout -s KILL {max(1, math.ceil(remote_timeout_s))} {line}"
    return line


MAX_KNOWN_HOSTS_BYTES = 64 * 1024 * 1024


def known_hosts_problem(path: str | None, *, accept_new: bool = False) -> str | None:
    """Why a known_hosts file cannot be used, as one line, or None (checked before any connection).

    `path` None means the user's ~/.ssh/known_hosts, which may be absent. A given file must exist unless
    --accept-new-host-keys may start it; it must be a regular file (never /dev/zero) of text: asyncssh
    otherwise fails on every target with a raw UnicodeDecodeError or a "No such file" that reads like a
    network error.
    """
    import os
    import stat
    from pathlib import Path

    explicit = path is not None
    file = Path(path).expanduser() if path is not None else Path.home() / ".ssh" / "known_hosts"
    what = f"--known-hosts {file}" if explicit else f"known_hosts {file}"
    try:
        st = os.stat(file)
    except FileNotFoundError:
        if explicit and not accept_new:
            return f"{what}: no such file (give an existing known_hosts, or --accept-new-host-keys to start one)"
        return None
    except OSError as exc:
        return f"{what}: cannot read: {exc.strerror or exc}"
    if not stat.S_ISREG(st.st_mode):
        return f"{what}: not a regular file"
    if st.st_size > MAX_KNOWN_HOSTS_BYTES:
        return f"{what}: too large ({st.st_size} bytes)"
    try:
        data = file.read_bytes()
    except OSError as exc:
        return f"{what}: cannot read: {exc.strerror or exc}"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        return (
            f"{what}: line {line} is not text (byte 0x{data[exc.start]:02x} at column {column}); "
            "fix or delete that line"
        )
    return None
