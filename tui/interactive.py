"""Starts the Textual app (the only module path that imports Textual)."""

from __future__ import annotations

import argparse


def main(args: argparse.Namespace) -> int:
    from tui.app import run_app

    return run_app(args)
