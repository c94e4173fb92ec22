"""Fleet at scale (issue 30): `--hosts` wall and client CPU vs N, vs --max-connections, vs `xargs -P 8`.

    python tests/bench/bench_fleet_scale.py [--n 1 10 100 1000] [--rtt 0.02 0.08] [--max-connections 64 256]
        [--xargs-n 10 50] [--rounds R] [--profile N] [--tree before=REV --tree after=.] [--json-out FILE]

This 2-core machine cannot hold 1,000 sshd's, and its kernel has no `sch_netem` (`tc qdisc ... netem` answers
"Specified qdisc kind is unknown"), so the benchmark is a documented simulation of the network side with the real
client in front of it:

* The real CLI (`gpuaudit-tui --hosts FILE --json --max-connections M`) runs in a child, every layer real (the
  inventory, the fleet loop, the runner, records, redaction, extract, judging, the snapshot, the JSON document),
  except the transport: `fleet_hosts.live_bindings` is replaced by a stand-in host (SimHost below) that answers
  each command with a REAL recorded output (the case study's host, an 8-GPU server: snapshots/examples, with its
  SOURCES in docs/CASE-STUDY) after a simulated delay. The inventory lists N distinct targets
  (root@127.0.0.1:PORT, never contacted).
* The delays model one SSH connection per host with a round-trip time RTT: the connection and login cost
  HANDSHAKE_RTTS round trips plus LOGIN_S (TCP, key exchange, user auth, the worker's channel and start), each
  command one round trip plus its recorded duration (capped at 2 s), at most CHANNELS commands in flight per
  host (the worker's cap on a fleet host's one connection).
* What the stand-in leaves out is asyncssh's own CPU per host (key exchange, packets, the cipher). That part is
  measured by bench_audit.py's fleet over real loopback sshd's (`--fleet 1,16,50`), and the per-host total is the
  sum of the two (docs/PERFORMANCE.md shows both).
* `xargs -P 8`: the operator's alternative, one CLI process per host (`gpuaudit-tui --json --host H` with the
  same stand-in), 8 at once, for the smaller N (each process pays its start-up).

Client CPU is the child's user + system time (imports included); per host = the slope between the smallest and
the largest N of one setting, within one round. `--rounds R` repeats every setting R times, the trees interleaved
in each round (before, after, before, after, ...), and prints the median slope per tree and the median of the
same-round ratios to the first tree. Wall and peak RSS of the child. The load average is printed before and after,
and with each row.
`--profile N` prints the top functions by own time of one N-host run (cProfile in the child).
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
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parents[1]
sys.path.insert(0, str(BENCH))

from trees import env_for, parse_trees  # noqa: E402

RECORDING = ROOT / "snapshots" / "examples" / "case-study-after.json"

DRIVER = r"""
import asyncio, cProfile, os, pstats, sys
from gpuaudit.probes.core.collect.replay_transport import ReplayTransport
from gpuaudit.probes.core.run.runner import TargetBinding
from gpuaudit.snapshots import store
from gpuaudit.tui.cli import entry, fleet_hosts, session_setup

recording, rtt, handshake_rtts, login_s, channels, profile = sys.argv[1:7]
rtt, login_s = float(rtt), float(login_s)
handshake_rtts, channels = int(handshake_rtts), int(channels)
snap = store.load(recording)
RECORDS = [r for p in snap.probes for r in p.records if r.target == "host"]
HOSTNAME = (snap.target_states["host"].hostname if "host" in snap.target_states else None) or "sim"


class SimHost(ReplayTransport):
    # a stand-in for one SSH host: handshake and per-command round trips, recorded outputs and durations
    def __init__(self, label):
        super().__init__(RECORDS, label=label, hostname=HOSTNAME)
        self._slots = asyncio.Semaphore(channels)

    @property
    def channels(self):
        return channels

    async def connect(self):
        await asyncio.sleep(handshake_rtts * rtt + login_s)

    async def run(self, line, *, command_id, timeout_s, max_bytes, gate=None, marker=None, session=None):
        rec = self._by_id.get(command_id)
        own = min(rec.duration_s or 0.0, 2.0) if rec is not None else 0.0
        async with self._slots:
            await asyncio.sleep(rtt + own)
        return await super().run(line, command_id=command_id, timeout_s=timeout_s, max_bytes=max_bytes)


def sim_bindings(host, container, ssh):
    return [TargetBinding(target=host.to_target(), transport=SimHost(host.raw))]


fleet_hosts.live_bindings = sim_bindings
session_setup.live_bindings = sim_bindings
args = sys.argv[sys.argv.index("--") + 1:]
if profile != "0":
    prof = cProfile.Profile()
    code = prof.runcall(entry.main, args)
    stats = pstats.Stats(prof, stream=sys.stderr)
    stats.sort_stats("tottime").print_stats(int(profile))
    stats.print_callers(r"method .find. of .str.|validate_python|__copy__")
    stats.print_callees(r"gpu_nodes|row_for")
    stats.sort_stats("cumulative").print_stats(int(profile))
    sys.exit(code)
