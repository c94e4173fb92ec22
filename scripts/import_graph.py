"""The import graph of the installed package layout, for import-linter and the cycle count.

The editable install maps probes/ snapshots/ tui/ themes/ to gpuaudit.* through an import hook that grimp
cannot walk, so this copies the sources into a temporary `gpuaudit/` tree first.

    python scripts/import_graph.py lint      # run lint-imports (contracts in pyproject.toml)
    python scripts/import_graph.py cycles    # print import cycles (lazy imports included, TYPE_CHECKING not)
    python scripts/import_graph.py mypy      # mypy --strict over gpuaudit.probes and gpuaudit.snapshots

mypy run on the folders directly sees `from gpuaudit.probes...` as a missing module (Any), so it must run on
the package layout too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("probes", "snapshots", "tui", "themes")


def build_tree(dest: Path) -> Path:
    pkg = dest / "gpuaudit"
    for name in FOLDERS:
        shutil.copytree(
            ROOT / name,
            pkg / name,
            ignore=shutil.ignore_patterns("examples", "__pycache__", "*.json"),
        )
    return dest


def cycles(path: Path) -> list[list[str]]:
    """Strongly connected components of more than one module."""
    import grimp

    sys.path.insert(0, str(path))
    graph = grimp.build_graph("gpuaudit", exclude_type_checking_imports=True)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def main(argv: list[str]) -> int:
    what = argv[0] if argv else "lint"
    with tempfile.TemporaryDirectory() as tmp:
        tree = build_tree(Path(tmp))
        if what == "cycles":
            found = cycles(tree)
            for comp in found:
                print(" <-> ".join(comp))
            print(f"{len(found)} cycle(s), {sum(map(len, found))} module(s)")
            return 1 if found else 0
        if what == "mypy":
            cmd = [
                sys.executable,
                "-m",
                "mypy",
                "--strict",
                "--config-file",
                str(ROOT / "pyproject.toml"),
            ]
            cmd += ["--explicit-package-bases", "-p", "gpuaudit.probes", "-p", "gpuaudit.snapshots"]
            proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
            sys.stdout.write(proc.stdout.replace(f"{tmp}/", "").replace("gpuaudit/", ""))
            sys.stderr.write(proc.stderr)
            return proc.returncode
        env = {**os.environ, "PYTHONPATH": str(tree)}
        lint = shutil.which("lint-imports") or "lint-imports"
        cmd = [lint, "--config", str(ROOT / "pyproject.toml"), "--no-cache"]
        return subprocess.run(cmd, env=env, cwd=tmp).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
