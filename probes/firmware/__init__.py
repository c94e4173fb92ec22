"""Firmware / UEFI probe: BIOS identity and the OS-visible effects of BIOS settings.

facts (FirmwareFacts) <- extract (one reader per source) -> checks (CHECKS rows + verdicts) ; summary.
"""

from __future__ import annotations

from gpuaudit.probes.core.declared import COMMANDS as DECLARED
from gpuaudit.probes.core.declared import TITLES
from gpuaudit.probes.core.judge.combiners import parse_iommu_state
from gpuaudit.probes.core.spec import Probe
from gpuaudit.probes.firmware.checks import CHECKS
from gpuaudit.probes.firmware.extract import extract
from gpuaudit.probes.firmware.facts import Dimm, FirmwareFacts
from gpuaudit.probes.firmware.summary import summarize

PROBE_ID = "firmware"
COMMANDS = DECLARED[PROBE_ID]

PROBE = Probe(
    id=PROBE_ID,
    title=TITLES[PROBE_ID],
    commands=COMMANDS,
    extract=extract,
    checks=CHECKS,
    summarize=summarize,
)

__all__ = [
    "CHECKS",
    "COMMANDS",
    "Dimm",
    "FirmwareFacts",
    "PROBE",
    "PROBE_ID",
    "extract",
    "parse_iommu_state",
    "summarize",
]
