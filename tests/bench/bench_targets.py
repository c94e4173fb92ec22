"""Issue 30's targets in one run: every figure its closing note must show, against its target (not a test).

    python tests/bench/bench_targets.py [--rounds 5] [--quick] [--only table,paint,...] [--json-out FILE]

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


def _get(doc: object, *path: object) -> object:
    """doc[path[0]][path[1]]...; None when any step is missing (a part that did not run, an older JSON)."""
    for key in path:
        if isinstance(doc, dict) and key in doc:
            doc = doc[key]
        elif isinstance(doc, list) and isinstance(key, int) and -len(doc) <= key < len(doc):
            doc = doc[key]
        else:
            return None
    return doc


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _rounds(doc: object, mode: str, key: str) -> float | None:
    """bench_table: the median of `key` over the rounds of `mode` (clean / heavy), the first tree's."""
    rounds = _get(doc, mode, "rounds")
    values = (
        [_num(r.get(key)) for r in rounds if isinstance(r, dict)]
        if isinstance(rounds, list)
        else []
    )
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _first_tree(frames: object, source: str) -> float | None:
    """The first tree's first-frame time of `source` (bench_first_paint's JSON)."""
    trees = _get(frames, "frames", source)
    if not isinstance(trees, dict) or not trees:
        return None
    return _num(_get(next(iter(trees.values())), "paint_s"))


def _tmux(doc: object) -> float | None:
    trees = _get(doc, "tmux")
    if not isinstance(trees, dict) or not trees:
        return None
    return _num(_get(next(iter(trees.values())), "median_s"))


def _drill(doc: object, output: str, key: str) -> float | None:
    rows = _get(doc, "rows")
    hits = (
        [r for r in rows if isinstance(r, dict) and r.get("output") == output]
        if isinstance(rows, list)
        else []
    )
    return _num(hits[0].get(key)) if hits else None


def _fleet_sim(doc: object) -> float | None:
    """bench_fleet_scale: the median CPU slope per host at the largest N (every RTT and connection cap)."""
    rows = [r for r in doc if isinstance(r, dict)] if isinstance(doc, list) else []
    hosts = [
        r for r in rows if r.get("kind") == "--hosts" and _num(r.get("per_host_cpu_s")) is not None
    ]
    if not hosts:
        return None
    most = max(r["n"] for r in hosts)
    return statistics.median(r["per_host_cpu_s"] for r in hosts if r["n"] == most)


def _fleet_ssh(doc: object) -> float | None:
    """bench_fleet_latency: the median CPU slope per host at the largest N, over the rounds."""
    slopes = _get(doc, "slopes")
    rows = [s for s in slopes if isinstance(s, dict)] if isinstance(slopes, list) else []
    if not rows:
        return None
    most = max(s["n"] for s in rows)
    return statistics.median(s["cpu_per_host_s"] for s in rows if s["n"] == most)


def _fleet_xargs(doc: object) -> float | None:
    """bench_fleet_scale: --hosts wall / `xargs -P 8` wall at the same N (the xargs row's N), median."""
    rows = [r for r in doc if isinstance(r, dict)] if isinstance(doc, list) else []
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


def _snapshot(doc: object, name: str, key: str) -> float | None:
    rows = _get(doc, "rows")
    hits = (
        [r for r in rows if isinstance(r, dict) and r.get("snapshot") == name]
        if isinstance(rows, list)
        else []
    )
    return _num(hits[0].get(key)) if hits else None


def _ratio(doc: object, name: str) -> float | None:
    cur, old = _snapshot(doc, name, "current_bytes"), _snapshot(doc, name, "schema2_bytes")
    return cur / old if cur is not None and old else None


TARGETS: tuple[Target, ...] = (
    Target("client CPU per audit, clean user", "table", lambda d: _rounds(d, "clean", "cpu"), 0.4),
    Target("client CPU per audit, heavy rc", "table", lambda d: _rounds(d, "heavy", "cpu"), 0.4),
    Target(
        "wall / floor, clean user", "table", lambda d: _num(_get(d, "clean", "per_floor")), 1.5, "x"
    ),
    Target(
        "wall / floor, heavy rc", "table", lambda d: _num(_get(d, "heavy", "per_floor")), 1.5, "x"
    ),
    Target(
        "wall / OpenSSH loop, clean user",
        "table",
        lambda d: _num(_get(d, "clean", "per_loop")),
        None,
        "x",
    ),
    Target(
        "wall / xargs -P 8, clean user",
        "table",
        lambda d: _num(_get(d, "clean", "per_xargs")),
        None,
        "x",
    ),
    Target("first frame, --demo (headless)", "paint", lambda d: _first_tree(d, "demo"), 1.0),
    Target("first frame, --replay case study", "paint", lambda d: _first_tree(d, "replay"), 1.0),
    Target("first frame, live (this machine)", "paint", lambda d: _first_tree(d, "live"), 1.0),
    Target("dashboard shown, gpuaudit-tui --demo in tmux", "paint", _tmux, 1.0),
    Target("e into a 10 MB output", "drilldown", lambda d: _drill(d, "10 MB", "e_s"), 0.5),
    Target(
        "Enter on pcie, 10 MB output", "drilldown", lambda d: _drill(d, "10 MB", "enter_s"), None
    ),
    Target(
        "replay of a 10 MB snapshot (--json)",
        "replay",
        lambda d: _num(_get(d, "big", "wall_s")),
        2.0,
    ),
    Target(
        "case study snapshot, current / schema 2 bytes",
        "snapshots",
        lambda d: _ratio(d, "case-study-before.json"),
        None,
        "x",
    ),
    Target(
        "10 MB snapshot, current / schema 2 bytes",
        "snapshots",
        lambda d: _ratio(d, "big-10mb.json"),
        None,
        "x",
    ),
    Target("fleet: client CPU per host, simulated network", "fleet", _fleet_sim, 0.05),
    Target("fleet: --hosts wall / xargs -P 8 wall", "fleet", _fleet_xargs, None, "x"),
    Target("fleet: client CPU per host, real SSH", "fleet_ssh", _fleet_ssh, 0.05),
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


def part_commands(rounds: int, quick: bool) -> dict[str, list[str]]:
    """Each part's command line (its script and options; `--json-out FILE` is added when it runs)."""
    if quick:  # each part once, small, without the tools' durations where a part has the switch
        return {
            "table": ["bench_table.py", "--rounds", "1", "--loop-rounds", "0", "--rc", "clean"]
            + ["--no-tool-delays"],
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
        "table": ["bench_table.py", "--rounds", r, "--loop-rounds", "1", "--rc", "both"],
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
    args = ap.parse_args(argv)
    commands = part_commands(args.rounds, args.quick)
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
