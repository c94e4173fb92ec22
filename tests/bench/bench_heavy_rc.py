"""A realistic login shell: every SSH command pays a ~0.3 s CPU-burning ~/.bashrc (like conda/pyenv init).

    python tests/bench/bench_heavy_rc.py [--timeout 4] [--busy] [--runs 1] [--pct] [--clean-rc] [--no-loop]

Needs root and /usr/sbin/sshd. A bench user with bash as login shell gets a ~/.bashrc that burns ~0.3 s of CPU
(a shell loop, not `sleep`), and, like Debian's and Proxmox's root .bashrc, has no non-interactive guard.
The sshd's PATH starts with the recorded-output stand-ins of bench_audit.py (no GPU here) and, with --pct,
a stand-in `pct` that burns ~0.4 s of CPU before it runs `pct exec ID -- CMD` as CMD (a Perl program on Proxmox).
--busy keeps every core busy with CPU burners during the audit (the "loaded 2-core box" of issue 13).

Each mode runs the audit with worker sessions and with --no-sessions (one channel per command). Prints per run:
wall time, SSH sessions opened (sshd's log), commands reported timed out (and how many of those are quick reads
such as `cat`/`grep`), critical findings (with no NVIDIA hardware, each one is false); then the floor (asyncssh
connect + one login shell running `exec true` + the slowest command of the audit), the ratio against it, with
--pct the ratio against the same audit through a free stand-in pct, and the OpenSSH loop (one `ssh` client per
executed line, in turn) with the ratio against it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(BENCH))

from bench_audit import prepare_standins
from sshd_server import SshdServer, ensure_user, start_sshd

RC_USER = "gpuaudit-bench-rc"
HEAVY_RC = (
    'i=0; while [ "$i" -lt 60000 ]; do i=$((i+1)); done  # ~0.3 s of CPU, like conda/pyenv init\n'
)
PCT_STANDIN = """#!/bin/bash
# stand-in for Proxmox's `pct exec ID -- CMD...` (a Perl program: ~0.4 s of CPU per call), then runs CMD here
i=0; while [ "$i" -lt 80000 ]; do i=$((i+1)); done
[ "$1" = exec ] || { echo "pct stand-in: only 'exec' is supported" >&2; exit 2; }
shift 2; [ "$1" = -- ] && shift
exec "$@"
"""
CLIENT_CPU = 0.0
"""CPU seconds the audit took in this process (the client shares the 2 cores with the target on loopback)."""
QUICK = ("cat ", "grep ", "ls ", "readlink", "uname", "test ", "id ")


def setup_user(heavy: bool) -> Path:
    ensure_user(RC_USER, shell="/bin/bash")
    subprocess.run(["usermod", "-s", "/bin/bash", RC_USER], check=True)
    home = Path(os.path.expanduser(f"~{RC_USER}"))
    (home / ".bashrc").write_text(HEAVY_RC if heavy else "")
    return home


def standin_sshd(prefix: str, heavy: bool, fast: bool) -> tuple[Path, Path, SshdServer]:
    """A work folder, the stand-in tools, RC_USER (heavy or clean rc) and an sshd whose PATH finds the stand-ins
    first (GPUAUDIT_BENCH_FAST=1: without the real tools' typical durations): what each bench script sets up."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(work, 0o755)
    standins = prepare_standins(work)
    home = setup_user(heavy=heavy)
    path = f"{standins}:/usr/local/bin:/usr/bin:/bin" + (" GPUAUDIT_BENCH_FAST=1" if fast else "")
    server = start_sshd(
        work / "sshd", user=RC_USER, max_sessions=10, extra_config=f"SetEnv PATH={path}"
    )
    return work, home, server


def burners(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(n)]


async def audit(
    server, container: str | None, timeout_s: float, sessions: bool = True
) -> tuple[float, object]:
    from gpuaudit.probes.catalogue import REGISTRY
    from gpuaudit.probes.core.collect.targets import parse_container_spec, parse_host_spec
    from gpuaudit.probes.core.run.events import fold_events, initial_run
    from gpuaudit.probes.core.run.runner import Audit, AuditOptions
    from gpuaudit.probes.core.run.session import live_bindings

    hs = parse_host_spec(server.spec)
    cs = parse_container_spec(container, host=hs) if container else None
    a = Audit(
        live_bindings(hs, cs, server.options(connections=2, sessions=sessions)),
        list(REGISTRY),
        AuditOptions(timeout_s=timeout_s),
    )
    t0, c0 = time.monotonic(), time.process_time()
    try:
        events = [e async for e in a.events()]
    finally:
        await a.aclose()
    wall = time.monotonic() - t0
    global CLIENT_CPU
    CLIENT_CPU = time.process_time() - c0
    return wall, fold_events(initial_run(a.targets, [(p.id, p.title) for p in a.probes]), events)


def summarize(label: str, wall: float, run, sessions: int) -> dict:
    recs = [r for p in run.probes for r in p.records]
    timed = [r for r in recs if r.timed_out]
    quick = [r for r in timed if r.command.startswith(QUICK)]
    crit = sorted({f.id for f in run.findings if f.severity.value == "critical"})
    row = {
        "mode": label,
        "wall_s": round(wall, 2),
        "client_cpu_s": round(CLIENT_CPU, 2),
        "ssh_sessions": sessions,
        "targets": len(run.targets),
        "records": len(recs),
        "timed_out": len(timed),
        "quick_reads_timed_out": len(quick),
        "criticals": crit,
        "timed_out_ids": sorted({r.command_id for r in timed})[:12],
        "slowest_s": round(max((r.duration_s for r in recs if not r.timed_out), default=0.0), 3),
        "median_duration_s": round(sorted(r.duration_s for r in recs)[len(recs) // 2], 3)
        if recs
        else None,
    }
    print(json.dumps(row), flush=True)
    return row


async def floor_parts(server, line: str = "exec true") -> tuple[float, float]:
    """(connect, one login shell running `line`): an asyncssh connect, then one channel that runs `line` (by
    default `exec true`: the login alone; bench_table.py runs the audit's slowest command in it)."""
    import asyncssh

    t0 = time.monotonic()
    conn = await asyncssh.connect(
        "127.0.0.1",
        port=server.port,
        username=server.user,
        known_hosts=server.known_hosts,
        client_keys=[server.client_key],
        config=None,
        agent_path=None,
    )
    connect = time.monotonic() - t0
    async with conn:
        t1 = time.monotonic()
        await conn.run(line, stdin=asyncssh.DEVNULL)
        rc = time.monotonic() - t1
    return connect, rc


def openssh_loop(server, run) -> tuple[float, int]:
    """An operator's script: one `ssh` client per executed line (the channel-per-command run's lines), in turn."""
    lines = []
    for p in run.probes:
        for r in p.records:
            if r.exit_status is not None and (r.target, r.executed) not in {
                (t, x) for t, x in lines
            }:
                lines.append((r.target, r.executed))
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
    t0 = time.monotonic()
    for _, line in lines:
        subprocess.run(
            [*base, line],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=120,
            check=False,
        )
    return time.monotonic() - t0, len(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--timeout", type=float, default=4.0)
    p.add_argument("--busy", action="store_true", help="burn every core during the audit")
    p.add_argument(
        "--clean-rc", action="store_true", help="an empty ~/.bashrc instead of the heavy one"
    )
    p.add_argument(
        "--pct",
        action="store_true",
        help="container as pct:101 through the stand-in pct (and a free one)",
    )
    p.add_argument(
        "--no-loop",
        action="store_true",
        help="skip the OpenSSH loop baseline (slow with the heavy rc)",
    )
    p.add_argument(
        "--tool-delays",
        action="store_true",
        help="the stand-ins take the real tools' typical durations (nvidia-smi -q 0.8 s...); default: none",
    )
    p.add_argument("--runs", type=int, default=1)
    args = p.parse_args(argv)
    fast = "" if args.tool_delays else " GPUAUDIT_BENCH_FAST=1"
    work = Path(tempfile.mkdtemp(prefix="gpuaudit-bench-rc-"))
    os.chmod(work, 0o755)
    standins = prepare_standins(work)
    free_pct = work / "free-pct"
    free_pct.mkdir()
    os.chmod(free_pct, 0o755)
    (free_pct / "pct").write_text(
        PCT_STANDIN.replace('i=0; while [ "$i" -lt 80000 ]; do i=$((i+1)); done', ":")
    )
    (free_pct / "pct").chmod(0o755)
    (standins / "pct").write_text(PCT_STANDIN)
    (standins / "pct").chmod(0o755)
    home = setup_user(heavy=not args.clean_rc)
    rc_label = ("clean rc" if args.clean_rc else "heavy rc") + (
        ", tool delays" if args.tool_delays else ""
    )
    path = f"{standins}:/usr/local/bin:/usr/bin:/bin"
    server = start_sshd(
        work / "sshd", user=RC_USER, max_sessions=10, extra_config=f"SetEnv PATH={path}{fast}"
    )
    free = (
        start_sshd(
            work / "sshd-free",
            user=RC_USER,
            max_sessions=10,
            extra_config=f"SetEnv PATH={free_pct}:{path}{fast}",
        )
        if args.pct
        else None
    )
    burn = burners(os.cpu_count() or 2) if args.busy else []
    rows: dict[str, dict] = {}
    try:
        for _ in range(args.runs):
            for sessions in (True, False):
                for srv, pct in (
                    ((server, args.pct), (free, True)) if args.pct else ((server, False),)
                ):
                    if srv is None or (srv is free and not sessions):
                        continue
                    before = srv.log.count("Starting session")
                    wall, run = asyncio.run(
                        audit(srv, "pct:101" if pct else srv.spec, args.timeout, sessions)
                    )
                    label = (
                        f"{rc_label}{' + pct' if pct else ''}{' (pct free)' if srv is free else ''}"
                        f"{', cores busy' if args.busy else ''}, {'sessions' if sessions else 'channel per command'}"
                    )
                    rows[label] = summarize(
                        label, wall, run, srv.log.count("Starting session") - before
                    )
                    rows[label]["_run"] = run
        connect, rc = asyncio.run(floor_parts(server))
        main_label = next(iter(rows))
        slowest = rows[main_label]["slowest_s"]
        floor = connect + rc + slowest
        print(
            json.dumps(
                {
                    "floor_s": round(floor, 3),
                    "connect_s": round(connect, 3),
                    "one_login_s": round(rc, 3),
                    "slowest_command_s": slowest,
                }
            ),
            flush=True,
        )
        sess, per_cmd = (
            rows[main_label],
            next(r for k, r in rows.items() if "channel per command" in k),
        )
        print(
            f"{main_label}: {sess['wall_s']} s = {sess['wall_s'] / floor:.2f}x the floor "
            f"({sess['ssh_sessions']} SSH sessions for {sess['targets']} targets); "
            f"channel per command {per_cmd['wall_s']} s ({per_cmd['ssh_sessions']} SSH sessions)",
            flush=True,
        )
        if args.pct:
            free_row = next(r for k, r in rows.items() if "(pct free)" in k)
            print(
                f"pct:101 through the stand-in pct: {sess['wall_s']} s = {sess['wall_s'] / free_row['wall_s']:.2f}x the "
                f"same audit with a free pct ({free_row['wall_s']} s)",
                flush=True,
            )
        if not args.no_loop:
            loop, n = openssh_loop(server, per_cmd["_run"])
            print(
                json.dumps(
                    {
                        "openssh_loop_s": round(loop, 2),
                        "lines": n,
                        "sessions_vs_loop": round(sess["wall_s"] / loop, 3),
                    }
                ),
                flush=True,
            )
    finally:
        for b in burn:
            b.kill()
        server.stop()
        if free is not None:
            free.stop()
        (home / ".bashrc").write_text("")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
