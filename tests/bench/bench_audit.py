"""Audit wall time against its floor and two baselines, fleet scaling, big outputs, start-up.

    python tests/bench/bench_audit.py            # full run (5 audits, fleet 1/10/50/100, 50 MB output)
    python tests/bench/bench_audit.py --quick    # smoke: 1 run, fleet 1/10, 5 MB, no tool delays

Needs root and /usr/sbin/sshd: it starts a real OpenSSH sshd on 127.0.0.1 (tests/sshd_server.py) whose
PATH begins with stand-in `nvidia-smi`, `lspci`, `dmidecode`, `numactl`, `systemd-detect-virt`
(tests/bench/standins/replay.sh: real recorded outputs replayed after typical durations), because this
machine has no GPU. The catalogue is probes.REGISTRY read at run time. Measured in one run:

  gpuaudit   Audit over live_bindings, host + container both on the loopback server, as --json runs it
  baseline A the same executed lines, one `ssh` client process per line, one after another
  baseline B the same lines over one asyncssh connection per target, one at a time
  floor      asyncssh connection setup + the slowest single command (both measured in baseline B)

Prints a table; `--json-out FILE` also writes the numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from sshd_server import SshdServer, free_port, sshd_available, start_sshd  # noqa: E402
from trees import parse_trees  # noqa: E402

BENCH_USER = "gpuaudit-bench"
"""Its own test user: other test runs' cleanup (pkill -u gpuaudit-test) must not kill the benchmark's commands."""
STANDIN_TOOLS = ("nvidia-smi", "lspci", "dmidecode", "numactl", "systemd-detect-virt")
TARGETS = {
    "floor": 1.5,
    "baseline_a": 5.0,
    "baseline_b": 3.0,
    "fleet_100": 4.0,
    "fleet_rss_mb": 400.0,
    "big_rss_x": 3.0,
    "help_s": 0.5,
}


@dataclass
class Line:
    role: str
    command_id: str
    executed: str


@dataclass
class Results:
    mode: str
    runs: int
    probes: str = "all"
    channels: int = 8
    no_launch_order: bool = False
    catalogue: int = 0
    lines: int = 0
    gpuaudit: list[float] = field(default_factory=list)
    channel_per_command: list[float] = field(default_factory=list)
    baseline_a: list[float] = field(default_factory=list)
    baseline_b: list[float] = field(default_factory=list)
    connect: list[float] = field(default_factory=list)
    slowest: list[float] = field(default_factory=list)
    slowest_id: str = ""
    fleet: list[dict] = field(default_factory=list)
    big: list[dict] = field(default_factory=list)
    startup: dict = field(default_factory=dict)
    a_sample: int | None = None

    def median(self, name: str) -> float:
        values = getattr(self, name)
        return statistics.median(values) if values else float("nan")

    @property
    def floor(self) -> float:
        return self.median("connect") + self.median("slowest")


# ---------------------------------------------------------------- servers


def prepare_standins(work: Path) -> Path:
    """Copy the stand-ins where the test user can read them and name one link per tool."""
    dest = work / "standins"
    shutil.copytree(BENCH / "standins", dest)
    for tool in STANDIN_TOOLS:
        (dest / tool).symlink_to(dest / "replay.sh")
    for path in [
        dest,
        *dest.rglob("*"),
    ]:  # the test user must read them whatever the checkout's umask
        if not path.is_symlink():
            os.chmod(path, 0o755 if path.is_dir() or path.suffix == ".sh" else 0o644)
    return dest


def bench_sshd(
    work: Path,
    name: str,
    standins: Path,
    *,
    fast: bool,
    big: str | None = None,
    extra_ports: int = 0,
    client_key_from: SshdServer | None = None,
) -> SshdServer:
    env = [f"PATH={standins}:/usr/local/bin:/usr/bin:/bin"]
    if fast:
        env.append("GPUAUDIT_BENCH_FAST=1")
    if big:
        env.append(f"GPUAUDIT_BENCH_BIG={big}")
    ports = [free_port() for _ in range(extra_ports)]
    extra = "SetEnv " + " ".join(env) + "\n" + "".join(f"Port {p}\n" for p in ports)
    if (
        client_key_from is not None
    ):  # one identity logs in everywhere, like an operator's key on a fleet
        (work / name).mkdir(parents=True, exist_ok=True)
        for suffix in ("", ".pub"):
            shutil.copy(client_key_from.client_key + suffix, work / name / f"client_key{suffix}")
    server = start_sshd(work / name, extra_config=extra, user=BENCH_USER, max_sessions=CHANNELS + 2)
    server.extra["ports"] = [server.port, *ports]
    key = " ".join((Path(server.directory) / "host_key.pub").read_text().split()[:2])
    server.extra["known"] = "".join(f"[127.0.0.1]:{p} {key}\n" for p in server.extra["ports"])
    return server


SSHD_MAX_PORTS = 16  # OpenSSH's MAX_LISTEN_SOCKS: one sshd listens on at most 16 ports


def fleet_servers(
    work: Path, standins: Path, n: int, fast: bool
) -> tuple[list[SshdServer], list[str], Path]:
    """Enough sshd instances for n distinct `user@127.0.0.1:port` targets; one known_hosts, one key."""
    servers: list[SshdServer] = []
    while sum(len(s.extra["ports"]) for s in servers) < n:
        want = min(SSHD_MAX_PORTS, n - sum(len(s.extra["ports"]) for s in servers))
        servers.append(
            bench_sshd(
                work,
                f"fleet{len(servers)}",
                standins,
                fast=fast,
                extra_ports=want - 1,
                client_key_from=servers[0] if servers else None,
            )
        )
    known = work / "fleet_known_hosts"
    known.write_text("".join(s.extra["known"] for s in servers))
    specs = [f"{s.user}@127.0.0.1:{p}" for s in servers for p in s.extra["ports"]]
    return servers, specs, known


# ---------------------------------------------------------------- measurements

PROBE_IDS: list[str] | None = None
"""--probes: a subset of the catalogue (quick mode); None = all of probes.REGISTRY."""
CHANNELS = 8
"""Channels per connection (--max-channels); sshd's MaxSessions is set to CHANNELS + 2."""
CONNECTIONS = 2
"""SSH connections per target (--connections; the CLI's default is 2)."""


