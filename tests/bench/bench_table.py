"""The issue-30 table: gpuaudit / floor / OpenSSH loop / xargs -P 8 / client CPU / RSS, clean user and heavy rc.

    python tests/bench/bench_table.py [--rounds 5] [--no-tool-delays] [--loop-rounds 1] [--json-out FILE]
        [--tree before=REV --tree after=. ...]

Needs root and /usr/sbin/sshd (bench_heavy_rc.py's bench user, stand-ins and loopback sshd). Host + container
audit, both over SSH to the same loopback server (two targets), as an operator runs it: the CLI
(`gpuaudit-tui --json --host S --container S`) in a child process started from a small launcher (so its peak RSS
and CPU are its own; imports included). The stand-ins print real recorded outputs after their documented typical
durations (`--no-tool-delays`: at once). For each rc (an empty ~/.bashrc, then one burning ~0.3 s of CPU per
login, like conda/pyenv init without a guard) and each round, in this order:

  gpuaudit     the CLI audit: wall, the child's CPU (user+sys) and peak RSS
  floor        asyncssh connect + one login running the audit's slowest command, measured here in the same round
               (the slowest by the records' durations; the floor's own clock times it, so it reads the same for
               every tree, whatever each tree reports as a command's duration)
  loop         one `ssh` per executed line of that audit, in turn (an operator's for loop)
  xargs -P 8   the same lines, `xargs -P 8` ssh clients at once

With `--tree LABEL=REV_OR_DIR` (repeatable; trees.py) each round runs the CLI audit once per tree, the trees'
order alternating from round to round, so before and after are measured under the same load; each tree's floor
is the round's connect plus one login running that tree's own slowest command (a tree that runs a faster slowest
command lowers its own floor: comparing it with another tree's floor would flatter it); the loop and xargs use the
first tree's executed lines. `--python LABEL=EXE` (repeatable, with or instead of `--tree`) is a side that runs
the CLI under interpreter EXE with gpuaudit-tui installed beside it, a venv made as the README installs it: what a
user runs, without this sandbox's site hooks (an editable install's finder, a CA bundle's .pth). Medians over the rounds (the loop: over --loop-rounds, it takes a minute with the heavy rc); the load average is
printed before and after. Ratios are computed per round (same load) and then the median taken.

`--rtt MS`: every client (the CLI, the floor's asyncssh, ssh in the loop and xargs) reaches sshd through a
user-space relay that holds each chunk MS/2 in each direction (bench_fleet_latency.py; this kernel has no
sch_netem): the floor then counts the round trips of a connect and a login, the audit all of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(BENCH))

from bench_audit import _LAUNCHER  # noqa: E402
from bench_fleet_latency import relay_known_hosts, start_relay  # noqa: E402
from bench_heavy_rc import HEAVY_RC, floor_parts, standin_sshd  # noqa: E402
from sshd_server import free_port  # noqa: E402
from trees import env_for, sides_of  # noqa: E402


def audit_args(server, timeout_s: float, container: str | None = None) -> list[str]:
    """The CLI's arguments for the host + container audit of `server` (`container`: another spec, such as
    `pct:101` through the stand-in pct; default: the server again)."""
    return [
        "--json",
        "--fail-on",
        "never",
        "--timeout",
        str(timeout_s),
        "--host",
        server.spec,
        "--container",
        container or server.spec,
        *server.cli_args(),
    ]


def client_env(home: Path, tree: Path | None = None) -> dict[str, str]:
    """The CLI child's environment: its own HOME, no SSH agent, `tree` on its path (trees.py)."""
    env = env_for(tree, dict(os.environ, HOME=str(home)))
    env.pop("SSH_AUTH_SOCK", None)
    return env


def cli_audit(
    server,
    home: Path,
    out: Path,
    timeout_s: float,
    tree: Path | None = None,
    container: str | None = None,
    python: str | None = None,
) -> dict:
    """The CLI audit of `server` (audit_args). `python`: the interpreter that runs the CLI (one with
    gpuaudit-tui installed, such as a venv's; default: this one)."""
    stats = home / "child-stats"
    launcher = [sys.executable, "-c", _LAUNCHER, str(stats), str(out)]
    subprocess.run(
        [*launcher, python or sys.executable, "-m", "gpuaudit.tui"]
        + audit_args(server, timeout_s, container),
        cwd=ROOT,
        env=client_env(home, tree),
        check=True,
    )
    wall, rss_kb, code, cpu = stats.read_text().split()
    return {"wall": float(wall), "rss_mb": int(rss_kb) / 1024, "exit": int(code), "cpu": float(cpu)}


