"""The engine (probes/, snapshots/) type-checks clean under mypy, with the settings in pyproject.toml.

Role is a Literal["host", "container"]: mypy is what keeps a stray role string (a typo, a plain `str`
where a Role is expected) from reaching findings and evidence.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(
    importlib.util.find_spec("mypy") is None,
    reason="mypy not installed (pip install -e '.[test]' brings it)",
)
def test_mypy_probes_and_snapshots_clean() -> None:
    # [tool.mypy] of pyproject.toml (strict), over the installed package layout (scripts/import_graph.py)
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "import_graph.py"), "mypy"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"mypy found errors:\n{proc.stdout}{proc.stderr}"
