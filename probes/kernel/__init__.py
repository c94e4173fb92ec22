"""Kernel probe: running kernel and what it implies (power driver), boot parameters, runtime knobs.

facts (KernelFacts) <- extract (one reader per source) -> checks (CHECKS rows + verdicts) ; summary.
"""

from __future__ import annotations

from gpuaudit.probes.core.sources import use
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
COMMANDS = (
    use(
        "uname_r", "numa_balancing", "engine_proc_status"
    )  # host and container (kernel.host_knobs_visible)
    + use(
        "proc_cmdline",
        "cpuinfo_id",
        "node_list",
        "zone_reclaim",
        "thp_enabled",
        "thp_defrag",
        "clocksource",
        "proc_swaps",
        "uvm_disable_hmm",
        "tuned_active",
        "cpu_vulnerabilities",
        "grub_cmdline",
        "etc_kernel_cmdline",
        "journal_kernel_faults",
        "cpu_hypervisor_flag",
        "machine_id",  # not judged: the machine's identity for --resume (issue 29)
    )
)

PROBE = Probe(
    id=PROBE_ID,
    title="Kernel",
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
