"""NCCL / GPU-to-GPU probe: P2P capability, topology, NCCL environment and library, IOMMU/ACS gate.

Passive by default. The one ACTIVE source (nccl-tests `all_reduce_perf`) generates load and runs only with
`--active`; its checks (nccl.allreduce_bw, nccl.allreduce_lat) say so in their titles and are not judged without it.
"""

from __future__ import annotations

from gpuaudit.probes.core.declared import COMMANDS as DECLARED
from gpuaudit.probes.core.declared import TITLES
from gpuaudit.probes.core.spec import Probe
from gpuaudit.probes.nccl.checks import CHECKS
from gpuaudit.probes.nccl.extract import extract
from gpuaudit.probes.nccl.facts import VOLATILE, NcclFacts
from gpuaudit.probes.nccl.parsers import (
    nccl_version_from_path,
    parse_gpu_matrix,
    parse_ldconfig_nccl,
)
from gpuaudit.probes.nccl.summary import summarize

PROBE_ID = "nccl"
COMMANDS = DECLARED[PROBE_ID]

PROBE = Probe(
    id=PROBE_ID,
    title=TITLES[PROBE_ID],
    commands=COMMANDS,
    extract=extract,
    checks=CHECKS,
    summarize=summarize,
    volatile_facts=VOLATILE,
)

__all__ = [
    "CHECKS",
    "COMMANDS",
    "PROBE",
    "PROBE_ID",
    "NcclFacts",
    "extract",
    "nccl_version_from_path",
    "parse_gpu_matrix",
    "parse_ldconfig_nccl",
    "summarize",
]
