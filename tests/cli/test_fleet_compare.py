"""`gpuaudit-tui fleet`: two planted outliers among five nodes of one class are named, nothing else is flagged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gpuaudit.probes.core.fleet.documents import host_records
from gpuaudit.probes.core.fleet.peers import compare, node_from_records

ROOT = Path(__file__).resolve().parents[2]
AFTER = ROOT / "snapshots" / "examples" / "case-study-after.json"


def plant(directory: Path) -> None:
    """Five copies of the case study's 'after' node; gpu03 runs an older kernel, gpu05 an older driver."""
    for i in range(1, 6):
        doc = json.loads(AFTER.read_text())
        doc["target_states"]["host"]["hostname"] = f"gpu0{i}"
        for probe in doc["probes"]:
            for r in probe["records"]:
                if r["target"] != "host":
                    continue
                if i == 3 and r["command_id"] == "uname_r":
                    r["stdout"] = "6.8.12-9-pve\n"
                if i == 5 and r["command_id"] == "proc_driver_version":
                    r["stdout"] = r["stdout"].replace("590.48.01", "580.95.05")
        (directory / f"node{i}.json").write_text(json.dumps(doc))


def fleet(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuaudit.tui", "fleet", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def test_two_planted_outliers_are_named_and_nothing_else(tmp_path):
    plant(tmp_path)
    proc = fleet(str(tmp_path), "--json")
    assert proc.returncode == 1, proc.stderr
    (cls,) = json.loads(proc.stdout)["classes"]
    assert cls["class"].startswith("8× NVIDIA RTX PRO 6000 Blackwell Server Edition")
    assert sorted(cls["nodes"]) == [f"gpu0{i}" for i in range(1, 6)]
    got = sorted((o["node"], o["fact"], o["value"], o["majority"]) for o in cls["outliers"])
    assert got == [
        ("gpu03", "kernel", "6.8.12-9-pve", "6.14.11-2-pve"),
        ("gpu05", "driver", "580.95.05", "590.48.01"),
    ]
    text = fleet(str(tmp_path))
    assert (
        "gpu03: kernel = 6.8.12-9-pve" in text.stdout
        and "majority 6.14.11-2-pve, 4 of 5" in text.stdout
    )


def test_identical_nodes_agree_and_bad_files_are_skipped_with_one_line(tmp_path):
    plant(tmp_path)
    (tmp_path / "node3.json").unlink()
    (tmp_path / "node5.json").unlink()
    (tmp_path / "deep.json").write_text("[" * 100_000)
    (tmp_path / "junk.json").write_bytes(b"\xff\x00not json")
    proc = fleet(str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "every class agrees" in proc.stdout
    assert "Traceback" not in proc.stderr and len(proc.stderr.splitlines()) == 2


def test_usage_errors_are_one_line_exit_2(tmp_path):
    proc = fleet(str(tmp_path / "nope"))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "no such file" in proc.stderr
    proc = fleet("--bogus")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1


def test_a_fact_not_read_is_never_an_outlier():
    doc = json.loads(AFTER.read_text())
    full = host_records(doc)
    nodes = [node_from_records(f"n{i}", "", full) for i in range(3)]
    nodes.append(node_from_records("blind", "", {k: v for k, v in full.items() if k != "uname_r"}))
    (rep,) = compare(nodes)
    assert rep.outliers == []
