"""Read the BIOS settings from the BMC over Redfish: HTTPS, GET only, Basic authentication, nothing stored.

Why plain asyncio + ssl and not a Redfish library: the runner is one asyncio loop, and the three reads
(the system, its Bios resource, the pending settings object) are three GETs. DMTF's `redfish` and OpenStack's
`sushy` are synchronous (requests: a thread per read) and both log in by POSTing a session to the
SessionService by default: a write to the BMC, which this read-only tool never sends. Redfish (DSP0266) requires
services to accept HTTP Basic authentication over HTTPS, so every request carries it and nothing is created on
the BMC. The stdlib's `ssl` verifies the certificate chain and the host name (IP SANs included) by default;
`--bmc-ca FILE` adds a CA, `--bmc-insecure` turns verification off and the executed line says so. No dependency.

Every read is capped (bytes, time); every failure is data (a RawResult with an error), never an exception.
The credentials never reach a record: the executed line names the URL only, and any echo of them in a body is
redacted before the runner sees it.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import ssl
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from gpuaudit.probes.core.collect.transport import RawResult

ENV_USER = "GPUAUDIT_BMC_USER"
ENV_PASSWORD = "GPUAUDIT_BMC_PASSWORD"
SYSTEMS_PATH = "/redfish/v1/Systems"
HEADER_CAP = 64 * 1024
DEFAULT_BMC_TIMEOUT_S = 20.0
DEFAULT_BMC_MAX_BYTES = 4 * 1024 * 1024
REDACTED = "[redacted:bmc-credential]"
MIN_REDACTED = 4
"""Shorter secrets are not replaced in BMC answers (they would match ordinary text); the Basic token always is."""

BMC_SYSTEM_ID = "redfish_system"
BMC_BIOS_ID = "redfish_bios"
BMC_PENDING_ID = "redfish_bios_pending"
BMC_SOURCE_IDS = (BMC_SYSTEM_ID, BMC_BIOS_ID, BMC_PENDING_ID)
"""The command ids this reader answers (probes/core/sources.py declares them as `redfish GET ...` rows)."""
BMC_LINE_PREFIX = "redfish GET "
"""Declared lines of BMC sources start with this: the runner sends them here, never to a shell."""


class BmcConfigError(ValueError):
    """A bad --bmc / credentials / CA option (the CLI turns it into exit 2 and one line)."""


@dataclass(frozen=True)
class BmcCredentials:
    user: str
    password: str = field(repr=False)

    def secrets(self) -> tuple[str, ...]:
        """Strings that must never appear in an output: the password, the Basic token (and the user:password pair)."""
        token = base64.b64encode(f"{self.user}:{self.password}".encode()).decode()
        return tuple(s for s in (self.password, token, f"{self.user}:{self.password}") if s)


@dataclass(frozen=True)
class BmcConfig:
    """Where the BMC is and how to trust it; built per audit, never stored (the credentials stay in memory)."""

    address: str
    credentials: BmcCredentials | None = field(default=None, repr=False)
    ca_file: str | None = None
    insecure: bool = False
    timeout_s: float = DEFAULT_BMC_TIMEOUT_S
    max_bytes: int = DEFAULT_BMC_MAX_BYTES
    via_host: bool = False
    """--bmc-via-host: reach the BMC through the audited host's SSH connection (a direct-tcpip forward opened
    by the client; nothing runs on the host). TLS still ends at the BMC and is checked against its address."""

    @property
    def host_port(self) -> tuple[str, int]:
        return parse_address(self.address)


def parse_address(address: str) -> tuple[str, int]:
    """`10.0.0.5`, `bmc1:8443`, `[fe80::1]:443`, `https://bmc1` -> (host, port). Only HTTPS: http:// is refused."""
    text = address.strip()
    if not text:
        raise BmcConfigError("--bmc: empty address")
    if "://" in text:
        parts = urlsplit(text)
        if parts.scheme != "https":
            raise BmcConfigError(f"--bmc {address!r}: only https:// (the BMC is read over TLS)")
        if parts.username or parts.password:
            raise BmcConfigError(
                f"--bmc: credentials in the address are refused (use {ENV_USER}/{ENV_PASSWORD} or "
                "--bmc-credentials FILE)"
            )
        if parts.path not in ("", "/"):
            raise BmcConfigError(f"--bmc {address!r}: give the BMC's address, not a path")
        host, port = parts.hostname or "", parts.port or 443
    else:
        if "@" in text:
            raise BmcConfigError(
                f"--bmc: credentials in the address are refused (use {ENV_USER}/{ENV_PASSWORD} or "
                "--bmc-credentials FILE)"
            )
        host, port = text, 443
        if text.startswith("["):
            end = text.find("]")
            if end < 0:
                raise BmcConfigError(f"--bmc {address!r}: unclosed [")
            host, rest = text[1:end], text[end + 1 :]
            if rest:
                if not rest.startswith(":") or not rest[1:].isdigit():
                    raise BmcConfigError(f"--bmc {address!r}: bad port")
                port = int(rest[1:])
        elif text.count(":") == 1:
            host, _, p = text.partition(":")
            if not p.isdigit():
                raise BmcConfigError(f"--bmc {address!r}: bad port {p!r}")
            port = int(p)
    if not host or any(c in host for c in " /\\?#'\"`$;&|<>"):
        raise BmcConfigError(f"--bmc {address!r}: not a host name or address")
    if not 0 < port < 65536:
        raise BmcConfigError(f"--bmc {address!r}: port out of range")
    return host, port


