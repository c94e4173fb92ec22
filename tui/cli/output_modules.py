"""What a headless audit's outputs import, loaded while the audit waits on its targets (issue 30).

tui/cli/headless_outputs.py (the snapshot with its roofline, the store and the baseline, the plan, --prom,
--share) and --html's views are needed only once the audit has ended; imported before it (as they were) they held
its start back by ~0.1 s of CPU. A live
audit spends most of its wall time waiting on the targets (a login, nvidia-smi -q), and the loop is idle then:
`preload` imports these modules one at a time on that loop, each between two of its turns, so a command the
audit is ready to start waits at most one module's import. Listed leaf first (each import a few milliseconds); a
test holds the lists complete: after the preload, the outputs import no module of ours that it lacks.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import sys

from gpuaudit.probes.core.run.request import AuditRequest

AFTER_AUDIT = (
    "statistics",
    "gpuaudit.probes.core.fleet.peers",
    "gpuaudit.probes.core.roofline.gpus",
    "gpuaudit.probes.core.roofline.model",
    "gpuaudit.probes.core.roofline.bounds",
    "gpuaudit.probes.core.roofline.explain",
    "gpuaudit.probes.core.roofline.references",
    "gpuaudit.probes.core.roofline.report",
    "gpuaudit.snapshots.compact",
    "gpuaudit.snapshots.schema",
    "gpuaudit.snapshots.migrate",
    "platformdirs",
    "gpuaudit.snapshots.store",
    "gpuaudit.snapshots.baseline",
    "gpuaudit.snapshots.naming",
    "gpuaudit.probes.core.text",
    "gpuaudit.probes.core.judge.plan",
    "gpuaudit.probes.core.fleet.prometheus",
    "gpuaudit.tui.cli.health",
    "gpuaudit.tui.cli.resume",
    "gpuaudit.snapshots.share",
    "gpuaudit.tui.cli.share_outputs",
    "gpuaudit.tui.cli.headless_outputs",
)
"""Every headless audit: tui/cli/headless_outputs.py and what it imports."""
HTML = (
    "gpuaudit.snapshots.diff",
    "gpuaudit.tui.views.filtering",
    "gpuaudit.tui.views.pictures",
    "gpuaudit.tui.views.render",
    "gpuaudit.tui.views.html",
)
"""--html: the Rich-based views draw the report (tui/cli/share_outputs.py loads them for it only)."""


def outputs_of(request: AuditRequest) -> tuple[str, ...]:
    """The modules this request's outputs import after the audit, leaf first."""
    return AFTER_AUDIT + HTML if request.html else AFTER_AUDIT


async def preload(names: tuple[str, ...]) -> None:
    """Import `names` in turn, yielding to the loop before each (what is ready to run goes first). No cyclic
    collection during an import (its objects are long-lived: a collection would walk them for nothing). A module
    that fails to import is left for the outputs' own import to report, where it always was."""
    for name in names:
        await asyncio.sleep(0)
        if name in sys.modules:
            continue
        enabled = gc.isenabled()
        gc.disable()
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001, S112 - reported by the real import, after the audit
            continue
        finally:
            if enabled:
                gc.enable()
