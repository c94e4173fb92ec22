"""`gpuaudit-tui --docs [NAME]`: where the documents the findings and the roofline cite are (docs/CHECKS.md,
docs/ROOFLINE-METHOD.md, ...), or one of them printed. They ship inside the package (tui/docs links to the
repository's docs/; pyproject.toml's package data), so a pip-only user has them too."""

from __future__ import annotations

import sys
from pathlib import Path

from gpuaudit.tui.cli.args import CliError

DOCS_DIR = Path(__file__).resolve().parent.parent / "docs"
"""gpuaudit/tui/docs in an installed copy; in the repository, tui/docs -> ../docs."""


def documents(folder: Path = DOCS_DIR) -> dict[str, Path]:
    """NAME (the file name without .md, upper case as in the repository) -> its path."""
    return {p.stem: p for p in sorted(folder.glob("*.md"))} if folder.is_dir() else {}


def find(name: str, folder: Path = DOCS_DIR) -> Path:
    """The document `name` names: CHECKS, checks, CHECKS.md and docs/CHECKS.md all name docs/CHECKS.md."""
    docs = documents(folder)
    if not docs:
        raise CliError(f"--docs: no documentation installed with this copy (looked in {folder})")
    key = name.strip().rsplit("/", 1)[-1].removesuffix(".md").removesuffix(".MD").upper()
    by_upper = {stem.upper(): path for stem, path in docs.items()}
    if key not in by_upper:
        raise CliError(f"--docs {name!r}: no such document; known: {', '.join(docs)}")
    return by_upper[key]


def main(name: str, folder: Path = DOCS_DIR) -> int:
    """No NAME: each document's path, one a line. NAME: its text on stdout."""
    if name:
        sys.stdout.write(find(name, folder).read_text(encoding="utf-8"))
        return 0
    docs = documents(folder)
    if not docs:
        raise CliError(f"--docs: no documentation installed with this copy (looked in {folder})")
    sys.stdout.write("".join(f"{path.resolve()}\n" for path in docs.values()))
    return 0
