"""SSH transport over asyncssh: one connection per target, capped channels, bytes-safe, killable commands."""

from __future__ import annotations

import asyncio
import errno
import os
import random
import sys
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from gpuaudit.probes.core.collect.remote_line import guarded, needs_term_first
from gpuaudit.probes.core.collect.session_channels import SshSessionChannel
from gpuaudit.probes.core.collect.ssh_config import config_override
from gpuaudit.probes.core.collect.targets import SshAddress
from gpuaudit.probes.core.collect.transport import (
    Gate,
    MarkedCap,
    RawResult,
    StreamCap,
    TransportBase,
    not_run,
    read_capped,
)
from gpuaudit.probes.core.errors import TransportError

DEFAULT_MAX_CHANNELS = (
    8  # OpenSSH MaxSessions is 10; sshd frees slots a little late, 8 never raced (TESTING.md)
)
EXIT_GRACE_S = 0.5
"""After the exit status, how long to wait for stdout/stderr EOF before closing (a background child may hold them)."""
POLL_S = 0.25
LOGIN_WAIT_S = 30.0
"""How long the login shell (rc files) may take before a command starts; its own --timeout starts after that."""


def _signal_number(name: str) -> int:
    """asyncssh reports a signal death by name ("KILL"); shells report 128 + its number."""
    import signal

    try:
        return int(getattr(signal, f"SIG{name}"))
    except (AttributeError, TypeError, ValueError):
        return 0


@dataclass(frozen=True, slots=True)
class SshOptions:
    """Connection settings shared by all SSH targets of an audit."""

    known_hosts: str | None = None
    """A known_hosts file; None = the user's default (~/.ssh/known_hosts). Never disables checking."""
    identity: str | None = None
    accept_new_host_keys: bool = False
    connect_timeout_s: float = 10.0
    max_channels: int = DEFAULT_MAX_CHANNELS
    use_ssh_config: bool = True
    """Honour ~/.ssh/config (aliases, ProxyJump...). Tests switch it off."""
    use_agent: bool = True
    connections: int = 1
    """SSH connections per target (each with its own channel cap); the CLI uses 2."""
    sessions: bool = True
    """Run commands through long-lived worker sessions (probes/core/collect/worker.py): the rc files and a container
    wrapper are paid once per session. False: one channel per command (--no-sessions)."""


class ChannelLimiter:
    """A semaphore whose size shrinks when the server refuses channels (MaxSessions below ours)."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.active = 0
        self._cond = asyncio.Condition()

    async def acquire(self) -> None:
        async with self._cond:
            await self._cond.wait_for(lambda: self.active < self.limit)
            self.active += 1

    async def release(self) -> None:
        async with self._cond:
            self.active -= 1
            self._cond.notify_all()

    def shrink(self) -> None:
        """Called with a slot held when an open was refused: the others in flight are the server's cap."""
        self.limit = max(1, min(self.limit, self.active - 1))


