"""Snapshot size and load time: the schema-2 layout against the current stored format. Not a test.

    python tests/bench/bench_snapshot_format.py [--rounds 7] [--mb 10]

For the case study's two snapshots and a ~10 MB one (bench_replay.py's: the host's real lspci output grown),
writes each in the schema-2 layout (every record once per probe that declares it, every finding twice) and in the
current format (snapshots/compact.py), as `--save` writes them (indented JSON), and measures in interleaved rounds
(median): bytes on disk, `store.load` (what `--replay`, `diff` and the picker do), and `json.loads` alone (what
`gpuaudit-tui fleet` does per file). The schema-2 file is loaded the way schema 2 was: pydantic's parser over the
text, no migration (its layout validates as is).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parents[1]
sys.path.insert(0, str(BENCH))

EXAMPLES = ROOT / "snapshots" / "examples"


def layouts(path: Path, work: Path) -> dict[str, Path]:
    """The snapshot at `path` written in both layouts; returns label -> file."""
    from gpuaudit.snapshots.compact import unpack
    from gpuaudit.snapshots.store import load

    snap = load(path)
    current = snap.to_json(indent=2)
    expanded = unpack(json.loads(current))
    expanded["schema_version"] = 2
    out = {"schema 2": work / f"{path.stem}.v2.json", "current": work / f"{path.stem}.cur.json"}
    out["schema 2"].write_text(json.dumps(expanded, indent=2, ensure_ascii=False))
    out["current"].write_bytes(current)
    return out


def timed(fn, *args) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    from bench_replay import build
    from gpuaudit.snapshots.schema import Snapshot
    from gpuaudit.snapshots.store import load

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--mb", type=float, default=10.0)
    ap.add_argument("--json-out", help="also write the rows as JSON (bench_targets.py reads it)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        big = work / "big-10mb.json"
        build(big, args.mb)
        sources = [EXAMPLES / "case-study-before.json", EXAMPLES / "case-study-after.json", big]
        print(f"load average {os.getloadavg()}")
        print(
            "| snapshot | schema 2 (bytes) | current (bytes) | current / schema 2 "
            "| load schema 2 (s) | load current (s) | ratio | json.loads 2 / current (s) |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        out = []
        for src in sources:
            files = layouts(src, work)
            v2, cur = files["schema 2"], files["current"]
            loads: dict[str, list[float]] = {"2": [], "cur": [], "j2": [], "jcur": []}
            for _ in range(args.rounds):
                loads["2"].append(timed(lambda f=v2: Snapshot.model_validate_json(f.read_bytes())))
                loads["cur"].append(timed(load, cur))
                loads["j2"].append(timed(lambda f=v2: json.loads(f.read_bytes())))
                loads["jcur"].append(timed(lambda f=cur: json.loads(f.read_bytes())))
            m = {k: statistics.median(v) for k, v in loads.items()}
            s2, sc = v2.stat().st_size, cur.stat().st_size
            print(
                f"| {src.name} | {s2:,} | {sc:,} | {sc / s2:.2f} | {m['2']:.3f} | {m['cur']:.3f} "
                f"| {m['cur'] / m['2']:.2f} | {m['j2']:.3f} / {m['jcur']:.3f} |"
            )
            out.append(
                {
                    "snapshot": src.name,
                    "schema2_bytes": s2,
                    "current_bytes": sc,
                    "load_schema2_s": m["2"],
                    "load_current_s": m["cur"],
                }
            )
        print(f"load average {os.getloadavg()}; median of {args.rounds} interleaved rounds")
        if args.json_out:
            Path(args.json_out).write_text(json.dumps({"rows": out}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
