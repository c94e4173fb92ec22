"""Benchmark: `gpuaudit-tui fleet` over many saved snapshots (time and peak RSS), not a test.

    python tests/bench/bench_fleet_compare.py            # 100 and 1,000 snapshots of the case study's size
    python tests/bench/bench_fleet_compare.py --n 200    # other sizes

Each snapshot is a full copy of snapshots/examples/case-study-after.json (~0.7 MB, every record kept) with its
own hostname; two nodes carry planted outliers, so the answer is checked too. Peak RSS is the child's
ru_maxrss; the ratio 1,000 / 100 shows whether the cost stays linear.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AFTER = ROOT / "snapshots" / "examples" / "case-study-after.json"


def build(directory: Path, n: int) -> None:
    doc = json.loads(AFTER.read_text())
    uname = next(
        r
        for p in doc["probes"]
        for r in p["records"]
        if r["target"] == "host" and r["command_id"] == "uname_r"
    )
    for i in range(n):
        doc["target_states"]["host"]["hostname"] = f"gpu{i:04d}"
        uname["stdout"] = "6.8.12-9-pve\n" if i in (7, n - 3) else "6.14.11-2-pve\n"
        (directory / f"gpu{i:04d}.json").write_text(json.dumps(doc))


def run(directory: Path) -> tuple[float, float, dict]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "gpuaudit.tui", "fleet", str(directory), "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    wall = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    assert proc.returncode == 1, proc.stderr
    return wall, max(rss, before) / 1024, json.loads(proc.stdout)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="*", default=[100, 1000])
    args = ap.parse_args()
    results = {}
    for n in args.n:
        with tempfile.TemporaryDirectory() as tmp:
            build(Path(tmp), n)
            wall, rss, doc = run(Path(tmp))
        outliers = sorted(o["node"] for c in doc["classes"] for o in c["outliers"])
        assert len(outliers) == 2, outliers
        results[n] = wall
        print(
            f"fleet over {n:5d} snapshots: {wall:6.2f} s wall, peak RSS {rss:6.0f} MiB, outliers {outliers}"
        )
    if len(results) == 2:
        (a, ta), (b, tb) = sorted(results.items())
        print(f"ratio {b}/{a}: {tb / ta:.2f}x time for {b / a:.0f}x snapshots")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
