"""Container rules on /dev/shm, memlock, CPU quota, memory, open files and the user-space driver."""

from __future__ import annotations

from gpuaudit.probes.container.facts import ContainerFacts
from gpuaudit.probes.container.rules_common import GIB, _gib, _mk, _na_no_container, _why, match_config
from gpuaudit.probes.core.models import Finding, Role


def _multi_gpu(ctr: ContainerFacts) -> bool | None:
    return None if ctr.gpus is None else len(ctr.gpus) > 1


def judge_shm(host: ContainerFacts, ctr: ContainerFacts | None) -> Finding:
    ev: list[tuple[Role, str]] = [("container", "df_shm"), ("container", "smi_gpu_ids")]
    if ctr is None:
        return _na_no_container("shm", "/dev/shm capacity", [("host", "df_shm")])
    targets: tuple[Role, ...] = ("container",)
    if ctr.shm_bytes is None:
        return _mk("shm", "unknown", "/dev/shm size could not be read", targets=targets, observed=_why(ctr, "df_shm"), evidence=ev)
    multi = _multi_gpu(ctr)
    obs = f"/dev/shm {_gib(ctr.shm_bytes)} ({ctr.shm_fs}) in the container; host /dev/shm {_gib(host.shm_bytes)}; " \
          f"{len(ctr.gpus) if ctr.gpus is not None else 'unknown'} GPU(s) visible"
    why = ("NCCL's shared-memory transport and PyTorch's cross-process tensors live in /dev/shm; when it cannot grow NCCL fails "
           "('failed to extend /dev/shm/nccl-...') or the engine crashes with bus errors.")
    fix = "Docker: --ipc=host or --shm-size=16g; Kubernetes: memory-backed emptyDir on /dev/shm; LXC: tmpfs sized from container RAM."
    if multi is False:
        return _mk("shm", "info", "/dev/shm: single GPU", targets=targets, observed=obs, why="Only multi-GPU (TP/PP > 1) needs large /dev/shm.", evidence=ev)
    if ctr.shm_bytes <= 64 * 1024**2:
        return _mk("shm", "critical", f"/dev/shm is only {_gib(ctr.shm_bytes)}", targets=targets, observed=obs,
                   expected=">= 1 GiB (NCCL recommends --shm-size=1g; more for large TP)", why=why, fix=fix, evidence=ev)
    if ctr.shm_bytes < GIB:
        return _mk("shm", "warning", f"/dev/shm is {_gib(ctr.shm_bytes)}", targets=targets, observed=obs,
                   expected=">= 1 GiB", why=why, fix=fix, evidence=ev)
    return _mk("shm", "ok", f"/dev/shm {_gib(ctr.shm_bytes)}", targets=targets, observed=obs, expected=">= 1 GiB", evidence=ev)


def judge_shm_ipc(host: ContainerFacts, ctr: ContainerFacts | None) -> Finding:
    ev: list[tuple[Role, str]] = [("container", "virt"), ("container", "df_shm"), ("host", "df_shm")]
    if ctr is None:
        return _na_no_container("shm_ipc", "Docker IPC mode")
    targets: tuple[Role, ...] = ("host", "container")
    if ctr.virt is None:
        return _mk("shm_ipc", "unknown", "Docker IPC mode: container kind not known", targets=targets,
                   observed=f"container kind: {_why(ctr, 'virt')}", evidence=ev)
    if ctr.virt != "docker":
        return _mk("shm_ipc", "ok", "Docker IPC mode: not applicable", targets=targets,
                   observed=f"not applicable: {ctr.virt} container, not Docker", evidence=ev)
    if ctr.shm_bytes is not None and host.shm_bytes is not None and ctr.shm_bytes == host.shm_bytes:
        return _mk("shm_ipc", "ok", "Container shares the host's /dev/shm (IPC host)", targets=targets,
                   observed=f"container /dev/shm {_gib(ctr.shm_bytes)} = host /dev/shm {_gib(host.shm_bytes)}",
                   why="With --ipc=host df shows the host's /dev/shm: that is the intended configuration.", evidence=ev)
    return _mk("shm_ipc", "info", "Container has its own /dev/shm (private IPC)", targets=targets,
               observed=f"container /dev/shm {_gib(ctr.shm_bytes)}, host {_gib(host.shm_bytes)}: see container.shm", evidence=ev)


