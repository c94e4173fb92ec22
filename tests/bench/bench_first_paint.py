"""First paint: from the interpreter's start to the dashboard's first frame, in a child process. Not a test.

    python tests/bench/bench_first_paint.py [--rounds 5] [--size 80x24] [--tmux]
        [--tree before=REV --tree after=HEAD ...] [--sources demo,replay,live,cli]

Each round starts a fresh `python` per source and tree and reports the seconds from the process's own start
(time.perf_counter at its first line, plus the interpreter's start-up measured apart with `python -c pass`) to
the **first frame** Textual composes for the dashboard (the first `App._display` of the dashboard screen outside
a batch: what a terminal would be sent), with the process's CPU seconds at that moment.

Sources: `demo`, `replay` (the case study) and `live` (this machine, no SSH) run what `gpuaudit-tui` runs for
the TUI (tui/app.py `app_for`) headless under Textual's Pilot (`run_test`) and also report when the process is
next idle (the replay or audit folded in) and how many probes had finished at the first frame (the dashboard
must paint before the audit's records arrive). `cli` is **the real command line**: `entry.main(["--demo"])`,
the CLI's own imports and checks included, with Textual's `App.run` made headless at the bench's size (the
process ends at the first frame).

`--tree LABEL=REV_OR_DIR` (repeatable; tests/bench/trees.py: a revision exported with `git archive`, or a
folder; `.` is the working tree): every source runs from each tree, interleaved in the same rounds (the order
reversed every other round), so before/after ratios share the load. Without `--tree`, the installed (editable)
package. Every tree is compiled to bytecode first, as `pip install` does (this sandbox sets
PYTHONDONTWRITEBYTECODE=1: without it each child compiles the edited modules from source, ~0.2 s of CPU).

`--tmux`: also `gpuaudit-tui --demo` in a real terminal: a detached tmux of that size, from the launch to the
moment `tmux capture-pane` shows the dashboard's footer (polled every 10 ms), per tree. That figure includes the
interpreter, the CLI's own imports (tui/cli) and tmux's drawing.
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from trees import compile_bytecode, env_for, parse_trees  # noqa: E402

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
cpu_built = time.process_time()
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
        print(json.dumps({**first, "idle": idle, "imports_setup": t_import, "cpu_built": cpu_built}))
        app.exit()


asyncio.run(main())
"""

CLI_CHILD = """
import time
t0 = time.perf_counter()
import json, os, sys
from pathlib import Path
from gpuaudit.tui.cli import bridge, entry

width, height = (int(v) for v in sys.argv[2].split("x"))
opened = bridge.interactive


def interactive():  # Textual loads here, as in the real command line; make its App headless at our size
    module = opened()
    import asyncio
    from textual.app import App

    display = App._display

    def first_frame(self, screen, renderable):
        out = display(self, screen, renderable)
        if renderable is not None and not self._batch_count and screen.id == "dashboard":
            paint, cpu = time.perf_counter() - t0, time.process_time()
            if warm:  # a user's first run: the app stays until its start-up loads are done, then quits
                if not getattr(self, "_warming", False):
                    self._warming = True
                    self.set_timer(3.0, self.exit)
                return out
            Path(result).write_text(json.dumps({"paint": paint, "cpu": cpu}))
            os._exit(0)
        return out

    App._display = first_frame
    App.run = lambda self, **kw: asyncio.run(self.run_async(headless=True, size=(width, height)))
    return module


bridge.interactive = interactive
result = sys.argv[3]
warm = len(sys.argv) > 4 and sys.argv[4] == "warm"
sys.argv = ["gpuaudit-tui", *json.loads(sys.argv[1])]
entry.main()
"""

SOURCES = {
    "demo": ("--demo", {"demo": True}),
    "replay": ("--replay case study", {"replay": str(AFTER)}),
    "live": ("live (this machine)", {}),
    "cli": ("CLI `gpuaudit-tui --demo`", ["--demo"]),
}


def child(source: str, size: str, tree: Path | None) -> dict:
    env = env_for(tree, dict(os.environ, HOME=os.environ.get("HOME", "/root")))
    if source == "cli":  # the CLI opens the TUI only on a terminal: stdin and stdout on a pty
        return cli_child(size, tree, env)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(SOURCES[source][1]), size],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tree or ROOT,
        env=env,
    )
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("{")), None)
    if line is None:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(line)


def cli_child(size: str, tree: Path | None, env: dict[str, str], warm: bool = False) -> dict:
    """The real command line on a pty; `warm`: a user's first run instead (the app quits once its start-up loads
    are done, so its code cache is written: tui/cli/code_cache.py), nothing measured."""
    main_fd, term_fd = pty.openpty()
    with tempfile.TemporaryDirectory() as tmp:
        result = Path(tmp) / "first-frame.json"
        try:
            proc = subprocess.run(
                [sys.executable, "-c", CLI_CHILD, json.dumps(SOURCES["cli"][1]), size, str(result)]
                + (["warm"] if warm else []),
                stdin=term_fd,
                stdout=term_fd,
                stderr=subprocess.PIPE,
                text=True,
                timeout=300,
                cwd=tree or ROOT,
                env=dict(env, TERM="xterm-256color"),
            )
        finally:
            os.close(term_fd)
            os.close(main_fd)
        if warm:
            return {}
        if not result.exists():
            raise RuntimeError(proc.stderr[-2000:])
        return json.loads(result.read_text())


def interpreter() -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - t0