sys.argv = [sys.argv[0], *args]
entry.main()
"""

HANDSHAKE_RTTS = 6
"""TCP (1), SSH version + key exchange (2), user auth (2: the key offered, then signed), the session's channel (1)."""
LOGIN_S = 0.05
"""The login shell and the worker's start on the host (a clean rc; bench_heavy_rc.py measures a heavy one)."""
CHANNELS = 8
"""Commands in flight per fleet host: its one connection's cap (DEFAULT_MAX_CHANNELS)."""

LAUNCHER = """import os, subprocess, sys, time
t0 = time.perf_counter()
with open(sys.argv[2], "wb") as out, open(sys.argv[3], "wb") as err:
    p = subprocess.Popen(sys.argv[4:], stdout=out, stderr=err, stdin=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
wall = time.perf_counter() - t0
with open(sys.argv[1], "w") as f:
    f.write(f"{wall} {ru.ru_maxrss} {os.waitstatus_to_exitcode(status)} {ru.ru_utime + ru.ru_stime}")
"""


def inventory(work: Path, n: int) -> Path:
    path = work / f"hosts-{n}.txt"
    path.write_text("".join(f"root@127.0.0.1:{20000 + i}\n" for i in range(n)))
    return path


def driver_args(rtt: float, profile: int = 0) -> list[str]:
    return [
        "-c",
        DRIVER,
        str(RECORDING),
        str(rtt),
        str(HANDSHAKE_RTTS),
        str(LOGIN_S),
        str(CHANNELS),
        str(profile),
        "--",
    ]


def run_child(cmd: list[str], work: Path, tree: Path | None, tag: str) -> dict:
    stats, out, err = work / f"{tag}.stats", work / f"{tag}.out", work / f"{tag}.err"
    env = env_for(tree, dict(os.environ, HOME=str(work / "home")))
    (work / "home").mkdir(exist_ok=True)
    subprocess.run(
        [sys.executable, "-c", LAUNCHER, str(stats), str(out), str(err), *cmd],
        cwd=ROOT,
        env=env,
        check=True,
    )
    wall, rss_kb, code, cpu = stats.read_text().split()
    return {
        "wall": float(wall),
        "cpu": float(cpu),
        "rss_mb": int(rss_kb) / 1024,
        "exit": int(code),
        "out": out,
        "err": err,
    }


def fleet_run(work: Path, n: int, rtt: float, max_conn: int, tree: Path | None) -> dict:
    hosts = inventory(work, n)
    cmd = [sys.executable, *driver_args(rtt), "--hosts", str(hosts), "--json"]
    cmd += ["--fail-on", "never", "--max-connections", str(max_conn), "--timeout", "10"]
    row = run_child(cmd, work, tree, f"fleet-{n}-{rtt}-{max_conn}")
    doc = json.loads(row.pop("out").read_text())
    row.pop("err")
    audited = sum(1 for e in doc["fleet"] if e["snapshot"] is not None)
    if audited != n:
        raise SystemExit(f"fleet of {n}: {audited} hosts audited")
    row["per_host_median_s"] = statistics.median(e["duration_s"] for e in doc["fleet"])
    return row


def xargs_run(work: Path, n: int, rtt: float, tree: Path | None, parallel: int = 8) -> dict:
    hosts = inventory(work, n)
    script = work / "one-host.sh"
    driver = work / "driver.py"
    driver.write_text(DRIVER)
    args = " ".join(driver_args(rtt)[2:])
    script.write_text(
        f'#!/bin/sh\nexec {sys.executable} {driver} {args} --json --fail-on never --host "$1"'
        f" >/dev/null 2>&1\n"
    )
    script.chmod(0o755)
    cmd = ["sh", "-c", f"xargs -P {parallel} -n 1 {script} < {hosts}"]
    row = run_child(cmd, work, tree, f"xargs-{n}-{rtt}")
    row.pop("out"), row.pop("err")
    return row


