"""Fixtures for the TUI tests (helpers live in tui_support.py)."""

from __future__ import annotations

import pytest
from gpuaudit.tui.views import roofline_view
from tui_support import FixedClock


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()


@pytest.fixture(autouse=True)
def fresh_roofline_cache():
    """The roofline is cached by what it reads from a run: a test that swaps the engine's function must not
    see another test's figures."""
    roofline_view.clear_cache()
    yield
    roofline_view.clear_cache()
