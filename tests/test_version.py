"""One version: pyproject's static version (the wheel) equals the one every snapshot records."""

import tomllib
from pathlib import Path

from gpuaudit.probes.core.version import __version__


def test_pyproject_and_snapshot_version_agree():
    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())[
        "project"
    ]
    assert project["version"] == __version__
