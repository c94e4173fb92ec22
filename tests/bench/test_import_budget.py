"""What `--version`, `--help` and `--json` import (`python -X importtime`): only what they need, within a budget.

`--version` and `--help` stop in tui/cli/entry.py before the rest of the CLI loads: no Textual, no Rich, no
asyncssh, no pydantic. `--json` of a replay loads the engine and pydantic but never Textual or asyncssh (a
replay opens no connection). A headless SSH audit (`--json/--plan/--health/--prom --host`) loads asyncssh but never
Textual or Rich (the progress line is for a terminal), nor the documents' and the fleet's modules (json_schema, diff,
inventories: tui/cli/commands.py sends it to tui/cli/headless.py, not text_modes.py). The module counts are tight
(measured 2026-12-03: 116 for --version/--help, 452 for the replay, 595 for an SSH audit, 604 before the headless
path left text_modes; issue 30) and catch a new heavy import deterministically; the time budgets are generous (a
loaded 2-core machine triples import times and more) and catch only a gross regression.
"""

from __future__ import annotations

import json
import os
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


def child_report(script: str, *args: str, env: dict[str, str]) -> dict:
    """Run `python -c SCRIPT ARGS`; it must exit 0; the JSON object on its last stdout line."""
    proc = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


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


NOT_ON_HEADLESS_AUDIT = (
    # the documents' modules: --json-schema (json_schema, ~10 ms with its models) and `diff` (snapshots/diff.py)
    "gpuaudit.snapshots.json_schema",
    "gpuaudit.snapshots.diff",
    # the other text modes and the fleet (--hosts): inventories, the store listing
    "gpuaudit.tui.cli.text_modes",
    "gpuaudit.tui.cli.fleet_hosts",
    "gpuaudit.tui.cli.list_checks",
    "gpuaudit.tui.cli.docs",
    "gpuaudit.tui.cli.baseline",
    "gpuaudit.tui.cli.snapshot_commands",
    "gpuaudit.probes.core.fleet.inventory",
    "gpuaudit.probes.core.fleet.ansible_inventory",
    "gpuaudit.snapshots.listing",
    # the views draw with Rich (--html loads them, and Rich, only for itself); the TUI
    "gpuaudit.tui.views",
    "gpuaudit.tui.interactive",
    "rich",
    "textual",
)


@pytest.mark.parametrize(
    "output", [("--json",), ("--plan",), ("--health",), ("--prom", "PROM")], ids=lambda o: o[0]
)
def test_headless_ssh_audit_loads_only_what_it_needs(output, tmp_path):
    """`--json/--plan/--health/--prom --host H` (issue 30): the engine, the catalogue and asyncssh, never the
    documents' modules (json_schema, diff), the fleet's, the views, Rich or Textual (the progress line is for a
    terminal; stderr is a pipe here)."""
    output = tuple(str(tmp_path / "x.prom") if a == "PROM" else a for a in output)
    # a refused port: the audit runs its connect (asyncssh loads) and reports the target failed (exit 3)
    names, seconds = imports(
        *output, "--fail-on", "never", "--timeout", "2", "--host", "root@127.0.0.1:1", codes=(3,)
    )
    assert loaded(names, "asyncssh") and loaded(names, "gpuaudit.probes.catalogue")
    assert loaded(names, "gpuaudit.tui.cli.headless")
    extra = [m for m in NOT_ON_HEADLESS_AUDIT if loaded(names, m)]
    assert not extra, f"{output[0]} --host imports {extra}"
    assert len(names) <= 620, f"{output[0]} --host imports {len(names)} modules (budget 620)"
    assert seconds <= 10.0, f"{output[0]} --host: {seconds:.2f} s of imports (budget 10 s)"


PLUGIN_CHILD = """
import importlib.metadata, json, os, sys
scanned = []
real = importlib.metadata.entry_points


def entry_points(**kw):  # pydantic's plugin loader binds this name when it first loads
    scanned.append(kw.get("group"))
    return real(**kw)


importlib.metadata.entry_points = entry_points
from gpuaudit.tui.cli.entry import main

out, sys.stdout = sys.stdout, open(os.devnull, "w")
code = main(sys.argv[1:])
sys.stdout = out
print(json.dumps({"code": code, "scanned": scanned, "var": os.environ.get("PYDANTIC_DISABLE_PLUGINS")}))
"""


