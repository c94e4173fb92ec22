#!/usr/bin/env python3
"""Benchmark: load two ~20 MB snapshots and diff them (target: under a second in all).

Not part of the normal test run. `python tests/bench/bench_diff.py [--mb 20] [--quick]`.
The snapshots are SYNTHETIC: ten probes, records of ~20 KB of text each (--record-kb), 5% of them
changed in B. A real audit has a few hundred records; 20 MB comes from a few large outputs.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gpuaudit.probes.core.models import CommandRecord, Finding, ProbeResult, Target, TargetState  # noqa: E402
from gpuaudit.probes.ids import PROBE_IDS  # noqa: E402
from gpuaudit.snapshots import store  # noqa: E402
from gpuaudit.snapshots.diff import diff_snapshots  # noqa: E402
from gpuaudit.snapshots.schema import Snapshot  # noqa: E402

T0 = datetime(2026, 1, 10, tzinfo=UTC)
PROBES = PROBE_IDS


def make(total_mb: float, changed_every: int = 0, record_kb: int = 20) -> Snapshot:
    """A snapshot of about `total_mb` MB; every `changed_every`-th record (and its facts) differs."""
    per_record = record_kb * 1024
    n_records = max(len(PROBES), int(total_mb * 1024 * 1024 / per_record))
    line = (
        "0000:01:00.0 3D controller: NVIDIA Corporation Device 2bb5 (rev a1) LnkSta: Speed 32GT/s\n"
    )
    body = line * (per_record // len(line))
    probes = []
    for pi, pid in enumerate(PROBES):
        recs, facts = [], {}
        for i in range(pi, n_records, len(PROBES)):
            changed = changed_every and i % changed_every == 0
            for role in ("host", "container"):
                recs.append(
                    CommandRecord(
                        target=role,
                        probe_id=pid,
                        command_id=f"{pid}_cmd{i}",
                        command="true",
                        exit_status=0,
                        stdout=body + ("changed\n" if changed else ""),
                        started_at=T0,
                    )
                )
            facts[f"value{i}"] = {"n": i + (1 if changed else 0), "list": [1, 2, 3]}
        findings = [
            Finding(
                id=f"{pid}.check{k}",
                severity="warning" if (changed_every and k == 0) else "ok",
                probe=pid,
                title="t",
                observed=str(k),
            )
            for k in range(10)
        ]
        probes.append(
            ProbeResult(
                probe_id=pid,
                title=pid,
                status="done",
                records=recs,
                facts={"host": facts, "container": facts},
                findings=findings,
            )
        )
    targets = [
        Target(role="host", spec="root@127.0.0.1", kind="ssh", label="h"),
        Target(role="container", spec="pct:101", kind="pct", label="c"),
    ]
    return Snapshot(
        created_at=T0,
        targets=targets,
        target_states={r: TargetState(role=r) for r in ("host", "container")},
        probes=probes,
        findings=[f for p in probes for f in p.findings],
    )


def measure(total_mb: float, directory: Path, record_kb: int = 20) -> dict[str, float]:
    a = store.save(
        make(total_mb / 2, record_kb=record_kb), "a", directory
    )  # two roles: each record stored twice
    b = store.save(make(total_mb / 2, changed_every=20, record_kb=record_kb), "b", directory)
    t0 = time.perf_counter()
    sa, sb = store.load(a), store.load(b)
    t1 = time.perf_counter()
    d = diff_snapshots(sa, sb, all_facts=True)  # the full diff: raw text changes listed too
    t2 = time.perf_counter()
    return {
        "size_a_mb": a.stat().st_size / 2**20,
        "size_b_mb": b.stat().st_size / 2**20,
        "load_s": t1 - t0,
        "diff_s": t2 - t1,
        "total_s": t2 - t0,
        "records": len(sa.records),
        "changed_probes": len(d.probes),
        "raw_changes": sum(len(p.raw) for p in d.probes),
    }


def main(argv: list[str] | None = None) -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--mb", type=float, default=20.0, help="size of each snapshot in MB (default 20)"
    )
    ap.add_argument(
        "--record-kb", type=int, default=20, help="size of each record's output (default 20 KB)"
    )
    ap.add_argument(
        "--quick", action="store_true", help="1 MB snapshots: checks the harness, not the speed"
    )
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        result = measure(1.0 if args.quick else args.mb, Path(tmp), args.record_kb)
    print(
        " ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in result.items())
    )
    return result


if __name__ == "__main__":
    main()
