"""First paint: from the interpreter's start to the dashboard's first frame, in a child process. Not a test.

    python tests/bench/bench_first_paint.py [--rounds 5]

Each round starts a fresh `python` that runs what `gpuaudit-tui` runs for the TUI (tui/app.py run_app: build the
setup, make the app) headless under Textual's Pilot (`run_test`, 120x40), and reports the seconds from the process's
own start (time.perf_counter at its first line, plus the interpreter's start-up measured apart with `python -c
pass`) to the first refresh after the dashboard mounted. Sources: `--demo`, `--replay` of the case study, and a live
audit of this machine (no SSH); for the live one it also says how many probes had finished at that moment (the
dashboard must paint before the audit's records arrive). A terminal adds its own drawing time; this is the app's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AFTER = ROOT / "snapshots" / "examples" / "case-study-after.json"

CHILD = """
import time
t0 = time.perf_counter()
import asyncio, json, sys
from gpuaudit.probes.core.run.request import AuditRequest
from gpuaudit.tui.app import make_app
from gpuaudit.tui.cli.session_setup import build_setup

request = AuditRequest(**json.loads(sys.argv[1]))
setup = build_setup(request)
app = make_app(setup.audit, note=setup.note, mode=setup.mode, replay_file=setup.source)
t_import = time.perf_counter() - t0


async def main():
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        painted = time.perf_counter() - t0
        done = sum(1 for p in app.audit_run.probes if p.status in ("done", "failed", "skipped"))
        print(json.dumps({"paint": painted, "imports_setup": t_import, "probes_done": done,
                          "probes": len(app.audit_run.probes)}))
        app.exit()


asyncio.run(main())
"""


def child(request: dict) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(request)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=dict(os.environ, HOME=os.environ.get("HOME", "/root")),
    )
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("{")), None)
    if line is None:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(line)


def interpreter() -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    sources = {
        "--demo": {"demo": True},
        "--replay case study": {"replay": str(AFTER)},
        "live (this machine)": {},
    }
    rows: dict[str, list[dict]] = {k: [] for k in sources}
    starts: list[float] = []
    print(f"load average {os.getloadavg()}")
    for _ in range(args.rounds):  # interleaved: every source sees the same load
        starts.append(interpreter())
        for label, req in sources.items():
            rows[label].append(child(req))
    start = statistics.median(starts)
    print(f"interpreter start-up (python -c pass): {start:.3f} s")
    for label, rs in rows.items():
        paint = statistics.median(r["paint"] for r in rs) + start
        setup = statistics.median(r["imports_setup"] for r in rs) + start
        done = statistics.median(r["probes_done"] for r in rs)
        print(
            f"first paint {label:22s}: {paint:5.2f} s (imports + setup {setup:5.2f} s); "
            f"probes finished at that moment: {done:.0f}/{rs[0]['probes']}"
        )
    print(f"load average {os.getloadavg()}; median of {args.rounds} interleaved rounds")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
