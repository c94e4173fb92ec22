"""Benchmark: `gpuaudit-tui fleet` over many saved snapshots (time and peak RSS), not a test.

    python tests/bench/bench_fleet_compare.py            # 100 and 1,000 snapshots of the case study's size
    python tests/bench/bench_fleet_compare.py --n 200    # other sizes

Each snapshot is a full copy of snapshots/examples/case-study-after.json (every record kept) with its own
hostname; two nodes carry planted outliers, so the answer is checked too. Each size is built twice, in the
schema-2 layout (records once per probe, findings twice) and in the current stored format, and the two
folders are compared in interleaved rounds. Peak RSS is the child's ru_maxrss; the ratio 1,000 / 100 shows
whether the cost stays linear.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AFTER = ROOT / "snapshots" / "examples" / "case-study-after.json"


def documents() -> dict[str, dict]:
    """The case study in each stored format: schema 2 (records once per probe, findings twice) and the current."""
    from gpuaudit.snapshots.compact import unpack
    from gpuaudit.snapshots.store import load

    snap = load(AFTER)
    current = json.loads(snap.to_json())
    expanded = unpack(current)
    return {"schema 2 (expanded)": {**expanded, "schema_version": 2}, "current": current}


def build(directory: Path, n: int, doc: dict) -> int:
    """N copies of `doc`, one hostname each, two planted outliers; returns the folder's bytes."""
    from gpuaudit.snapshots.compact import records_of

    doc = json.loads(json.dumps(doc))
    unames = [r for r in records_of(doc) if r["target"] == "host" and r["command_id"] == "uname_r"]
    total = 0
    for i in range(n):
        doc["target_states"]["host"]["hostname"] = f"gpu{i:04d}"
        for uname in unames:
            uname["stdout"] = "6.8.12-9-pve\n" if i in (7, n - 3) else "6.14.11-2-pve\n"
        text = json.dumps(doc, indent=2)
        (directory / f"gpu{i:04d}.json").write_text(text)
        total += len(text)
    return total


def run(directory: Path) -> tuple[float, float, dict]:
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    before = r0.ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "gpuaudit.tui", "fleet", str(directory), "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    global LAST_CPU
    LAST_CPU = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    assert proc.returncode == 1, proc.stderr
    return wall, max(r1.ru_maxrss, before) / 1024, json.loads(proc.stdout)


LAST_CPU = 0.0
"""CPU seconds (user + system) of the last child: less sensitive than wall to the other jobs on the box."""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="*", default=[100, 1000])
    ap.add_argument("--rounds", type=int, default=1, help="interleaved rounds per format (median)")
    args = ap.parse_args()
    docs = documents()
    results: dict[tuple[str, int], float] = {}
    print(f"load average before: {os.getloadavg()}")
    for n in args.n:
        with tempfile.TemporaryDirectory() as tmp:
            dirs = {}
            for label, doc in docs.items():
                d = Path(tmp) / label.split()[0].replace("schema", "v2")
                d.mkdir()
                size = build(d, n, doc)
                dirs[label] = d
                print(
                    f"{n:5d} snapshots, {label:20s}: {size / 1e6:8.1f} MB ({size / n / 1e6:.2f} MB each)"
                )
            walls: dict[str, list[float]] = {label: [] for label in docs}
            cpus: dict[str, list[float]] = {label: [] for label in docs}
            for _ in range(args.rounds):  # interleaved: both formats see the same load
                for label, d in dirs.items():
                    wall, rss, out = run(d)
                    outliers = sorted(o["node"] for c in out["classes"] for o in c["outliers"])
                    assert len(outliers) == 2, outliers
                    walls[label].append(wall)
                    cpus[label].append(LAST_CPU)
                    print(
                        f"fleet over {n:5d} snapshots, {label:20s}: {wall:6.2f} s wall, "
                        f"{LAST_CPU:6.2f} s CPU, "
                        f"peak RSS {rss:6.0f} MiB, outliers {outliers}"
                    )
            for label, ws in walls.items():
                results[(label, n)] = statistics.median(ws)
            a, b = (statistics.median(walls[k]) for k in docs)
            ca, cb = (statistics.median(cpus[k]) for k in docs)
            print(
                f"{n:5d} snapshots: current / schema 2: wall {b / a:.2f}x, CPU {cb / ca:.2f}x "
                f"(medians {a:.1f} / {b:.1f} s wall, {ca:.1f} / {cb:.1f} s CPU); load {os.getloadavg()}"
            )
    for label in docs:
        ns = sorted(n for (lbl, n) in results if lbl == label)
        if len(ns) == 2:
            ta, tb = results[(label, ns[0])], results[(label, ns[1])]
            print(
                f"{label}: {ns[1]}/{ns[0]} snapshots: {tb / ta:.2f}x time for {ns[1] / ns[0]:.0f}x"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
