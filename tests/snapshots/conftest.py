"""Fixtures of the snapshot tests (builders in snapfactory.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"
