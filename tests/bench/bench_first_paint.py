"""First paint: from the interpreter's start to the dashboard's first frame, in a child process. Not a test.

    python tests/bench/bench_first_paint.py [--rounds 5] [--size 80x24] [--tmux]

Each round starts a fresh `python` that runs what `gpuaudit-tui` runs for the TUI (tui/app.py `app_for`: the app
over the request; the engine and the audit are set up after the first frame) headless under Textual's Pilot
(`run_test`), and reports the seconds from the process's own start (time.perf_counter at its first line, plus the
interpreter's start-up measured apart with `python -c pass`) to the **first frame** Textual composes for the
dashboard (the first `App._display` of the dashboard screen outside a batch: what a terminal would be sent). It also
reports when the process is next idle (Pilot's `pause()`: the replay or audit folded in, the panes filled).

Sources: `--demo`, `--replay` of the case study, and a live audit of this machine (no SSH); for each it says how
many probes had finished at the first frame (the dashboard must paint before the audit's records arrive).

`--before DIR`: the same sources from another copy of the package too (DIR holds `gpuaudit/{probes,snapshots,tui,
themes}`, put first on PYTHONPATH), interleaved in the same rounds: before/after ratios under the same load.

`--tmux`: also the real command line in a real terminal: `gpuaudit-tui --demo` in a detached tmux of that size,
from the launch to the moment `tmux capture-pane` shows the dashboard's footer (polled every 10 ms). That figure
includes the CLI's own imports (tui/cli) and tmux's drawing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
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
from gpuaudit.tui.app import app_for
from textual.app import App

request = AuditRequest(**json.loads(sys.argv[1]))
width, height = (int(v) for v in sys.argv[2].split("x"))
app = app_for(request)
t_import = time.perf_counter() - t0
first = {}
display = App._display


def done():
    run = app.audit_run
    return sum(1 for p in run.probes if p.status in ("done", "failed", "skipped")), len(run.probes)


def first_frame(self, screen, renderable):
    if renderable is not None and not self._batch_count and not first and screen.id == "dashboard":
        first["paint"] = time.perf_counter() - t0
        first["cpu"] = time.process_time()
        first["probes_done"], first["probes"] = done()
    return display(self, screen, renderable)


App._display = first_frame


async def main():
    async with app.run_test(size=(width, height)) as pilot:
        await pilot.pause()
        idle = time.perf_counter() - t0
        print(json.dumps({**first, "idle": idle, "imports_setup": t_import}))
        app.exit()


asyncio.run(main())
"""


def child(request: dict, size: str, pythonpath: str | None = None) -> dict:
    env = dict(os.environ, HOME=os.environ.get("HOME", "/root"))
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(request), size],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT if pythonpath is None else pythonpath,
        env=env,
    )
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("{")), None)
    if line is None:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(line)


def interpreter() -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - t0


def tmux_demo(size: str, pythonpath: str | None = None) -> float:
    """Seconds from launching `gpuaudit-tui --demo` in a detached tmux to the dashboard on its screen."""
    width, height = size.split("x")
    session = f"fp{os.getpid()}"
    exe = shutil.which("gpuaudit-tui") or f"{sys.executable} -m gpuaudit.tui"
    t0 = time.perf_counter()
    env = dict(os.environ, TERM="xterm-256color")
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    command = f"{exe} --demo"
    if pythonpath:  # tmux starts the command from its server's environment: set it on the line
        command = f"env PYTHONPATH={pythonpath} {command}"
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", width, "-y", height, command],
        check=True,
        env=env,
    )
    try:
        while time.perf_counter() - t0 < 30:
            screen = subprocess.run(
                ["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True
            ).stdout
            if "Quit" in screen and "PCIe" in screen:
                return time.perf_counter() - t0
            time.sleep(0.01)
        raise RuntimeError("the dashboard did not show within 30 s:\n" + screen)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--size", default="80x24", help="terminal size WxH (default 80x24)")
    ap.add_argument("--tmux", action="store_true", help="also `gpuaudit-tui --demo` in tmux")
    ap.add_argument("--before", metavar="DIR", help="also this copy of the package (PYTHONPATH)")
    args = ap.parse_args(argv)
    plain = {
        "--demo": {"demo": True},
        "--replay case study": {"replay": str(AFTER)},
        "live (this machine)": {},
    }
    sources = {(label, None): req for label, req in plain.items()}
    if args.before:
        sources = {
            **{(f"{label} BEFORE", args.before): req for label, req in plain.items()},
            **sources,
        }
    rows: dict[tuple[str, str | None], list[dict]] = {k: [] for k in sources}
    starts: list[float] = []
    tmux: dict[str | None, list[float]] = {}
    print(f"load average {os.getloadavg()}; size {args.size}")
    for _ in range(args.rounds):  # interleaved: every source sees the same load
        starts.append(interpreter())
        for key, req in sources.items():
            rows[key].append(child(req, args.size, key[1]))
        if args.tmux:
            for pythonpath in ([args.before] if args.before else []) + [None]:
                tmux.setdefault(pythonpath, []).append(tmux_demo(args.size, pythonpath))
    start = statistics.median(starts)
    print(f"interpreter start-up (python -c pass): {start:.3f} s")
    for (label, _), rs in rows.items():
        paint = statistics.median(r["paint"] for r in rs) + start
        setup = statistics.median(r["imports_setup"] for r in rs) + start
        idle = statistics.median(r["idle"] for r in rs) + start
        cpu = statistics.median(r["cpu"] for r in rs)
        done = statistics.median(r["probes_done"] for r in rs)
        print(
            f"first frame {label:27s}: {paint:5.2f} s, CPU {cpu:4.2f} s (app built {setup:5.2f} s; "
            f"idle {idle:5.2f} s); "
            f"probes finished at the first frame: {done:.0f}/{rs[0]['probes']}"
        )
    for pythonpath, times in tmux.items():
        print(
            f"gpuaudit-tui --demo in tmux {args.size}{' BEFORE' if pythonpath else ''}: dashboard "
            f"shown after {statistics.median(times):5.2f} s (min {min(times):.2f}, max {max(times):.2f})"
        )
    print(f"load average {os.getloadavg()}; median of {args.rounds} interleaved rounds")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
