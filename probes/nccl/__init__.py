"""NCCL / GPU-to-GPU probe: P2P capability, topology, NCCL environment and library, IOMMU/ACS gate.

Passive by default. The one ACTIVE command (nccl-tests `all_reduce_perf`) generates load and runs
only with `--active`; its findings say so in their titles.
"""

from __future__ import annotations

from gpuaudit.probes.core.spec import Probe
from gpuaudit.probes.nccl.commands import ALL_REDUCE_SHELL, COMMANDS, PROBE_ID, SMI_GPU_CC
from gpuaudit.probes.nccl.extract import extract
from gpuaudit.probes.nccl.facts import NcclFacts
from gpuaudit.probes.nccl.parsers import (
    nccl_version_from_path,
    parse_acsctl,
    parse_gpu_matrix,
    parse_iommu_groups,
    parse_ldconfig_nccl,
)
from gpuaudit.probes.nccl.rules import judge
from gpuaudit.probes.nccl.summary import summarize

__all__ = [
    "ALL_REDUCE_SHELL",
    "COMMANDS",
    "NcclFacts",
    "PROBE",
    "PROBE_ID",
    "SMI_GPU_CC",
    "extract",
    "judge",
    "nccl_version_from_path",
    "parse_acsctl",
    "parse_gpu_matrix",
    "parse_iommu_groups",
    "parse_ldconfig_nccl",
    "summarize",
]

PROBE = Probe(id=PROBE_ID, title="NCCL / GPU-to-GPU", commands=COMMANDS, extract=extract, judge=judge, summarize=summarize)