def judge_memlock(host: ContainerFacts, ctr: ContainerFacts | None) -> Finding:
    ev: list[tuple[Role, str]] = [("container", "ulimit_a"), ("container", "dev_infiniband")]
    if ctr is None:
        return _na_no_container("memlock", "Locked-memory limit")
    targets: tuple[Role, ...] = ("container",)
    if ctr.memlock_kb is None:
        return _mk("memlock", "unknown", "Locked-memory limit could not be read", targets=targets, observed=_why(ctr, "ulimit_a"), evidence=ev)
    if ctr.memlock_kb == -1:
        return _mk("memlock", "ok", "Locked memory unlimited", targets=targets, observed="ulimit -l unlimited", evidence=ev)
    obs = f"ulimit -l {ctr.memlock_kb} kB in the container shell; RDMA devices: " + \
          ("present" if ctr.infiniband else "none" if ctr.infiniband is False else "unknown")
    why = ("NCCL pairs shm with memlock=-1: verbs memory registration (GPUDirect RDMA / InfiniBand) pins host buffers; "
           "single-node PCIe traffic barely depends on it. The engine inherits the limit of whatever starts it (systemd unit, ssh session).")
    fix = "Docker --ulimit memlock=-1; LXC lxc.prlimit.memlock: unlimited; systemd LimitMEMLOCK=infinity."
    if ctr.infiniband:
        return _mk("memlock", "warning", f"Locked memory limited to {ctr.memlock_kb} kB with RDMA devices present", targets=targets,
                   observed=obs, expected="unlimited", why=why, fix=fix, evidence=ev)
    return _mk("memlock", "info", f"Locked memory limited to {ctr.memlock_kb} kB (no RDMA)", targets=targets, observed=obs,
               expected="unlimited", why=why, fix=fix, evidence=ev)


def _cpus_available(host: ContainerFacts, ctr: ContainerFacts) -> tuple[float | None, str]:
    cands: list[tuple[float, str]] = []
    if ctr.cpuset_cpus:
        cands.append((float(ctr.cpuset_cpus), f"cpuset {ctr.cpuset_cpus} CPUs"))
    if ctr.cpu_quota_us and ctr.cpu_period_us:
        cands.append((ctr.cpu_quota_us / ctr.cpu_period_us, f"cpu.max {ctr.cpu_quota_us} {ctr.cpu_period_us}"))
    cfg, _how = match_config(host, ctr) if host.configs else (None, "")
    if cfg is not None and cfg.cores:
        cands.append((float(cfg.cores), f"PVE cores: {cfg.cores}"))
    if cfg is not None and cfg.cpulimit:
        cands.append((cfg.cpulimit, f"PVE cpulimit: {cfg.cpulimit:g}"))
    if not cands:
        return None, ""
    best = min(cands, key=lambda c: c[0])
    return best[0], ", ".join(c[1] for c in cands)


def judge_cpu_quota(host: ContainerFacts, ctr: ContainerFacts | None) -> Finding:
    ev: list[tuple[Role, str]] = [("container", "cgroup_limits"), ("host", "pve_lxc_confs")]
    if ctr is None:
        return _na_no_container("cpu_quota", "CPU quota")
    targets: tuple[Role, ...] = ("host", "container")
    cfg, how = match_config(host, ctr) if host.configs else (None, "")
    limit = cfg.cpulimit if cfg is not None else None
    if not ctr.cpu_max_read and limit is None:
        return _mk("cpu_quota", "unknown", "CPU quota could not be read", targets=targets, observed=_why(ctr, "cgroup_limits"), evidence=ev)
    quota = f"cpu.max {ctr.cpu_quota_us} {ctr.cpu_period_us}" if ctr.cpu_quota_us else "cpu.max max (no quota in the container's cgroup)"
    obs = quota + (f"; {how}: cpulimit {limit:g}" if limit else "")
    if ctr.nr_periods:
        obs += f"; throttled in {ctr.nr_throttled or 0} of {ctr.nr_periods} periods"
    if not ctr.cpu_quota_us and not limit:
        return _mk("cpu_quota", "ok", "No CPU quota", targets=targets, observed=obs,
                   why="Proxmox sets cpulimit on the parent /lxc/<id> cgroup, invisible from inside; the config was checked too."
                   if cfg is not None else "", evidence=ev)
    ratio = (ctr.nr_throttled or 0) / ctr.nr_periods if ctr.nr_periods else 0.0
    why = ("The engine's scheduler and per-GPU workers launch kernels every few ms; a throttled cgroup stalls them for the "
           "rest of the CFS period, which shows as token-latency jitter while the GPUs wait.")
    if ratio > 0.01:
        return _mk("cpu_quota", "warning", f"CPU quota throttled the container in {100 * ratio:.1f}% of periods", targets=targets,
                   observed=obs, expected="no throttling while serving", why=why,
                   fix="Remove cpulimit / the quota, give enough cores, or pin with lxc.cgroup2.cpuset.cpus.", evidence=ev)
    return _mk("cpu_quota", "info", "CPU quota set, little throttling so far", targets=targets, observed=obs, why=why,
               fix="Sample cpu.stat nr_throttled twice while serving; remove the quota if it grows.", evidence=ev)


