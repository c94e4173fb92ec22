"""Where the wall time of one host + container audit goes: a timeline of its events (not a test).

    python tests/bench/timeline_audit.py [--heavy-rc] [--no-tool-delays] [--runs 2] [--cli] [--pct] [--all]

Needs root and /usr/sbin/sshd (bench_heavy_rc.py's bench user, stand-ins and loopback sshd). Runs the audit
in-process (imports done first, so the timeline is the audit's own) and prints, in seconds from the start:
each target's connect and preflight, the first and last command start, the slowest commands with their own
durations, each probe's end and the audit's end; then the floor measured right after (asyncssh connect + one
login running `exec true` + the slowest command), so the gap to the floor shows where it is. `--cli`: the same for the CLI (`gpuaudit-tui --json --host S
--container S`) in a child, from the interpreter's start: imports, each connect, the audit, the JSON, the exit.
`--pct`: the container is `pct:101`, entered through the host's login by bench_heavy_rc.py's stand-in `pct` (~0.4 s
of CPU a call), the case study's layout; the in-process timeline then also prints the waves of the hang-prone
tool's calls (nvidia-smi) on both targets, which share one driver and its slots.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(BENCH))

from bench_heavy_rc import PCT_STANDIN, floor_parts, standin_sshd  # noqa: E402


async def timeline(
    server, timeout_s: float, container: str | None = None
) -> tuple[float, list[tuple[float, str]], list]:
    from gpuaudit.probes.catalogue import REGISTRY
    from gpuaudit.probes.core.collect.targets import parse_container_spec, parse_host_spec
    from gpuaudit.probes.core.run.runner import Audit, AuditOptions
    from gpuaudit.probes.core.run.session import live_bindings

    hs = parse_host_spec(server.spec)
    cs = parse_container_spec(container or server.spec, host=hs)
    audit = Audit(
        live_bindings(hs, cs, server.options(connections=2)),
        list(REGISTRY),
        AuditOptions(timeout_s=timeout_s),
    )
    marks: list[tuple[float, str]] = []
    records = []
    t0 = time.monotonic()
    for b in audit.bindings.values():
        connect = b.transport.connect

        async def timed(connect=connect, role=b.target.role) -> None:
            await connect()
            marks.append((time.monotonic() - t0, f"{role}: transport connected"))

        b.transport.connect = timed  # type: ignore[method-assign]
    started = 0
    try:
        async for e in audit.events():
            now = time.monotonic() - t0
            kind = type(e).__name__
            if kind == "CommandStarted":
                started += 1
                if started == 1:
                    marks.append((now, "first command started"))
                continue
            if kind == "CommandFinished":
                records.append((now, e.record))
                continue
            if kind in ("ProbeStarted", "TargetExecuted"):
                continue
            what = getattr(e, "role", None) or getattr(getattr(e, "result", None), "probe_id", "")
            marks.append((now, f"{kind} {what}"))
    finally:
        await audit.aclose()
    return time.monotonic() - t0, marks, records


CLI_WRAPPER = """
import os, sys, time
T0 = time.monotonic()
out = sys.stderr
def mark(what):
    out.write(f"@@ {time.monotonic() - T0:.3f} {time.process_time():.3f} {what}\\n")
mark("interpreter started")
try:
    from gpuaudit.tui.cli import code_cache
    code_cache.install()  # what entry.main() does without argv
except ImportError:  # a tree from before the cache
    pass
from gpuaudit.tui.cli import entry
mark("entry imported (argparse)")
from gpuaudit.tui.cli import commands  # what entry.main imports next; headless.py is left to the CLI itself
mark("commands imported (targets, the request: no pydantic)")
real_early, real_headless = commands._early, commands._headless
def _early(request):
    early = real_early(request)
    mark("early start begun (asyncssh imported)")
    def hook():
        for role, transport in early.transports.items():
            begun = getattr(transport, "_begun", None)
            if begun is not None:
                begun.add_done_callback(lambda f, r=role: mark(f"{r} connected and logged in (early)"))
    if early is not None:
        early.loop.call_soon_threadsafe(hook)
    return early
def _headless():
    headless = real_headless()
    mark("headless imported (the catalogue, the engine)")
    real_run_to_end, real_outputs = headless.run_to_end, headless.outputs
    async def run_to_end(audit, on_event=None, **kw):
        seen = set()
        def hooked(event):
            kind = type(event).__name__
            if kind in ("TargetConnected", "AuditFinished") or (kind == "CommandStarted" and kind not in seen):
                mark(kind + ("" if kind != "TargetConnected" else " " + event.role))
            seen.add(kind)
            if on_event is not None:
                on_event(event)
        mark("audit begins")
        return await real_run_to_end(audit, on_event=hooked, **kw)
    def outputs():
        mark("outputs begin (snapshot, JSON)")
        return real_outputs()
    headless.run_to_end, headless.outputs = run_to_end, outputs
    return headless
