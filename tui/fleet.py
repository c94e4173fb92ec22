"""Fleet mode: --hosts FILE (skeleton)."""

from __future__ import annotations

import argparse


def main(args: argparse.Namespace) -> int:
    from tui.cli import CliError

    raise CliError("--hosts: not implemented yet")