def _describe_connect_error(
    exc: BaseException,
    where: str,
    known_hosts: str,
    accept_new: bool = False,
    revoked: bool = False,
) -> str:
    import asyncssh

    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        reason = exc.reason or "unknown key"
        if (
            revoked or "revoked" in reason.lower()
        ):  # --accept-new-host-keys can never help: say so, never suggest it
            return f"{where}: host key is marked @revoked in {known_hosts} ({reason}); refused"
        hint = (
            "a known host's changed key is never accepted, not even with --accept-new-host-keys"
            if accept_new
            else "check the key, or use --accept-new-host-keys for a host never seen before"
        )
        return f"{where}: host key not verifiable against {known_hosts} ({reason}); {hint}"
    if isinstance(exc, asyncssh.PermissionDenied):
        return f"{where}: authentication failed ({exc.reason or 'permission denied'}); check --identity / agent / user"
    if isinstance(exc, asyncssh.KeyImportError) and "assphrase" in str(exc):
        return f"{where}: key is encrypted: load it with ssh-add (the agent's copy is used), or give an unencrypted key"
    if isinstance(exc, (asyncssh.ConnectionLost, ConnectionResetError, BrokenPipeError)):
        return (
            f"{where}: connection dropped by the server before login ({exc.__class__.__name__}; "
            "likely sshd's MaxStartups limit of unauthenticated connections: lower --max-connections)"
        )
    if isinstance(exc, ConnectionRefusedError):
        return f"{where}: connection refused"
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        return f"{where}: no answer (connect timeout)"
    if isinstance(exc, OSError) and exc.__class__.__name__ == "gaierror":
        return f"{where}: name not resolvable ({exc})"
    if isinstance(exc, OSError) and exc.errno in (
        errno.EINVAL,
        errno.ENETUNREACH,
        errno.EHOSTUNREACH,
    ):
        # a blackhole or missing route answers EINVAL locally; unreachable hosts ENETUNREACH/EHOSTUNREACH
        return f"{where}: no route to host ({exc.strerror or exc})"
    if isinstance(exc, OSError) and exc.strerror:
        return f"{where}: cannot connect ({exc.strerror})"
    if isinstance(exc, asyncssh.Error):
        return f"{where}: {exc.__class__.__name__}: {exc.reason}"
    return f"{where}: {exc.__class__.__name__}: {exc}"


def _dropped_before_login(exc: BaseException) -> bool:
    """sshd closed an unauthenticated connection (MaxStartups, a restart): worth another try after a pause."""
    import asyncssh

    return isinstance(exc, (asyncssh.ConnectionLost, ConnectionResetError, BrokenPipeError)) or (
        isinstance(exc, asyncssh.DisconnectError) and "closed" in str(exc.reason).lower()
    )


CONNECT_RETRIES = 4
"""Tries for a connection the server drops before login (MaxStartups drops at random: 30 % at 10 pending)."""
OPEN_TIMEOUT_S = 5.0
"""How long a channel open may wait for the server's answer before the connection counts as dead."""
KILL_GRACE_S = 0.3
"""TERM first (sudo and container wrappers pass it on to what they started), KILL this much later."""
MAX_PENDING_LOGINS = 8
"""Logins in progress at once in this process. A stock sshd (MaxStartups 10:30:100) starts dropping new
connections at random once 10 are unauthenticated; a fleet through one ProxyJump host would trip it."""
_login_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary()
)


def _login_slot() -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()
    slot = _login_slots.get(loop)
    if slot is None:
        slot = _login_slots[loop] = asyncio.Semaphore(MAX_PENDING_LOGINS)
    return slot


def _import_asyncssh() -> Any:
    """asyncssh, imported without spawning compilers (issue 30): asyncssh looks for liboqs and libnettle with
    ctypes.util.find_library, which on Linux runs `ldconfig -p`, then gcc and ld for a library that is absent
    (~0.08 s of CPU per process, more than the rest of asyncssh's import). Here the search looks in the dynamic
    loader's folders instead (the standard ones and /etc/ld.so.conf.d); a library found there is loaded as before,
    none found = not installed (asyncssh then offers the algorithms that need neither).

    Also without asyncssh's X.509 support (RFC 6187 `x509v3-*` keys): OpenSSH has none, this tool offers no X.509
    identity or CA option, and asyncssh treats the module as optional (its own `except ImportError`), while
    loading it imports cryptography.x509 and compiles its name-parsing patterns, ~16 ms of every audit's start
    on the path to its first connect (issue 30). A `None` in sys.modules is Python's documented way to make an
    import raise ImportError; OpenSSH certificates (`*-cert-v01@openssh.com`, @cert-authority) are unaffected."""
    if "asyncssh" in sys.modules:
        return sys.modules["asyncssh"]
    sys.modules.setdefault(NO_X509, None)  # type: ignore[arg-type]
    import ctypes.util

    real = ctypes.util.find_library

    def find_library(name: str) -> str | None:
        if name not in NATIVE_LIBRARIES:
            return real(name)
        return _library_path(name if name.startswith("lib") else "lib" + name)

    ctypes.util.find_library = find_library
    try:
        import asyncssh
    finally:
        ctypes.util.find_library = real
    return asyncssh


