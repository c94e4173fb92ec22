"""PCIe probe: link capability and state, MRRS/MPS, ACS, ASPM, port PM, AER, 10-bit tags, topology.

Config-space registers come from `lspci -vvv` (root: without it capabilities read `<access denied>` and the
checks that need them say unknown, needs root); link speed/width and AER counters also come from sysfs and
nvidia-smi without root. The GPU paths come from `lspci -tv`, else the bridges' `Bus:` lines of `lspci -vvv`,
else sysfs. Link speed is judged against nvidia-smi's maxima and the GPU's utilisation: an idle GPU at
2.5 GT/s is power saving, not a fault.
"""

from __future__ import annotations

from gpuaudit.probes.core.declared import COMMANDS as DECLARED
from gpuaudit.probes.core.declared import TITLES
from gpuaudit.probes.core.sources import with_presence
from gpuaudit.probes.core.spec import Probe
from gpuaudit.probes.pcie.checks import CHECKS
from gpuaudit.probes.pcie.extract import extract
from gpuaudit.probes.pcie.facts import LinkNow, PciDev, PcieFacts, SmiLink, SysPci
from gpuaudit.probes.pcie.parse import SMI_PCIE_FIELDS, parse_smi_pcie, parse_sys_pci
from gpuaudit.probes.pcie.summary import summarize

PROBE_ID = "pcie"
COMMANDS = DECLARED[PROBE_ID]

__all__ = [
    "CHECKS",
    "COMMANDS",
    "LinkNow",
    "PROBE",
    "PROBE_ID",
    "PciDev",
    "PcieFacts",
    "SMI_PCIE_FIELDS",
    "SmiLink",
    "SysPci",
    "extract",
    "parse_smi_pcie",
    "parse_sys_pci",
    "summarize",
]

PROBE = with_presence(
    Probe(
        id=PROBE_ID,
        title=TITLES[PROBE_ID],
        commands=COMMANDS,
        extract=extract,
        checks=CHECKS,
        summarize=summarize,
        volatile_facts=frozenset({"link_now"}),
    )
)
