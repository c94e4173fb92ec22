"""The one door from the text front ends to Textual: `bridge.interactive()` imports tui/interactive.py on demand.

Every screen the CLI opens (the dashboard, the fleet screens) goes through here, so `--json`, `--plan`, `--prom`,
`--health`, `diff` and the text reports never load Textual.
"""

from __future__ import annotations

from types import ModuleType


def interactive() -> ModuleType:
    """tui/interactive.py, imported now (it loads Textual: seconds, not milliseconds)."""
    from gpuaudit.tui import interactive as module

    return module