import_asyncssh = _import_asyncssh
"""The public name: collect/early.py imports asyncssh before its connect thread starts."""

NO_X509 = "asyncssh.crypto.x509"
"""asyncssh's optional X.509 module, left unimported (see _import_asyncssh)."""
NATIVE_LIBRARIES = frozenset({"oqs", "liboqs", "nettle", "libnettle", "libnettle-6"})
"""The optional native libraries asyncssh looks for at import (post-quantum KEMs, UMAC)."""
LIBRARY_DIRS = (
    "/usr/local/lib",
    "/usr/local/lib64",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu",
    "/lib64",
    "/lib",
)


def _library_path(stem: str) -> str | None:
    """The last `stem.so*` (highest version) of the first loader folder holding one (LIBRARY_DIRS, then those
    /etc/ld.so.conf.d names)."""
    prefix = stem + ".so"
    for folder, names in _library_listings():
        hits = sorted(n for n in names if n.startswith(prefix))
        if hits:
            return os.path.join(folder, hits[-1])
    return None


_listings: list[tuple[str, tuple[str, ...]]] | None = None


def _library_listings() -> list[tuple[str, tuple[str, ...]]]:
    """Each loader folder's `lib*` names, read once per process: asyncssh asks for three libraries, and a glob per
    folder and name listed folders of a thousand entries again and again (34 globs, 5-10 ms of an audit's CPU)."""
    global _listings
    if _listings is None:
        folders = list(LIBRARY_DIRS)
        try:
            confs = sorted(n for n in os.listdir("/etc/ld.so.conf.d") if n.endswith(".conf"))
        except OSError:
            confs = []
        for conf in confs:
            try:
                lines = Path("/etc/ld.so.conf.d", conf).read_text(errors="replace").splitlines()
            except OSError:
                continue
            folders += [ln.strip() for ln in lines if ln.strip().startswith("/")]
        found = []
        for folder in dict.fromkeys(folders):
            try:
                names = tuple(n for n in os.listdir(folder) if n.startswith("lib"))
            except OSError:
                continue
            found.append((folder, names))
        _listings = found
    return _listings


PREFERRED_CIPHER = "aes128-gcm@openssh.com"
"""Asked for first (then asyncssh's defaults): with AES-NI it costs the client ~15 % less CPU per audit than
chacha20-poly1305, which asyncssh runs as two primitives per packet (issue 30; tests/bench/profile_audit.py).
Not asked when the user's ssh config names its own Ciphers."""


def _make_client(owner: SshTransport) -> Any:
    """An asyncssh client that tells the transport the moment its connection dies."""
    import asyncssh

    class _Client(asyncssh.SSHClient):
        def connection_lost(self, exc: Exception | None) -> None:
            owner.mark_lost(f"{exc.__class__.__name__}: {exc}" if exc else "connection closed")

    return _Client


