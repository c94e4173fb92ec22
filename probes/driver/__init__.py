"""NVIDIA driver & CUDA probe: kernel module version/flavour, per-GPU driver state and health, Xids, user-space match.

The host's kernel module is the reference; the container only brings user-space libraries (libcuda,
libnvidia-ml), so the host-vs-container checks compare those with the host module. Per-GPU state is read from
`nvidia-smi -q -x` first (the csv query and the table are fallbacks). Checks are rows (checks.py) judged by
the framework.
"""

from __future__ import annotations

from gpuaudit.probes.core.declared import COMMANDS as DECLARED
from gpuaudit.probes.core.declared import TITLES
from gpuaudit.probes.core.spec import Probe
from gpuaudit.probes.driver.checks import CHECKS
from gpuaudit.probes.driver.expected import CHECKS as EXPECTED_CHECKS
from gpuaudit.probes.driver.extract import QUERY_FIELDS, SMI_SOURCES, extract
from gpuaudit.probes.driver.facts import VOLATILE_FACTS, DriverFacts, GpuState, HandleFailure
from gpuaudit.probes.driver.knowledge import gpu_arch, short_name
from gpuaudit.probes.driver.lifecycle import CHECKS as LIFECYCLE_CHECKS
from gpuaudit.probes.driver.summary import summarize

PROBE_ID = "driver"
COMMANDS = DECLARED[PROBE_ID]

PROBE = Probe(
    id=PROBE_ID,
    title=TITLES[PROBE_ID],
    commands=COMMANDS,
    extract=extract,
    checks=CHECKS + LIFECYCLE_CHECKS + EXPECTED_CHECKS,
    summarize=summarize,
    volatile_facts=VOLATILE_FACTS,
)

__all__ = [
    "CHECKS",
    "COMMANDS",
    "DriverFacts",
    "GpuState",
    "HandleFailure",
    "PROBE",
    "PROBE_ID",
    "QUERY_FIELDS",
    "SMI_SOURCES",
    "extract",
    "gpu_arch",
    "short_name",
    "summarize",
]
