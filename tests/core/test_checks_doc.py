"""What the UI and JSON cite, a user has (issue 24): docs/CHECKS.md is generated from the catalogue and current,
docs/ROOFLINE-METHOD.md exists with the sections the code cites, and no string the tool shows or writes cites
the project's internal notes (PROBES.md §…, ROOFLINE.md §…, CASE-STUDY), which a package user does not have."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INTERNAL = re.compile(
    r"\b(PROBES|ROOFLINE|CASE-STUDY|DESIGN|FLEET|STYLE|TESTING)\.md|CASE-STUDY|(?<!METHOD\.md )§"
)
CITED = re.compile(r"ROOFLINE-METHOD\.md §(\d+)")


def test_checks_reference_is_current():
    proc = subprocess.run(
        [sys.executable, "scripts/gen_checks_doc.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    text = (ROOT / "docs" / "CHECKS.md").read_text()
    from gpuaudit.tui.cli.list_checks import catalogue_rows

    for check in catalogue_rows():
        assert f"### `{check.id}`" in text


def _shown_strings(path: Path) -> list[tuple[int, str]]:
    """String constants that are not docstrings (docstrings and comments are for maintainers)."""
    tree = ast.parse(path.read_text())
    docs = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for stmt in body:
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                    docs.add(id(stmt.value))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            out.append((node.lineno, node.value))
    return out


def test_no_shown_string_cites_internal_notes():
    bad = []
    for folder in ("probes", "tui", "snapshots"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for line, text in _shown_strings(path):
                if INTERNAL.search(text):
                    bad.append(f"{path.relative_to(ROOT)}:{line}: {text[:80]!r}")
    assert bad == []


def test_catalogue_and_demo_cite_only_what_a_user_has():
    from gpuaudit.tui.cli.list_checks import catalogue_rows

    for c in catalogue_rows():
        for text in (c.why, c.fix, c.expected, c.title):
            assert not INTERNAL.search(text or ""), (c.id, text)
    for demo in (ROOT / "snapshots" / "examples").glob("case-study-*.json"):
        found = INTERNAL.findall(demo.read_text())
        assert not found, (demo.name, found[:3])


def test_roofline_method_has_the_sections_the_code_cites():
    method = (ROOT / "docs" / "ROOFLINE-METHOD.md").read_text()
    sections = set(re.findall(r"^## (\d+)\.", method, re.M))
    cited = set()
    for folder in ("probes", "tui"):
        for path in (ROOT / folder).rglob("*.py"):
            cited |= set(CITED.findall(path.read_text()))
    assert cited and cited <= sections, (cited, sections)