def cli_probe_args() -> list[str]:
    return (["--probes", ",".join(PROBE_IDS)] if PROBE_IDS else []) + [
        "--max-channels",
        str(CHANNELS),
        "--connections",
        str(CONNECTIONS),
    ]


def selected() -> list:
    from gpuaudit.probes.catalogue import REGISTRY

    return [p for p in REGISTRY if PROBE_IDS is None or p.id in PROBE_IDS]


async def gpuaudit_once(server: SshdServer, sessions: bool = True) -> tuple[float, list[Line]]:
    """A full host + container audit as --json runs it; returns wall time and the executed lines."""
    from gpuaudit.probes.core.collect.targets import (
        build_command_line,
        parse_container_spec,
        parse_host_spec,
    )
    from gpuaudit.probes.core.run.runner import PREFLIGHT, Audit, AuditOptions
    from gpuaudit.probes.core.run.session import live_bindings
    from gpuaudit.snapshots.schema import Snapshot
    from gpuaudit.tui.cli.headless import collect
    from gpuaudit.tui.cli.session_setup import AuditSetup

    t0 = time.perf_counter()
    host = parse_host_spec(server.spec)
    container = parse_container_spec(server.spec, host=host)
    audit = Audit(
        live_bindings(
            host,
            container,
            server.options(max_channels=CHANNELS, connections=CONNECTIONS, sessions=sessions),
        ),
        selected(),
        AuditOptions(),
    )
    run = await collect(AuditSetup(audit, "live"))
    Snapshot.from_run(run).model_dump_json(indent=2)
    elapsed = time.perf_counter() - t0
    failed = [s.reason for s in run.target_states.values() if s.state == "failed"]
    if failed:
        raise RuntimeError(f"benchmark audit failed: {failed}")
    lines: list[Line] = [
        Line(role, "preflight", build_command_line(PREFLIGHT.shell))
        for role in ("host", "container")
    ]
    seen = {(ln.role, ln.executed) for ln in lines}
    for probe in run.probes:
        for rec in probe.records:
            if (
                rec.error is None and (rec.target, rec.executed) not in seen
            ):  # ran (not skipped as needs-root)
                seen.add((rec.target, rec.executed))
                lines.append(Line(rec.target, rec.command_id, rec.executed))
    return elapsed, lines


