"""`gpuaudit-tui --docs [NAME]`: the documents findings cite, reachable by a user of the package (issue 24)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from gpuaudit.tui.cli import docs
from gpuaudit.tui.cli.args import CliError

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuaudit.tui", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
    )


def test_docs_alone_lists_the_paths_of_the_cited_documents():
    proc = cli("--docs")
    assert proc.returncode == 0, proc.stderr
    paths = [Path(line) for line in proc.stdout.splitlines()]
    assert {"CHECKS.md", "ROOFLINE-METHOD.md"} <= {p.name for p in paths}
    assert all(p.is_file() for p in paths)


@pytest.mark.parametrize("name", ["CHECKS", "checks", "CHECKS.md", "docs/CHECKS.md"])
def test_docs_name_prints_the_document(name: str):
    proc = cli("--docs", name)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (ROOT / "docs" / "CHECKS.md").read_text(encoding="utf-8")


def test_an_unknown_document_is_one_line_exit_2():
    proc = cli("--docs", "NOPE")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "known: " in proc.stderr and "CHECKS" in proc.stderr


def test_no_documentation_installed_is_a_usage_error(tmp_path: Path):
    with pytest.raises(CliError, match="no documentation installed"):
        docs.main("", tmp_path / "absent")
    with pytest.raises(CliError, match="no documentation installed"):
        docs.find("CHECKS", tmp_path)