def credentials_from_file(path: str | Path) -> BmcCredentials:
    """A 0600 file (owner-only: no group/other bits) holding `user` and `password` on two lines, or `user:password`."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError as exc:
        raise BmcConfigError(
            f"--bmc-credentials {path}: cannot read: {exc.strerror or exc}"
        ) from None
    if not stat.S_ISREG(st.st_mode):
        raise BmcConfigError(f"--bmc-credentials {path}: not a regular file")
    if st.st_mode & 0o077:
        raise BmcConfigError(
            f"--bmc-credentials {path}: mode {stat.S_IMODE(st.st_mode):04o} lets others read it; chmod 600 it"
        )
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BmcConfigError(f"--bmc-credentials {path}: cannot read: {exc}") from None
    lines = [ln.rstrip("\r") for ln in text.splitlines() if ln.strip()]
    if len(lines) == 1 and ":" in lines[0]:
        user, _, password = lines[0].partition(":")
    elif len(lines) == 2:
        user, password = lines
    else:
        raise BmcConfigError(
            f"--bmc-credentials {path}: expected 'user' and 'password' on two lines, or one 'user:password' line"
        )
    if not user.strip() or not password:
        raise BmcConfigError(f"--bmc-credentials {path}: empty user or password")
    return BmcCredentials(user.strip(), password)


def credentials_from_env(env: Mapping[str, str] | None = None) -> BmcCredentials | None:
    """GPUAUDIT_BMC_USER + GPUAUDIT_BMC_PASSWORD, or None when neither is set (one alone is an error)."""
    env = os.environ if env is None else env
    user, password = env.get(ENV_USER), env.get(ENV_PASSWORD)
    if user is None and password is None:
        return None
    if not user or not password:
        raise BmcConfigError(f"--bmc: set both {ENV_USER} and {ENV_PASSWORD} (or neither)")
    return BmcCredentials(user, password)


def bmc_config(
    address: str,
    *,
    credentials_file: str | Path | None = None,
    ca_file: str | Path | None = None,
    insecure: bool = False,
    timeout_s: float = DEFAULT_BMC_TIMEOUT_S,
    max_bytes: int = DEFAULT_BMC_MAX_BYTES,
    env: Mapping[str, str] | None = None,
    via_host: bool = False,
) -> BmcConfig:
    """Validate the --bmc options and load the credentials (file first, then the environment; none: anonymous)."""
    parse_address(address)
    if ca_file is not None and insecure:
        raise BmcConfigError("--bmc-ca and --bmc-insecure contradict each other; choose one")
    if ca_file is not None:
        try:
            ssl.create_default_context(cafile=str(ca_file))
        except (OSError, ssl.SSLError) as exc:
            raise BmcConfigError(
                f"--bmc-ca {ca_file}: not a readable PEM CA file ({exc})"
            ) from None
    creds = (
        credentials_from_file(credentials_file)
        if credentials_file is not None
        else credentials_from_env(env)
    )
    return BmcConfig(
        address=address.strip(),
        credentials=creds,
        ca_file=None if ca_file is None else str(ca_file),
        insecure=insecure,
        timeout_s=timeout_s,
        max_bytes=max_bytes,
        via_host=via_host,
    )


def ssh_connection_of(transport: Any) -> Any:
    """The asyncssh connection under a host transport (a session transport wraps a pool of SSH transports), or
    None for a local or recorded target."""
    seen = 0
    while transport is not None and seen < 8:
        seen += 1
        conn = getattr(transport, "_conn", None)
        if conn is not None and hasattr(conn, "forward_local_port"):
            return conn
        members = getattr(transport, "members", None)
        transport = members[0] if members else getattr(transport, "inner", None)
    return None


# --------------------------------------------------------------------------- HTTPS GET


@dataclass(slots=True)
class HttpResponse:
    status: int | None
    reason: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    truncated: bool = False
    timed_out: bool = False
    error: str | None = None
    duration_s: float = 0.0


def tls_context(config: BmcConfig) -> ssl.SSLContext:
    if config.insecure:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx
    ctx = ssl.create_default_context()
    if config.ca_file:
        ctx.load_verify_locations(cafile=config.ca_file)
    return ctx


def _dechunk(data: bytes) -> bytes | None:
    out, pos = bytearray(), 0
    while True:
        end = data.find(b"\r\n", pos)
        if end < 0:
            return None
        try:
            size = int(data[pos:end].split(b";")[0].strip() or b"x", 16)
        except ValueError:
            return None
        pos = end + 2
        if size == 0:
            return bytes(out)
        out += data[pos : pos + size]
        pos += size + 2


class RedfishClient:
    """GET-only HTTPS client: one connection per request (Connection: close), Basic auth, caps on time and size."""

    def __init__(self, config: BmcConfig) -> None:
        self.config = config
        self.host, self.port = config.host_port
        self.connect_to: tuple[str, int] | None = None
        """Where the TCP connection goes when not straight to the BMC (the local end of an SSH forward)."""
        self._ctx = tls_context(config)
        self.sent: list[str] = []
        """Every request line sent ("GET /redfish/v1/Systems"): the tool's own proof that it only reads."""

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"https://{host}" + ("" if self.port == 443 else f":{self.port}")

    def _request(self, path: str) -> bytes:
        lines = [
            f"GET {path} HTTP/1.1",
            f"Host: {self.host if ':' not in self.host else '[' + self.host + ']'}"
            + ("" if self.port == 443 else f":{self.port}"),
            "Accept: application/json",
            "OData-Version: 4.0",
            "User-Agent: gpuaudit-tui (read-only)",
            "Connection: close",
        ]
        if self.config.credentials is not None:
            c = self.config.credentials
            token = base64.b64encode(f"{c.user}:{c.password}".encode()).decode()
            lines.append(f"Authorization: Basic {token}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    async def get(self, path: str) -> HttpResponse:
        """GET one path; never raises. The whole exchange (connect, TLS, response) is bounded by the timeout."""
        if not path.startswith("/") or any(c in path for c in " \r\n"):
            return HttpResponse(None, error=f"refused to follow a non-local link {path[:120]!r}")
        start = time.monotonic()
        try:
            resp = await asyncio.wait_for(self._get(path), timeout=self.config.timeout_s)
        except TimeoutError:
            resp = HttpResponse(
                None, timed_out=True, error=f"no answer within {self.config.timeout_s:g} s"
            )
        except ssl.SSLCertVerificationError as exc:
            resp = HttpResponse(
                None,
                error=f"TLS certificate not trusted: {exc.verify_message or exc.reason} "
                "(give the BMC's CA with --bmc-ca FILE, or --bmc-insecure to skip verification)",
            )
        except ssl.SSLError as exc:
            resp = HttpResponse(None, error=f"TLS error: {exc.reason or exc}")
        except ConnectionRefusedError:
            resp = HttpResponse(None, error=f"connection refused by {self.host}:{self.port}")
        except (ConnectionError, OSError) as exc:
            resp = HttpResponse(
                None, error=f"cannot reach {self.host}:{self.port}: {exc.strerror or exc}"
            )
        resp.duration_s = time.monotonic() - start
        return resp

    async def _get(self, path: str) -> HttpResponse:
        host, port = self.connect_to or (self.host, self.port)
        reader, writer = await asyncio.open_connection(
            host, port, ssl=self._ctx, server_hostname=self.host
        )
        try:
            self.sent.append(f"GET {path}")
            writer.write(self._request(path))
            await writer.drain()
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = await reader.read(4096)
                if not chunk:
                    break
                head += chunk
                if len(head) > HEADER_CAP:
                    return HttpResponse(None, error="response headers over 64 KiB")
            if b"\r\n\r\n" not in head:
                return HttpResponse(None, error="connection closed before a complete HTTP response")
            raw_head, _, body = head.partition(b"\r\n\r\n")
            status_line, *header_lines = raw_head.decode("iso-8859-1").split("\r\n")
            parts = status_line.split(" ", 2)
            if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
                return HttpResponse(None, error=f"not an HTTP response: {status_line[:80]!r}")
            headers = {}
            for ln in header_lines:
                k, _, v = ln.partition(":")
                headers[k.strip().lower()] = v.strip()
            cap = self.config.max_bytes
            truncated = False
            length = headers.get("content-length")
            want = int(length) if length and length.isdigit() else None
            while (want is None or len(body) < want) and len(body) <= cap + 64:
                chunk = await reader.read(65536)
                if not chunk:
                    break
                body += chunk
            if want is not None:
                body = body[:want]
            if headers.get("transfer-encoding", "").lower() == "chunked":
                decoded = _dechunk(body)
                if decoded is None and len(body) <= cap:
                    return HttpResponse(int(parts[1]), error="malformed chunked body")
                body = decoded if decoded is not None else body
            if len(body) > cap:
                body, truncated = body[:cap], True
            return HttpResponse(
                int(parts[1]),
                reason=parts[2] if len(parts) > 2 else "",
                headers=headers,
                body=body,
                truncated=truncated,
            )
        finally:
            writer.close()
            try:
                await asyncio.wait_for(writer.wait_closed(), timeout=1)
            except (TimeoutError, OSError, ssl.SSLError):
                pass


# --------------------------------------------------------------------------- the three reads


def odata_id(value: Any) -> str | None:
    """`{"@odata.id": "/redfish/v1/..."}` -> the path; anything else -> None."""
    link = value.get("@odata.id") if isinstance(value, dict) else None
    return link if isinstance(link, str) else None


def settings_object_path(bios: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(path of the pending settings object, why it cannot be read). Tolerates what real BMCs send:
    a missing @Redfish.Settings (no pending object exposed), a bare string instead of {"@odata.id": ...}
    (AMI, DMTF Redfish-Tacklebox #55), or nothing usable (non-compliant)."""
    settings = bios.get("@Redfish.Settings")
    if settings is None:
        return (
            None,
            "the Bios resource has no @Redfish.Settings (the BMC exposes no pending settings object)",
        )
    if not isinstance(settings, dict):
        return None, f"non-compliant @Redfish.Settings: a {type(settings).__name__}, not an object"
    obj = settings.get("SettingsObject")
    if isinstance(obj, str) and obj.startswith("/"):
        return obj, None
    path = odata_id(obj)
    if path is None:
        return None, "non-compliant @Redfish.Settings: no SettingsObject/@odata.id link"
    return path, None


class BmcReader:
    """Reads the system, its Bios and the pending settings once per audit; each command id gets its RawResult.

    Records: `redfish_system` (the ComputerSystem member), `redfish_bios` (the Bios resource), `redfish_bios_pending`
    (the @Redfish.Settings SettingsObject). Bodies are kept byte-exact (minus any credential echo)."""

    def __init__(self, config: BmcConfig) -> None:
        self.config = config
        self.client = RedfishClient(config)
        self._task: asyncio.Task[dict[str, RawResult]] | None = None

    @property
    def tls_note(self) -> str:
        via = " via the host's SSH connection" if self.config.via_host else ""
        if self.config.insecure:
            return f"{via} (TLS not verified: --bmc-insecure)"
        ca = f" (TLS verified with --bmc-ca {self.config.ca_file})" if self.config.ca_file else ""
        return via + ca

    async def read(self, command_id: str, via: Any = None) -> RawResult:
        """The RawResult of one BMC source; `via` is the audited host's transport (used with --bmc-via-host)."""
        if command_id not in BMC_SOURCE_IDS:
            return RawResult(
                exit_status=None, error=f"not run: {command_id} is not a BMC read", not_started=True
            )
        if self._task is None:
            self._task = asyncio.ensure_future(self._read_via(via))
        results = await asyncio.shield(self._task)
        return results[command_id]

    async def _read_via(self, via: Any) -> dict[str, RawResult]:
        if not self.config.via_host:
            return await self._read_all()
        conn = ssh_connection_of(via)
        if conn is None:
            why = "not run: --bmc-via-host needs the host audited over SSH (--host)"
            return {
                cid: RawResult(exit_status=None, error=why, not_started=True)
                for cid in BMC_SOURCE_IDS
            }
        try:
            listener = await asyncio.wait_for(
                conn.forward_local_port("127.0.0.1", 0, self.client.host, self.client.port),
                timeout=self.config.timeout_s,
            )
        except (
            Exception
        ) as exc:  # asyncssh refuses (AllowTcpForwarding no) or the connection is gone
            why = f"BMC {self.client.host}: the host's SSH server refused the forward: {exc}"
            return {cid: RawResult(exit_status=None, error=why) for cid in BMC_SOURCE_IDS}
        self.client.connect_to = ("127.0.0.1", listener.get_port())
        try:
            return await self._read_all()
        finally:
            listener.close()

    def _clean(self, body: bytes) -> bytes:
        creds = self.config.credentials
        if creds is None:
            return body
        for secret in sorted(creds.secrets(), key=len, reverse=True):
            if len(secret) >= MIN_REDACTED:  # a 1-3 character password would shred the JSON
                body = body.replace(secret.encode(), REDACTED.encode())
        return body

    def _result(self, path: str, resp: HttpResponse, started: datetime) -> tuple[RawResult, Any]:
        executed = f"GET {self.client.base_url}{path}{self.tls_note}"
        raw = RawResult(
            exit_status=None,
            started_at=started,
            duration_s=resp.duration_s,
            timed_out=resp.timed_out,
            truncated=resp.truncated,
            executed=executed,
        )
        if resp.error or resp.status is None:
            raw.error = f"BMC {self.client.host}: {resp.error or 'no response'}"
            return raw, None
        raw.stdout = self._clean(resp.body)
        if resp.status != 200:
            hint = {
                401: " (credentials refused or missing: set GPUAUDIT_BMC_USER/GPUAUDIT_BMC_PASSWORD or --bmc-credentials)",
                403: " (the account may not read this resource)",
                404: " (the BMC has no such resource)",
            }.get(resp.status, "")
            if 300 <= resp.status < 400:
                hint = f" (redirect to {resp.headers.get('location', '?')[:120]}: not followed)"
            raw.error = f"HTTP {resp.status} {resp.reason}".rstrip() + hint
            raw.exit_status = resp.status
            return raw, None
        raw.exit_status = 0
        if resp.truncated:
            raw.error = f"BMC answer over the {self.config.max_bytes}-byte cap (cut)"
            return raw, None
        try:
            doc = json.loads(raw.stdout)
        except ValueError as exc:
            raw.error = f"not JSON: {exc}"
            return raw, None
        if not isinstance(doc, dict):
            raw.error = "not a JSON object"
            return raw, None
        # kept one member per line (BMCs often answer on one line): the line-based redaction then hides a BIOS
        # password hash without eating the rest of the document, and diffs show the attribute that changed
        raw.stdout = (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode()
        return raw, doc

    def _skip(self, why: str) -> RawResult:
        return RawResult(exit_status=None, error=f"not run: {why}", not_started=True)

    async def _read_all(self) -> dict[str, RawResult]:
        out: dict[str, RawResult] = {}
        started = datetime.now(UTC)
        resp = await self.client.get(SYSTEMS_PATH)
        coll_raw, coll = self._result(SYSTEMS_PATH, resp, started)
        member, why = None, None
        if coll is None:
            why = f"GET {SYSTEMS_PATH}: {coll_raw.error}"
        else:
            members = [odata_id(m) for m in coll.get("Members") or [] if odata_id(m)]
            if not members:
                why = f"GET {SYSTEMS_PATH}: the collection lists no system"
            else:
                member = members[0]
        if member is None:
            fail = RawResult(
                exit_status=coll_raw.exit_status,
                stdout=coll_raw.stdout,
                started_at=started,
                duration_s=coll_raw.duration_s,
                timed_out=coll_raw.timed_out,
                error=coll_raw.error or why,
                executed=coll_raw.executed,
            )
            out[BMC_SYSTEM_ID] = fail
            out[BMC_BIOS_ID] = self._skip(why or "no system")
            out[BMC_PENDING_ID] = self._skip(why or "no system")
            return out
        started = datetime.now(UTC)
        resp = await self.client.get(member)
        sys_raw, system = self._result(member, resp, started)
        sys_raw.duration_s += coll_raw.duration_s
        sys_raw.executed = f"{coll_raw.executed}; {sys_raw.executed}"
        if len(members) > 1:
            sys_raw.stderr = f"{len(members)} systems listed; read the first, {member}\n".encode()
        out[BMC_SYSTEM_ID] = sys_raw
        bios_path = odata_id(system.get("Bios")) if system else None
        if bios_path is None:
            why = (
                f"GET {member}: {sys_raw.error}"
                if system is None
                else f"{member} has no Bios link (the BMC exposes no BIOS settings)"
            )
            out[BMC_BIOS_ID] = self._skip(why)
            out[BMC_PENDING_ID] = self._skip(why)
            return out
        started = datetime.now(UTC)
        resp = await self.client.get(bios_path)
        bios_raw, bios = self._result(bios_path, resp, started)
        out[BMC_BIOS_ID] = bios_raw
        if bios is None:
            out[BMC_PENDING_ID] = self._skip(f"GET {bios_path}: {bios_raw.error}")
            return out
        pending_path, why = settings_object_path(bios)
        if pending_path is None:
            out[BMC_PENDING_ID] = self._skip(why or "no settings object")
            return out
        if pending_path.rstrip("/") == bios_path.rstrip("/"):
            out[BMC_PENDING_ID] = self._skip(
                "@Redfish.Settings points at the Bios resource itself (no separate pending object)"
            )
            return out
        started = datetime.now(UTC)
        resp = await self.client.get(pending_path)
        out[BMC_PENDING_ID], _ = self._result(pending_path, resp, started)
        return out
