"""Power probe: CPU frequency driver, governor, EPP, boost, policy ceiling, idle states; GPU power, clocks, RTD3.

Reads sysfs first and falls back to `cpupower`; the checks are rows (checks.py) judged by the framework,
conditional on the CPU vendor/family (from `lscpu -J`) and on GPU utilisation.
"""

from __future__ import annotations

from gpuaudit.probes.core.declared import COMMANDS as DECLARED
from gpuaudit.probes.core.declared import TITLES
from gpuaudit.probes.core.spec import Probe
from gpuaudit.probes.power.checks import CHECKS
from gpuaudit.probes.power.extract import SMI_POWER_FIELDS, extract, parse_smi_power, parse_uniq_c
from gpuaudit.probes.power.facts import (
    VOLATILE_FACTS,
    GpuPower,
    GpuReading,
    IdleStateFact,
    PowerFacts,
)
from gpuaudit.probes.power.summary import summarize

PROBE_ID = "power"
COMMANDS = DECLARED[PROBE_ID]

PROBE = Probe(
    id=PROBE_ID,
    title=TITLES[PROBE_ID],
    commands=COMMANDS,
    extract=extract,
    checks=CHECKS,
    summarize=summarize,
    volatile_facts=VOLATILE_FACTS,
)

__all__ = [
    "CHECKS",
    "COMMANDS",
    "GpuPower",
    "GpuReading",
    "IdleStateFact",
    "PROBE",
    "PROBE_ID",
    "PowerFacts",
    "SMI_POWER_FIELDS",
    "extract",
    "parse_smi_power",
    "parse_uniq_c",
    "summarize",
]
