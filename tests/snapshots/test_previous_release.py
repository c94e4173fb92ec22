"""A snapshot written by the previous release (0.1.0) replays with today's rules: same verdicts except the
changes made on purpose, findings gain owners, the roofline says what the old recording lacks. Its
"not applicable" oks are compared after the schema migration (1 -> 2: n/a is its own severity)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from gpuaudit.snapshots.migrate import migrate

ROOT = Path(__file__).resolve().parents[2]
OLD = ROOT / "tests" / "fixtures" / "releases" / "0.1.0"
# Intended since 0.1.0: a new check (driver.gpu_health); two host+container rows judged once on the container.
NEW_IDS = {
    "driver.gpu_health",
    "driver.expected_gpus",  # issue 24
    "driver.branch_lifecycle",  # issue 24
    *(  # issue 27: the BIOS read from the BMC (n/a without one)
        f"firmware.bios_{x}"
        for x in ("settings", "pending", "nps_vs_numa", "cstates_vs_os", "iommu_vs_cmdline")
    ),
    "firmware.bios_aspm_vs_lnkctl",
}
# Verdicts changed on purpose since 0.1.0: clock events are judged on idle GPUs too (issue 12 item 5), where
# 0.1.0 said "not applicable: all GPUs below 50% utilisation".
CHANGED = {"power.gpu_clock_events": ("n/a", "ok")}


@pytest.mark.parametrize("phase", ["before", "after"])
def test_previous_release_snapshot_replays(phase):
    old = migrate(json.loads((OLD / f"case-study-{phase}.json").read_text()))  # schema 1 -> today
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpuaudit.tui",
            "--replay",
            str(OLD / f"case-study-{phase}.json"),
            "--json",
            "--fail-on",
            "never",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    new = json.loads(proc.stdout)
    before = {f["id"]: f["severity"] for f in old["findings"]}
    after = {f["id"]: f["severity"] for f in new["findings"]}
    assert set(after) - set(before) == NEW_IDS and set(before) <= set(after)
    changed = {i: (before[i], s) for i, s in after.items() if i in before and s != before[i]}
    assert changed == CHANGED  # same verdicts but the intended changes
    assert all(f["owner"] for f in new["findings"])
    assert (
        new["roofline"]["status"] == "unknown"
        and "engine_model_files" in new["roofline"]["missing"][0]
    )
