"""Shared test helper: run one probe over the case-study recordings and return its findings by id.

Test files in tests/probes import it as a plain module (`from case_study import CASE, run_case_study`):
pytest puts a test file's folder on sys.path (no __init__.py here).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from gpuaudit.probes.core.models import Finding, Role
from gpuaudit.probes.core.run.runner import Audit
from gpuaudit.probes.core.run.session import directory_bindings
from gpuaudit.probes.core.spec import Probe

CASE = Path(__file__).parents[2] / "snapshots" / "examples" / "case-study"
"""snapshots/examples/case-study: `before/` and `after/`, each with `host/` and `container/` recordings."""


async def run_case_study(
    probe: Probe, phase: str, roles: Iterable[Role] = ("host", "container")
) -> dict[str, Finding]:
    """Findings (id -> Finding) of `probe` replayed over the `phase` ("before"/"after") recordings of `roles`."""
    out: dict[str, Finding] = {}
    async for ev in Audit(directory_bindings(CASE / phase, tuple(roles)), [probe]).events():
        r = getattr(ev, "result", None)
        if r is not None and r.status == "done":
            out = {f.id: f for f in r.findings}
    return out