def tmux_demo(size: str, tree: Path | None = None) -> float:
    """Seconds from launching `gpuaudit-tui --demo` in a detached tmux to the dashboard on its screen.

    The bench's own tmux server (`-L`): the box is shared, and another user's server on the default socket
    exiting as its last session ends made `new-session` fail ("server exited unexpectedly")."""
    width, height = size.split("x")
    tmux = ["tmux", "-L", f"gpuaudit-fp{os.getpid()}-{time.monotonic_ns()}"]  # one server per call
    session = "fp"
    exe = shutil.which("gpuaudit-tui") or f"{sys.executable} -m gpuaudit.tui"
    command = f"{exe} --demo"
    if tree is not None:  # tmux starts the command from its server's environment: on the line
        command = f"env PYTHONPATH={tree} {command}"
    t0 = time.perf_counter()
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", session, "-x", width, "-y", height, command],
        check=True,
        env=dict(os.environ, TERM="xterm-256color"),
    )
    try:
        while time.perf_counter() - t0 < 30:
            screen = subprocess.run(
                [*tmux, "capture-pane", "-p", "-t", session], capture_output=True, text=True
            ).stdout
            if "Quit" in screen and "PCIe" in screen:
                return time.perf_counter() - t0
            time.sleep(0.01)
        raise RuntimeError("the dashboard did not show within 30 s:\n" + screen)
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--size", default="80x24", help="terminal size WxH (default 80x24)")
    ap.add_argument("--tmux", action="store_true", help="also `gpuaudit-tui --demo` in tmux")
    ap.add_argument(
        "--tree", action="append", help="LABEL=REV_OR_DIR: this tree too, interleaved (trees.py)"
    )
    ap.add_argument(
        "--before", metavar="DIR", help="a folder holding gpuaudit/ (old form of --tree)"
    )
    ap.add_argument("--sources", default=",".join(SOURCES), help=f"of {','.join(SOURCES)}")
    ap.add_argument("--json-out", help="also write the medians as JSON (bench_targets.py reads it)")
    args = ap.parse_args(argv)
    sources = args.sources.split(",")
    if unknown := set(sources) - set(SOURCES):
        ap.error(f"--sources: unknown {sorted(unknown)}")
    trees = parse_trees(args.tree)  # compiled to bytecode, as pip install does
    if args.before:
        compile_bytecode(Path(args.before) / "gpuaudit")
        trees = {"before": Path(args.before), **trees}
    rows: dict[tuple[str, str], list[dict]] = {(s, t): [] for s in sources for t in trees}
    tmux: dict[str, list[float]] = {t: [] for t in trees} if args.tmux else {}
    starts: list[float] = []
    loads = [os.getloadavg()]
    print(f"load average {loads[0]}; size {args.size}; trees {list(trees)}", flush=True)
    for (
        label
    ) in trees:  # each tree as after a user's first run: its code cache written (where it has one)
        env = env_for(trees[label], dict(os.environ, HOME=os.environ.get("HOME", "/root")))
        cli_child(args.size, trees[label], env, warm=True)
    for i in range(args.rounds):  # interleaved: every tree sees the same load; the order alternates
        order = list(trees) if i % 2 == 0 else list(reversed(trees))
        starts.append(interpreter())
        for source in sources:
            for label in order:
                rows[source, label].append(child(source, args.size, trees[label]))
        for label in order if args.tmux else ():
            tmux[label].append(tmux_demo(args.size, trees[label]))
        loads.append(os.getloadavg())
        print(f"round {i + 1}: load {loads[-1][0]:.2f}", file=sys.stderr, flush=True)
    start = statistics.median(starts)
    print(f"interpreter start-up (python -c pass): {start:.3f} s")
    first = next(iter(trees))
    doc: dict = {"interpreter_start_s": start, "frames": {}, "tmux": {}, "size": args.size}
    for source in sources:
        for label in trees:
            rs = rows[source, label]
            paint = statistics.median(r["paint"] for r in rs) + start
            cpu = statistics.median(r["cpu"] for r in rs)
            line = f"first frame {SOURCES[source][0]:27s} {label:>9s}: {paint:5.2f} s, CPU {cpu:4.2f} s"
            doc["frames"].setdefault(source, {})[label] = {"paint_s": paint, "cpu_s": cpu}
            if "idle" in rs[0]:
                setup = statistics.median(r["imports_setup"] for r in rs) + start
                idle = statistics.median(r["idle"] for r in rs) + start
                done = statistics.median(r["probes_done"] for r in rs)
                built = statistics.median(r["cpu_built"] for r in rs)
                line += (
                    f" (app built {setup:5.2f} s, CPU {built:4.2f} s; idle {idle:5.2f} s; "
                    f"probes finished at the first frame {done:.0f}/{rs[0]['probes']})"
                )
            if label != first:  # same-round ratios against the first tree
                ratio_cpu = statistics.median(
                    r["cpu"] / b["cpu"] for r, b in zip(rs, rows[source, first], strict=True)
                )
                ratio = statistics.median(
                    r["paint"] / b["paint"] for r, b in zip(rs, rows[source, first], strict=True)
                )
                line += f"; vs {first}: wall {ratio:.2f}x, CPU {ratio_cpu:.2f}x"
            print(line)
    for label, times in tmux.items():
        doc["tmux"][label] = {
            "median_s": statistics.median(times),
            "min_s": min(times),
            "max_s": max(times),
        }
        print(
            f"gpuaudit-tui --demo in tmux {args.size} {label:>9s}: dashboard shown after "
            f"{statistics.median(times):5.2f} s (min {min(times):.2f}, max {max(times):.2f})"
        )
    one = [f"{lo[0]:.2f}" for lo in loads]
    print(f"load average (1 min) at start and after each round: {' '.join(one)}")
    print(f"median of {args.rounds} interleaved rounds")
    if args.json_out:
        doc["loads"] = [lo[0] for lo in loads]
        Path(args.json_out).write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
