"""judge(): every container rule in display order."""

from __future__ import annotations

from collections.abc import Iterator

from probes.container.facts import ContainerFacts
from probes.container.rules_common import _mk, host_without_nvidia
from probes.container.rules_devices import (
    judge_detect,
    judge_device_cgroup,
    judge_device_major_match,
    judge_device_nodes,
    judge_privilege,
)
from probes.container.rules_gpus import judge_gpu_inventory_match, judge_gpu_visibility
from probes.container.rules_limits import (
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
from probes.core.models import Finding, Role
from probes.core.spec import FactsByTarget

# checks about passing GPUs into the container: meaningless when the host has no NVIDIA driver at all
PASSTHROUGH_CHECKS = {"device_cgroup", "device_major_match", "device_nodes", "gpu_visibility", "gpu_inventory_match",
                      "userspace_driver", "docker_gpu_runtime"}


def judge(facts: FactsByTarget) -> Iterator[Finding]:
    host: ContainerFacts | None = facts.get("host")
    if host is None:
        return
    ctr: ContainerFacts | None = facts.get("container")
    no_gpu = host_without_nvidia(host)
    for f in _all(host, ctr):
        slug = f.id.split(".", 1)[1]
        if no_gpu and slug in PASSTHROUGH_CHECKS:
            # a GPU-less host (or a test box) would otherwise read as a broken passthrough
            targets: tuple[Role, ...] = tuple(f.targets) or ("host",)
            yield _mk(slug, "ok", "No NVIDIA driver on the host: passthrough check not applicable", targets=targets, observed=no_gpu, evidence=[
                (e.target, e.command_id) for e in f.evidence] + [("host", "proc_devices")])
        else:
            yield f


def _all(host: ContainerFacts, ctr: ContainerFacts | None) -> Iterator[Finding]:
    yield judge_detect(host, ctr)
    yield judge_privilege(host, ctr)
    yield judge_device_cgroup(host, ctr)
    yield judge_device_major_match(host, ctr)
    yield judge_device_nodes(host, ctr)
    yield judge_gpu_visibility(host, ctr)
    yield judge_gpu_inventory_match(host, ctr)
    yield judge_shm(host, ctr)
    yield judge_shm_ipc(host, ctr)
    yield judge_memlock(host, ctr)
    yield judge_cpu_quota(host, ctr)
    yield judge_memory_limit(host, ctr)
    yield judge_limits_vs_model(host, ctr)
    yield judge_userspace_driver(ctr)
    yield judge_docker_gpu_runtime(ctr)
    yield judge_nofile(ctr)
