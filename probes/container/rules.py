"""judge(): every container rule in display order."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import NamedTuple

from gpuaudit.probes.container.facts import ContainerFacts
from gpuaudit.probes.container.rules_common import _mk, host_without_nvidia
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
from gpuaudit.probes.core.models import Finding, Role
from gpuaudit.probes.core.spec import FactsByTarget


class Check(NamedTuple):
    """One container rule: its slug, the judge taking (host facts, container facts or None), and whether it is
    about passing GPUs into the container (meaningless when the host has no NVIDIA driver at all)."""

    slug: str
    run: Callable[[ContainerFacts, ContainerFacts | None], Finding]
    passthrough: bool = False


RULES: tuple[Check, ...] = (
    Check("detect", judge_detect),
    Check("lxc_privilege", judge_privilege),
    Check("device_cgroup", judge_device_cgroup, passthrough=True),
    Check("device_major_match", judge_device_major_match, passthrough=True),
    Check("device_nodes", judge_device_nodes, passthrough=True),
    Check("gpu_visibility", judge_gpu_visibility, passthrough=True),
    Check("gpu_inventory_match", judge_gpu_inventory_match, passthrough=True),
    Check("shm", judge_shm),
    Check("shm_ipc", judge_shm_ipc),
    Check("memlock", judge_memlock),
    Check("cpu_quota", judge_cpu_quota),
    Check("memory_limit", judge_memory_limit),
    Check("limits_vs_model", judge_limits_vs_model),
    Check("userspace_driver", lambda host, ctr: judge_userspace_driver(ctr), passthrough=True),
    Check("docker_gpu_runtime", lambda host, ctr: judge_docker_gpu_runtime(ctr), passthrough=True),
    Check("nofile", lambda host, ctr: judge_nofile(ctr)),
)
"""Every container rule in display order."""


def judge(facts: FactsByTarget) -> Iterator[Finding]:
    host: ContainerFacts | None = facts.get("host")
    if host is None:
        return
    ctr: ContainerFacts | None = facts.get("container")
    no_gpu = host_without_nvidia(host)
    targets: tuple[Role, ...] = ("host", "container") if ctr is not None else ("host",)
    for check in RULES:
        if no_gpu and check.passthrough:
            # a GPU-less host (or a test box) would otherwise read as a broken passthrough
            yield _mk(check.slug, "ok", "No NVIDIA driver on the host: passthrough check not applicable", targets=targets,
                      observed=no_gpu, evidence=[("host", "proc_devices"), ("host", "dev_nvidia")])
        else:
            yield check.run(host, ctr)
