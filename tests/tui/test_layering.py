"""Import rules of the Textual front end, checked statically (AST), like the engine's in tests/cli.

Layers, bottom up: pure helpers (render, filtering: no Textual) -> widgets -> screens -> app.
A lower layer never imports a higher one at run time (`if TYPE_CHECKING:` imports are types only),
and the Textual modules import at module level: no imports hidden in functions to dodge a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

TUI = Path(__file__).resolve().parents[2] / "tui"
PURE = ("views/render.py", "views/filtering.py", "views/roofline_view.py", "views/diff_report.py")
TEXTUAL_PARTS = [
    TUI / "app.py",
    TUI / "snapshot_actions.py",
    *sorted((TUI / "screens").glob("*.py")),
    *sorted((TUI / "widgets").glob("*.py")),
]


def runtime_imports(path: Path) -> list[tuple[str, int, bool]]:
    """(module, line, inside a function) for every import not under `if TYPE_CHECKING:`."""
    tree = ast.parse(path.read_text())
    out: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and getattr(child.test, "id", None) == "TYPE_CHECKING":
                continue
            if isinstance(child, ast.ImportFrom) and child.module:
                out.append((child.module, child.lineno, in_function))
            elif isinstance(child, ast.Import):
                out.extend((a.name, child.lineno, in_function) for a in child.names)
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    visit(tree, False)
    return out


def test_pure_helpers_import_no_textual_and_no_screens():
    for name in PURE:
        mods = [m for m, _, _ in runtime_imports(TUI / name)]
        assert not [
            m
            for m in mods
            if m.startswith(
                ("textual", "gpuaudit.tui.screens", "gpuaudit.tui.widgets", "gpuaudit.tui.app")
            )
        ], (name, mods)


def test_widgets_never_import_screens_or_the_app():
    for path in sorted((TUI / "widgets").glob("*.py")):
        bad = [
            m
            for m, _, _ in runtime_imports(path)
            if m.startswith(("gpuaudit.tui.screens", "gpuaudit.tui.app"))
        ]
        assert not bad, (path.name, bad)


def test_screens_never_import_the_app_at_run_time():
    for path in sorted((TUI / "screens").glob("*.py")):
        bad = [
            m
            for m, _, _ in runtime_imports(path)
            if m in ("gpuaudit.tui.app", "gpuaudit.tui.snapshot_actions")
        ]
        assert not bad, (path.name, bad)


FIRST_FRAME_DEFERRAL = ("app.py", "gpuaudit.tui")
"""The one exception: tui/app.py `later()` imports tui/deferred.py (the screens not on the first frame and the
audit's setup) after the dashboard's first frame, for a first paint within a second (issue 30)."""


def test_textual_modules_import_at_module_level_only():
    hidden = [
        (p.name, m, line) for p in TEXTUAL_PARTS for m, line, in_fn in runtime_imports(p) if in_fn
    ]
    assert [h[:2] for h in hidden] == [FIRST_FRAME_DEFERRAL], hidden
    later = next(
        node
        for node in ast.walk(ast.parse((TUI / "app.py").read_text()))
        if isinstance(node, ast.FunctionDef) and node.name == "later"
    )
    imports = [n for n in ast.walk(later) if isinstance(n, ast.ImportFrom)]
    assert [(n.module, [a.name for a in n.names]) for n in imports] == [
        ("gpuaudit.tui", ["deferred"])
    ]
