"""A real Redfish service on 127.0.0.1 for the --bmc tests: sushy-static (sushy-tools, PyPI) serving the captures
in tests/fixtures/redfish over HTTPS with a self-signed certificate made here; its access log (stderr) is kept.
Fault servers (refuse, hang, odd answers) are small asyncio servers made by the tests themselves."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
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


def make_cert(tmp: Path, name: str = "bmc", san: str = "IP:127.0.0.1") -> Cert:
    if shutil.which("openssl") is None:
        pytest.skip("openssl not installed")
    cert, key = tmp / f"{name}.pem", tmp / f"{name}.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "2",
            "-subj",
            f"/CN={name}",
            "-addext",
            f"subjectAltName={san}",
        ],
        check=True,
        capture_output=True,
    )
    return Cert(cert, key)


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


@pytest.fixture
def mockup(tmp_path: Path) -> Iterator:
    """mockup(sample) -> a running sushy-static over tests/fixtures/redfish/<sample> (lower-case aliases added
    for HPE's lower-case links: iLO's paths are case-insensitive, sushy-static's are not)."""
    started: list[Mockup] = []
    cert = make_cert(tmp_path)

    def start(sample: str) -> Mockup:
        src = FIXTURES / sample
        root = tmp_path / f"mock-{sample}"
        shutil.copytree(src, root)
        for d in sorted(root.rglob("*"), key=lambda p: len(p.parts)):
            low = d.parent / d.name.lower()
            if d.is_dir() and low != d and not low.exists():
                low.symlink_to(d.name)
        m = serve(tmp_path, root, cert)
        started.append(m)
        return m

    yield start
    for m in started:
        m.proc.terminate()
        try:
            m.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            m.proc.kill()
