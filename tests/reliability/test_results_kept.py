"""Results are never lost (issue 29): a failing --save/--prom reports its own failure after --json was written;
SIGTERM exits 143; an output encoding that cannot show a character degrades, never a traceback."""

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
from gpuaudit.snapshots import store
from gpuaudit.tui.cli import headless, headless_outputs
from gpuaudit.tui.cli.entry import EXIT_RULE, main

REPO = Path(__file__).resolve().parents[2]
BEFORE = REPO / "snapshots/examples/case-study-before.json"


def _run(capfd, argv: list[str]) -> tuple[int, str, str]:
    rc = main(argv)
    out, err = capfd.readouterr()
    return rc, out, err


def test_failing_save_keeps_the_json_and_has_its_own_status(capfd, tmp_path, monkeypatch):
    def full_disk(*_a, **_k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store, "save", full_disk)
    rc, out, err = _run(
        capfd,
        ["--replay", str(BEFORE), "--json", "--save", "x", "--snapshot-dir", str(tmp_path)],
    )
    doc = json.loads(out)  # the whole document reached stdout
    assert isinstance(doc, dict) and "targets" in doc
    lines = [ln for ln in err.splitlines() if "failed" in ln]
    assert lines == [
        "gpuaudit-tui: --save failed: [Errno 28] No space left on device (the audit completed)"
    ]
    assert rc == headless.EXIT_OUTPUT_FAILED == 4
    assert "Traceback" not in err


def test_failing_prom_is_one_line_not_a_traceback(capfd, tmp_path, monkeypatch):
    def refused(*_a, **_k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(headless_outputs, "write_prom", refused)
    prom = tmp_path / "node.prom"
    rc, out, err = _run(capfd, ["--replay", str(BEFORE), "--json", "--prom", str(prom)])
    assert "targets" in json.loads(out)
    assert f"gpuaudit-tui: --prom {prom} failed: [Errno 13] Permission denied" in err
    assert rc == 4 and "Traceback" not in err


def test_exit_rule_documents_the_output_and_signal_statuses():
    assert "4 --save, --prom" in EXIT_RULE and "143 terminated" in EXIT_RULE


def test_plan_degrades_in_an_ascii_output():
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    res = subprocess.run(
        [sys.executable, "-m", "gpuaudit.tui", "--replay", str(BEFORE), "--plan"],
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert res.returncode in (0, 1), res.stderr.decode()[-800:]
    assert b"Traceback" not in res.stderr and b"action plan" in res.stdout
    res.stdout.decode("ascii")  # nothing it could not show


@pytest.fixture
def hung_smi():
    d = Path(tempfile.mkdtemp(prefix="h29-hung-smi-"))
    (d / "nvidia-smi").write_text("#!/bin/sh\nexec sleep 4863\n")
    (d / "nvidia-smi").chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)
    subprocess.run(["pkill", "-KILL", "-f", "sleep 4863"], check=False)


def test_sigterm_exits_143(hung_smi, tmp_path):
    env = {
        **os.environ,
        "PATH": f"{hung_smi}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpuaudit.tui", "--json", "--probes", "power", "--timeout", "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # wait until the hung tool runs
        if subprocess.run(["pgrep", "-f", "sleep 4863"], capture_output=True).returncode == 0:
            break
        time.sleep(0.1)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err.decode()[-800:]
    assert b"Traceback" not in err


def test_interactive_tui_refuses_without_a_terminal():
    t0 = time.monotonic()
    res = subprocess.run(
        [sys.executable, "-m", "gpuaudit.tui", "--replay", str(BEFORE)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.strip().splitlines() == [
        "gpuaudit-tui: error: the interactive TUI needs a terminal (stdin and stdout); "
        "use --json, --plan, --prom or --health"
    ]
    assert time.monotonic() - t0 < 30