def lines_of(out: Path) -> tuple[list[str], str, int]:
    """The distinct executed lines that ran (exit status known), the slowest command (its shell line), records."""
    doc = json.loads(out.read_text())
    if isinstance(doc.get("records"), list):  # schema 3: each record once, at the top
        recs = list(doc["records"])
    else:
        recs = [r for p in doc.get("probes") or [] for r in p.get("records") or []]
    seen: dict[tuple[str, str], str] = {}
    for r in recs:
        if r.get("exit_status") is not None and r.get("executed"):
            seen.setdefault((r["target"], r["executed"]), r["executed"])
    ran = [r for r in recs if r.get("exit_status") is not None and not r.get("timed_out")]
    slowest = max(ran, key=lambda r: r.get("duration_s") or 0.0, default=None)
    return list(seen.values()), (slowest or {}).get("command") or "exec true", len(recs)


def ssh_base(server) -> list[str]:
    return [
        "ssh",
        "-F",
        "/dev/null",
        "-i",
        server.client_key,
        "-o",
        f"UserKnownHostsFile={server.known_hosts}",
        "-o",
        "BatchMode=yes",
        "-o",
        "IdentitiesOnly=yes",
        "-p",
        str(server.port),
        f"{server.user}@127.0.0.1",
    ]


def loop(server, lines: list[str]) -> float:
    t0 = time.monotonic()
    for line in lines:
        subprocess.run(
            [*ssh_base(server), line],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=120,
            check=False,
        )
    return time.monotonic() - t0


