"""Fixtures for the TUI tests (helpers live in tui_support.py)."""

from __future__ import annotations

import pytest

from tui_support import FixedClock


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()
