"""Issue 30's targets in one run: every figure its closing note must show, against its target (not a test).

    python tests/bench/bench_targets.py [--rounds 5] [--quick] [--only table,paint,...] [--json-out FILE]
                                        [--python VENV/bin/python]

Runs the repository's benchmarks one after another, each in a child that writes its medians as JSON
(`--json-out`), then prints one scoreboard: each target of the issue, the figure measured in this run, the limit,
and a verdict. The parts (`--only` runs some, and the scoreboard shows their rows; all by default):

  table      bench_table.py: host + container CLI audit, clean user and heavy rc, against its floor, the OpenSSH
             loop and `xargs -P 8` (client CPU, wall / floor, RSS)
  paint      bench_first_paint.py --tmux: the dashboard's first frame (--demo, --replay, live) and the real
             `gpuaudit-tui --demo` in tmux
  drilldown  bench_drilldown.py: Enter on pcie and `e` to the evidence, case study and a 10 MB output
  replay     bench_replay.py: `--replay FILE --json` of a 10 MB snapshot
  snapshots  bench_snapshot_format.py: stored size and load time, schema 2 against the current format
  fleet      bench_fleet_scale.py: `--hosts` 1 -> 1,000 over a simulated network (20 and 80 ms), vs xargs
  fleet_ssh  bench_fleet_latency.py: `--hosts` 1 -> 12 over real loopback sshd's (asyncssh included)

Needs what the parts need (root, /usr/sbin/sshd, tmux for the tmux row). A part that fails, or a figure its JSON
does not hold, is reported "not measured": never counted as met. `--quick` runs each part once at small sizes, the
clean user only and no OpenSSH loop (QUICK_UNMEASURED; ~30 s: a smoke run whose figures carry no weight, what
tests/bench/test_bench_targets.py runs). Each part prints its own tables too; the load average is in each part's
JSON and in the scoreboard's header.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Target:
    """One target of the issue: where its figure is in the parts' JSON, and its limit (None: reported only)."""

    label: str
    part: str
    read: Callable[[object], float | None]
    limit: float | None
    unit: str = "s"


@dataclass(frozen=True)
class Row:
    label: str
    part: str
    value: float | None
    limit: float | None
    unit: str
    verdict: str
    """"met", "not met", "reported" (no limit) or "not measured"."""


def _get(doc: object, *path: str) -> object:
    """doc[path[0]][path[1]]...; None when any step is missing (a part that did not run, an older JSON)."""
    for key in path:
        if not isinstance(doc, dict) or key not in doc:
            return None
        doc = doc[key]
    return doc


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _at(doc: object, *path: str) -> float | None:
    """The number at `path`, or None (missing, or not a number: a bool is no figure)."""
    return _num(_get(doc, *path))


def _dicts(value: object) -> list[dict]:
    """The rows of a JSON list (anything else: none)."""
    return [r for r in value if isinstance(r, dict)] if isinstance(value, list) else []


def _rounds(doc: object, mode: str, key: str) -> float | None:
    """bench_table: the median of `key` over the rounds of `mode` (clean / heavy), the first tree's."""
    present = [v for r in _dicts(_get(doc, mode, "rounds")) if (v := _num(r.get(key))) is not None]
    return statistics.median(present) if present else None


def _first_tree(doc: object, group: tuple[str, ...], key: str) -> float | None:
    """`key` of the first tree under `group` (bench_first_paint: one entry per tree, the first is this one)."""
    trees = _get(doc, *group)
    if not isinstance(trees, dict) or not trees:
        return None
    return _at(next(iter(trees.values())), key)


def _row(doc: object, name_key: str, name: str, key: str) -> float | None:
    """`key` of the row of `doc["rows"]` whose `name_key` is `name` (bench_drilldown, bench_snapshot_format)."""
    hits = [r for r in _dicts(_get(doc, "rows")) if r.get(name_key) == name]
    return _num(hits[0].get(key)) if hits else None


def _at_most_n(rows: list[dict], key: str) -> float | None:
    """The median of `key` over the rows of the largest N (the per-host slope where the fixed start weighs least)."""
    rows = [r for r in rows if _num(r.get(key)) is not None and _num(r.get("n")) is not None]
    if not rows:
        return None
    most = max(r["n"] for r in rows)
    return statistics.median(r[key] for r in rows if r["n"] == most)


def _fleet_xargs(doc: object) -> float | None:
    """bench_fleet_scale: --hosts wall / `xargs -P 8` wall at the same N (the xargs row's N), median."""
    rows = _dicts(doc)
    ratios = []
    for x in (r for r in rows if r.get("kind") not in (None, "--hosts")):
        same = [
            r
            for r in rows
            if r.get("kind") == "--hosts"
            and (r.get("n"), r.get("rtt"), r.get("tree"))
            == (x.get("n"), x.get("rtt"), x.get("tree"))
        ]
        if same and _num(x.get("wall")):
            ratios.append(same[0]["wall"] / x["wall"])
    return statistics.median(ratios) if ratios else None


