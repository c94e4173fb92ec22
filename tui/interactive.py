"""The one bridge from the text front ends to Textual.

The CLI imports this module lazily, so `--help`, `--json` and the other headless modes never load Textual.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuaudit.probes.core.fleet.documents import load_document
from gpuaudit.probes.core.fleet.model import FleetModel
from gpuaudit.probes.core.run.request import AuditRequest
from gpuaudit.tui.app import KNOWN_THEMES, run_app
from gpuaudit.tui.fleet_app import FleetApp
from gpuaudit.tui.theme_store import ThemeStore

if TYPE_CHECKING:  # types only: fleet_hosts imports this module lazily to open the screen
    from gpuaudit.tui.cli.fleet_hosts import FleetHost, HostResult


def main(request: AuditRequest) -> int:
    """The dashboard. `--resume` reaches `run_app` through tui/cli/commands.py (tui/cli/headless.py's
    `run_then_show`): this module does not import the headless modules, which load the catalogue before the
    first frame."""
    return run_app(request)


def show_fleet_documents(files: list[Path]) -> int:
    """The fleet screen over saved snapshots; the exit status is the text report's (1 when any outlier)."""
    print(f"gpuaudit-tui fleet: reading {len(files)} snapshot(s)…", file=sys.stderr, flush=True)
    skipped: list[str] = []

    def documents() -> Iterator[
        tuple[str, dict]
    ]:  # one at a time: 1,000 parsed snapshots need not coexist
        for path in files:
            try:
                yield str(path), load_document(path)
            except (OSError, ValueError) as exc:
                skipped.append(f"{path}: {exc}")

    model = FleetModel.from_documents(documents(), title="fleet")
    model.skipped = skipped
    store = ThemeStore()
    theme = store.load()
    status = FleetApp(
        model, theme=theme if theme in KNOWN_THEMES else None, theme_store=store
    ).run()
    for s in skipped:
        print(f"gpuaudit-tui fleet: skipped {s}", file=sys.stderr)
    return model.exit_status() if status is None else status


def run_fleet_screen(
    hosts: list[FleetHost], request: AuditRequest, ssh: object, run_fleet: Callable[..., Any]
) -> list[HostResult]:
    """The live fleet screen: rows go pending -> auditing -> done/unreachable while the audit runs.

    Returns the hosts that finished (all of them unless the user quit early, which cancels the rest).
    """

    model = FleetModel.for_hosts(
        hosts, title=f"fleet {Path(request.hosts).name}", max_connections=request.max_connections
    )
    done: list[HostResult] = []

    def finished(result: HostResult) -> None:
        done.append(result)
        model.host_finished(result)

    async def runner(m: FleetModel) -> None:
        await run_fleet(hosts, request, ssh, on_start=m.host_started, on_done=finished)

    store = ThemeStore()
    theme = request.theme if request.theme in KNOWN_THEMES else store.load()
    FleetApp(
        model,
        runner,
        theme=theme,
        theme_store=store,
        snapshot_dir=Path(request.snapshot_dir) if request.snapshot_dir else None,
    ).run()
    order = {h.spec: i for i, h in enumerate(hosts)}
    return sorted(done, key=lambda r: order[r.host.spec])
