"""Source trees side by side in one benchmark run: `--tree before=HEAD~3 --tree after=.` (before/after, same load).

A tree is a git revision of this repository (exported with `git archive`) or a folder holding `probes/`,
`snapshots/`, `tui/`, `themes/` (a checkout; `.` is the working tree). Each is laid out as the installed
`gpuaudit.*` package (symlinks) in a temporary folder; a child run with `PYTHONPATH=<layout>` imports that tree
instead of the editable install (Python's path finder comes before the editable install's finder). Used by
bench_table.py and bench_fleet_scale.py. The working tree is shared by several people editing at once: export a
revision to measure a fixed state.

Bytecode: `pip install .` compiles every module when it installs (what a user runs); a `git archive` export has no
`__pycache__`, and this sandbox sets PYTHONDONTWRITEBYTECODE=1, so without `compile_bytecode` each child would
compile ~90 project modules from source on every start (0.2 s of CPU per process, measured: CLI client CPU 1.0 s
without bytecode, 0.72 s with it, same code, same round). Every tree, the installed one included, is compiled
before it is measured.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("probes", "snapshots", "tui", "themes")


def layout(spec: str, work: Path | None = None) -> Path:
    """A folder to put on PYTHONPATH for tree `spec` (a revision or a folder); `.`: the working tree."""
    work = work or Path(tempfile.mkdtemp(prefix="gpuaudit-tree-"))
    src = Path(spec) if spec in (".", "") or Path(spec).is_dir() else None
    if src is None:
        src = work / "src"
        src.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", spec, *FOLDERS],
            capture_output=True,
            check=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    src = src.resolve()
    compile_bytecode(src)
    package = work / "lay" / "gpuaudit"
    package.mkdir(parents=True, exist_ok=True)
    for name in FOLDERS:
        link = package / name
        if not link.exists():
            link.symlink_to(src / name)
    return package.parent


def compile_bytecode(src: Path = ROOT) -> None:
    """Write `__pycache__` for the tree's folders as `pip install` does (fresh for files edited since)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    folders = [str(src / name) for name in FOLDERS if (src / name).is_dir()]
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "-j", "0", *folders],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def parse_trees(specs: list[str] | None) -> dict[str, Path | None]:
    """`LABEL=REV_OR_DIR` options -> label: layout folder; none given: {"gpuaudit": None} (the installed one)."""
    if not specs:
        compile_bytecode()  # the installed (editable) package: this working tree
        return {"gpuaudit": None}
    out: dict[str, Path | None] = {}
    for spec in specs:
        label, _, where = spec.partition("=")
        out[label] = layout(where or label)
    return out


def env_for(tree: Path | None, env: dict[str, str]) -> dict[str, str]:
    """The child environment that imports `tree` (None: the installed package), as a user's shell has it: without
    this sandbox's PYTHONDONTWRITEBYTECODE, so that the CLI keeps its dataclass code cache as a user's first run
    does (tui/cli/dataclass_code_cache.py; the .pyc files are compile_bytecode's)."""
    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    return env


def sides_of(
    trees: list[str] | None, pythons: list[str], tool: str = "bench"
) -> dict[str, tuple[Path | None, str | None]]:
    """`--tree LABEL=REV_OR_DIR` and `--python LABEL=EXE` options -> label: (a tree's layout on PYTHONPATH, or
    None; an interpreter with gpuaudit-tui installed beside it, such as a venv's, or None for this one). Neither
    given: the installed package under this interpreter."""
    sides: dict[str, tuple[Path | None, str | None]] = {}
    if trees or not pythons:
        sides.update((label, (tree, None)) for label, tree in parse_trees(trees).items())
    for spec in pythons:
        label, _, exe = spec.partition("=")
        if not exe or not os.access(exe, os.X_OK):
            raise SystemExit(f"{tool}: --python {spec}: not an executable interpreter")
        sides[label] = (None, exe)
    return sides
