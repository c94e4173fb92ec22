"""`e` into a 10 MB output: open the pcie drill-down of a snapshot whose lspci output is ~9 MB. Not a test.

    python tests/bench/bench_drilldown.py [--rounds 3] [--mb 10]

Builds bench_replay.py's ~10 MB snapshot (the case study's real `lspci -D -vvv` grown), opens it as `--replay` does
(headless Pilot, 120x40), waits for the replay to finish, then times: Enter on the pcie pane until the drill-down's
first refresh, and `e` (jump to the highlighted finding's evidence, the big lspci record, scrolled to its line)
until the next refresh. The same on the plain case study in the same rounds, as the baseline.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
AFTER = BENCH.parents[1] / "snapshots" / "examples" / "case-study-after.json"


async def once(path: Path) -> tuple[float, float]:
    from gpuaudit.probes.core.run.request import AuditRequest
    from gpuaudit.tui.app import make_app
    from gpuaudit.tui.cli.session_setup import build_setup
    from gpuaudit.tui.widgets.findings_table import FindingsTable

    setup = build_setup(AuditRequest(replay=str(path)))
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
            i
            for i, f in enumerate(table.findings)
            if f.evidence and f.evidence[0].command_id == "lspci_vvv"
        ]
        if rows:
            table.move_cursor(row=rows[0])
        await pilot.pause()
        t0 = time.perf_counter()
        await pilot.press("e")
        await pilot.pause()
        evidence = time.perf_counter() - t0
        app.exit()
    return opened, evidence


def main(argv: list[str] | None = None) -> int:
    from bench_replay import build

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mb", type=float, default=10.0)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "big.json"
        build(big, args.mb)
        rows: dict[str, list[tuple[float, float]]] = {"case study": [], "10 MB": []}
        print(f"load average {os.getloadavg()}")
        for _ in range(args.rounds):
            rows["case study"].append(asyncio.run(once(AFTER)))
            rows["10 MB"].append(asyncio.run(once(big)))
        for label, vals in rows.items():
            o = statistics.median(v[0] for v in vals)
            e = statistics.median(v[1] for v in vals)
            print(f"{label:10s}: Enter on pcie {o:5.2f} s, e to the evidence {e:5.2f} s")
        print(f"load average {os.getloadavg()}; median of {args.rounds} interleaved rounds")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