class SshTransport(TransportBase):
    """Runs shell lines over one asyncssh connection."""

    executes_lines = True
    reopens_quickly = True

    def __init__(self, address: SshAddress, options: SshOptions, label: str | None = None) -> None:
        self.address = address
        self.options = options
        self.label = label or address.host
        self._conn: Any = None
        self._limiter = ChannelLimiter(options.max_channels)
        self._lost: str | None = None
        self._closing = False
        self.sessions_open = 0

    @property
    def channels(self) -> int:
        """Commands in flight at once on this connection."""
        return self.options.max_channels

    @property
    def lost(self) -> bool:
        """The connection died: every further command would fail at once."""
        return self._lost is not None

    @property
    def lost_reason(self) -> str | None:
        return self._lost

    def mark_lost(self, reason: str) -> None:
        if self._conn is not None and not self._closing and self._lost is None:
            self._lost = reason

    @property
    def where(self) -> str:
        port = f":{self.address.port}" if self.address.port else ""
        user = f"{self.address.user}@" if self.address.user else ""
        return f"{user}{self.address.host}{port}"

    def _known_hosts_path(self) -> str:
        return self.options.known_hosts or str(Path.home() / ".ssh" / "known_hosts")

    def _connect_kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {
            "connect_timeout": self.options.connect_timeout_s,
            "login_timeout": self.options.connect_timeout_s,
            "keepalive_interval": 5,
            "keepalive_count_max": 3,
            "client_factory": _make_client(self),
        }
        if self.address.port:
            kw["port"] = self.address.port
        if self.address.user:
            kw["username"] = self.address.user
        if self.options.known_hosts:
            kw["known_hosts"] = self.options.known_hosts
        if self.options.identity:
            kw["client_keys"] = [self.options.identity]
        if not self.options.use_ssh_config:
            kw["config"] = None
        else:  # `Match localnetwork` without ifaddr: a private copy that asyncssh can read (ssh_config.py)
            override, _ = config_override()
            if override:
                kw["config"] = [override]
        if not self.options.use_agent:
            kw["agent_path"] = None
        if not self._config_names_ciphers(kw.get("config", ())):
            kw["encryption_algs"] = "^" + PREFERRED_CIPHER
        return kw

    def _config_names_ciphers(self, config: Any) -> bool:
        """Whether the ssh config asyncssh reads for this connection sets Ciphers (then it decides, not us)."""
        if config is None:
            return False
        paths = list(config) if config else [os.path.expanduser("~/.ssh/config")]
        for path in paths:
            try:
                text = Path(path).read_text(errors="replace")
            except OSError:
                continue
            if any(ln.strip().lower().startswith("ciphers") for ln in text.splitlines()):
                return True
        return False

    async def _identity_keys(self, kw: dict[str, Any]) -> None:
        """--identity of an encrypted key: use the agent's copy of it (as OpenSSH does), else say so clearly."""
        import asyncssh

        path = self.options.identity
        if not path:
            return
        try:
            asyncssh.read_private_key(path)
            return
        except asyncssh.KeyImportError as exc:
            if "assphrase" not in str(exc):
                raise TransportError(f"{self.where}: cannot read key {path}: {exc}") from None
        except OSError as exc:
            raise TransportError(
                f"{self.where}: cannot read key {path}: {exc.strerror or exc}"
            ) from None
        hint = f"{self.where}: key {path} is encrypted: load it with ssh-add (the agent's copy is used)"
        if not self.options.use_agent or not os.environ.get("SSH_AUTH_SOCK"):
            raise TransportError(hint + "; no SSH agent is running (SSH_AUTH_SOCK unset)")
        try:
            public = asyncssh.read_public_key(path + ".pub").public_data
        except (OSError, asyncssh.KeyImportError):
            raise TransportError(
                hint + f"; {path}.pub is missing, so its copy in the agent cannot be found"
            ) from None
        try:
            async with asyncssh.connect_agent() as agent:
                keys = [k for k in await agent.get_keys() if k.public_data == public]
        except (OSError, asyncssh.Error) as exc:
            raise TransportError(hint + f"; the agent did not answer ({exc})") from None
        if not keys:
            raise TransportError(hint + "; the agent does not hold it")
        kw["client_keys"] = keys

    async def _connect_once(self, kw: dict[str, Any]) -> Any:
        """asyncssh.connect, tried again with backoff when the server drops the connection before login."""
        import asyncssh

        for attempt in range(CONNECT_RETRIES):
            try:
                async with _login_slot():
                    return await asyncssh.connect(self.address.host, **kw)
            except (OSError, asyncssh.Error) as exc:
                if attempt + 1 >= CONNECT_RETRIES or not _dropped_before_login(exc):
                    raise
            await asyncio.sleep(0.3 * 2**attempt + random.random() * 0.3)
        raise AssertionError("unreachable")

    async def connect(self) -> None:
        asyncssh = _import_asyncssh()

        kw = self._connect_kwargs()
        kh = self._known_hosts_path()
        await self._identity_keys(kw)
        try:
            self._conn = await self._connect_once(kw)
            return
        except asyncssh.HostKeyNotVerifiable as exc:
            # a key marked @revoked is known, never trusted on first use
            revoked = "revoked" in str(exc.reason).lower() or self._revoked_for_host(kh)
            if not self.options.accept_new_host_keys or revoked or self._host_is_known(kh):
                raise TransportError(
                    _describe_connect_error(
                        exc, self.where, kh, self.options.accept_new_host_keys, revoked
                    )
                    + ("" if revoked else self._known_line_hint(kh))
                ) from None
        except asyncssh.PermissionDenied as exc:
            raise TransportError(await self._auth_failure(exc, kw, kh)) from None
        except (TimeoutError, OSError, asyncssh.Error) as exc:
            raise TransportError(_describe_connect_error(exc, self.where, kh)) from None
        await self._connect_accepting_new_key(kw, kh)

    async def _auth_failure(self, exc: BaseException, kw: dict[str, Any], known_hosts: str) -> str:
        """A failed login, naming the cause when the server offers no key login at all."""
        import asyncssh

        try:
            opts = {k: v for k, v in kw.items() if k in ("port", "username", "config")}
            conn_opts = asyncssh.SSHClientConnectionOptions(known_hosts=kw.get("known_hosts", ()))
            methods = await asyncio.wait_for(
                asyncssh.get_server_auth_methods(self.address.host, options=conn_opts, **opts),
                self.options.connect_timeout_s,
            )
        except (TimeoutError, OSError, asyncssh.Error):
            methods = []
        if methods and "publickey" not in methods:
            return (
                f"{self.where}: authentication failed: the server accepts only password authentication "
                f"({', '.join(methods)}); gpuaudit logs in with keys only"
            )
        return _describe_connect_error(exc, self.where, known_hosts)

    def _revoked_for_host(self, known_hosts: str) -> bool:
        """A `@revoked` line names this host (or a pattern matching it). Read here: asyncssh's match misses
        `@revoked [host]:port` lines, and a revoked key must never be trusted on first use."""
        import re

        names = {self._known_hosts_name(), self.address.host}
        try:
            lines = Path(known_hosts).read_text(errors="replace").splitlines()
        except OSError:
            return False
        for line in lines:
            parts = line.split()
            if len(parts) >= 2 and parts[0] == "@revoked":
                pats = [p for p in parts[1].split(",") if not p.startswith("!")]
                # known_hosts patterns know only * and ?: `[127.0.0.1]:22` is literal, not a character class
                rx = [re.escape(p).replace(r"\*", ".*").replace(r"\?", ".") for p in pats]
                if any(re.fullmatch(r, n) for n in names for r in rx):
                    return True
        return False

    def _host_is_known(self, known_hosts: str) -> bool:
        """True when known_hosts already holds a key for this host: a changed key is always refused."""
        import asyncssh

        try:
            db = asyncssh.read_known_hosts(known_hosts)
        except (OSError, ValueError):
            return False
        keys = db.match(self.address.host, "", self.address.port or 22)[0]
        return bool(keys)

    def _known_line_hint(self, known_hosts: str) -> str:
        name = self._known_hosts_name()
        try:
            for n, line in enumerate(Path(known_hosts).read_text(errors="replace").splitlines(), 1):
                if line.split(" ", 1)[0].split(",").__contains__(name):
                    return f"; known_hosts line {known_hosts}:{n} holds a different key (possible MITM or reinstalled host)"
        except OSError:
            pass
        return ""

    def _known_hosts_name(self) -> str:
        port = self.address.port or 22
        return self.address.host if port == 22 else f"[{self.address.host}]:{port}"

    async def _connect_accepting_new_key(self, kw: dict[str, Any], known_hosts: str) -> None:
        """TOFU like OpenSSH's accept-new: connect without a pinned key, then record the key seen."""
        import asyncssh

        kw = dict(kw, known_hosts=None)
        try:
            self._conn = await self._connect_once(kw)
        except (TimeoutError, OSError, asyncssh.Error) as exc:
            raise TransportError(_describe_connect_error(exc, self.where, known_hosts)) from None
        key = self._conn.get_server_host_key()
        if key is not None:
            line = (
                f"{self._known_hosts_name()} {key.export_public_key('openssh').decode().strip()}\n"
            )
            path = Path(known_hosts)
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with os.fdopen(fd, "a") as fh:
                fh.write(line)

    async def open_session(self, line: str, open_timeout_s: float | None = None) -> Any:
        """A long-lived channel for a worker session (probes/core/collect/worker_transport.py); it holds a channel slot."""
        if self._conn is None or self._lost:
            raise TransportError(f"connection lost: {self._lost or 'not connected'}")
        await self._limiter.acquire()
        open_timeout_s = OPEN_TIMEOUT_S if open_timeout_s is None else open_timeout_s
        try:
            proc = await asyncio.wait_for(
                self._conn.create_process(line, encoding=None), open_timeout_s
            )
        except TimeoutError:
            await self._limiter.release()
            self._declare_dead(
                f"no answer to a session open in {open_timeout_s:.0f} s (connection not responding)"
            )
            raise TransportError(f"connection lost: {self._lost}") from None
        except BaseException:
            await self._limiter.release()
            raise
        self.sessions_open += 1

        async def release() -> None:
            self.sessions_open -= 1
            await self._limiter.release()

        return SshSessionChannel(proc, release, self._declare_dead)

    async def run(
        self,
        line: str,
        *,
        command_id: str,
        timeout_s: float,
        max_bytes: int,
        gate: Gate | None = None,
        marker: str | None = None,
        session: Any = None,
    ) -> RawResult:
        """Wait for a channel, then run; the deadline starts when the command does, never while queued."""
        import asyncssh

        if self._conn is None or self._lost:
            return not_run(f"connection lost: {self._lost or 'not connected'}")
        attempt = 0
        queued = time.monotonic()
        while True:
            await self._limiter.acquire()
            try:
                if self._lost:
                    return not_run(f"connection lost: {self._lost}")
                reason = gate() if gate is not None else None
                if reason:
                    return not_run(reason)
                term_first = needs_term_first(line)
                try:
                    # the channel's stdin stays open and unwritten: its end is how the remote guard learns that
                    # the client stopped the command or is gone (remote_line.GUARD)
                    proc = await asyncio.wait_for(
                        self._conn.create_process(
                            guarded(line, term_first=term_first), encoding=None
                        ),
                        OPEN_TIMEOUT_S,
                    )
                except TimeoutError:
                    self._declare_dead(
                        f"no answer to a channel open in {OPEN_TIMEOUT_S:.0f} s (connection not responding)"
                    )
                    return not_run(f"connection lost: {self._lost}")
                except asyncssh.ChannelOpenError as exc:
                    if (
                        self._lost
                        or self._conn.is_closed()
                        or "connection closed" in str(exc.reason).lower()
                    ):
                        self._lost = self._lost or f"connection closed ({exc.reason})"
                        return not_run(f"connection lost: {self._lost}")
                    attempt += 1
                    waited = time.monotonic() - queued
                    if waited > max(timeout_s, OPEN_TIMEOUT_S) or attempt > 200:
                        return not_run(
                            f"channel refused by server for {waited:.1f} s: {exc.reason} (MaxSessions?)"
                        )
                    self._limiter.shrink()
                    retry_delay = min(0.5, 0.02 * attempt)
                else:
                    return await self._collect(
                        proc, timeout_s, max_bytes, marker, term_first=term_first
                    )
            except (asyncssh.Error, OSError, BrokenPipeError) as exc:
                self._lost = (
                    self._lost or f"{exc.__class__.__name__}: {getattr(exc, 'reason', exc) or exc}"
                )
                return not_run(f"connection lost: {self._lost}")
            finally:
                await self._limiter.release()
            await asyncio.sleep(retry_delay)

    async def _collect(
        self,
        proc: Any,
        timeout_s: float,
        max_bytes: int,
        marker: str | None = None,
        *,
        term_first: bool = True,
    ) -> RawResult:
        """Read a started channel. With a start marker, the deadline and the duration count from the marker (the
        command itself), and the login shell before it gets LOGIN_WAIT_S of its own."""
        opened_at = datetime.now(UTC)
        t_open = time.monotonic()
        out, err = MarkedCap(max_bytes, marker), StreamCap(max_bytes)
        deadline = t_open + (timeout_s if out.seen_at is not None else LOGIN_WAIT_S)
        overflow = asyncio.Event()
        login_timed_out = False
        clock_set = out.seen_at is not None

        readers: asyncio.Future[Any] = asyncio.ensure_future(
            asyncio.gather(
                read_capped(proc.stdout, out, overflow), read_capped(proc.stderr, err, overflow)
            )
        )
        waiter = asyncio.ensure_future(overflow.wait())
        start_seen = asyncio.ensure_future(out.seen.wait())
        timed_out = killed = held_open = False
        read_error: BaseException | None = None
        exited_at: float | None = None
        try:
            while True:
                now = time.monotonic()
                if not clock_set and out.seen_at is not None:
                    deadline, clock_set = (
                        out.seen_at + timeout_s,
                        True,
                    )  # the command started: its own clock from here
                if now >= deadline:
                    timed_out = True
                    login_timed_out = out.seen_at is None
                    break
                if proc.exit_status is not None and exited_at is None:
                    exited_at = now
                if exited_at is not None and now - exited_at >= EXIT_GRACE_S:
                    # the command exited but a child it left in the background still holds stdout/stderr
                    held_open = True
                    break
                if self._lost:
                    break
                step = min(
                    deadline - now,
                    POLL_S if exited_at is None else EXIT_GRACE_S - (now - exited_at),
                )
                wake = {readers, waiter} if start_seen.done() else {readers, waiter, start_seen}
                done, _ = await asyncio.wait(
                    wake, timeout=max(0.01, step), return_when=asyncio.FIRST_COMPLETED
                )
                if start_seen in done and not (readers in done or waiter in done):
                    continue
                if waiter in done:
                    break
                if readers in done:
                    read_error = readers.exception()
                    if read_error is not None:
                        break
                    try:
                        await asyncio.wait_for(
                            proc.wait_closed(), timeout=max(0.5, deadline - time.monotonic())
                        )
                    except TimeoutError:
                        timed_out = True
                    break
            if overflow.is_set():
                # past the cap: keep reading (and dropping) while the channel closes, so the server can flush
                # what it already sent and acknowledge the close; a full window would stall the connection
                killed = True
                drained = _Drain(proc)
                try:
                    await self._kill(proc, term_first, flowing=drained.flowing)
                finally:
                    await drained.stop()
            elif timed_out:
                killed = True
                await self._kill(proc, term_first)
            elif held_open:
                await self._kill(
                    proc, term_first
                )  # the session has ended: sshd only closes its pipe ends
        except asyncio.CancelledError:
            await self._kill(proc, term_first)
            raise
        finally:
            waiter.cancel()
            start_seen.cancel()
            if not readers.done():
                readers.cancel()
            # every helper task ends here (also when the loop is being shut down by a signal): nothing is left
            # pending for "Task was destroyed" or "exception was never retrieved" on stderr
            await asyncio.gather(readers, waiter, start_seen, return_exceptions=True)
        status = proc.exit_status
        error = None
        if killed:
            status = None  # we killed it (deadline or output cap): no exit status of its own
        elif status == -1 or (status is None and proc.exit_signal):
            status = 128 + _signal_number(proc.exit_signal[0] if proc.exit_signal else "")
        elif status is None:
            if read_error is not None:
                self._lost = (
                    self._lost
                    or f"{read_error.__class__.__name__}: {getattr(read_error, 'reason', read_error)}"
                )
            self._lost = (
                self._lost or "channel closed without an exit status (server or connection died)"
            )
            error = f"connection lost: {self._lost}"
        if login_timed_out:
            return not_run(
                f"the login shell did not start the command within {LOGIN_WAIT_S:.0f} s (slow or hanging rc files)"
            )
        t_start = out.seen_at if out.seen_at is not None else t_open
        started = opened_at + timedelta(seconds=t_start - t_open)
        return RawResult(
            exit_status=status,
            stdout=out.value(),
            stderr=err.value(),
            started_at=started,
            duration_s=time.monotonic() - t_start,
            timed_out=timed_out,
            truncated=out.truncated or err.truncated,
            error=error,
        )

    async def _kill(
        self, proc: Any, term_first: bool = True, flowing: Callable[[], bool] | None = None
    ) -> None:
        """TERM, then KILL over the channel (sshd signals the session's process group), then close, bounded.

        TERM first because root and container commands sit outside the user's reach: sudo and the
        container wrappers relay TERM to them (and their own timeout(1) passes it to the whole tree).
        A close that the server never acknowledges means the connection is dead.
        """
        closed: asyncio.Future[Any] = asyncio.ensure_future(proc.wait_closed())
        try:
            # the remote guard stops the whole job when its stdin ends (TERM first where a relay stands in
            # between, KILL 1 s later); a signal over the channel would reach only the guard itself
            try:
                proc.stdin.write_eof()
            except Exception:  # noqa: BLE001 - the channel is already closing
                pass
            await asyncio.wait({closed}, timeout=GUARD_STOP_S + (1.0 if term_first else 0.0))
            if closed.done():
                return
            # a user's own command gets KILL at once: after a TERM its timeout(1) may exit while a TERM-ignoring
            # stage still runs, and sshd refuses signals once the session's main process is gone (issue 29)
            for sig in ("TERM", "KILL") if term_first else ("KILL",):
                try:
                    proc.send_signal(sig)
                except Exception:
                    break
                if sig == "TERM":
                    await asyncio.wait({closed}, timeout=KILL_GRACE_S)
                    if closed.done():
                        return
            proc.close()
            await asyncio.wait({closed}, timeout=2)
            waited = 2.0
            while not closed.done() and flowing is not None and flowing() and waited < DRAIN_MAX_S:
                await asyncio.wait(
                    {closed}, timeout=1
                )  # still flushing a capped output: alive, not dead
                waited += 1
            if not closed.done():
                self._declare_dead(
                    "the server did not acknowledge closing a channel in 2 s (connection not responding)"
                )
        finally:
            closed.cancel()
            await asyncio.gather(closed, return_exceptions=True)

    def _declare_dead(self, reason: str) -> None:
        """An unresponsive connection is dropped at once: every command waiting on it fails now, not at keepalive."""
        self._lost = self._lost or reason
        if self._conn is not None:
            try:
                self._conn.abort()
            except Exception:
                pass

    async def aclose(self) -> None:
        if self._conn is not None:
            self._closing = True
            self._conn.close()
            try:
                await asyncio.wait_for(self._conn.wait_closed(), timeout=2)
            except (TimeoutError, Exception):
                pass
            self._conn = None


GUARD_STOP_S = 1.5
"""How long the remote guard may take to stop a job once its stdin ended, before the signals and the close."""
DRAIN_MAX_S = 30.0
"""How long a capped channel may keep flushing what the server already sent before its close is acknowledged."""


class _Drain:
    """Reads and drops what a killed, capped channel still delivers; says whether bytes keep arriving."""

    def __init__(self, proc: Any) -> None:
        self.bytes = 0
        self._seen = 0
        self._tasks = [
            asyncio.ensure_future(self._read(stream)) for stream in (proc.stdout, proc.stderr)
        ]

    async def _read(self, stream: Any) -> None:
        try:
            while chunk := await stream.read(1 << 16):
                self.bytes += len(chunk)
        except Exception:  # noqa: BLE001 - a closed or aborted channel ends the drain
            return

    def flowing(self) -> bool:
        """Bytes arrived since the last call."""
        moved, self._seen = self.bytes != self._seen, self.bytes
        return moved

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
