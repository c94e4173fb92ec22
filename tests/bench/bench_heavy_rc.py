"""A realistic login shell: every SSH command pays a ~0.3 s CPU-burning ~/.bashrc (like conda/pyenv init).

    python tests/bench/bench_heavy_rc.py [--timeout 4] [--busy] [--runs 1] [--pct]

Needs root and /usr/sbin/sshd. A bench user with bash as login shell gets a ~/.bashrc that burns ~0.3 s of CPU
(a shell loop, not `sleep`), and, like Debian's and Proxmox's root .bashrc, has no non-interactive guard.
The sshd's PATH starts with the recorded-output stand-ins of bench_audit.py (no GPU here) and, with --pct,
a stand-in `pct` that burns ~0.4 s of CPU before it runs `pct exec ID -- CMD` as CMD (a Perl program on Proxmox).
--busy keeps every core busy with CPU burners during the audit (the "loaded 2-core box" of issue 13).

Prints: wall time, SSH sessions opened (sshd's log), commands reported timed out (and how many of those are
quick reads such as `cat`/`grep`), and critical findings (with no NVIDIA hardware, each one is false).
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
from sshd_server import ensure_user, start_sshd

RC_USER = "gpuaudit-bench-rc"
HEAVY_RC = 'i=0; while [ "$i" -lt 60000 ]; do i=$((i+1)); done  # ~0.3 s of CPU, like conda/pyenv init\n'
PCT_STANDIN = """#!/bin/bash
# stand-in for Proxmox's `pct exec ID -- CMD...` (a Perl program: ~0.4 s of CPU per call), then runs CMD here
i=0; while [ "$i" -lt 80000 ]; do i=$((i+1)); done
[ "$1" = exec ] || { echo "pct stand-in: only 'exec' is supported" >&2; exit 2; }
shift 2; [ "$1" = -- ] && shift
exec "$@"
"""
QUICK = ("cat ", "grep ", "ls ", "readlink", "uname", "test ", "id ")


def setup_user(heavy: bool) -> Path:
    ensure_user(RC_USER, shell="/bin/bash")
    subprocess.run(["usermod", "-s", "/bin/bash", RC_USER], check=True)
    home = Path(os.path.expanduser(f"~{RC_USER}"))
    (home / ".bashrc").write_text(HEAVY_RC if heavy else "")
    return home


def burners(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(n)]


async def audit(server, container: str | None, timeout_s: float) -> tuple[float, object]:
    from gpuaudit.probes import REGISTRY
    from gpuaudit.probes.core.events import fold_events, initial_run
    from gpuaudit.probes.core.runner import Audit, AuditOptions
    from gpuaudit.probes.core.session import live_bindings
    from gpuaudit.probes.core.targets import parse_container_spec, parse_host_spec

    hs = parse_host_spec(server.spec)
    cs = parse_container_spec(container, host=hs) if container else None
    a = Audit(live_bindings(hs, cs, server.options(connections=2)), list(REGISTRY), AuditOptions(timeout_s=timeout_s))
    t0 = time.monotonic()
    try:
        events = [e async for e in a.events()]
    finally:
        await a.aclose()
    wall = time.monotonic() - t0
    return wall, fold_events(initial_run(a.targets, [(p.id, p.title) for p in a.probes]), events)


def summarize(label: str, wall: float, run, sessions: int) -> dict:
    recs = [r for p in run.probes for r in p.records]
    timed = [r for r in recs if r.timed_out]
    quick = [r for r in timed if r.command.startswith(QUICK)]
    crit = sorted({f.id for f in run.findings if f.severity.value == "critical"})
    row = {"mode": label, "wall_s": round(wall, 2), "ssh_sessions": sessions, "records": len(recs),
           "timed_out": len(timed), "quick_reads_timed_out": len(quick), "criticals": crit, "timed_out_ids": sorted({r.command_id for r in timed})[:12],
           "median_duration_s": round(sorted(r.duration_s for r in recs)[len(recs) // 2], 3) if recs else None}
    print(json.dumps(row))
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--timeout", type=float, default=4.0)
    p.add_argument("--busy", action="store_true", help="burn every core during the audit")
    p.add_argument("--clean-rc", action="store_true", help="an empty ~/.bashrc instead of the heavy one")
    p.add_argument("--pct", action="store_true", help="container as pct:101 through the stand-in pct")
    p.add_argument("--runs", type=int, default=1)
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="gpuaudit-bench-rc-"))
    os.chmod(work, 0o755)
    standins = prepare_standins(work)
    if args.pct:
        (standins / "pct").write_text(PCT_STANDIN)
        (standins / "pct").chmod(0o755)
    home = setup_user(heavy=not args.clean_rc)
    server = start_sshd(work / "sshd", user=RC_USER, max_sessions=10,
                        extra_config=f"SetEnv PATH={standins}:/usr/local/bin:/usr/bin:/bin GPUAUDIT_BENCH_FAST=1")
    burn = burners(os.cpu_count() or 2) if args.busy else []
    try:
        for _ in range(args.runs):
            before = server.log.count("Starting session")
            wall, run = asyncio.run(audit(server, "pct:101" if args.pct else server.spec, args.timeout))
            sessions = server.log.count("Starting session") - before
            label = f"{'clean' if args.clean_rc else 'heavy'} rc{' + pct' if args.pct else ''}{', cores busy' if args.busy else ''}"
            summarize(label, wall, run, sessions)
    finally:
        for b in burn:
            b.kill()
        server.stop()
        (home / ".bashrc").write_text("")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
