"""Replay of a big snapshot: `gpuaudit-tui --replay FILE --json` on ~10 MB, where the time goes. Not a test.

    python tests/bench/bench_replay.py [--mb 10] [--runs 3] [--profile]

Builds FILE from the case study's "after" snapshot (snapshots/examples/case-study-after.json): its host's real
`lspci -D -vvv` output repeated until the file is about --mb MB (a box with many PCIe devices; lspci is the
output three code paths read), in the snapshot's current stored format. Runs the CLI on it and on the plain case
study in interleaved rounds (median wall and the child's CPU), then the stages in-process: load (read, JSON,
migration, validation), the replay audit (transport answers, decode + redaction, extract, judge, fold), the
snapshot and its JSON bytes. `--profile` adds the top functions of the replay audit (cProfile, CPU timer).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AFTER = ROOT / "snapshots" / "examples" / "case-study-after.json"


def build(path: Path, mb: float) -> int:
    """The case study with its lspci output grown to make a file of about `mb` MB; returns the file's size."""
    from gpuaudit.snapshots import store

    snap = store.load(AFTER)
    lspci = next(r for r in snap.records if r.command_id == "lspci_vvv" and r.target == "host")
    base = len(AFTER.read_bytes())
    times = max(1, int((mb * 1e6 - base) / max(len(lspci.stdout), 1)) + 1)
    for _ in range(2):  # the second pass corrects for how often the format stores the record
        big = lspci.model_copy(update={"stdout": lspci.stdout * times})
        probes = [
            p.model_copy(
                update={
                    "records": [
                        big.model_copy(update={"probe_id": r.probe_id})
                        if r.command_id == "lspci_vvv" and r.target == "host"
                        else r
                        for r in p.records
                    ]
                }
            )
            for p in snap.probes
        ]
        grown = snap.model_copy(update={"probes": probes})
        path.write_bytes(grown.to_json(indent=2))
        size = path.stat().st_size
        times = max(1, int(times * (mb * 1e6 - base) / max(size - base, 1)))
    return size


def cli(path: Path, home: Path) -> tuple[float, float]:
    """`gpuaudit-tui --replay PATH --json` in a child: (wall s, its CPU s)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "gpuaudit.tui",
            "--replay",
            str(path),
            "--json",
            "--fail-on",
            "never",
        ],
        stdout=subprocess.DEVNULL,
        cwd=ROOT,
        env=dict(os.environ, HOME=str(home)),
        check=True,
    )
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def stages(path: Path, profile: bool) -> dict[str, float]:
    """The replay's stages in this process (wall s): load, audit, snapshot + JSON."""
    from gpuaudit.probes.core.run.request import AuditRequest
    from gpuaudit.probes.core.run.session import run_sync
    from gpuaudit.snapshots import store
    from gpuaudit.snapshots.schema import Snapshot
    from gpuaudit.tui.cli.headless import collect
    from gpuaudit.tui.cli.session_setup import build_setup

    out: dict[str, float] = {}
    t0 = time.perf_counter()
    raw = path.read_bytes()
    out["read"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    json.loads(raw)
    out["json.loads alone (not on the path)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    store.load(path)
    out["load (store.load: parse + migrate + validate)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    setup = build_setup(AuditRequest(replay=str(path), json=True))
    out["setup (includes a second store.load)"] = time.perf_counter() - t0
    prof = cProfile.Profile(time.process_time) if profile else None
    t0 = time.perf_counter()
    if prof:
        prof.enable()
    run = run_sync(
        collect(setup)
    )  # as the CLI: asyncio.run's SIGINT code would repr the main task's result
    if prof:
        prof.disable()
    out["replay audit (answers, redaction, extract, judge, fold)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    snap = Snapshot.from_run(run)
    out["Snapshot.from_run (roofline)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    snap.to_json(indent=2)
    out["JSON bytes"] = time.perf_counter() - t0
    if prof:
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(15)
        print(buf.getvalue())
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(
            "/(probes|snapshots)/", 20
        )
        print(buf.getvalue())
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=10.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--json-out", help="also write the medians as JSON (bench_targets.py reads it)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "big.json"
        size = build(big, args.mb)
        home = Path(tmp) / "home"
        home.mkdir()
        rows: dict[str, list[tuple[float, float]]] = {"case study": [], "big": []}
        for _ in range(args.runs):  # interleaved rounds: both see the same load
            rows["case study"].append(cli(AFTER, home))
            rows["big"].append(cli(big, home))
        print(f"load average {os.getloadavg()}; big snapshot {size / 1e6:.1f} MB")
        for label, vals in rows.items():
            wall = statistics.median(v[0] for v in vals)
            cpu = statistics.median(v[1] for v in vals)
            print(
                f"--replay --json {label:10s}: wall {wall:6.2f} s  CPU {cpu:6.2f} s  (median of {len(vals)})"
            )
        ratio = statistics.median(b[0] / a[0] for a, b in zip(rows["case study"], rows["big"]))
        print(f"big / case study wall (per round, median): {ratio:.2f}x")
        doc: dict = {
            label: {
                "wall_s": statistics.median(v[0] for v in vals),
                "cpu_s": statistics.median(v[1] for v in vals),
            }
            for label, vals in rows.items()
        }
        doc.update(size_mb=size / 1e6, big_vs_case_study=ratio, load=os.getloadavg()[0])
        for label, t in stages(big, args.profile).items():
            print(f"  {label:58s} {t:6.3f} s")
            doc.setdefault("stages_s", {})[label] = t
        if args.json_out:
            Path(args.json_out).write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
