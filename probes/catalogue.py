"""The probe catalogue: REGISTRY holds the ten probes in display order (imported on purpose, never by `gpuaudit.probes`).

Each probe is declared in probes/core/declared.py (title, commands) and judged by its package, gpuaudit.probes.<id>,
imported on the first use of its extract, checks, summarize or volatile_facts (spec.Probe `judged_by`): an audit
sends its commands before any parser, facts model or check loads, and loads them while the targets run the
slowest commands (issue 30). DERIVED (the regression rows) loads on first use too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuaudit.probes.core.declared import COMMANDS, TITLES
from gpuaudit.probes.core.sources import with_presence
from gpuaudit.probes.core.spec import Probe

if TYPE_CHECKING:
    from gpuaudit.probes.core.judge.checks import Check

REGISTRY: tuple[Probe, ...] = tuple(
    with_presence(
        Probe(id=pid, title=title, commands=COMMANDS[pid], judged_by=f"gpuaudit.probes.{pid}")
    )
    for pid, title in TITLES.items()
)
PROBE_IDS: tuple[str, ...] = tuple(p.id for p in REGISTRY)

DERIVED: tuple[Check, ...]
"""Rows no probe judges from commands: regression.* compares an audit with its host's pinned baseline
(snapshots/baseline.py). Listed by --list-checks and docs/CHECKS.md beside the probes' rows."""


def __getattr__(name: str) -> object:
    # DERIVED: the judging framework's rows, loaded when asked for, like the probes' own
    if name == "DERIVED":
        from gpuaudit.probes.core.judge.regression import CHECKS

        return CHECKS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get(probe_id: str) -> Probe:
    """The probe with this id; KeyError if there is none."""
    for probe in REGISTRY:
        if probe.id == probe_id:
            return probe
    raise KeyError(probe_id)