def print_medians(rows: list[dict], labels: list[str]) -> None:
    """Per setting and N: the median per-host CPU slope, wall and peak RSS of each tree over the rounds, and the
    median of the same-round ratios of each tree's slope to the first tree's."""
    hosts = [r for r in rows if r["kind"] == "--hosts" and r.get("per_host_cpu_s") is not None]
    if not hosts:
        return
    print("\nmedians over rounds (per host = CPU slope from the smallest N, same round):")
    print(
        "| RTT | max-conn | N | tree | rounds | CPU per host (s) | wall (s) | peak RSS (MiB) | load | ratio |"
    )
    print("|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    med = statistics.median
    for key in sorted({(r["rtt"], r["max_connections"], r["n"]) for r in hosts}):
        mine = [r for r in hosts if (r["rtt"], r["max_connections"], r["n"]) == key]
        by_round = {(r["tree"], r["round"]): r["per_host_cpu_s"] for r in mine}
        for label in labels:
            got = [r for r in mine if r["tree"] == label]
            if not got:
                continue
            ratios = [
                by_round[(label, r["round"])] / by_round[(labels[0], r["round"])]
                for r in got
                if by_round.get((labels[0], r["round"]))
            ]
            ratio = f"{med(ratios):.2f}x" if ratios and label != labels[0] else ""
            print(
                f"| {key[0] * 1000:.0f} ms | {key[1]} | {key[2]} | {label} | {len(got)} "
                f"| {med(r['per_host_cpu_s'] for r in got):.4f} "
                f"({min(r['per_host_cpu_s'] for r in got):.4f}-{max(r['per_host_cpu_s'] for r in got):.4f}) "
                f"| {med(r['wall'] for r in got):.2f} | {med(r['rss_mb'] for r in got):.0f} "
                f"| {min(r['load'] for r in got):.1f}-{max(r['load'] for r in got):.1f} | {ratio} |"
            )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1, 10, 100, 1000])
    ap.add_argument("--rtt", type=float, nargs="+", default=[0.02, 0.08])
    ap.add_argument("--max-connections", type=int, nargs="+", default=[64, 256])
    ap.add_argument("--xargs-n", type=int, nargs="*", default=[10, 50])
    ap.add_argument("--rounds", type=int, default=1, help="repeat every setting, trees interleaved")
    ap.add_argument("--profile", type=int, default=0, help="profile one run of this many hosts")
    ap.add_argument("--tree", action="append", help="LABEL=REV_OR_DIR (trees.py)")
    ap.add_argument("--json-out")
    args = ap.parse_args(argv)
    trees = parse_trees(args.tree)
    work = Path(tempfile.mkdtemp(prefix="gpuaudit-fleet-scale-"))
    if args.profile:
        tree = next(iter(trees.values()))
        hosts = inventory(work, args.profile)
        cmd = [sys.executable, *driver_args(args.rtt[0], 40), "--hosts", str(hosts), "--json"]
        cmd += ["--fail-on", "never", "--max-connections", str(args.max_connections[-1])]
        row = run_child(cmd, work, tree, "profile")
        print(f"{args.profile} hosts: wall {row['wall']:.2f} s, CPU {row['cpu']:.2f} s")
        print(row["err"].read_text()[-12000:])
        return 0
    load0 = os.getloadavg()
    print(f"load average before {load0}; recording {RECORDING.name}; trees {list(trees)}")
    rows: list[dict] = []
    for rtt in args.rtt:
        for max_conn in args.max_connections:
            for rnd in range(args.rounds):
                for n in args.n:
                    order = list(trees.items())
                    for label, tree in order if rnd % 2 == 0 else order[::-1]:
                        t0 = time.monotonic()
                        row = fleet_run(work, n, rtt, max_conn, tree)
                        row.update(
                            tree=label, n=n, rtt=rtt, max_connections=max_conn, kind="--hosts"
                        )
                        row.update(round=rnd, load=os.getloadavg()[0])
                        rows.append(row)
                        print(json.dumps(row), f"({time.monotonic() - t0:.0f} s)", flush=True)
        for n in args.xargs_n:
            for label, tree in trees.items():
                row = xargs_run(work, n, rtt, tree)
                row.update(tree=label, n=n, rtt=rtt, kind="xargs -P 8")
                row["load"] = os.getloadavg()[0]
                rows.append(row)
                print(json.dumps(row), flush=True)
    print(f"\nload average before {load0}, after {os.getloadavg()}")
    print(
        "| tree | RTT | max-conn | N | --hosts wall (s) | client CPU (s) | CPU per host (s) "
        "| peak RSS (MiB) | xargs -P 8 wall (s) | xargs CPU (s) | --hosts / xargs |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        if r["kind"] != "--hosts":
            continue
        same = [
            x
            for x in rows
            if x["kind"] == "--hosts"
            and (x["tree"], x["rtt"], x["max_connections"], x["round"])
            == (r["tree"], r["rtt"], r["max_connections"], r["round"])
        ]
        small = min(same, key=lambda x: x["n"])
        slope = (r["cpu"] - small["cpu"]) / (r["n"] - small["n"]) if r["n"] > small["n"] else None
        xa = next(
            (
                x
                for x in rows
                if x["kind"] != "--hosts"
                and (x["tree"], x["rtt"], x["n"]) == (r["tree"], r["rtt"], r["n"])
            ),
            None,
        )
        per_host = "" if slope is None else f"{slope:.3f}"
        xa_cols = (
            "| | |"
            if xa is None
            else f"| {xa['wall']:.2f} | {xa['cpu']:.2f} | {r['wall'] / xa['wall']:.2f}x |"
        )
        print(
            f"| {r['tree']} | {r['rtt'] * 1000:.0f} ms | {r['max_connections']} | {r['n']} "
            f"| {r['wall']:.2f} | {r['cpu']:.2f} | {per_host} | {r['rss_mb']:.0f} {xa_cols}"
        )
        r["per_host_cpu_s"] = slope
    print_medians(rows, list(trees))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
