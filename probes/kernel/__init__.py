"""Kernel probe: running kernel and what it implies (power driver), boot parameters, runtime knobs.

facts (KernelFacts) <- extract (one reader per source) -> checks (CHECKS rows + verdicts) ; summary.
"""

from __future__ import annotations

from gpuaudit.probes.core.declared import COMMANDS as DECLARED
from gpuaudit.probes.core.declared import TITLES
from gpuaudit.probes.core.spec import Probe
from gpuaudit.probes.kernel.checks import CHECKS, NOTABLE_CMDLINE
from gpuaudit.probes.kernel.extract import (
    extract,
    parse_grub_cmdline,
    parse_numa_balancing,
    parse_tuned_active,
)
from gpuaudit.probes.kernel.facts import KernelFacts
from gpuaudit.probes.kernel.summary import summarize

PROBE_ID = "kernel"
COMMANDS = DECLARED[PROBE_ID]

PROBE = Probe(
    id=PROBE_ID,
    title=TITLES[PROBE_ID],
    commands=COMMANDS,
    extract=extract,
    checks=CHECKS,
    summarize=summarize,
    volatile_facts=frozenset({"engine_swap_kb"}),
)

__all__ = [
    "CHECKS",
    "COMMANDS",
    "KernelFacts",
    "NOTABLE_CMDLINE",
    "PROBE",
    "PROBE_ID",
    "extract",
    "parse_grub_cmdline",
    "parse_numa_balancing",
    "parse_tuned_active",
    "summarize",
]