def baseline_a(server: SshdServer, lines: list[Line], sample: int | None = None) -> float:
    """What an operator's script does: one OpenSSH client process per command, sequentially.

    `sample` (quick mode): run only the first lines and scale to all of them (labelled as such).
    """
    chosen = lines[:sample] if sample else lines
    base = [
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
    t0 = time.perf_counter()
    for ln in chosen:
        subprocess.run(
            [*base, ln.executed],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=60,
        )
    return (time.perf_counter() - t0) * len(lines) / len(chosen)


async def baseline_b(server: SshdServer, lines: list[Line]) -> tuple[float, float, float, str]:
    """One asyncssh connection per target, one command at a time: (wall, connect, slowest, its id)."""
    import asyncssh

    t0 = time.perf_counter()
    connects, slowest, slowest_id = [], 0.0, ""
    for role in ("host", "container"):
        c0 = time.perf_counter()
        conn = await asyncssh.connect(
            "127.0.0.1",
            port=server.port,
            username=server.user,
            known_hosts=server.known_hosts,
            client_keys=[server.client_key],
            config=None,
            agent_path=None,
        )
        connects.append(time.perf_counter() - c0)
        async with conn:
            for ln in (x for x in lines if x.role == role):
                s0 = time.perf_counter()
                await conn.run(ln.executed, encoding=None, stdin=asyncssh.DEVNULL)
                took = time.perf_counter() - s0
                if took > slowest:
                    slowest, slowest_id = took, f"{role}:{ln.command_id}"
    return time.perf_counter() - t0, statistics.median(connects), slowest, slowest_id


# Measures one child from a fresh small interpreter: ru_maxrss survives fork+exec, so a child forked by
# this (by then large) benchmark process would report the benchmark's own RSS as its peak.
_LAUNCHER = """import os, subprocess, sys, time
t0 = time.perf_counter()
with open(sys.argv[2], "wb") as out:
    p = subprocess.Popen(sys.argv[3:], stdout=out, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
wall = time.perf_counter() - t0
with open(sys.argv[1], "w") as f:
    f.write(f"{wall} {ru.ru_maxrss} {os.waitstatus_to_exitcode(status)} {ru.ru_utime + ru.ru_stime}")
"""


CHILD_TREE: Path | None = None
"""The source tree run_cli's child imports (None: the installed package)."""
PROFILE_TO: Path | None = None
"""--fleet-profile: run_cli's child runs the CLI under cProfile and writes its stats here (CPU then inflated)."""
_PROFILED = """import cProfile, sys
from gpuaudit.tui.cli import entry
prof = cProfile.Profile()
code = prof.runcall(entry.main, sys.argv[2:])
prof.dump_stats(sys.argv[1])
sys.exit(code)
"""


def run_cli(
    args: list[str], home: Path, stdout: Path | None = None
) -> tuple[float, float, int, float]:
    """Run gpuaudit-tui in a child; (wall s, peak RSS MiB of that child, exit code, its CPU s)."""
    env = dict(os.environ, HOME=str(home))
    env.pop("SSH_AUTH_SOCK", None)
    if CHILD_TREE is not None:  # --fleet-trees: this run's source tree (trees.py)
        env["PYTHONPATH"] = str(CHILD_TREE)
    stats = home / "child-stats"
    subprocess.run(
        [
            sys.executable,
            "-c",
            _LAUNCHER,
            str(stats),
            str(stdout or os.devnull),
            sys.executable,
            *(["-c", _PROFILED, str(PROFILE_TO)] if PROFILE_TO else ["-m", "gpuaudit.tui"]),
            *args,
        ],
        cwd=ROOT,
        env=env,
        check=True,
    )
    wall, rss_kb, code, cpu = stats.read_text().split()
    return float(wall), int(rss_kb) / 1024, int(code), float(cpu)


def machine_busy_s() -> float:
    """CPU seconds all cores spent busy since boot (/proc/stat): sshd and its shells run on this machine too."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def fleet_cli(
    work: Path,
    name: str,
    hosts: list[tuple[int, str]],
    known: Path,
    key: str,
    max_connections: int,
    extra: list[str],
) -> tuple[float, float, int, float, dict]:
    """One `--hosts` audit of loopback sshd ports ((port, user) each): wall, peak RSS (MiB), exit, client CPU
    and the fleet document's summary."""
    inv = work / f"{name}.ini"
    # an Ansible INI inventory with one alias per target: the plain-list inventory names a host by
    # user@host, so targets that differ only by port (every one here) would collapse into one
    inv.write_text(
        "# benchmark fleet: distinct ports of loopback sshd instances\n[bench]\n"
        + "".join(
            f"node{i:04d} ansible_host=127.0.0.1 ansible_port={port} ansible_user={user}\n"
            for i, (port, user) in enumerate(hosts)
        )
    )
    out = work / f"{name}.json"
    wall, rss, code, cpu = run_cli(
        [
            "--hosts",
            str(inv),
            "--json",
            "--fail-on",
            "never",
            "--max-connections",
            str(max_connections),
            "--known-hosts",
            str(known),
            "--identity",
            key,
            *extra,
        ],
        work,
        out,
    )
    # the summary is the document's last key: keep this process small
    summary = json.loads(out.read_text().rsplit('"summary": ', 1)[1][:-2])
    out.unlink()
    return wall, rss, code, cpu, summary


def fleet_run(
    work: Path, specs: list[str], known: Path, key: str, n: int, max_connections: int
) -> dict:
    hosts = [(int(s.rsplit(":", 1)[1]), s.split("@", 1)[0]) for s in specs[:n]]
    busy0 = machine_busy_s()
    wall, rss, code, cpu, summary = fleet_cli(
        work, f"fleet-{n}", hosts, known, key, max_connections, cli_probe_args()
    )
    machine_cpu = machine_busy_s() - busy0
    if summary["targets"] != n:
        raise RuntimeError(f"fleet of {n}: the inventory gave {summary['targets']} target(s)")
    return {
        "n": n,
        "wall_s": wall,
        "rss_mb": rss,
        "exit": code,
        "failed": summary["failed"],
        "client_cpu_s": cpu,
        "machine_cpu_s": machine_cpu,
        "targets": summary["targets"],
        "max_connections": max_connections,
    }


def big_run(work: Path, server: SshdServer, label: str, extra: list[str]) -> dict:
    out = work / f"big-{label}.json"
    wall, rss, code, _ = run_cli(
        [
            "--json",
            "--fail-on",
            "never",
            "--host",
            server.spec,
            "--container",
            server.spec,
            *server.cli_args(),
            *cli_probe_args(),
            *extra,
        ],
        work,
        out,
    )
    doc = json.loads(out.read_text())
    out.unlink()
    from gpuaudit.snapshots.compact import records_of  # the stored shape: each record once

    recs = list(records_of(doc))
    big = [r for r in recs if r["truncated"] or len(r["stdout"]) > 2**20]
    others = [r["duration_s"] or 0.0 for r in recs if r not in big]
    return {
        "label": label,
        "wall_s": wall,
        "rss_mb": rss,
        "exit": code,
        "big_records": len(big),
        "kept_mb": max((len(r["stdout"]) for r in big), default=0) / 2**20,
        "truncated": any(r["truncated"] for r in big),
        "slowest_other_s": max(others, default=0.0),
    }


def startup(runs: int, home: Path) -> dict:
    def timed(args: list[str]) -> float:
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            subprocess.run(
                args,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd=ROOT,
                env=dict(os.environ, HOME=str(home)),
                check=True,
            )
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    exe = shutil.which("gpuaudit-tui")
    cmd = [exe] if exe else [sys.executable, "-m", "gpuaudit.tui"]
    return {
        "help_s": timed([*cmd, "--help"]),
        "json_help_s": timed([*cmd, "--json", "--help"]),
        "command": " ".join(Path(c).name for c in cmd),
    }


# ---------------------------------------------------------------- report

QUICK = False
"""Quick mode has no tool delays: its ratios say nothing about the targets."""


def verdict(ok: bool) -> str:
    if QUICK:
        return "n/a (quick)"
    return "met" if ok else "MISSED"


def report(r: Results, fast: bool) -> str:
    g, a, b, f = r.median("gpuaudit"), r.median("baseline_a"), r.median("baseline_b"), r.floor
    a_note = f" (first {r.a_sample} of {r.lines} lines, scaled)" if r.a_sample else ""
    out = [
        f"gpuaudit benchmark ({r.mode}; medians of {r.runs} run(s); probes: {r.probes}; {r.catalogue} declared commands, "
        f"{r.lines} executed lines over host + container; {r.channels} channels per connection"
        f"{'; launch order OFF' if r.no_launch_order else ''})",
        "Stand-ins: nvidia-smi/lspci/dmidecode/numactl/systemd-detect-virt replay recorded outputs "
        + (
            "WITHOUT delays (quick mode)"
            if fast
            else "after typical durations (nvidia-smi -q 0.8 s, nvidia-smi 0.3 s, "
            "lspci -vvv 0.1 s, dmidecode 0.15 s)"
        )
        + "; see tests/bench/standins/replay.sh",
        "",
        "| measurement | wall (s) | gpuaudit / it | target | verdict |",
        "|---|---:|---:|---|---|",
        f"| gpuaudit full audit | {g:.3f} | 1.00 | | |",
        f"| gpuaudit --no-sessions (one SSH channel per command) | {r.median('channel_per_command'):.3f} | {g / r.median('channel_per_command'):.3f} | | |",
        f"| baseline A: ssh client per command{a_note} | {a:.3f} | {g / a:.3f} | ≥ 5× faster (≤ 0.200) | {verdict(a / g >= TARGETS['baseline_a'])} |",
        f"| baseline B: one asyncssh connection, sequential | {b:.3f} | {g / b:.3f} | ≥ 3× faster (≤ 0.333) | {verdict(b / g >= TARGETS['baseline_b'])} |",
        f"| floor: connect {r.median('connect'):.3f} + slowest {r.median('slowest'):.3f} ({r.slowest_id}) | {f:.3f} | {g / f:.3f} | ≤ 1.5 | {verdict(g / f <= TARGETS['floor'])} |",
        "",
        f"| fleet targets | max-connections | wall (s) | × 1 target | peak RSS (MiB) | client CPU (s) | machine CPU (s, {os.cpu_count()} cores) | unreachable | verdict |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    one = next((x["wall_s"] for x in r.fleet if x["n"] == 1), float("nan"))
    for x in r.fleet:
        ratio = x["wall_s"] / one
        ok = x["n"] != 100 or (
            ratio <= TARGETS["fleet_100"] and x["rss_mb"] <= TARGETS["fleet_rss_mb"]
        )
        out.append(
            f"| {x['n']} | {x['max_connections']} | {x['wall_s']:.2f} | {ratio:.2f} | {x['rss_mb']:.0f} | "
            f"{x['client_cpu_s']:.1f} | {x['machine_cpu_s']:.1f} | {x['failed']} | {verdict(ok) if x['n'] == 100 else ''} |"
        )
    if r.big:
        base = next(x for x in r.big if x["label"] == "normal")
        out += [
            "",
            "| big output (`nvidia-smi -q -x`) | wall (s) | peak RSS (MiB) | RSS over normal | big records | output kept per record (MiB) | truncated | slowest other command (s) |",
            "|---|---:|---:|---:|---:|---:|---|---:|",
        ]
        for x in r.big:
            out.append(
                f"| {x['label']} | {x['wall_s']:.2f} | {x['rss_mb']:.0f} | {x['rss_mb'] - base['rss_mb']:+.0f} | "
                f"{x['big_records']} | {x['kept_mb']:.1f} | {x['truncated']} | {x['slowest_other_s']:.2f} |"
            )
    s = r.startup
    if s:
        out += [
            "",
            f"start-up ({s['command']}): --help {s['help_s']:.3f} s, --json --help {s['json_help_s']:.3f} s "
            f"(target < 0.5 s: {verdict(max(s['help_s'], s['json_help_s']) < TARGETS['help_s'])})",
        ]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- main


async def audit_measurements(
    server: SshdServer, r: Results, runs: int, a_runs: int, a_sample: int | None
) -> None:
    r.catalogue = sum(len(p.commands) for p in selected())
    await gpuaudit_once(server)  # warm-up: imports, sshd's first fork
    lines: list[Line] = []
    for _ in range(runs):
        wall, lines = await gpuaudit_once(server)
        r.gpuaudit.append(wall)
        r.channel_per_command.append(
            (await gpuaudit_once(server, sessions=False))[0]
        )  # --no-sessions, same run
    r.lines = len(lines)
    for i in range(runs):
        wall, conn, slowest, slowest_id = await baseline_b(server, lines)
        r.baseline_b.append(wall)
        r.connect.append(conn)
        r.slowest.append(slowest)
        r.slowest_id = slowest_id
        if i < a_runs:
            r.baseline_a.append(await asyncio.to_thread(baseline_a, server, lines, a_sample))
    r.a_sample = a_sample


def main(argv: list[str] | None = None) -> int:
    global CHILD_TREE, PROFILE_TO
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--quick",
        action="store_true",
        help="1 run, fleet 1 and 10, 5 MB big output, no tool delays",
    )
    p.add_argument(
        "--runs", type=int, default=None, help="audits per measurement (default 5, quick 1)"
    )
    p.add_argument(
        "--fleet",
        default=None,
        help="comma-separated fleet sizes (default 1,10,50,100; quick 1,10)",
    )
    p.add_argument("--max-connections", type=int, default=32)
    p.add_argument(
        "--fleet-tree",
        action="append",
        help="LABEL=REV_OR_DIR: run each fleet size with these trees in turn (trees.py; before/after)",
    )
    p.add_argument(
        "--fleet-profile",
        metavar="DIR",
        help="run each fleet size's CLI under cProfile: DIR/fleet-<tree>-<n>.prof (its CPU is inflated)",
    )
    p.add_argument(
        "--big-mb", type=float, default=None, help="size of the big output (default 50, quick 5)"
    )
    p.add_argument(
        "--probes", help="comma-separated probe subset (default: all; quick: the first three)"
    )
    p.add_argument(
        "--channels",
        type=int,
        default=8,
        help="what-if: channels per connection (sshd MaxSessions = N + 2)",
    )
    p.add_argument(
        "--connections", type=int, default=2, help="SSH connections per target (CLI default 2)"
    )
    p.add_argument(
        "--no-launch-order",
        action="store_true",
        help="before/after: disable the runner's longest-first launch order (in-process audits only)",
    )
    p.add_argument(
        "--skip", default="", help="comma-separated parts to skip: audit,fleet,big,startup"
    )
    p.add_argument("--json-out", help="also write the numbers as JSON")
    args = p.parse_args(argv)
    reason = sshd_available()
    if reason:
        print(f"bench_audit: cannot start sshd: {reason}", file=sys.stderr)
        return 2
    runs = args.runs or (1 if args.quick else 5)
    sizes = [int(x) for x in (args.fleet or ("1,10" if args.quick else "1,10,50,100")).split(",")]
    big_mb = args.big_mb if args.big_mb is not None else (5 if args.quick else 50)
    skip = set(filter(None, args.skip.split(",")))
    fast = args.quick
    global PROBE_IDS, CHANNELS, QUICK, CONNECTIONS
    QUICK = args.quick
    CHANNELS = args.channels
    CONNECTIONS = args.connections
    if args.no_launch_order:
        import gpuaudit.probes.core.run.runner as runner

        runner.launch_rank = lambda shell: (
            0
        )  # every command asks for a channel in declaration order
    if args.probes or args.quick:
        from gpuaudit.probes.catalogue import REGISTRY

        # quick: two probes plus the one that reads `nvidia-smi -q -x` (the big-output scenario needs it)
        xml = [
            p.id
            for p in REGISTRY
            if any(c.shell.startswith("nvidia-smi -q -x") for c in p.commands)
        ]
        PROBE_IDS = (
            args.probes.split(",")
            if args.probes
            else list(dict.fromkeys([p.id for p in REGISTRY[:2]] + xml[:1]))
        )
    r = Results(
        mode="quick" if args.quick else "full",
        runs=runs,
        probes=",".join(PROBE_IDS) if PROBE_IDS else "all",
        channels=CHANNELS,
        no_launch_order=args.no_launch_order,
    )
    work = Path(tempfile.mkdtemp(prefix="gpuaudit-bench-"))
    os.chmod(work, 0o755)
    servers: list[SshdServer] = []
    try:
        standins = prepare_standins(work)
        main_server = bench_sshd(work, "sshd", standins, fast=fast)
        servers.append(main_server)
        if "audit" not in skip:
            asyncio.run(
                audit_measurements(
                    main_server, r, runs, a_runs=min(runs, 3), a_sample=8 if args.quick else None
                )
            )
        if "fleet" not in skip:
            pool, specs, known = fleet_servers(work, standins, max(sizes), fast)
            servers += pool
            fleet_trees = parse_trees(args.fleet_tree) if args.fleet_tree else {None: None}
            for n in sizes:
                for label, tree in fleet_trees.items():
                    CHILD_TREE = tree
                    if args.fleet_profile:
                        Path(args.fleet_profile).mkdir(parents=True, exist_ok=True)
                        PROFILE_TO = Path(args.fleet_profile).resolve() / f"fleet-{label}-{n}.prof"
                    row = fleet_run(work, specs, known, pool[0].client_key, n, args.max_connections)
                    if label is not None:
                        row["tree"] = label
                        print(f"fleet {n} [{label}]: {json.dumps(row)}", flush=True)
                    r.fleet.append(row)
                CHILD_TREE = PROFILE_TO = None
        if "big" not in skip:
            size = int(big_mb * 2**20)
            big_server = bench_sshd(work, "sshd-big", standins, fast=fast, big=f"smi-q-xml:{size}")
            servers.append(big_server)
            r.big.append(big_run(work, main_server, "normal", []))
            r.big.append(big_run(work, big_server, f"{big_mb:g} MB, default cap 8 MiB", []))
            r.big.append(
                big_run(
                    work,
                    big_server,
                    f"{big_mb:g} MB, --max-output 64 MiB",
                    ["--max-output", str(64 * 2**20)],
                )
            )
            r.big.append(
                big_run(
                    work,
                    big_server,
                    f"{big_mb:g} MB, --max-output 64 MiB, --no-sessions",
                    ["--max-output", str(64 * 2**20), "--no-sessions"],
                )
            )
        if "startup" not in skip:
            r.startup = startup(1 if args.quick else 5, work)
    finally:
        leaked = [line for s in servers for line in s.stop()]  # only BENCH_USER's processes
        shutil.rmtree(work, ignore_errors=True)
    sys.stdout.write(report(r, fast))
    if leaked:
        print(f"WARNING: processes left running by the test user: {leaked}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(r.__dict__, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