commands._early, commands._headless = _early, _headless
code = entry.main(sys.argv[1:])
import resource
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
mark(f"main returned (child processes' CPU {kids.ru_utime + kids.ru_stime:.3f} s)")
entry.exit_now(code)  # what main() does without argv
"""


def tool_waves(records: list, tool: str = "nvidia-smi", gap_s: float = 0.05) -> list[str]:
    """Each target's calls of `tool` grouped by start (a new wave when a start comes `gap_s` after the previous
    one): when they started, how many, when the wave's last one ended."""
    lines = []
    for role in sorted({r.target for _, r in records}):
        calls = sorted(  # a line two probes declare ran once: one call, a record in each probe
            {
                r.command_id: (at - (r.duration_s or 0.0), at)
                for at, r in records
                if r.target == role and tool in (r.command or "")
            }.values()
        )
        waves: list[list[tuple[float, float]]] = []
        for start, end in calls:
            if waves and start - waves[-1][-1][0] <= gap_s:
                waves[-1].append((start, end))
            else:
                waves.append([(start, end)])
        text = ", ".join(f"{w[0][0]:.2f}: {len(w)} (to {max(e for _, e in w):.2f})" for w in waves)
        lines.append(f"  {role:9s} {len(calls)} {tool} calls, waves (start: n (last end)): {text}")
    return lines


def cli_timeline(server, home: Path, timeout_s: float, container: str | None = None) -> list[str]:
    import subprocess

    from bench_table import audit_args, client_env

    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", CLI_WRAPPER, *audit_args(server, timeout_s, container)],
        env=client_env(home),
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    marks = [ln[3:] for ln in proc.stderr.splitlines() if ln.startswith("@@ ")]
    return [*marks, f"{time.monotonic() - t0:.3f} - process exited (wall seen by the parent)"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--heavy-rc", action="store_true")
    ap.add_argument("--no-tool-delays", action="store_true")
    ap.add_argument("--timeout", type=float, default=8.0)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--cli", action="store_true", help="the CLI in a child, from its start")
    ap.add_argument("--all", action="store_true", help="every command: start, finish, duration")
    ap.add_argument("--pct", action="store_true", help="the container as pct:101 (stand-in pct)")
    args = ap.parse_args(argv)
    work, home, server = standin_sshd("gpuaudit-timeline-", args.heavy_rc, args.no_tool_delays)
    container = None
    if args.pct:
        pct = work / "standins" / "pct"
        pct.write_text(PCT_STANDIN)
        pct.chmod(0o755)
        container = "pct:101"
    try:
        if args.cli:
            client_home = work / "home"
            client_home.mkdir()
            for i in range(args.runs):
                marks = cli_timeline(server, client_home, args.timeout, container)
                connect, login = asyncio.run(floor_parts(server))
                print(
                    f"\nCLI run {i + 1} (s from start, CPU s): floor parts connect {connect:.2f} "
                    f"+ login {login:.2f}; load {os.getloadavg()[0]:.1f}"
                )
                for m in marks:
                    print("  " + m)
            return 0
        for i in range(args.runs):
            wall, marks, records = asyncio.run(timeline(server, args.timeout, container))
            connect, login = asyncio.run(floor_parts(server))
            ok = [r for _, r in records if not r.timed_out]
            slowest = max((r.duration_s or 0.0 for r in ok), default=0.0)
            floor = connect + login + slowest
            print(
                f"\nrun {i + 1}: wall {wall:.2f} s, floor {floor:.2f} s ({wall / floor:.2f}x): "
                f"connect {connect:.2f} + login {login:.2f} + slowest {slowest:.2f}; "
                f"load {os.getloadavg()[0]:.1f}"
            )
            for at, what in marks:
                print(f"  {at:6.2f}  {what}")
            print("  slowest commands (finished at, own duration):")
            for at, r in sorted(records, key=lambda x: -(x[1].duration_s or 0))[:6]:
                print(f"  {at:6.2f}  {r.duration_s or 0:5.2f}  {r.target:9s} {r.command_id}")
            if args.pct:
                print("\n".join(tool_waves(records)))
            last = sorted(records, key=lambda x: x[0])[-6:]
            if args.all:
                print("  every command (started at, finished at, duration), by start:")
                for at, r in sorted(records, key=lambda x: x[0] - (x[1].duration_s or 0)):
                    d = r.duration_s or 0
                    print(f"  {at - d:6.2f}  {at:6.2f}  {d:5.2f}  {r.target:9s} {r.command_id}")
            print("  last to finish (finished at, started at = finished - own duration, duration):")
            for at, r in last:
                d = r.duration_s or 0
                print(f"  {at:6.2f}  {at - d:6.2f}  {d:5.2f}  {r.target:9s} {r.command_id}")
    finally:
        server.stop()
        (home / ".bashrc").write_text("")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
