"""`gpuaudit-tui diff A B` and `gpuaudit-tui snapshots` (skeleton)."""

from __future__ import annotations


def main(name: str, argv: list[str]) -> int:
    from tui.cli import CliError

    raise CliError(f"{name}: not implemented yet")
