"""NCCL / GPU-to-GPU probe: P2P capability, topology, NCCL environment and library, IOMMU/ACS gate.

Passive by default. The one ACTIVE source (nccl-tests `all_reduce_perf`) generates load and runs only with
`--active`; its checks (nccl.allreduce_bw, nccl.allreduce_lat) say so in their titles and are not judged without it.
"""

from __future__ import annotations

from gpuaudit.probes.core.sources import use
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
COMMANDS = use(
    "smi_gpu_ids",
    "smi_topo_m",
    "smi_topo_p2p_r",
    "smi_topo_p2p_w",
    "engine_procs",
    "ldconfig_nccl",
    "pyenv",
    "engine_logs",
) + use(
    "iommu_state", "proc_cmdline", "lspci_vvv", "lspci_tv", "cpuinfo_id", "nccl_all_reduce_perf"
)

PROBE = Probe(
    id=PROBE_ID,
    title="NCCL / GPU-to-GPU",
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
