"""The `mockup` fixture of the --bmc tests (helpers in redfish_server.py)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from redfish_server import FIXTURES, Mockup, make_cert, serve


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
