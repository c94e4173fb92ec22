"""Where the client's CPU goes in one host + container audit (cProfile), not a test.

    python tests/bench/profile_audit.py [--heavy-rc] [--tool-delays] [--top 25] [--out prof.pstats]

Needs root and /usr/sbin/sshd, like bench_heavy_rc.py (same bench user, stand-ins and loopback sshd). Runs one
warm-up audit, then one audit under cProfile as `--json` runs it (collect, fold, Snapshot, JSON bytes), and
prints the client CPU (process_time) with and without the profiler's overhead, the top functions by own time,
and the cumulative time of the stages the issue names (redaction, parsing/extract, judging, records,
serialisation). The profiler inflates small calls: compare stages within one run, not against other runs.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import os
import pstats
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(BENCH))

from bench_heavy_rc import standin_sshd  # noqa: E402

STAGES = {
    "redaction (redact_text)": ("redact.py", "redact_text"),
    "decode_redacted (runner)": ("runner.py", "redacted_parts"),
    "extract (all probes)": ("extract.py", "extract"),
    "judge_checks": ("checks.py", "judge_checks"),
    "fold_events": ("events.py", "fold_events"),
    "Snapshot.from_run": ("schema.py", "from_run"),
    "roofline_for_run": ("report.py", "roofline_for_run"),
    "JSON bytes (to_json)": ("record.py", "to_json"),
    "records: conversions (__post_init__)": ("record.py", "__post_init__"),
    "model_copy": ("record.py", "model_copy"),
    "model_dump": ("record.py", "model_dump"),
}


async def audit_once(server, timeout_s: float) -> float:
    from gpuaudit.probes.catalogue import REGISTRY
    from gpuaudit.probes.core.collect.targets import parse_container_spec, parse_host_spec
    from gpuaudit.probes.core.run.runner import Audit, AuditOptions
    from gpuaudit.probes.core.run.session import live_bindings
    from gpuaudit.snapshots.schema import Snapshot
    from gpuaudit.tui.cli.headless import collect
    from gpuaudit.tui.cli.session_setup import AuditSetup

    t0 = time.perf_counter()
    hs = parse_host_spec(server.spec)
    cs = parse_container_spec(server.spec, host=hs)
    audit = Audit(
        live_bindings(hs, cs, server.options(connections=2)),
        list(REGISTRY),
        AuditOptions(timeout_s=timeout_s),
    )
    run = await collect(AuditSetup(audit, "live"))
    snap = Snapshot.from_run(run)
    snap.to_json(indent=2)
    return time.perf_counter() - t0


def stage_times(stats: pstats.Stats) -> dict[str, float]:
    out: dict[str, float] = {}
    for label, (fname, func) in STAGES.items():
        total = 0.0
        for (file, _line, name), (_cc, _nc, _tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
            if name == func and file.endswith(fname):
                total += ct
        out[label] = total
    return out


def cli_once(
    server, home: Path, timeout_s: float, profile: str | None = None
) -> tuple[float, float]:
    """`gpuaudit-tui --json --host S --container S` in a child: (wall s, the child's CPU s, imports included)."""
    import resource
    import subprocess

    pre = [sys.executable, "-m", "cProfile", "-o", profile] if profile else [sys.executable]
    args = [*pre, "-m", "gpuaudit.tui", "--json", "--fail-on", "never", "--timeout", str(timeout_s)]
    args += ["--host", server.spec, "--container", server.spec, *server.cli_args()]
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    env = dict(os.environ, HOME=str(home))
    env.pop("SSH_AUTH_SOCK", None)
    subprocess.run(args, stdout=subprocess.DEVNULL, cwd=ROOT, env=env, check=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return round(wall, 3), round((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), 3)


def group_of(file: str, name: str) -> str:
    """Which part of the client a profiled function belongs to (for the hotspot table)."""
    if "asyncssh" in file or "cryptography" in file or "_socket" in name or "tag" in name:
        return "asyncssh: packets, chacha20-poly1305, socket"
    if "ciphers" in name:
        return "asyncssh: packets, chacha20-poly1305, socket"
    if "asyncio" in file or "selectors" in file or "_contextvars" in name:
        return "asyncio event loop (tasks, callbacks)"
    if "redact" in file or "re.Pattern" in name or "/re/" in file:
        return "redaction (regexes over every output)"
    if "/parsers/" in file or "extract" in file or "xml" in file or "ElementTree" in name:
        return "parsing / extract"
    if "pydantic" in file or "pydantic" in name or "record.py" in file or "dataclasses" in file:
        return "records (dataclasses, copies, JSON)"
    if "worker_transport" in file or "session_channels" in file or "worker.py" in file:
        return "worker session protocol (JSON frames)"
    if "/json/" in file:
        return "worker session protocol (JSON frames)"
    if "/judge/" in file or "events.py" in file:
        return "judging + event fold"
    if "/work/" in file or "gpuaudit" in file:
        return "other project code"
    return "other (builtins, stdlib)"


def groups(stats: pstats.Stats) -> list[tuple[str, float]]:
    out: dict[str, float] = {}
    for (file, _line, name), (_cc, _nc, tt, _ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        key = group_of(file, name)
        out[key] = out.get(key, 0.0) + tt
    return sorted(out.items(), key=lambda kv: -kv[1])


IMPORTS = (
    "import gpuaudit.tui.cli.headless, gpuaudit.probes.catalogue, gpuaudit.probes.core.run.session, "
    "gpuaudit.probes.core.collect.ssh_transport, gpuaudit.probes.core.collect.worker_transport, asyncssh"
)


def imports_once() -> tuple[float, float]:
    """What the CLI's audit path imports, alone in a child: (wall s, CPU s)."""
    import resource
    import subprocess

    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", IMPORTS], cwd="/", check=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return round(wall, 3), round((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), 3)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--heavy-rc", action="store_true")
    p.add_argument("--tool-delays", action="store_true")
    p.add_argument("--timeout", type=float, default=8.0)
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--runs", type=int, default=3, help="unprofiled runs for the plain CPU figure")
    p.add_argument("--out", help="write the pstats file here")
    p.add_argument(
        "--cli", action="store_true", help="also time the CLI in a child (imports included)"
    )
    args = p.parse_args(argv)
    work, home, server = standin_sshd("gpuaudit-prof-", args.heavy_rc, not args.tool_delays)
    try:
        asyncio.run(audit_once(server, args.timeout))  # warm-up: imports, caches
        cpus = []
        for _ in range(args.runs):
            c0 = time.process_time()
            asyncio.run(audit_once(server, args.timeout))
            cpus.append(time.process_time() - c0)
        prof = cProfile.Profile(time.process_time)
        c0 = time.process_time()
        prof.enable()
        wall = asyncio.run(audit_once(server, args.timeout))
        prof.disable()
        cpu_prof = time.process_time() - c0
        if args.cli:
            home = work / "home"
            home.mkdir(exist_ok=True)
            cli = sorted(cli_once(server, home, args.timeout) for _ in range(args.runs))
            print(f"CLI --json audit in a child (wall s, CPU s incl. start-up): {cli}")
            print(
                f"imports alone in a child (wall s, CPU s): {sorted(imports_once() for _ in range(3))}"
            )
            cli_once(server, home, args.timeout, profile=str(work / "cli.pstats"))
            buf = io.StringIO()
            pstats.Stats(str(work / "cli.pstats"), stream=buf).sort_stats("cumulative").print_stats(
                25
            )
            print(buf.getvalue())
    finally:
        server.stop()
        (home / ".bashrc").write_text("")
    cpus.sort()
    print(
        f"client CPU per audit (no profiler): median {cpus[len(cpus) // 2]:.3f} s of {cpus}; "
        f"under cProfile {cpu_prof:.3f} s (wall {wall:.2f} s); load {os.getloadavg()}"
    )
    if args.out:
        prof.dump_stats(args.out)
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    stats.sort_stats("tottime").print_stats(args.top)
    print(buf.getvalue())
    print("hotspots: own time per part of the client (under the profiler):")
    total = sum(t for _, t in groups(stats)) or 1.0
    for label, t in groups(stats):
        print(f"  {label:46s} {t:7.3f} s  ({t / total:5.1%})")
    print("stage (cumulative, under the profiler):")
    for label, t in stage_times(stats).items():
        print(f"  {label:34s} {t:7.3f} s  ({t / cpu_prof:5.1%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
