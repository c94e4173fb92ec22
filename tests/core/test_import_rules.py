"""The layering, checked statically: the engine never imports the UI, and probes never import each other."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN_IN_ENGINE = ("textual", "rich", "tui", "themes")


def imports_of(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return {n.removeprefix("gpuaudit.") for n in names}


def probe_name(path: Path) -> str | None:
    """`probes/kernel.py` -> kernel, `probes/driver/rules.py` -> driver; None for probes/core and probes/__init__."""
    rel = path.relative_to(ROOT / "probes").parts
    if rel[0] in ("core", "__init__.py", "catalogue.py"):
        return None
    return rel[0].removesuffix(".py")


ENGINE_FILES = sorted([*(ROOT / "probes").rglob("*.py"), *(ROOT / "snapshots").rglob("*.py")])


@pytest.mark.parametrize("path", ENGINE_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_engine_never_imports_ui(path):
    bad = [m for m in imports_of(path) if m.split(".")[0] in FORBIDDEN_IN_ENGINE]
    assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


@pytest.mark.parametrize(
    "path",
    [p for p in ENGINE_FILES if p.is_relative_to(ROOT / "probes") and probe_name(p)],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_a_probe_imports_only_core_and_itself(path):
    own = probe_name(path)
    for module in imports_of(path):
        parts = module.split(".")
        if parts[0] == "probes" and len(parts) > 1:
            assert parts[1] in ("core", own), (
                f"{path.relative_to(ROOT)} imports another probe: {module}"
            )
        assert parts[0] != "probes" or len(parts) > 1, (
            f"{path.relative_to(ROOT)} imports the registry"
        )


HEADLESS = (
    "cli.py",
    "headless.py",
    "session_setup.py",
    "snapshot_commands.py",
    "fleet.py",
    "resume.py",
    "diff_report.py",
    "interactive.py",
    "__init__.py",
    "__main__.py",
)


def test_headless_modules_do_not_import_textual_at_module_level():
    for path in [*(ROOT / "tui" / "cli").glob("*.py"), *(ROOT / "tui" / "views").glob("*.py")]:
        top = {m.split(".")[0] for m in imports_of_top_level(path)}
        assert "textual" not in top, f"{path.name} imports textual at module level"


def imports_of_top_level(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out
