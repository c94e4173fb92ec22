"""The argument parser every subcommand shares: errors are one line (exit 2), with the nearest spelling."""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Iterable
from typing import NoReturn

SUBCOMMANDS = ("diff", "snapshots", "fleet", "baseline")


def suggestion(word: str, choices: Iterable[str]) -> str | None:
    """The nearest known flag or subcommand to a mistyped one, or None."""
    near = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return near[0] if near else None


class CliError(Exception):
    """A usage or input error: printed as one line, exit 2."""


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports errors as a single stderr line (no usage dump, no traceback)."""

    def error(self, message: str) -> NoReturn:
        raise CliError(message + self._nearest(message))

    def _nearest(self, message: str) -> str:
        """`--jsn` -> "; did you mean --json?", `dif a b` -> "; did you mean `diff`?" (tui/cli/preflight.py)."""
        prefix = "unrecognized arguments: "
        if not message.startswith(prefix) or not (words := message[len(prefix) :].split()):
            return ""
        word = words[0]
        if not word.startswith("-"):
            near = suggestion(word, SUBCOMMANDS)
            return (
                f"; did you mean `{near}`?" if near else f"; subcommands: {', '.join(SUBCOMMANDS)}"
            )
        near = suggestion(word.partition("=")[0], self._option_string_actions)
        return f"; did you mean {near}?" if near else ""
