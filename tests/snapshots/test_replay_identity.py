"""Replay keeps every record as recorded (issue 24): `diff A replay(A)` is identical for the demo snapshots,
and for every fixture snapshot each recorded record a current probe asks for comes back field for field
(`executed` included: a container's `pct exec 101 --` wrapper), and a replay replayed again is identical.

Old-release fixtures are re-judged with today's probes: commands newer than the recording are listed as
"not recorded", never invented; that is the only difference from the recording."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from gpuaudit.snapshots.compact import unpack

ROOT = Path(__file__).resolve().parents[2]
DEMO = sorted((ROOT / "snapshots" / "examples").glob("case-study-*.json"))


def _is_snapshot(path: Path) -> bool:
    try:
        doc = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(doc, dict) and "probes" in doc and "targets" in doc


FIXTURES = sorted(
    p
    for p in (ROOT / "tests" / "fixtures").rglob("*.json")
    if not {"redfish", "models"} & set(p.parts) and _is_snapshot(p)
)
KEPT = ("target", "command_id", "executed", "exit_status", "stdout", "stderr", "timed_out")
KEPT += ("truncated", "error", "needs_root")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuaudit.tui", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def replay(src: Path, out: Path) -> Path:
    proc = cli("--replay", str(src), "--json")
    assert proc.stdout.startswith("{"), proc.stderr
    out.write_text(proc.stdout)
    return out


def records(path: Path) -> dict[tuple[str, str, str], dict]:
    doc = unpack(json.loads(path.read_text()))
    return {
        (p["probe_id"], r["target"], r["command_id"]): {k: r.get(k) for k in KEPT}
        for p in doc["probes"]
        for r in p["records"]
    }


@pytest.mark.parametrize("snap", DEMO, ids=lambda p: p.name)
def test_demo_diff_against_its_replay_is_identical(snap, tmp_path):
    again = replay(snap, tmp_path / "replay.json")
    proc = cli("diff", str(snap), str(again))
    assert proc.returncode == 0, proc.stdout
    assert "identical" in proc.stdout
    assert records(snap) == records(again)


@pytest.mark.parametrize(
    "snap",
    FIXTURES + DEMO,
    ids=lambda p: (
        str(p.relative_to(ROOT / "tests" / "fixtures")) if "fixtures" in p.parts else p.name
    ),
)
def test_every_recorded_record_comes_back_as_recorded(snap, tmp_path):
    from gpuaudit.probes.catalogue import REGISTRY

    asked = {(p.id, c.id) for p in REGISTRY for c in p.commands}
    first = replay(snap, tmp_path / "r1.json")
    before, after = records(snap), records(first)
    kept = {k: v for k, v in before.items() if (k[0], k[2]) in asked}
    assert kept, "nothing of this snapshot is replayed"
    assert {k: after.get(k) for k in kept} == kept
    by_command = {(k[1], k[2]): v for k, v in before.items()}
    for key, rec in after.items():  # what the recording lacks is said so, never invented
        if (
            key not in before
        ):  # asked by another probe today: the same command's recording, or "not recorded"
            same = by_command.get((key[1], key[2]))
            assert rec == same or "not recorded" in (rec["error"] or ""), key
    second = replay(first, tmp_path / "r2.json")
    proc = cli("diff", str(first), str(second))
    assert proc.returncode == 0 and "identical" in proc.stdout, proc.stdout
