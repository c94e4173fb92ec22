"""NVLink / NVSwitch / fabric probe: does this system have NVLink, are the links up, is the fabric ready.

On PCIe-only boards (RTX PRO 6000, L40S, GeForce) and on GPUs in MIG mode the link checks are not applicable:
"no NVLink" is the expected state there, never a failure. Fabric Manager only matters on NVSwitch systems.
"""

from __future__ import annotations

from gpuaudit.probes.core.models import Role
from gpuaudit.probes.core.sources import use
from gpuaudit.probes.core.spec import Probe
from gpuaudit.probes.nvlink.checks import CHECKS
from gpuaudit.probes.nvlink.extract import FABRIC_FIELDS, extract, parse_mig_refusal
from gpuaudit.probes.nvlink.facts import VOLATILE_FACTS, NvlinkFacts
from gpuaudit.probes.nvlink.knowledge import expected_links, is_nvswitch_system, sku_class
from gpuaudit.probes.nvlink.summary import summarize

PROBE_ID = "nvlink"
HOST: frozenset[Role] = frozenset({"host"})
COMMANDS = use(
    "nvlink_s",
    "nvlink_errors",
    "smi_topo_m",
    "smi_q_xml",
    "smi_query_driver",
    "fabricmanager_status",
    "fabricmanager_version",
    "lspci_nvswitch",
    "ib_umad_loaded",
    "dmesg_nvrm",
    on=HOST,
) + use("smi_query_fabric")

PROBE = Probe(
    id=PROBE_ID,
    title="NVLink / fabric",
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
