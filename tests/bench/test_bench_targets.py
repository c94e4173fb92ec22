"""bench_targets.py's scoreboard: a figure is met only when measured and within its limit, never by default."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sshd_server import sshd_available

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from bench_targets import (  # noqa: E402
    QUICK_UNMEASURED,
    TARGETS,
    part_commands,
    render,
    scoreboard,
)

# The shapes the parts write with --json-out (trimmed to what the scoreboard reads).
TABLE = {
    "clean": {
        "rounds": [
            {"cpu": 0.38, "wall": 1.3},
            {"cpu": 0.41, "wall": 1.4},
            {"cpu": 0.39, "wall": 1.2},
        ],
        "per_floor": 1.49,
        "per_loop": 0.04,
        "per_xargs": 0.17,
    },
    "heavy": {"rounds": [{"cpu": 0.61}, {"cpu": 0.66}], "per_floor": 1.51},
}
PAINT = {
    "frames": {
        "demo": {"after": {"paint_s": 0.7, "cpu_s": 0.6}, "before": {"paint_s": 1.4, "cpu_s": 1.1}},
        "replay": {"after": {"paint_s": 1.2, "cpu_s": 0.9}},
    },
    "tmux": {"after": {"median_s": 0.74, "min_s": 0.7, "max_s": 0.9}},
}
DRILL = {
    "rows": [{"output": "case study", "e_s": 0.3}, {"output": "10 MB", "e_s": 0.5, "enter_s": 0.8}]
}
FLEET = [
    {"kind": "--hosts", "n": 1, "rtt": 0.02, "tree": "t", "wall": 0.9, "per_host_cpu_s": None},
    {"kind": "--hosts", "n": 100, "rtt": 0.02, "tree": "t", "wall": 5.0, "per_host_cpu_s": 0.048},
    {"kind": "--hosts", "n": 100, "rtt": 0.08, "tree": "t", "wall": 6.0, "per_host_cpu_s": 0.052},
    {"kind": "--hosts", "n": 10, "rtt": 0.02, "tree": "t", "wall": 1.5, "per_host_cpu_s": 0.07},
    {"kind": "xargs -P 8", "n": 10, "rtt": 0.02, "tree": "t", "wall": 15.0},
]
SSH = {
    "slopes": [
        {"n": 12, "cpu_per_host_s": 0.04},
        {"n": 12, "cpu_per_host_s": 0.06},
        {"n": 4, "cpu_per_host_s": 0.2},
    ]
}


def rows_of(**figures: object) -> dict[str, tuple[float | None, str]]:
    return {r.label: (r.value, r.verdict) for r in scoreboard(figures)}


def test_each_figure_is_judged_against_its_limit():
    got = rows_of(
        table=TABLE,
        paint=PAINT,
        drilldown=DRILL,
        replay={"big": {"wall_s": 2.5}},
        fleet=FLEET,
        fleet_ssh=SSH,
    )
    assert got["client CPU per audit, clean user"] == (0.39, "met")  # the median of the rounds
    assert got["client CPU per audit, heavy rc"] == (pytest.approx(0.635), "not met")
    assert got["wall / floor, clean user"] == (1.49, "met")
    assert got["wall / floor, heavy rc"] == (1.51, "not met")
    assert got["first frame, --demo (headless)"] == (
        0.7,
        "met",
    )  # the first tree's, not the slower one's
    assert got["first frame, --replay case study"] == (1.2, "not met")
    assert got["dashboard shown, gpuaudit-tui --demo in tmux"] == (0.74, "met")
    assert got["e into a 10 MB output"] == (0.5, "met")  # at the limit is within it
    assert got["replay of a 10 MB snapshot (--json)"] == (2.5, "not met")
    assert got["fleet: client CPU per host, simulated network"] == (
        pytest.approx(0.05),
        "met",
    )  # largest N only
    assert got["fleet: --hosts wall / xargs -P 8 wall"] == (0.1, "reported")
    assert got["fleet: client CPU per host, real SSH"] == (pytest.approx(0.05), "met")
    assert got["wall / OpenSSH loop, clean user"] == (0.04, "reported")


def test_what_was_not_measured_is_never_met():
    got = rows_of(
        table=None, paint={"frames": {}}, drilldown={"rows": [{"output": "case study", "e_s": 0.1}]}
    )
    assert all(verdict == "not measured" for _, verdict in got.values()), got
    assert rows_of()["client CPU per audit, clean user"] == (None, "not measured")


def test_a_part_in_another_shape_is_not_measured_not_an_error():
    odd = rows_of(
        table={"clean": {"rounds": [{"cpu": "fast"}], "per_floor": True}},
        fleet={"rows": 3},
        fleet_ssh=[1, 2],
    )
    assert odd["client CPU per audit, clean user"] == (None, "not measured")
    assert odd["wall / floor, clean user"] == (None, "not measured")  # a bool is not a ratio
    assert odd["fleet: client CPU per host, simulated network"] == (None, "not measured")
    assert odd["fleet: client CPU per host, real SSH"] == (None, "not measured")


def test_the_table_shows_the_verdicts():
    text = render(scoreboard({"table": TABLE}))
    assert "| client CPU per audit, clean user | 0.390 s | ≤ 0.4 s | met |" in text
    assert "| e into a 10 MB output |  | ≤ 0.5 s | not measured |" in text


def test_every_part_runs_a_script_that_writes_json_out():
    commands = part_commands(rounds=5, quick=False)
    assert {t.part for t in TARGETS} <= set(commands)
    for name, command in commands.items():
        script = BENCH / command[0]
        assert script.is_file(), name
        helped = subprocess.run(
            [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=60
        )
        assert helped.returncode == 0, (name, helped.stderr[-1000:])
        assert "--json-out" in helped.stdout, name


def test_a_venv_interpreter_runs_the_table_only():
    """--python: the table's CLI audits under that interpreter (what a user installs); the other parts as before."""
    for quick in (False, True):
        plain, venv = part_commands(5, quick), part_commands(5, quick, "/venv/bin/python")
        assert venv["table"][-2:] == ["--python", "venv=/venv/bin/python"]
        assert venv["table"][:-2] == plain["table"]
        assert {k: v for k, v in venv.items() if k != "table"} == {
            k: v for k, v in plain.items() if k != "table"
        }
    helped = subprocess.run(
        [sys.executable, str(BENCH / "bench_table.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "--python" in helped.stdout


def test_a_quick_run_of_every_part_fills_every_row_it_can(tmp_path):
    """The parts' real JSON, end to end: the shapes the scoreboard reads are the ones the scripts write (no timing
    asserted: a --quick run carries no weight)."""
    reason = sshd_available() or (None if shutil.which("tmux") else "tmux not installed")
    if reason:
        pytest.skip(reason)
    out = tmp_path / "targets.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH / "bench_targets.py"), "--quick", "--json-out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(out.read_text())["scoreboard"]
    unmeasured = {r["label"] for r in rows if r["verdict"] == "not measured"}
    assert unmeasured == set(QUICK_UNMEASURED), proc.stdout[-4000:]
    assert {r["label"] for r in rows} == {t.label for t in TARGETS}
    assert "| client CPU per audit, clean user |" in proc.stdout