def judge_memory_limit(host: ContainerFacts, ctr: ContainerFacts | None) -> Finding:
    ev: list[tuple[Role, str]] = [("container", "cgroup_limits"), ("host", "pve_lxc_confs")]
    if ctr is None:
        return _na_no_container("memory_limit", "Container memory limit")
    targets: tuple[Role, ...] = ("host", "container")
    cfg, how = match_config(host, ctr) if host.configs else (None, "")
    if not ctr.memory_max_read and (cfg is None or cfg.memory_mb is None):
        return _mk("memory_limit", "unknown", "Memory limit could not be read", targets=targets, observed=_why(ctr, "cgroup_limits"), evidence=ev)
    obs = f"memory.max {_gib(ctr.memory_max) if ctr.memory_max else 'max'}" + \
          (f"; {how}: memory {cfg.memory_mb} MiB" if cfg is not None and cfg.memory_mb else "") + \
          (f"; oom_kill {ctr.oom_kills}" if ctr.oom_kills is not None else "")
    if ctr.oom_kills:
        return _mk("memory_limit", "warning", f"{ctr.oom_kills} OOM kill(s) in the container's cgroup", targets=targets,
                   observed=obs, expected="oom_kill 0",
                   why="Weight loading streams the checkpoint through the page cache charged to the container; at the limit processes get killed.",
                   fix="Raise the container's memory (PVE memory:) or reduce CPU-side caches/offload.", evidence=ev)
    return _mk("memory_limit", "info", "Container memory limit", targets=targets, observed=obs,
               why="Model loading through the page cache is throttled by a tight limit (slow restarts).", evidence=ev)


def judge_limits_vs_model(host: ContainerFacts, ctr: ContainerFacts | None) -> Finding:
    ev: list[tuple[Role, str]] = [("container", "cgroup_limits"), ("container", "smi_gpu_ids"), ("host", "pve_lxc_confs")]
    if ctr is None:
        return _na_no_container("limits_vs_model", "Container limits vs GPU ranks")
    targets: tuple[Role, ...] = ("host", "container")
    cpus, src = _cpus_available(host, ctr)
    if cpus is None or ctr.gpus is None:
        return _mk("limits_vs_model", "unknown", "Container CPUs or GPU count not known", targets=targets,
                   observed=f"CPUs: {src or _why(ctr, 'cgroup_limits')}; GPUs: {len(ctr.gpus) if ctr.gpus is not None else _why(ctr, 'smi_gpu_ids')}",
                   evidence=ev)
    ranks = len(ctr.gpus)
    need = ranks + 1
    obs = f"{cpus:g} CPU(s) available ({src}) for {ranks} GPU rank(s) + API/scheduler; model size not read by this probe"
    if cpus < need:
        return _mk("limits_vs_model", "warning", f"{cpus:g} CPUs for {ranks} GPU ranks", targets=targets, observed=obs,
                   expected=f">= {need} CPUs (1-2 per rank plus the API/scheduler process)",
                   why="Each rank's CPU thread launches kernels and runs NCCL proxies; too few cores serialise them and the GPUs wait.",
                   fix="Give the container more cores (PVE cores:/cpulimit:, cpuset).", evidence=ev)
    return _mk("limits_vs_model", "ok", "Enough CPUs for the GPU ranks", targets=targets, observed=obs,
               expected=f">= {need} CPUs", evidence=ev)


