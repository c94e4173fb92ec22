"""`e` into a 10 MB output: open the pcie drill-down of a snapshot whose lspci output is ~9 MB. Not a test.

    python tests/bench/bench_drilldown.py [--rounds 3] [--mb 10] [--before DIR]

Builds bench_replay.py's ~10 MB snapshot (the case study's real `lspci -D -vvv` grown), opens it as `--replay` does
(headless Pilot, 120x40), waits for the replay to finish, then times: Enter on the pcie pane until the drill-down
is idle, and `e` (jump to the highlighted finding's evidence, the big lspci record) until the output is shown and
its evidence line highlighted (a big output is prepared in a thread: polled every 5 ms). The highlighted finding is
the first one on the lspci record whose evidence names no line (the drill-down then searches the text for it), else
the first one on it. The same on the plain case study in the same rounds, as the baseline. Each measurement runs in
a fresh child process; `--before DIR` also runs them on another copy of the package (DIR holds `gpuaudit/...`,
first on PYTHONPATH), interleaved: before/after ratios under the same load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from trees import env_for  # noqa: E402

AFTER = BENCH.parents[1] / "snapshots" / "examples" / "case-study-after.json"


async def once(path: Path) -> tuple[float, float]:
    from gpuaudit.probes.core.run.request import AuditRequest
    from gpuaudit.tui.app import make_app
    from gpuaudit.tui.cli.session_setup import build_setup
    from gpuaudit.tui.widgets.command_output import CommandOutput
    from gpuaudit.tui.widgets.findings_table import FindingsTable

    # --max-output above the record: a replay caps outputs like a live audit, and a truncated 9 MB record would
    # turn the pcie findings into "truncated" unknowns (another evidence search than the one measured)
    setup = build_setup(AuditRequest(replay=str(path), max_output=64 << 20))
    app = make_app(setup.audit, note=setup.note, mode=setup.mode, replay_file=setup.source)
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(600):  # the replay's probes finish (at most ~60 s)
            await pilot.pause(0.1)
            if all(p.status in ("done", "failed", "skipped") for p in app.audit_run.probes):
                break
        dash = app.screen
        dash.cursor = next(i for i, p in enumerate(dash._panes) if p.probe_id == "pcie")
        t0 = time.perf_counter()
        await pilot.press("enter")
        await pilot.pause()
        opened = time.perf_counter() - t0
        table = app.screen.query_one(FindingsTable)
        rows = [
            (f.evidence[0].line is not None, i)
            for i, f in enumerate(table.findings)
            if f.evidence and f.evidence[0].command_id == "lspci_vvv"
        ]
        if rows:
            table.move_cursor(row=min(rows)[1])
        await pilot.pause()
        screen, output = app.screen, app.screen.query_one(CommandOutput)
        output.match = None
        t0 = time.perf_counter()
        await pilot.press("e")
        while time.perf_counter() - t0 < 60 and (
            getattr(screen, "preparing", None) is not None or output.match is None
        ):
            await asyncio.sleep(0.005)
        await pilot.pause()
        evidence = time.perf_counter() - t0
        app.exit()
    return opened, evidence


def child(path: Path, pythonpath: str | None) -> tuple[float, float]:
    tree = Path(pythonpath) if pythonpath else None
    proc = subprocess.run(
        [sys.executable, __file__, "--child", str(path)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tree or BENCH.parents[1],
        env=env_for(tree, dict(os.environ)),
    )
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("[")), None)
    if line is None:
        raise RuntimeError(proc.stderr[-3000:])
    opened, evidence = json.loads(line)
    return opened, evidence


def main(argv: list[str] | None = None) -> int:
    from bench_replay import build

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mb", type=float, default=10.0)
    ap.add_argument("--before", metavar="DIR", help="also this copy of the package (PYTHONPATH)")
    ap.add_argument("--child", metavar="SNAPSHOT", help=argparse.SUPPRESS)
    ap.add_argument("--json-out", help="also write the medians as JSON (bench_targets.py reads it)")
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(asyncio.run(once(Path(args.child)))))
        return 0
    trees = ([("before", args.before)] if args.before else []) + [("", None)]
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "big.json"
        build(big, args.mb)
        rows: dict[tuple[str, str, str | None], list[tuple[float, float]]] = {}
        load_before = os.getloadavg()[0]
        print(f"load average {os.getloadavg()}")
        for _ in range(args.rounds):
            for tree, pythonpath in trees:
                for label, path in (("case study", AFTER), ("10 MB", big)):
                    key = (label, tree, pythonpath)
                    rows.setdefault(key, []).append(child(path, pythonpath))
        out = []
        for (label, tree, _), vals in rows.items():
            o = statistics.median(v[0] for v in vals)
            e = statistics.median(v[1] for v in vals)
            name = f"{label} {tree}".strip()
            print(f"{name:18s}: Enter on pcie {o:5.2f} s, e to the evidence {e:5.2f} s")
            out.append({"output": label, "tree": tree or "current", "enter_s": o, "e_s": e})
        print(f"load average {os.getloadavg()}; median of {args.rounds} interleaved rounds")
        if args.json_out:
            doc = {"rows": out, "mb": args.mb, "loads": [load_before, os.getloadavg()[0]]}
            Path(args.json_out).write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
