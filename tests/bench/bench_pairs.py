"""Trees side by side on the CLI audit alone: wall and client CPU in interleaved pairs (not a test).

    python tests/bench/bench_pairs.py --tree before=REV --tree after=. [--pairs 12] [--rc clean|heavy] [--rtt MS]
    python tests/bench/bench_pairs.py --python py311=VENV/bin/python --python py313=VENV2/bin/python ...

bench_table.py without its floor, OpenSSH loop and xargs (a round there takes ~40 s and its xargs leaves the next
round's load at 2-6): the same CLI audit (`gpuaudit-tui --json --host S --container S`, bench_table.cli_audit)
against the same loopback sshd and stand-ins, each pair running the trees in alternating order. Prints each tree's
medians and the median of the per-pair ratios (later tree / first tree), with the load average. `--rtt MS`: the
client reaches sshd through bench_fleet_latency's delay relay (every handshake step, channel request and output
waits a real round trip; this kernel has no `sch_netem`), as bench_table.py's `--rtt`. `--pct`: the container is
`pct:101`, entered through the host's login by bench_heavy_rc.py's stand-in `pct` (~0.4 s of CPU a call, like
Proxmox's Perl program), the case study's layout. `--python LABEL=EXE` (repeatable, with or instead of `--tree`):
a side that runs the CLI with the interpreter EXE and the gpuaudit-tui installed beside it (a venv made with that
Python and `pip install .`, as the README installs it): the same code under another interpreter, side by side.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))

from bench_fleet_latency import start_relay  # noqa: E402
from bench_heavy_rc import HEAVY_RC, PCT_STANDIN, standin_sshd  # noqa: E402
from bench_table import Relayed, cli_audit  # noqa: E402
from sshd_server import free_port  # noqa: E402
from trees import sides_of  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", help="LABEL=REV_OR_DIR (trees.py); two or more")
    ap.add_argument("--pairs", type=int, default=12)
    ap.add_argument("--rc", choices=("clean", "heavy"), default="clean")
    ap.add_argument("--timeout", type=float, default=8.0)
    ap.add_argument("--rtt", type=float, default=0.0, help="round trip in ms through a delay relay")
    ap.add_argument("--pct", action="store_true", help="the container as pct:101 (stand-in pct)")
    ap.add_argument(
        "--python", action="append", default=[], help="LABEL=EXE: the CLI under interpreter EXE"
    )
    args = ap.parse_args(argv)
    sides = sides_of(args.tree, args.python, "bench_pairs")
    if len(sides) < 2:
        ap.error("give two sides or more (--tree and/or --python)")
    work, home, server = standin_sshd("gpuaudit-pairs-", False, False)
    (home / ".bashrc").write_text(HEAVY_RC if args.rc == "heavy" else "")
    if args.pct:
        pct = work / "standins" / "pct"
        pct.write_text(PCT_STANDIN)
        pct.chmod(0o755)
    client_home = work / "home"
    client_home.mkdir()
    relay = None
    target = server
    if args.rtt > 0:
        port = free_port()
        relay = start_relay(args.rtt / 2000, [(port, server.port)])
        target = Relayed(server, port, work)
    got: dict[str, list[tuple[float, float]]] = {label: [] for label in sides}
    load_before = os.getloadavg()
    try:
        for i in range(args.pairs):
            order = list(sides) if i % 2 == 0 else list(reversed(sides))
            for label in order:
                tree, python = sides[label]
                r = cli_audit(
                    target,
                    client_home,
                    work / f"{i}-{label}.json",
                    args.timeout,
                    tree,
                    container="pct:101" if args.pct else None,
                    python=python,
                )
                got[label].append((r["wall"], r["cpu"]))
    finally:
        if relay is not None:
            relay.kill()
            relay.wait()
        server.stop()
    first = next(iter(sides))
    print(
        f"{args.rc} rc{', pct:101' if args.pct else ''}, RTT {args.rtt:g} ms, {args.pairs} pairs; load {load_before[0]:.1f} -> {os.getloadavg()[0]:.1f}"
    )
    for label, runs in got.items():
        line = (
            f"{label:>8}: wall {statistics.median(w for w, _ in runs):.3f} s, "
            f"CPU {statistics.median(c for _, c in runs):.3f} s"
        )
        if label != first:
            wall = statistics.median(b[0] / a[0] for a, b in zip(got[first], runs))
            cpu = statistics.median(b[1] / a[1] for a, b in zip(got[first], runs))
            line += f"  (per pair vs {first}: wall {wall:.3f}x, CPU {cpu:.3f}x)"
        print(line + "  walls " + " ".join(f"{w:.2f}" for w, _ in runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
