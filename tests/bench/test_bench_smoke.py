"""The benchmark's quick mode runs end to end against a real sshd and prints its tables (no timing asserts)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sshd_server import sshd_available

BENCH = Path(__file__).resolve().parent / "bench_audit.py"


def test_quick_benchmark_prints_the_tables(tmp_path):
    reason = sshd_available()
    if reason:
        pytest.skip(reason)
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--json-out", str(out)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = proc.stdout
    for row in (
        "| gpuaudit full audit |",
        "| baseline A: ssh client per command",
        "| baseline B: one asyncssh connection",
        "| floor: connect",
        "| fleet targets |",
        "| big output",
        "start-up (",
        "Stand-ins:",
    ):
        assert row in text, row
    assert "WARNING: processes left running" not in text
    numbers = json.loads(out.read_text())
    assert [f["n"] for f in numbers["fleet"]] == [1, 10]
    assert all(f["failed"] == 0 for f in numbers["fleet"])  # every fleet target was really audited
    assert numbers["lines"] > 0 and len(numbers["gpuaudit"]) == 1
    big = {b["label"]: b for b in numbers["big"]}
    assert any(b["big_records"] >= 1 for b in big.values())
