"""The layers are enforced by tools: import-linter's contracts (pyproject.toml), no import cycles, few lazy imports.

scripts/import_graph.py lays probes/ snapshots/ tui/ themes/ out as the installed `gpuaudit.*` package first
(the editable install's import hook hides them from grimp).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "import_graph.py"

pytestmark = pytest.mark.fast

ALLOWED_LAZY = {
    # --help and --version parse with argparse alone; the rest of the CLI loads after them, and `fleet`
    # (saved snapshots only) loads fleet_compare alone, not the catalogue/engine/SSH: two imports, one entry
    ("tui/cli/entry.py", "gpuaudit.tui.cli"),
    # the headless audit (--json/--plan/--prom/--health/--html, --resume) loads tui/cli/headless.py (the catalogue,
    # the engine, the snapshot), the other paths but the dashboard's (subcommands, --json-schema/--list-checks/
    # --docs, --hosts) tui/cli/text_modes.py (json_schema, diff, the fleet): the TUI's first paint waits for
    # neither, and a headless audit never loads the documents' and the fleet's modules (issue 30). A headless
    # live audit first loads tui/cli/early_setup.py (the SSH transports) and begins connecting, so the handshakes
    # and logins run while headless.py loads (collect/early.py). Three imports
    ("tui/cli/commands.py", "gpuaudit.tui.cli"),
    # diff/snapshots draw with Rich: the documents and --hosts --json (text_modes.py's other paths) never load it
    ("tui/cli/text_modes.py", "gpuaudit.tui.cli"),
    # --html draws with the Rich-based views: loaded only for it
    ("tui/cli/share_outputs.py", "gpuaudit.tui.views.html"),
    # a headless audit starts before its outputs' modules load: tui/cli/headless_outputs.py (the snapshot, its
    # roofline, the store, the plan, --prom, --share) loads on the audit's loop while it waits on its targets
    # (tui/cli/output_modules.py), and the replay/demo/--resume setup (the store and schema) for those only
    ("tui/cli/headless.py", "gpuaudit.tui.cli"),
    ("tui/cli/session_setup.py", "gpuaudit.tui.cli"),
    # an audit sends its commands before any probe's judging half loads (probes/core/declared.py, spec.Probe
    # `judged_by`): the runner imports the judging framework while the targets run them (Audit._load_judging),
    # the catalogue the regression rows when asked for, --expect-gpus the driver probe's row (issue 30)
    ("probes/core/run/runner.py", "gpuaudit.probes.core.judge.probe"),
    ("probes/catalogue.py", "gpuaudit.probes.core.judge.regression"),
    ("tui/cli/setup_options.py", "gpuaudit.probes.driver.expected"),
    # parsing --host/--container and the early connect load no pydantic: the SSH handshakes begin ~0.1 s sooner,
    # while the models load (TargetSpec.to_target builds the pydantic Target once an audit is bound; issue 30)
    ("probes/core/collect/targets.py", "gpuaudit.probes.core.models"),
    # the one bridge to Textual, opened only when a screen is shown
    ("tui/cli/bridge.py", "gpuaudit.tui"),
    # the dashboard's first frame paints before the catalogue, the engine and the other screens load
    # (tui/deferred.py, loaded in a thread after it): first paint within a second (issue 30)
    ("tui/app.py", "gpuaudit.tui"),
}


def run(what: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), what], capture_output=True, text=True, timeout=300
    )


def test_import_linter_contracts_are_kept():
    proc = run("lint")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "Contracts: 5 kept, 0 broken." in proc.stdout


def test_no_import_cycles_lazy_imports_included():
    proc = run("cycles")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith("0 cycle(s), 0 module(s)")


def function_level_imports() -> list[tuple[str, str]]:
    """(file, module) of every import of a project module inside a function (TYPE_CHECKING blocks excluded)."""
    found: list[tuple[str, str]] = []
    for folder in ("probes", "snapshots", "tui", "themes"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "examples" in path.parts:
                continue
            rel = str(path.relative_to(ROOT))

            def visit(node: ast.AST, in_function: bool, rel: str = rel) -> None:
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                        continue
                    if in_function and isinstance(child, ast.ImportFrom) and child.module:
                        if child.module.startswith("gpuaudit"):
                            found.append((rel, child.module))
                    if in_function and isinstance(child, ast.Import):
                        found.extend(
                            (rel, a.name) for a in child.names if a.name.startswith("gpuaudit")
                        )
                    funcs = (ast.FunctionDef, ast.AsyncFunctionDef)
                    visit(child, in_function or isinstance(child, funcs))

            visit(ast.parse(path.read_text()), False)
    return found


def test_function_level_imports_are_few_and_each_has_its_reason():
    lazy = function_level_imports()
    assert len(lazy) <= 15, lazy
    assert set(lazy) <= ALLOWED_LAZY, set(lazy) - ALLOWED_LAZY


def test_the_core_folder_shows_its_layers():
    flat = [p.name for p in (ROOT / "probes" / "core").glob("*.py") if p.name != "__init__.py"]
    assert len(flat) <= 14, flat
    for sub in ("collect", "run", "judge", "parsers", "roofline", "fleet"):
        assert (ROOT / "probes" / "core" / sub / "__init__.py").is_file(), sub
