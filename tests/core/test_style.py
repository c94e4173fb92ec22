"""Style is enforced by tools: `ruff check` and `ruff format --check` over the tree (config in pyproject.toml)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def ruff(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("ruff")
    cmd = [exe] if exe else [sys.executable, "-m", "ruff"]
    return subprocess.run([*cmd, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module", autouse=True)
def _ruff_installed() -> None:
    if (
        shutil.which("ruff") is None
        and subprocess.run(
            [sys.executable, "-m", "ruff", "--version"], capture_output=True, check=False
        ).returncode
    ):
        pytest.fail("ruff is in the test extra: pip install -e '.[test]'")


def test_ruff_check_is_clean():
    proc = ruff("check", ".")
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr


def test_ruff_format_is_clean():
    proc = ruff("format", "--check", ".")
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr
