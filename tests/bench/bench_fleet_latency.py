"""A fleet over real SSH with real round trips: `--hosts` through a TCP delay relay (not a test).

    python tests/bench/bench_fleet_latency.py [--n 50] [--rtt 0 0.02 0.08] [--max-connections 64] [--tree L=REV ...]
    python tests/bench/bench_fleet_latency.py --n 1 16 --rtt 0 --rounds 3 --tree before=REV --tree after=.

This kernel has no `sch_netem` (`tc qdisc add ... netem` answers "Specified qdisc kind is unknown"), so the round
trips come from a relay in user space: one process that listens on N loopback ports and forwards each connection
to the benchmark's sshd (bench_audit.py's stand-in GPU tools and bench user), holding every chunk for RTT/2 in
each direction, order kept, bandwidth unlimited. What the client sees is what a WAN link does to SSH: every
handshake step, every channel request, every output chunk waits a real round trip; the server side is one real
OpenSSH per 16 ports on this 2-core box, so the walls include its CPU. bench_fleet_scale.py simulates 1,000 hosts
without SSH; this one runs the real client stack at the sizes the box can hold.

Reports per RTT (and per tree with `--tree`, interleaved): wall, client CPU per host, peak RSS, failed hosts.
Client CPU per host is the child's CPU over N (imports included); with several `--n` it is also the slope from the
smallest N within the same round and tree (what each further host costs, without the CLI's fixed start), and the
medians over `--rounds` (tree order alternating per round) come with the same-round ratio to the first tree.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(BENCH))

import bench_audit  # noqa: E402
from bench_audit import fleet_servers, prepare_standins  # noqa: E402
from sshd_server import free_port  # noqa: E402
from trees import parse_trees  # noqa: E402

RELAY = r"""
import asyncio, json, sys
delay, pairs = float(sys.argv[1]), json.loads(sys.argv[2])

async def pump(src, dst):
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    async def deliver():
        while True:
            at, data = await queue.get()
            wait = at - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                try:
                    dst.write_eof()
                except OSError:
                    pass
                return
            dst.write(data)
            await dst.drain()

    task = asyncio.create_task(deliver())
    try:
        while True:
            data = await src.read(1 << 16)
            queue.put_nowait((loop.time() + delay, data))
            if not data:
                break
        await task
    except (ConnectionError, OSError):
        task.cancel()

async def handle(reader, writer, upstream):
    try:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream)
    except OSError:
        writer.close()
        return
    await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer), return_exceptions=True)
    for w in (writer, up_writer):
        w.close()

async def main():
    servers = [
        await asyncio.start_server(lambda r, w, u=up: handle(r, w, u), "127.0.0.1", port)
        for port, up in pairs
    ]
    print("ready", flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))

asyncio.run(main())
"""


def start_relay(delay_s: float, pairs: list[tuple[int, int]]) -> subprocess.Popen:
    relay = subprocess.Popen(
        [sys.executable, "-c", RELAY, str(delay_s), json.dumps(pairs)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert relay.stdout is not None and relay.stdout.readline().strip() == "ready"
    return relay


def relay_known_hosts(known: Path, relay_of: dict[int, int], out: Path) -> Path:
    """A known_hosts for the relay's ports: each upstream sshd's host key (`known`: `[127.0.0.1]:PORT key` lines)
    under the relay port in front of it (`relay_of`: upstream port -> relay port)."""
    lines = []
    for line in known.read_text().splitlines():
        upstream = int(line.split("]:", 1)[1].split()[0])
        if upstream in relay_of:
            lines.append(f"[127.0.0.1]:{relay_of[upstream]} {line.split(None, 1)[1]}\n")
    out.write_text("".join(lines))
    return out


def run_fleet(work: Path, ports: list[int], user: str, known: Path, key: str, args) -> dict:
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    wall, rss, code, cpu, summary = bench_audit.fleet_cli(
        work, "fleet", [(p, user) for p in ports], known, key, args.max_connections, []
    )
    return {
        "n": len(ports),
        "wall_s": round(wall, 2),
        "outer_s": round(time.perf_counter() - t0, 2),
        "cpu_per_host_s": round(cpu / len(ports), 4),
        "client_cpu_s": round(cpu, 2),
        "rss_mb": round(rss),
        "exit": code,
        "targets": summary["targets"],
        "failed": summary["failed"],
        "load": round(load, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[50])
    ap.add_argument("--rtt", type=float, nargs="+", default=[0.0, 0.02, 0.08])
    ap.add_argument("--max-connections", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--tree", action="append", help="LABEL=REV_OR_DIR (trees.py), interleaved")
    ap.add_argument("--fast", action="store_true", help="stand-ins without the tools' durations")
    ap.add_argument(
        "--json-out", help="also write the rows and slopes as JSON (bench_targets.py reads it)"
    )
    args = ap.parse_args(argv)
    trees = parse_trees(args.tree)
    work = Path(tempfile.mkdtemp(prefix="gpuaudit-latency-"))
    os.chmod(work, 0o755)
    servers = []
    rows = []
    try:
        standins = prepare_standins(work)
        most = max(args.n)
        servers, specs, known_direct = fleet_servers(work, standins, most, args.fast)
        upstream = [int(s.rsplit(":", 1)[1]) for s in specs[:most]]
        relay_ports = [free_port() for _ in upstream]
        known = relay_known_hosts(
            known_direct, dict(zip(upstream, relay_ports)), work / "relay_known_hosts"
        )
        user = specs[0].split("@", 1)[0]
        print(
            f"{most} hosts via {len(servers)} sshd, --max-connections {args.max_connections}; "
            f"load {os.getloadavg()}",
            flush=True,
        )
        for rnd in range(args.rounds):
            for rtt in args.rtt:
                relay = start_relay(rtt / 2, list(zip(relay_ports, upstream)))
                try:
                    for n in args.n:
                        order = list(trees.items())
                        for label, tree in order if rnd % 2 == 0 else order[::-1]:
                            bench_audit.CHILD_TREE = tree
                            row = {
                                "rtt_ms": round(rtt * 1000),
                                "tree": label,
                                "round": rnd,
                                **run_fleet(
                                    work, relay_ports[:n], user, known, servers[0].client_key, args
                                ),
                            }
                            print(json.dumps(row), flush=True)
                            rows.append(row)
                finally:
                    relay.kill()
                    relay.wait()
    finally:
        bench_audit.CHILD_TREE = None
        leaked = [line for s in servers for line in s.stop()]
        shutil.rmtree(work, ignore_errors=True)
    print(
        "\n| RTT | tree | hosts | failed | wall (s) | client CPU / host (s) | peak RSS (MiB) | load |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['rtt_ms']} ms | {r['tree']} | {r['targets']} | {r['failed']} | {r['wall_s']} | "
            f"{r['cpu_per_host_s']} | {r['rss_mb']} | {r['load']} |"
        )
    print_slopes(rows, list(trees))
    if args.json_out:
        doc = {
            "rows": rows,
            "slopes": [
                {"rtt_ms": k[0], "tree": k[1], "round": k[2], "n": k[3], "cpu_per_host_s": v}
                for k, v in slopes_of(rows).items()
            ],
        }
        Path(args.json_out).write_text(json.dumps(doc, indent=1, default=str))
    if leaked:
        print(f"WARNING: processes left running by the test user: {leaked}")
    return 0


def slopes_of(rows: list[dict]) -> dict[tuple[int, str, int, int], float]:
    """(RTT ms, tree, round, N) -> client CPU per host: the slope from the smallest N of the same RTT, round and
    tree (what each further host costs, without the CLI's fixed start)."""
    slope: dict[tuple[int, str, int, int], float] = {}
    for r in rows:
        small = min(
            (
                x
                for x in rows
                if (x["rtt_ms"], x["tree"], x["round"]) == (r["rtt_ms"], r["tree"], r["round"])
            ),
            key=lambda x: x["n"],
        )
        if r["n"] > small["n"]:
            slope[(r["rtt_ms"], r["tree"], r["round"], r["n"])] = (
                r["client_cpu_s"] - small["client_cpu_s"]
            ) / (r["n"] - small["n"])
    return slope


def print_slopes(rows: list[dict], labels: list[str]) -> None:
    """Per RTT and N above the smallest: each tree's CPU slope per host (same round and tree) as the median over
    the rounds with its range, and the median of the same-round ratios to the first tree's slope."""
    slope = slopes_of(rows)
    if not slope:
        return
    med = statistics.median
    print(
        "\nper host = CPU slope from the smallest N (same round, same tree); medians over the rounds:"
    )
    print(
        "| RTT | N | tree | rounds | CPU per host (s) | range | wall (s) | load | ratio to first |"
    )
    print("|---:|---:|---|---:|---:|---|---:|---|---:|")
    for rtt, n in sorted({(k[0], k[3]) for k in slope}):
        for label in labels:
            mine = {k[2]: v for k, v in slope.items() if (k[0], k[1], k[3]) == (rtt, label, n)}
            if not mine:
                continue
            base = {k[2]: v for k, v in slope.items() if (k[0], k[1], k[3]) == (rtt, labels[0], n)}
            ratios = [v / base[rnd] for rnd, v in mine.items() if base.get(rnd)]
            got = [r for r in rows if (r["rtt_ms"], r["tree"], r["n"]) == (rtt, label, n)]
            print(
                f"| {rtt} ms | {n} | {label} | {len(mine)} | {med(mine.values()):.4f} "
                f"| {min(mine.values()):.4f}-{max(mine.values()):.4f} "
                f"| {med(r['wall_s'] for r in got):.2f} "
                f"| {min(r['load'] for r in got):.1f}-{max(r['load'] for r in got):.1f} "
                f"| {f'{med(ratios):.3f}x' if ratios and label != labels[0] else ''} |"
            )


if __name__ == "__main__":
    raise SystemExit(main())
