"""The front ends (tui/, themes/) type-check clean under mypy, like the engine (tests/core/test_typing.py)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OTHERS = ("fleet", "snapshot_commands", "diff_report", "list_checks", "health")
"""Modules of tui/ that other work items own and check (the fleet screen, the CLI reports)."""
MINE = sorted(
    str(p.relative_to(ROOT)) for p in (ROOT / "tui").rglob("*.py") if not p.stem.startswith(OTHERS)
)


@pytest.mark.skipif(
    importlib.util.find_spec("mypy") is None,
    reason="mypy not installed (pip install -e '.[test]' brings it)",
)
def test_mypy_tui_and_themes_clean() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", *MINE, "themes"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"mypy found errors:\n{proc.stdout}{proc.stderr}"