def _bytes_ratio(doc: object, name: str) -> float | None:
    """bench_snapshot_format: the current format's bytes over schema 2's, for snapshot `name`."""
    cur = _row(doc, "snapshot", name, "current_bytes")
    old = _row(doc, "snapshot", name, "schema2_bytes")
    return cur / old if cur is not None and old else None


TARGETS: tuple[Target, ...] = (
    Target("client CPU per audit, clean user", "table", lambda d: _rounds(d, "clean", "cpu"), 0.4),
    Target("client CPU per audit, heavy rc", "table", lambda d: _rounds(d, "heavy", "cpu"), 0.4),
    Target("wall / floor, clean user", "table", lambda d: _at(d, "clean", "per_floor"), 1.5, "x"),
    Target("wall / floor, heavy rc", "table", lambda d: _at(d, "heavy", "per_floor"), 1.5, "x"),
    Target(
        "wall / OpenSSH loop, clean user",
        "table",
        lambda d: _at(d, "clean", "per_loop"),
        None,
        "x",
    ),
    Target(
        "wall / xargs -P 8, clean user",
        "table",
        lambda d: _at(d, "clean", "per_xargs"),
        None,
        "x",
    ),
    Target(
        "first frame, --demo (headless)",
        "paint",
        lambda d: _first_tree(d, ("frames", "demo"), "paint_s"),
        1.0,
    ),
    Target(
        "first frame, --replay case study",
        "paint",
        lambda d: _first_tree(d, ("frames", "replay"), "paint_s"),
        1.0,
    ),
    Target(
        "first frame, live (this machine)",
        "paint",
        lambda d: _first_tree(d, ("frames", "live"), "paint_s"),
        1.0,
    ),
    Target(
        "dashboard shown, gpuaudit-tui --demo in tmux",
        "paint",
        lambda d: _first_tree(d, ("tmux",), "median_s"),
        1.0,
    ),
    Target("e into a 10 MB output", "drilldown", lambda d: _row(d, "output", "10 MB", "e_s"), 0.5),
    Target(
        "Enter on pcie, 10 MB output",
        "drilldown",
        lambda d: _row(d, "output", "10 MB", "enter_s"),
        None,
    ),
    Target(
        "replay of a 10 MB snapshot (--json)",
        "replay",
        lambda d: _at(d, "big", "wall_s"),
        2.0,
    ),
    Target(
        "case study snapshot, current / schema 2 bytes",
        "snapshots",
        lambda d: _bytes_ratio(d, "case-study-before.json"),
        None,
        "x",
    ),
    Target(
        "10 MB snapshot, current / schema 2 bytes",
        "snapshots",
        lambda d: _bytes_ratio(d, "big-10mb.json"),
        None,
        "x",
    ),
    Target(
        "fleet: client CPU per host, simulated network",
        "fleet",
        lambda d: _at_most_n(
            [r for r in _dicts(d) if r.get("kind") == "--hosts"], "per_host_cpu_s"
        ),
        0.05,
    ),
    Target("fleet: --hosts wall / xargs -P 8 wall", "fleet", _fleet_xargs, None, "x"),
    Target(
        "fleet: client CPU per host, real SSH",
        "fleet_ssh",
        lambda d: _at_most_n(_dicts(_get(d, "slopes")), "cpu_per_host_s"),
        0.05,
    ),
)


def scoreboard(figures: dict[str, object]) -> list[Row]:
    """Each target's row from the parts' JSON (`figures[part]`; a part missing or None: "not measured")."""
    rows = []
    for t in TARGETS:
        try:
            value = t.read(figures.get(t.part))
        except (KeyError, TypeError, ValueError, statistics.StatisticsError):
            value = None  # a part's JSON in another shape: nothing proven
        if value is None:
            verdict = "not measured"
        elif t.limit is None:
            verdict = "reported"
        else:
            verdict = "met" if value <= t.limit else "not met"
        rows.append(Row(t.label, t.part, value, t.limit, t.unit, verdict))
    return rows


def render(rows: list[Row]) -> str:
    lines = ["| target | measured | limit | verdict |", "|---|---:|---:|---|"]
    for r in rows:
        value = "" if r.value is None else f"{r.value:.3f} {r.unit}"
        limit = "" if r.limit is None else f"≤ {r.limit:g} {r.unit}"
        lines.append(f"| {r.label} | {value} | {limit} | {r.verdict} |")
    return "\n".join(lines)


