"""Container rules comparing the GPUs the container sees with the host's."""

from __future__ import annotations

import re

from gpuaudit.probes.container.facts import ContainerFacts
from gpuaudit.probes.container.rules_common import _mk, _na_no_container, _why, match_config
from gpuaudit.probes.core.models import Finding, Role


def _expected_gpu_count(host: ContainerFacts, ctr: ContainerFacts) -> tuple[int | None, str]:
    cfg, how = match_config(host, ctr) if host.configs else (None, "")
    if cfg is not None:
        n = len({p for p in cfg.nvidia_paths if re.fullmatch(r"/dev/nvidia\d+", p)})
        if n:
            return n, f"{n} passed by {how}"
    if host.gpus is not None:
        return len(host.gpus), f"{len(host.gpus)} on the host"
    return None, ""


def judge_gpu_inventory_match(host: ContainerFacts, ctr: ContainerFacts | None) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "smi_gpu_ids"), ("container", "smi_gpu_ids"), ("host", "pve_lxc_confs")]
    if ctr is None:
        return _na_no_container("gpu_inventory_match", "GPU inventory host vs container", [("host", "smi_gpu_ids")])
    targets: tuple[Role, ...] = ("host", "container")
    want, src = _expected_gpu_count(host, ctr)
    if ctr.smi_error:
        return _mk("gpu_inventory_match", "critical", "nvidia-smi fails inside the container", targets=targets,
                   observed=f"container: {ctr.smi_error}; host: {len(host.gpus) if host.gpus is not None else 'unknown'} GPU(s)",
                   expected=f"the container lists {src or 'its GPUs'}",
                   why="If NVML cannot open the devices the serving engine cannot either.",
                   fix="See container.device_nodes / device_cgroup and driver.userspace_match.", evidence=ev)
    if ctr.gpus is None or want is None:
        return _mk("gpu_inventory_match", "unknown", "GPU counts could not be compared", targets=targets,
                   observed=f"container: {_why(ctr, 'smi_gpu_ids') if ctr.gpus is None else len(ctr.gpus)}; "
                            f"host: {_why(host, 'smi_gpu_ids') if host.gpus is None else len(host.gpus)}", evidence=ev)
    host_n = len(host.gpus) if host.gpus is not None else None
    obs = f"container sees {len(ctr.gpus)} GPU(s); host has {host_n if host_n is not None else 'unknown'}; expected {src}"
    if len(ctr.gpus) < want:
        return _mk("gpu_inventory_match", "critical", f"Container sees {len(ctr.gpus)} of {want} GPUs", targets=targets,
                   observed=obs, expected=f"{want} GPU(s) in the container",
                   why="An engine configured for more GPUs than it can see fails to start or silently runs with a smaller "
                       "tensor-parallel size.",
                   fix="Pass every intended /dev/nvidiaN (mount entries or devN:) and restart the container.", evidence=ev)
    return _mk("gpu_inventory_match", "ok", f"Container sees all {want} expected GPU(s)", targets=targets, observed=obs, evidence=ev)


def judge_gpu_visibility(host: ContainerFacts, ctr: ContainerFacts | None) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "smi_gpu_ids"), ("container", "smi_gpu_ids")]
    if ctr is None:
        return _na_no_container("gpu_visibility", "GPU visibility", [("host", "smi_gpu_ids")])
    targets: tuple[Role, ...] = ("host", "container")
    if ctr.gpus is None or host.gpus is None:
        return _mk("gpu_visibility", "unknown", "GPU UUIDs could not be compared", targets=targets,
                   observed=f"host: {_why(host, 'smi_gpu_ids') if host.gpus is None else 'ok'}; "
                            f"container: {_why(ctr, 'smi_gpu_ids') if ctr.gpus is None else 'ok'}", evidence=ev)
    hu = {g.uuid: g for g in host.gpus if g.uuid}
    foreign = [g.uuid for g in ctr.gpus if g.uuid and g.uuid not in hu]
    if foreign:
        return _mk("gpu_visibility", "warning", "Container sees GPUs the host does not list", targets=targets,
                   observed=f"container UUIDs not on the host: {', '.join(u for u in foreign if u)}",
                   expected="container GPUs are a subset of the host's",
                   why="The container target is probably not on this host (or a VM with its own GPUs).",
                   fix="Check which host and container the audit points at.", evidence=ev)
    moved = [f"container GPU{g.index} = host GPU{hu[g.uuid].index}" for g in ctr.gpus
             if g.uuid in hu and g.index is not None and hu[g.uuid].index != g.index]
    if moved:
        return _mk("gpu_visibility", "info", "GPU indices differ between host and container", targets=targets,
                   observed="; ".join(moved[:8]),
                   why="Index-based pinning (CUDA_VISIBLE_DEVICES, NUMA binding) then refers to different boards.",
                   fix="Set CUDA_DEVICE_ORDER=PCI_BUS_ID or pin by UUID.", evidence=ev)
    return _mk("gpu_visibility", "ok", "Container GPUs are the host's, same indices", targets=targets,
               observed=f"{len(ctr.gpus)} container GPU(s), all on the host with the same index", evidence=ev)
