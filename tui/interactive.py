"""Starts the Textual app (the only module path that imports Textual)."""

from __future__ import annotations

import argparse


def main(args: argparse.Namespace) -> int:
    if getattr(args, "resume", None):  # resume headless, then show the stored result
        from gpuaudit.tui.resume import run_then_show

        return run_then_show(args)
    from gpuaudit.tui.app import run_app

    return run_app(args)