@pytest.mark.parametrize("user_value", [None, "some_plugin"])
def test_no_pydantic_plugin_scan_unless_the_user_asks(user_value, tmp_path):
    """pydantic's plugin loader scans every installed distribution's entry points at the first model built
    (~8 ms per process here); the CLI sets pydantic's documented PYDANTIC_DISABLE_PLUGINS=__all__ (gpuaudit uses
    no plugin, and a plugin would see every validated output), but never over a value the user set."""
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("PYDANTIC_DISABLE_PLUGINS", None)
    if user_value is not None:
        env["PYDANTIC_DISABLE_PLUGINS"] = user_value
    seen = child_report(
        PLUGIN_CHILD, "--json", "--fail-on", "never", "--replay", str(DEMO), env=env
    )
    assert seen["code"] == 0
    if user_value is None:
        assert seen["var"] == "__all__" and "pydantic" not in seen["scanned"], seen
    else:  # the user's value is kept, and pydantic scans to skip the plugins it names
        assert seen["var"] == user_value and "pydantic" in seen["scanned"], seen


TUI_CHILD = """
import json, sys
from gpuaudit.tui.cli import bridge

real = bridge.interactive


class Reached:
    @staticmethod
    def main(request):  # what `bridge.interactive().main(request)` would open: report what is loaded by then
        print(json.dumps({"modules": sorted(sys.modules), "demo": request.demo, "replay": request.replay,
                          "host": request.host}))
        return 0


def interactive():
    real()  # tui/interactive.py and what it imports load, as on the real path (Textual, tui/app.py)
    return Reached


bridge.interactive = interactive
sys.stdin.isatty = sys.stdout.isatty = lambda: True  # the TUI path needs a terminal
from gpuaudit.tui.cli.entry import main

sys.exit(main(sys.argv[1:]))
"""
NOT_BEFORE_FIRST_PAINT = (
    # the snapshot schema (the roofline report, the engine parsers: ~50 ms): tui/cli/preflight.py checks the store
    # with snapshots/plain.py; the app loads the schema after its first frame
    "gpuaudit.snapshots.schema",
    "gpuaudit.snapshots.store",
    "gpuaudit.probes.core.roofline.report",
    "gpuaudit.probes.catalogue",
    "gpuaudit.probes.core.run.runner",
    "gpuaudit.snapshots.json_schema",
    "gpuaudit.snapshots.baseline",
    "gpuaudit.tui.cli.text_modes",
    "gpuaudit.tui.cli.headless",
    "gpuaudit.tui.cli.fleet_hosts",
    "gpuaudit.tui.cli.baseline",
    "gpuaudit.tui.cli.list_checks",
)


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("--demo",),
        ("--replay", str(DEMO)),
        ("--host", "root@127.0.0.1:1", "--accept-new-host-keys"),
    ],
    ids=["live", "demo", "replay", "host"],
)
def test_tui_path_reaches_the_app_without_the_catalogue(args, tmp_path):
    """`gpuaudit-tui` on a terminal: what is loaded when the dashboard is about to open (issue 30, first paint).

    The catalogue (~0.5 s), the runner, json_schema, the fleet, baseline and headless modules load after the first
    frame (tui/deferred.py) or never; the arguments are validated all the same (tests/cli)."""
    env = {**os.environ, "HOME": str(tmp_path)}  # no ~/.ssh/config, no theme file of the user
    seen = child_report(TUI_CHILD, *args, env=env)
    modules = set(seen["modules"])
    assert "textual" in modules and "gpuaudit.tui.app" in modules, "the bridge was not opened"
    assert seen["demo"] == ("--demo" in args)
    early = [m for m in NOT_BEFORE_FIRST_PAINT if m in modules]
    assert not early, f"{' '.join(args) or '(no arguments)'}: loaded before the TUI opens: {early}"


def test_probe_ids_without_the_catalogue_are_the_catalogues():
    from gpuaudit.probes.catalogue import PROBE_IDS
    from gpuaudit.probes.ids import PROBE_IDS as IDS

    # the same ids in the same (JSON contract) order: --probes is validated against it
    assert IDS == PROBE_IDS
