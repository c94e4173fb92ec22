"""What `--version`, `--help` and `--json` import (`python -X importtime`): only what they need, within a budget.

`--version` and `--help` stop in tui/cli/entry.py before the rest of the CLI loads: no Textual, no Rich, no
asyncssh, no pydantic. `--json` of a replay loads the engine and pydantic but never Textual or asyncssh (a
replay opens no connection). An SSH audit (`--json --host`) loads asyncssh but never Textual or Rich (the progress
line is for a terminal). The module counts are tight (measured 2026-12-03: 116 for --version/--help, 458 for the
replay, 604 for an SSH audit; issue 30) and catch a new heavy import deterministically; the time budgets are
generous (a loaded 2-core machine triples import times and more) and catch only a gross regression.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "snapshots" / "examples" / "case-study-after.json"
NEVER_ON_STARTUP = ("textual", "rich", "asyncssh", "pydantic", "cryptography")


def imports(*args: str, codes: tuple[int, ...] = (0, 1)) -> tuple[set[str], float]:
    """Top-level packages imported by `python -X importtime -m gpuaudit.tui ARGS`, and their summed own time (s)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "gpuaudit.tui", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode in codes, proc.stderr[-2000:]
    names: set[str] = set()
    total_us = 0
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, _cumulative, name = line[len("import time:") :].split("|")
        names.add(name.strip())
        total_us += int(own)
    assert names, "no -X importtime output"
    return names, total_us / 1e6


def loaded(names: set[str], package: str) -> bool:
    return any(n == package or n.startswith(package + ".") for n in names)


@pytest.mark.parametrize("args", [("--version",), ("--help",), ("--json", "--help")])
def test_version_and_help_load_no_ui_no_ssh_no_models(args):
    names, seconds = imports(*args)
    heavy = [p for p in NEVER_ON_STARTUP if loaded(names, p)]
    assert not heavy, f"{' '.join(args)} imports {heavy}"
    assert len(names) <= 140, f"{' '.join(args)} imports {len(names)} modules (budget 140)"
    assert seconds <= 1.5, f"{' '.join(args)}: {seconds:.2f} s of imports (budget 1.5 s)"


def test_json_replay_loads_no_textual_no_asyncssh():
    names, seconds = imports("--json", "--fail-on", "never", "--replay", str(DEMO))
    assert loaded(names, "gpuaudit.probes.core.run"), "the replay did not load the engine"
    for package in ("textual", "asyncssh", "cryptography"):
        assert not loaded(names, package), f"--json --replay imports {package}"
    assert len(names) <= 520, f"--json --replay imports {len(names)} modules (budget 520)"
    assert seconds <= 10.0, f"--json --replay: {seconds:.2f} s of imports (budget 10 s)"


def test_json_ssh_audit_loads_no_textual_no_rich():
    # a refused port: the audit runs its connect (asyncssh loads) and reports the target failed (exit 3)
    names, seconds = imports(
        "--json", "--fail-on", "never", "--timeout", "2", "--host", "root@127.0.0.1:1", codes=(3,)
    )
    assert loaded(names, "asyncssh") and loaded(names, "gpuaudit.probes.catalogue")
    for package in ("textual", "rich"):
        assert not loaded(names, package), f"--json --host imports {package}"
    assert len(names) <= 680, f"--json --host imports {len(names)} modules (budget 680)"
    assert seconds <= 10.0, f"--json --host: {seconds:.2f} s of imports (budget 10 s)"