QUICK_UNMEASURED = frozenset(
    {
        "client CPU per audit, heavy rc",
        "wall / floor, heavy rc",
        "wall / OpenSSH loop, clean user",
    }
)
"""What `--quick` leaves out (the heavy rc and the OpenSSH loop: 90 s of a 2-minute smoke run)."""


def part_commands(rounds: int, quick: bool, python: str | None = None) -> dict[str, list[str]]:
    """Each part's command line (its script and options; `--json-out FILE` is added when it runs). `python`: the
    table's CLI runs under that interpreter (a venv with gpuaudit-tui installed, as the README installs it)."""
    side = ["--python", f"venv={python}"] if python else []
    if quick:  # each part once, small, without the tools' durations where a part has the switch
        return {
            "table": ["bench_table.py", "--rounds", "1", "--loop-rounds", "0", "--rc", "clean"]
            + ["--no-tool-delays", *side],
            "paint": ["bench_first_paint.py", "--rounds", "1", "--tmux"],
            "drilldown": ["bench_drilldown.py", "--rounds", "1", "--mb", "2"],
            "replay": ["bench_replay.py", "--runs", "1", "--mb", "2"],
            "snapshots": ["bench_snapshot_format.py", "--rounds", "1", "--mb", "2"],
            "fleet": ["bench_fleet_scale.py", "--rounds", "1", "--n", "1", "2", "--rtt", "0.02"]
            + ["--max-connections", "64", "--xargs-n", "2"],
            "fleet_ssh": ["bench_fleet_latency.py", "--rtt", "0", "--n", "1", "3"]
            + ["--rounds", "1", "--fast"],
        }
    r = str(rounds)
    return {
        "table": ["bench_table.py", "--rounds", r, "--loop-rounds", "1", "--rc", "both", *side],
        "paint": ["bench_first_paint.py", "--rounds", r, "--tmux"],
        "drilldown": ["bench_drilldown.py", "--rounds", str(min(rounds, 3))],
        "replay": ["bench_replay.py", "--runs", r],
        "snapshots": ["bench_snapshot_format.py", "--rounds", r],
        "fleet": ["bench_fleet_scale.py", "--rounds", "1", "--n", "1", "10", "100", "1000"]
        + ["--rtt", "0.02", "0.08", "--max-connections", "256", "--xargs-n", "10"],
        "fleet_ssh": ["bench_fleet_latency.py", "--rtt", "0", "--n", "1", "12"]
        + ["--rounds", str(min(rounds, 3))],
    }


def run_part(name: str, command: list[str], work: Path) -> tuple[object, float, int]:
    """(the part's JSON or None, its wall, its exit status); its own output goes to this terminal."""
    out = work / f"{name}.json"
    t0 = time.monotonic()
    print(f"\n=== {name}: {' '.join(command)}", flush=True)
    proc = subprocess.run(
        [sys.executable, str(BENCH / command[0]), *command[1:], "--json-out", str(out)], check=False
    )
    wall = time.monotonic() - t0
    try:
        doc = json.loads(out.read_text()) if proc.returncode == 0 else None
    except (OSError, ValueError):
        doc = None
    print(f"=== {name}: exit {proc.returncode}, {wall:.0f} s", flush=True)
    return doc, wall, proc.returncode


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument(
        "--quick", action="store_true", help="each part once, small sizes (a smoke run)"
    )
    ap.add_argument("--only", help="comma-separated parts (default: all)")
    ap.add_argument("--json-out", help="also write every part's JSON and the scoreboard")
    ap.add_argument(
        "--python",
        metavar="EXE",
        help="the table's CLI under this interpreter, with gpuaudit-tui installed beside it (a venv made as the "
        "README installs it: what a user runs); default: this interpreter and the installed package",
    )
    args = ap.parse_args(argv)
    commands = part_commands(args.rounds, args.quick, args.python)
    parts = args.only.split(",") if args.only else list(commands)
    if unknown := [p for p in parts if p not in commands]:
        ap.error(f"--only: unknown part(s) {unknown}; known: {','.join(commands)}")
    load_before = os.getloadavg()
    figures: dict[str, object] = {}
    walls: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="gpuaudit-targets-") as tmp:
        for name in parts:
            figures[name], walls[name], _ = run_part(name, commands[name], Path(tmp))
    rows = [r for r in scoreboard(figures) if r.part in parts]  # --only: the parts asked for
    print(
        f"\nIssue 30's targets, one run{' (--quick: a smoke run, no weight)' if args.quick else ''}; "
        f"load average {load_before[0]:.1f} -> {os.getloadavg()[0]:.1f}; parts: "
        + ", ".join(f"{n} {walls[n]:.0f} s" for n in parts)
    )
    print(render(rows))
    if args.json_out:
        doc = {"parts": figures, "scoreboard": [r.__dict__ for r in rows], "quick": args.quick}
        Path(args.json_out).write_text(json.dumps(doc, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
