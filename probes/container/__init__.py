"""Container probe: LXC/Docker GPU passthrough (cgroup allow-list, device nodes, majors), GPU visibility,
/dev/shm, memlock, CPU quota and memory limits — host config and container view compared."""

from __future__ import annotations

from gpuaudit.probes.container.commands import CGROUP_FILES, COMMANDS, ON_BOTH, ON_CTR, PROBE_ID, SMI_GPU_IDS
from gpuaudit.probes.container.extract import NVIDIA_MAJOR_NAMES, extract
from gpuaudit.probes.container.facts import ContainerFacts, CtConfig, Gpu, Node, Rule
from gpuaudit.probes.container.rules import judge
from gpuaudit.probes.container.rules_common import GIB, match_config
from gpuaudit.probes.container.rules_devices import (
    judge_detect,
    judge_device_cgroup,
    judge_device_major_match,
    judge_device_nodes,
    judge_privilege,
)
from gpuaudit.probes.container.rules_gpus import judge_gpu_inventory_match, judge_gpu_visibility
from gpuaudit.probes.container.rules_limits import (
    judge_cpu_quota,
    judge_docker_gpu_runtime,
    judge_limits_vs_model,
    judge_memlock,
    judge_memory_limit,
    judge_nofile,
    judge_shm,
    judge_shm_ipc,
    judge_userspace_driver,
)
from gpuaudit.probes.container.summary import summarize
from gpuaudit.probes.core.spec import Probe

__all__ = [
    "CGROUP_FILES",
    "COMMANDS",
    "ContainerFacts",
    "CtConfig",
    "GIB",
    "Gpu",
    "NVIDIA_MAJOR_NAMES",
    "Node",
    "ON_BOTH",
    "ON_CTR",
    "PROBE",
    "PROBE_ID",
    "Rule",
    "SMI_GPU_IDS",
    "extract",
    "judge",
    "judge_cpu_quota",
    "judge_detect",
    "judge_device_cgroup",
    "judge_device_major_match",
    "judge_device_nodes",
    "judge_docker_gpu_runtime",
    "judge_gpu_inventory_match",
    "judge_gpu_visibility",
    "judge_limits_vs_model",
    "judge_memlock",
    "judge_memory_limit",
    "judge_nofile",
    "judge_privilege",
    "judge_shm",
    "judge_shm_ipc",
    "judge_userspace_driver",
    "match_config",
    "summarize",
]

PROBE = Probe(id=PROBE_ID, title="Container", commands=COMMANDS, extract=extract, judge=judge, summarize=summarize)
