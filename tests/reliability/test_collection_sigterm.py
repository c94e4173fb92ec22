"""SIGTERM to --json mid-run: remote commands are cancelled within about a second, --save keeps an incomplete snapshot."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from gpuaudit.snapshots.compact import unpack
from reliability.faultkit import REPO, cli_env, home  # noqa: F401
from sshd_server import leftover_processes

pytestmark = pytest.mark.sshd


@pytest.fixture
def slow_smi_server(sshd_factory):
    """An sshd whose PATH starts with an `nvidia-smi` that takes 30 s (a wedged driver)."""
    bin_dir = Path(tempfile.mkdtemp(prefix="gpuaudit-slow-smi-"))
    os.chmod(bin_dir, 0o755)
    (bin_dir / "nvidia-smi").write_text("#!/bin/sh\nexec sleep 4851\n")
    (bin_dir / "nvidia-smi").chmod(0o755)
    yield sshd_factory(
        user="gpuaudit-coll", extra_config=f"SetEnv PATH={bin_dir}:/usr/local/bin:/usr/bin:/bin"
    )
    shutil.rmtree(bin_dir, ignore_errors=True)


def remote(tag: str, user: str) -> list[str]:
    return [p for p in leftover_processes(user) if tag in p and "defunct" not in p]


def test_sigterm_mid_run_kills_remote_commands_and_saves_incomplete(
    slow_smi_server, home, tmp_path
):  # noqa: F811
    server = slow_smi_server
    snaps = tmp_path / "snaps"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gpuaudit.tui",
            "--json",
            "--host",
            server.spec,
            *server.cli_args(),
            "--timeout",
            "60",
            "--save",
            "interrupted",
            "--snapshot-dir",
            str(snaps),
        ],
        cwd=REPO,
        env=cli_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while not remote("sleep 4851", server.user) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not remote("sleep 4851", server.user):
            proc.kill()
            pytest.fail(
                f"the audit never started its nvidia-smi calls: {proc.communicate()[1][-1500:]}"
            )
        time.sleep(0.5)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
        exit_s = time.monotonic() - t0
        time.sleep(2)
        left = remote("sleep 4851", server.user)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0 and "Traceback" not in err, err[-2000:]
    assert exit_s < 3 and left == [], (exit_s, left)
    saved = list(snaps.rglob("*.json"))
    assert saved, err
    doc = unpack(json.loads(saved[0].read_text()))
    assert doc["note"].startswith("incomplete")
    assert any(
        r["stdout"] for p in doc["probes"] for r in p["records"]
    )  # what finished before SIGTERM is kept
