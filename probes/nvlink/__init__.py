"""NVLink / NVSwitch / fabric probe: does this system have NVLink, are the links up, is the fabric ready.

On PCIe-only boards (RTX PRO 6000, L40S, GeForce) and on GPUs in MIG mode the link checks are not applicable:
"no NVLink" is the expected state there, never a failure. Fabric Manager only matters on NVSwitch systems.
"""

from __future__ import annotations

from gpuaudit.probes.core.declared import COMMANDS as DECLARED
from gpuaudit.probes.core.declared import TITLES
from gpuaudit.probes.core.spec import Probe
from gpuaudit.probes.nvlink.checks import CHECKS
from gpuaudit.probes.nvlink.extract import FABRIC_FIELDS, extract, parse_mig_refusal
from gpuaudit.probes.nvlink.facts import VOLATILE_FACTS, NvlinkFacts
from gpuaudit.probes.nvlink.knowledge import expected_links, is_nvswitch_system, sku_class
from gpuaudit.probes.nvlink.summary import summarize

PROBE_ID = "nvlink"
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
    "FABRIC_FIELDS",
    "NvlinkFacts",
    "PROBE",
    "PROBE_ID",
    "expected_links",
    "extract",
    "is_nvswitch_system",
    "parse_mig_refusal",
    "sku_class",
    "summarize",
]
