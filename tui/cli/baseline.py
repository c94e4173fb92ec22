"""`gpuaudit-tui baseline`: pin a host's last-known-good snapshot, show or clear it, compare a snapshot with it.

    gpuaudit-tui baseline set SNAPSHOT        pin SNAPSHOT (a stored name or a path) for its host
    gpuaudit-tui baseline show [HOST]         list the pinned baselines (or one host's)
    gpuaudit-tui baseline clear HOST          forget a host's baseline
    gpuaudit-tui baseline compare SNAPSHOT    the regression.* findings of SNAPSHOT against its host's baseline

Every audit (--json, --plan, --health, --prom, --save, the TUI's plan) then carries the regression.* findings of
its host (snapshots/baseline.py). Exit status: 0 done (compare: no decode speed regression), 1 compare found a
speed regression (critical), 2 usage or input error.
"""

from __future__ import annotations

import sys

from gpuaudit.probes.core.errors import SnapshotError
from gpuaudit.probes.core.models import Severity
from gpuaudit.probes.core.text import neutralise
from gpuaudit.snapshots import baseline as bl
from gpuaudit.snapshots import store
from gpuaudit.tui.cli.args import CliError, OneLineParser


def _parser() -> OneLineParser:
    p = OneLineParser(
        prog="gpuaudit-tui baseline",
        description="A last-known-good snapshot per host: later audits report what changed since it "
        "(driver, kernel, BIOS, engine/torch/NCCL/Triton, knobs, decode speed) as regression.* findings.",
    )
    sub = p.add_subparsers(dest="action", required=True, metavar="{set,show,clear,compare}")
    s = sub.add_parser("set", help="pin SNAPSHOT (a stored name or a path) as its host's baseline")
    s.add_argument("snapshot", metavar="SNAPSHOT")
    sh = sub.add_parser("show", help="list the pinned baselines")
    sh.add_argument("host", nargs="?", metavar="HOST")
    c = sub.add_parser("clear", help="forget HOST's baseline")
    c.add_argument("host", metavar="HOST")
    cmp_ = sub.add_parser(
        "compare", help="SNAPSHOT's regression findings against its host's baseline"
    )
    cmp_.add_argument("snapshot", metavar="SNAPSHOT")
    cmp_.add_argument(
        "--threshold",
        default="5%",
        metavar="PCT",
        help="decode speed change that counts (default 5%%)",
    )
    return p


def _load(ref: str):
    try:
        return store.load_ref(ref)[1]
    except SnapshotError as exc:
        raise CliError(str(exc)) from None


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.action == "set":
            snap = _load(args.snapshot)
            host, path = bl.set_baseline(snap)
            speed, _ = bl.measured_speed(snap)
            print(
                f"baseline for {neutralise(host)}: {neutralise(snap.name or args.snapshot)} "
                f"({snap.created_at:%Y-%m-%d %H:%M} UTC; decode "
                + (f"{speed:.1f} tok/s" if speed else "not measured")
                + f") -> {path}"
            )
            return 0
        if args.action == "show":
            paths = bl.list_baselines()
            shown = 0
            for path in paths:
                snap = store.load(path)
                host = bl.host_key(snap)
                if args.host and host != args.host:
                    continue
                speed, _ = bl.measured_speed(snap)
                print(
                    f"{neutralise(host)}\t{neutralise(snap.name or '-')}\t{snap.created_at:%Y-%m-%d %H:%M}"
                    f"\t{f'{speed:.1f} tok/s' if speed else 'decode not measured'}\t{path}"
                )
                shown += 1
            if not shown:
                print("no baseline" + (f" for {neutralise(args.host)}" if args.host else ""))
            return 0
        if args.action == "clear":
            print(
                f"baseline for {neutralise(args.host)} removed"
                if bl.clear_baseline(args.host)
                else f"no baseline for {neutralise(args.host)}"
            )
            return 0
        snap = _load(args.snapshot)
        try:
            threshold = bl.parse_threshold(args.threshold)
        except ValueError:
            raise CliError(f"--threshold: not a percentage: {args.threshold!r}") from None
        host = bl.host_key(snap)
        base = bl.load_baseline(host)
        if base is None:
            raise CliError(f"no baseline for {host}: `gpuaudit-tui baseline set SNAPSHOT` first")
        findings = bl.compare(base, snap, threshold)
        for f in findings:
            print(f"{f.severity.value.upper():8} {f.id:24} {neutralise(f.observed)}")
        return 1 if any(f.severity == Severity.CRITICAL for f in findings) else 0
    except (bl.BaselineError, SnapshotError) as exc:
        print(f"gpuaudit-tui: error: {exc}", file=sys.stderr)
        return 2
