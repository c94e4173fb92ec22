"""NUMA probe: topology, which node each GPU hangs off, node pressure, and the container's CPUs/memory vs its GPUs.

facts (NumaFacts) <- extract (one reader per source) -> checks (CHECKS rows + verdicts) ; summary.
"""

from __future__ import annotations

from gpuaudit.probes.core.declared import COMMANDS as DECLARED
from gpuaudit.probes.core.declared import TITLES
from gpuaudit.probes.core.spec import Probe
from gpuaudit.probes.numa.checks import CHECKS, REMOTE_LIMIT
from gpuaudit.probes.numa.extract import extract
from gpuaudit.probes.numa.facts import EngineWorker, GpuInfo, NodeInfo, NumaFacts
from gpuaudit.probes.numa.locality import gpu_nodes, ranges
from gpuaudit.probes.numa.summary import summarize

PROBE_ID = "numa"
COMMANDS = DECLARED[PROBE_ID]

PROBE = Probe(
    id=PROBE_ID,
    title=TITLES[PROBE_ID],
    commands=COMMANDS,
    extract=extract,
    checks=CHECKS,
    summarize=summarize,
    volatile_facts=frozenset({"node_free_mb", "engine_workers"}),
)

__all__ = [
    "CHECKS",
    "COMMANDS",
    "EngineWorker",
    "GpuInfo",
    "NodeInfo",
    "NumaFacts",
    "PROBE",
    "PROBE_ID",
    "REMOTE_LIMIT",
    "extract",
    "gpu_nodes",
    "ranges",
    "summarize",
]
