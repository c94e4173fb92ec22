"""The outputs' modules load while the audit runs (tui/cli/output_modules.py), and the lists are complete.

Each case runs the CLI headless on the case study (`--demo`, no machine contacted) in a fresh interpreter and
notes which of our modules load after the audit (its preload included) has returned: a module an output needs
that its list lacks would load there, after the wait it should have filled. Removing a name from a list fails
this test; so does a module an output starts to import without adding it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from gpuaudit.probes.core.run.request import AuditRequest
from gpuaudit.tui.cli import output_modules

ROOT = Path(__file__).resolve().parents[2]

_PROBE = """
import json, sys
from gpuaudit.tui.cli import entry, commands
headless = commands._headless()
real = headless.collect
seen = {}
async def collect(*a, **k):
    run = await real(*a, **k)
    seen["after"] = set(sys.modules)
    return run
headless.collect = collect
code = entry._main(sys.argv[1:])
late = sorted(m for m in sys.modules if m not in seen["after"] and m.startswith("gpuaudit."))
sys.stderr.write("@@LATE " + json.dumps({"code": code, "late": late}) + "\\n")
"""


def late_modules(args: list[str], tmp_path: Path) -> list[str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "GPUAUDIT_SNAPSHOT_DIR": str(tmp_path / "snaps"),
    }
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, "--demo", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("@@LATE ")]
    assert lines, proc.stderr[-2000:]
    doc = json.loads(lines[-1][len("@@LATE ") :])
    assert doc["code"] in (0, 1), proc.stderr[-2000:]
    return doc["late"]


@pytest.mark.parametrize(
    "args",
    [
        ["--json"],
        ["--plan"],
        ["--health"],
        ["--json", "--prom", "{tmp}/metrics.prom"],
        ["--json", "--save", "demo-copy"],
        ["--html", "{tmp}/report.html"],
        ["--json", "--share", "{tmp}/share-map.json"],
    ],
    ids=["json", "plan", "health", "prom", "save", "html", "share"],
)
def test_outputs_import_nothing_their_list_lacks(args, tmp_path):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    assert late_modules(args, tmp_path) == []


def test_every_listed_module_imports():
    import importlib

    for name in output_modules.AFTER_AUDIT + output_modules.HTML:
        importlib.import_module(name)


def test_lists_follow_the_request():
    assert output_modules.outputs_of(AuditRequest(json=True)) == output_modules.AFTER_AUDIT
    html = output_modules.outputs_of(AuditRequest(html="r.html"))
    assert html == output_modules.AFTER_AUDIT + output_modules.HTML
    assert len(html) == len(set(html))
