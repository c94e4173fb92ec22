"""NVIDIA driver & CUDA probe: kernel module version/flavour, per-GPU driver state, Xids, user-space match.

The host's kernel module is the reference; the container only brings user-space libraries
(libcuda, libnvidia-ml), so the cross-target check compares those with the host module.
"""

from __future__ import annotations

from gpuaudit.probes.core.spec import Probe
from gpuaudit.probes.driver.commands import BOTH, COMMANDS, HOST, PROBE_ID, QUERY_FIELDS
from gpuaudit.probes.driver.extract import extract
from gpuaudit.probes.driver.facts import DriverFacts, GpuState
from gpuaudit.probes.driver.knowledge import (
    DATACENTER,
    MIN_BRANCH,
    TURING_PLUS,
    XID_APP,
    XID_CRIT,
    XID_RECURRING,
    XID_WARN,
    gpu_arch,
    short_name,
)
from gpuaudit.probes.driver.rules import judge
from gpuaudit.probes.driver.summary import summarize

__all__ = [
    "BOTH",
    "COMMANDS",
    "DATACENTER",
    "DriverFacts",
    "GpuState",
    "HOST",
    "MIN_BRANCH",
    "PROBE",
    "PROBE_ID",
    "QUERY_FIELDS",
    "TURING_PLUS",
    "XID_APP",
    "XID_CRIT",
    "XID_RECURRING",
    "XID_WARN",
    "extract",
    "gpu_arch",
    "judge",
    "short_name",
    "summarize",
]

PROBE = Probe(id=PROBE_ID, title="NVIDIA driver & CUDA", commands=COMMANDS, extract=extract, judge=judge, summarize=summarize)
