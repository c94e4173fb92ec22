"""A fleet with hung hosts ends within --timeout's bound (issue 30, fleet at scale): a host that accepts the TCP
connection and never speaks (a wedged sshd, a half-dead box) costs its connect timeout, max(5 s, --timeout),
once; the other hosts are audited meanwhile and the fleet's exit status says an audit was incomplete (3).

Only 127.0.0.1: one real sshd (the session fixture) and two silent listeners this test opens.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from reliability.faultkit import SilentServer

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.sshd


def test_hung_hosts_cost_their_connect_timeout_once_and_the_rest_is_audited(sshd, tmp_path):
    silent = [SilentServer(), SilentServer()]
    try:
        inv = tmp_path / "hosts.txt"
        inv.write_text(
            f"{sshd.spec}\n" + "".join(f"{sshd.user}@127.0.0.1:{s.port}\n" for s in silent)
        )
        t0 = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "gpuaudit.tui", "--hosts", str(inv), "--json"]
            + ["--fail-on", "never", "--timeout", "5", "--probes", "kernel,numa"]
            + sshd.cli_args(),
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        )
        wall = time.monotonic() - t0
    finally:
        for s in silent:
            s.close()
    assert proc.returncode == 3, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    by_port = {e["target"].rsplit(":", 1)[-1]: e for e in doc["fleet"]}
    good = by_port[str(sshd.port)]
    assert good["exit_status"] == 0 and good["snapshot"] is not None, good["error"]
    for s in silent:
        hung = by_port[str(s.port)]
        assert hung["exit_status"] == 3 and hung["snapshot"] is not None
        assert "time" in (hung["error"] or "").lower(), hung["error"]  # "timed out", named
        assert hung["duration_s"] < 5 + 4, hung  # the connect timeout, once (no retry loop)
    # the two hung hosts wait at the same time as the good one is audited: about one timeout in all
    assert wall < 5 + 15, wall
