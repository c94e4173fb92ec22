"""Start-up stays cheap: the headless path never imports Textual, `--help` not even asyncssh."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def python(code: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_headless_modules_do_not_import_textual():
    out = python(
        "import gpuaudit.tui.cli.entry, gpuaudit.tui.cli.headless, gpuaudit.tui.cli.fleet_hosts, gpuaudit.probes, gpuaudit.snapshots, sys; print('textual' in sys.modules)"
    )
    assert out == "False"


def test_help_imports_neither_textual_nor_asyncssh():
    code = (
        "import sys, contextlib, io\nfrom gpuaudit.tui.cli import entry as cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n        cli.main(['--help'])\n    except SystemExit:\n        pass\n"
        "print(sorted(m for m in ('textual', 'asyncssh', 'rich') if m in sys.modules))"
    )
    assert python(code) == "[]"
