"""Helpers for the --bmc tests (tests/redfish): a real Redfish service on 127.0.0.1: sushy-static (sushy-tools, PyPI) serving the captures
in tests/fixtures/redfish over HTTPS with a self-signed certificate made here; its access log (stderr) is kept.
Fault servers (refuse, hang, odd answers) are small asyncio servers made by the tests themselves."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parents[1] / "fixtures/redfish"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Cert:
    cert: Path
    key: Path


def make_cert(tmp: Path, name: str = "bmc", ip: str = "127.0.0.1") -> Cert:
    """A self-signed certificate for `ip` (cryptography comes with asyncssh)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(ip))]), critical=False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    paths = Cert(tmp / f"{name}.pem", tmp / f"{name}.key")
    paths.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


@dataclass
class Mockup:
    port: int
    cert: Cert
    log: Path
    proc: subprocess.Popen

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def access_lines(self) -> list[str]:
        """The server's request log lines ("GET /redfish/v1/Systems HTTP/1.1" ...)."""
        return [ln for ln in self.log.read_text().splitlines() if '"' in ln and "HTTP/1" in ln]


def serve(tmp: Path, mockup_dir: Path, cert: Cert) -> Mockup:
    try:
        import sushy_tools.static.main  # noqa: F401
    except ImportError:
        pytest.skip("sushy-tools not installed (pip install -e '.[test]')")
    port = free_port()
    log = tmp / f"access-{port}.log"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sushy_tools.static.main",
            "-i",
            "127.0.0.1",
            "-p",
            str(port),
            "-m",
            str(mockup_dir),
            "-c",
            str(cert.cert),
            "-k",
            str(cert.key),
        ],
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),
    )
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    else:
        proc.kill()
        pytest.fail("sushy-static did not start")
    return Mockup(port, cert, log, proc)


def records_by_id(doc: dict) -> dict[str, dict]:
    """command id -> record (as a dict) of a --json/--save document, whichever stored shape (schema 2 or 3)."""
    from gpuaudit.snapshots.schema import Snapshot

    return {r.command_id: r.model_dump(mode="json") for r in Snapshot.model_validate(doc).records}