def judge_userspace_driver(ctr: ContainerFacts | None) -> Finding:
    ev: list[tuple[Role, str]] = [("container", "libcuda_files")]
    if ctr is None:
        return _na_no_container("userspace_driver", "Container user-space driver")
    targets: tuple[Role, ...] = ("container",)
    if ctr.libcuda_versions is None:
        return _mk("userspace_driver", "unknown", "libcuda could not be listed", targets=targets, observed=_why(ctr, "libcuda_files"), evidence=ev)
    if not ctr.libcuda_versions:
        return _mk("userspace_driver", "warning", "No libcuda.so in the container's library paths", targets=targets,
                   observed="no libcuda.so.<version> under /usr/lib/x86_64-linux-gnu, /usr/lib64, /usr/lib/aarch64-linux-gnu",
                   expected="libcuda.so.<host driver version>",
                   why="LXC does not inject the user-space driver; without libcuda the CUDA runtime cannot start (unless installed elsewhere).",
                   fix="Install the same driver version in the container with --no-kernel-module, or bind-mount the host libraries.",
                   evidence=ev)
    return _mk("userspace_driver", "info", f"Container libcuda {', '.join(ctr.libcuda_versions)}", targets=targets,
               observed=f"libcuda.so.{', libcuda.so.'.join(ctr.libcuda_versions)} (compared with the host module in driver.userspace_match)",
               evidence=ev)


def judge_docker_gpu_runtime(ctr: ContainerFacts | None) -> Finding:
    ev: list[tuple[Role, str]] = [("container", "virt"), ("container", "smi_gpu_ids")]
    if ctr is None:
        return _na_no_container("docker_gpu_runtime", "Docker GPU runtime")
    targets: tuple[Role, ...] = ("container",)
    if ctr.virt is None:
        return _mk("docker_gpu_runtime", "unknown", "Docker GPU runtime: container kind not known", targets=targets,
                   observed=f"container kind: {_why(ctr, 'virt')}", evidence=ev)
    if ctr.virt != "docker":
        return _mk("docker_gpu_runtime", "ok", "Docker GPU runtime: not applicable", targets=targets,
                   observed=f"not applicable: {ctr.virt} container, not Docker", evidence=ev)
    if ctr.gpus:
        return _mk("docker_gpu_runtime", "ok", "Docker container has GPUs", targets=targets, observed=f"{len(ctr.gpus)} GPU(s) visible", evidence=ev)
    return _mk("docker_gpu_runtime", "critical", "Docker container sees no GPU", targets=targets,
               observed=ctr.smi_error or _why(ctr, "smi_gpu_ids"), expected="--gpus / NVIDIA runtime with compute,utility capabilities",
               why="Without a device request and the NVIDIA runtime no GPU nodes or driver libraries are injected.",
               fix="docker run --gpus all (or runtime: nvidia, NVIDIA_DRIVER_CAPABILITIES=compute,utility).", evidence=ev)


def judge_nofile(ctr: ContainerFacts | None) -> Finding:
    ev: list[tuple[Role, str]] = [("container", "ulimit_a")]
    if ctr is None:
        return _na_no_container("nofile", "Open-file limit")
    targets: tuple[Role, ...] = ("container",)
    if ctr.nofile is None:
        return _mk("nofile", "unknown", "Open-file limit could not be read", targets=targets, observed=_why(ctr, "ulimit_a"), evidence=ev)
    if ctr.nofile != -1 and ctr.nofile < 65536:
        return _mk("nofile", "info", f"Open-file limit {ctr.nofile}", targets=targets, observed=f"ulimit -n {ctr.nofile} in the container shell",
                   expected=">= 65536 for the API server",
                   why="Many concurrent HTTP/SSE streams plus model shards need file descriptors.",
                   fix="LimitNOFILE= in the engine's unit, or lxc.prlimit.nofile.", evidence=ev)
    return _mk("nofile", "ok", "Open-file limit", targets=targets, observed=f"ulimit -n {ctr.nofile if ctr.nofile != -1 else 'unlimited'}", evidence=ev)