def xargs(server, lines: list[str], work: Path, parallel: int = 8) -> float:
    listing = work / "lines.txt"
    listing.write_text("".join(line.replace("\n", " ") + "\n" for line in lines))
    t0 = time.monotonic()
    subprocess.run(
        ["xargs", "-P", str(parallel), "-d", "\n", "-I{}", *ssh_base(server), "{}"],
        stdin=listing.open(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=600,
        check=False,
    )
    return time.monotonic() - t0


class Relayed:
    """The bench sshd as seen through the delay relay: same user, key and host key, the relay's port."""

    def __init__(self, server, port: int, work: Path) -> None:
        self.server, self.port = server, port
        self.user, self.client_key = server.user, server.client_key
        known = relay_known_hosts(
            Path(server.known_hosts), {server.port: port}, work / "relay_known_hosts"
        )
        self.known_hosts = str(known)
        self.spec = f"{server.user}@127.0.0.1:{port}"

    def cli_args(self) -> list[str]:
        return ["--known-hosts", self.known_hosts, "--identity", self.client_key]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--loop-rounds", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=8.0)
    ap.add_argument("--no-tool-delays", action="store_true")
    ap.add_argument("--rc", choices=("both", "clean", "heavy"), default="both")
    ap.add_argument("--json-out")
    ap.add_argument("--rtt", type=float, default=0.0, help="round trip in ms through a delay relay")
    ap.add_argument(
        "--tree", action="append", help="LABEL=REV_OR_DIR: audit with this tree too (trees.py)"
    )
    ap.add_argument(
        "--python",
        action="append",
        default=[],
        help="LABEL=EXE: the CLI under interpreter EXE with gpuaudit-tui installed beside it (a venv made as "
        "the README installs it); alone, that side is the table's first row",
    )
    args = ap.parse_args(argv)
    sides = sides_of(args.tree, args.python, "bench_table")
    trees = list(sides)  # the sides' labels, first = the row the others compare to
    first = trees[0]
    work, home, server = standin_sshd("gpuaudit-table-", False, args.no_tool_delays)
    client_home = work / "home"
    client_home.mkdir()
    results: dict[str, dict] = {}
    relay = None
    if args.rtt > 0:
        port = free_port()
        relay = start_relay(args.rtt / 2000, [(port, server.port)])
        target = Relayed(server, port, work)
    else:
        target = server
    load_before = os.getloadavg()
    modes = ("clean", "heavy") if args.rc == "both" else (args.rc,)
    try:
        for mode in modes:
            (home / ".bashrc").write_text(HEAVY_RC if mode == "heavy" else "")
            rows: list[dict] = []
            for i in range(args.rounds):
                order = list(trees) if i % 2 == 0 else list(reversed(trees))
                row: dict = {}
                for label in order:
                    out = work / f"audit-{mode}-{i}-{label}.json"
                    tree, python = sides[label]
                    got = cli_audit(target, client_home, out, args.timeout, tree, python=python)
                    if label == first:
                        row.update(got)
                        lines, slowest, nrec = lines_of(out)
                    else:
                        row.update({f"{k}:{label}": v for k, v in got.items()})
                        row[f"slowest:{label}"] = lines_of(out)[1]
                floors: dict[str, float] = {}  # slowest command -> connect + one login running it
                for command in dict.fromkeys(
                    [slowest, *(row[f"slowest:{t}"] for t in list(trees)[1:])]
                ):
                    floors[command] = sum(asyncio.run(floor_parts(target, command)))
                row.update(floor=floors[slowest], slowest=slowest, lines=len(lines), records=nrec)
                for label in list(trees)[1:]:  # each tree against its own slowest command
                    row[f"floor:{label}"] = floors[row[f"slowest:{label}"]]
                row["xargs"] = xargs(target, lines, work)
                row["loop"] = loop(target, lines) if i < args.loop_rounds else None
                row["load"] = os.getloadavg()[0]
                rows.append(row)
                print(f"{mode} rc, round {i + 1}: {json.dumps(row)}", flush=True)
            results[mode] = {"rounds": rows}
    finally:
        if relay is not None:
            relay.kill()
            relay.wait()
        server.stop()
        (home / ".bashrc").write_text("")
    load_after = os.getloadavg()

    def med(rows: list[dict], key: str) -> float:
        return statistics.median(r[key] for r in rows if r.get(key) is not None)

    print(f"\nload average before {load_before}, after {load_after}; RTT {args.rtt:g} ms")
    print(
        "| rc | gpuaudit (s) | floor (s) | gpuaudit / floor | OpenSSH loop (s) | gpuaudit / loop "
        "| xargs -P 8 (s) | gpuaudit / xargs | client CPU (s) | peak RSS (MiB) | lines |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for mode, res in results.items():
        rows = res["rounds"]
        per_floor = statistics.median(r["wall"] / r["floor"] for r in rows)
        per_x = statistics.median(r["wall"] / r["xargs"] for r in rows)
        loops = [r for r in rows if r["loop"]]
        per_loop = statistics.median(r["wall"] / r["loop"] for r in loops) if loops else None
        print(
            f"| {mode}, {first} | {med(rows, 'wall'):.2f} | {med(rows, 'floor'):.2f} | {per_floor:.2f}x "
            f"| {med(loops, 'loop') if loops else float('nan'):.1f} | "
            f"{per_loop if per_loop is not None else float('nan'):.3f}x "
            f"| {med(rows, 'xargs'):.2f} | {per_x:.2f}x | {med(rows, 'cpu'):.2f} "
            f"| {med(rows, 'rss_mb'):.0f} | {int(med(rows, 'lines'))} |"
        )
        for label in list(trees)[1:]:
            lf = statistics.median(r[f"wall:{label}"] / r[f"floor:{label}"] for r in rows)
            lw = statistics.median(r[f"wall:{label}"] / r["wall"] for r in rows)
            lc = statistics.median(r[f"cpu:{label}"] / r["cpu"] for r in rows)
            print(
                f"| {mode}, {label} | {med(rows, f'wall:{label}'):.2f} | {med(rows, f'floor:{label}'):.2f} "
                f"| {lf:.2f}x | | | | "
                f"| {med(rows, f'cpu:{label}'):.2f} | {med(rows, f'rss_mb:{label}'):.0f} | "
                f"wall {lw:.2f}x, CPU {lc:.2f}x of {first} |"
            )
            res[label] = {"per_floor": lf, "wall_vs_first": lw, "cpu_vs_first": lc}
        res.update(
            median_wall=med(rows, "wall"),
            median_floor=med(rows, "floor"),
            per_floor=per_floor,
            per_xargs=per_x,
            per_loop=per_loop,
        )
    print(
        f"median of {args.rounds} interleaved rounds (the loop: {args.loop_rounds}); rows: {list(trees)}"
    )
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
