"""What the --prom tests share: the Debian tool they need (a failure, not a skip, where CI installs it) and
node_exporter serving a textfile directory on 127.0.0.1. A free port: tests/sshd_server.py's free_port."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REQUIRE = os.environ.get("GPUAUDIT_REQUIRE_SSHD") == "1"  # CI installs prometheus + node_exporter


def tool(name: str) -> str:
    path = shutil.which(name) or (f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").exists() else None)
    if path is None:
        if REQUIRE:
            pytest.fail(f"{name} not installed (Debian: prometheus / prometheus-node-exporter)")
        pytest.skip(f"{name} not installed")
    return path


def node_exporter(exporter: str, port: int, textdir: Path) -> subprocess.Popen[bytes]:
    """node_exporter with the textfile collector alone, listening on 127.0.0.1:`port`."""
    return subprocess.Popen(
        [
            exporter,
            f"--web.listen-address=127.0.0.1:{port}",
            "--collector.disable-defaults",
            "--collector.textfile",
            f"--collector.textfile.directory={textdir}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
