"""Verdicts on /dev/shm, memlock, CPU quota, memory and open files (pure, over facts)."""

from __future__ import annotations

from gpuaudit.probes.container.checks_gpus import kind_unknown
from gpuaudit.probes.container.configs import GIB, gib, match_config, why_unusable
from gpuaudit.probes.container.facts import ContainerFacts
from gpuaudit.probes.core.judge.checks import Ctx, Verdict, critical, info, ok, unknown, warning

_SHM_WHY = (
    "NCCL's shared-memory transport and PyTorch's cross-process tensors live in /dev/shm; when it cannot grow NCCL "
    "fails ('failed to extend /dev/shm/nccl-...') or the engine crashes with bus errors."
)
_SHM_FIX = (
    "Docker: --ipc=host or --shm-size=16g; Kubernetes: memory-backed emptyDir on /dev/shm; LXC: tmpfs sized from "
    "container RAM."
)


def shm(ctx: Ctx) -> Verdict:
    ctr: ContainerFacts = ctx.f
    host = ctx.of("host")
    size = ctr.shm_bytes or 0
    obs = (
        f"/dev/shm {gib(ctr.shm_bytes)} ({ctr.shm_fs}) in the container; host /dev/shm {gib(host.shm_bytes if host else None)}; "
        f"{len(ctr.gpus) if ctr.gpus is not None else 'unknown'} GPU(s) visible"
    )
    if ctr.gpus is not None and len(ctr.gpus) <= 1:
        return info(
            obs,
            variant="dev_shm_single_gpu",
        )
    if size <= 64 * 1024**2:
        return critical(
            obs,
            ">= 1 GiB (NCCL recommends --shm-size=1g; more for large TP)",
            variant="dev_shm_only",
            gib=gib(size),
        )
    if size < GIB:
        return warning(obs, ">= 1 GiB", variant="dev_shm_is", gib=gib(size))
    return ok(obs, ">= 1 GiB", variant="dev_shm", gib=gib(size))


def shm_ipc(ctx: Ctx) -> Verdict:
    host, ctr = ctx.of("host"), ctx.of("container")
    if ctr.kind is None:
        return kind_unknown(ctx)
    if ctr.shm_bytes == host.shm_bytes:
        return ok(
            f"container /dev/shm {gib(ctr.shm_bytes)} = host /dev/shm {gib(host.shm_bytes)}",
            variant="container_shares_host_dev_shm",
        )
    return info(
        f"container /dev/shm {gib(ctr.shm_bytes)}, host {gib(host.shm_bytes)}: see container.shm",
        variant="container_has_own_dev_shm",
    )


def memlock(ctx: Ctx) -> Verdict:
    ctr: ContainerFacts = ctx.f
    if ctr.memlock_kb is None:
        return unknown("ulimit -a printed no locked-memory line")
    if ctr.memlock_kb == -1:
        return ok("ulimit -l unlimited", variant="locked_memory_unlimited")
    rdma = (
        {True: "present", False: "none"}[ctr.infiniband]
        if ctr.infiniband is not None
        else f"unknown ({why_unusable(ctx, 'dev_infiniband', 'container')})"
    )
    obs = f"ulimit -l {ctr.memlock_kb} kB in the container shell; RDMA devices: {rdma}"
    if ctr.infiniband:
        return warning(
            obs,
            "unlimited",
            variant="limited_with_rdma",
            memlock_kb=ctr.memlock_kb,
            evidence=(("container", "dev_infiniband"),),
        )
    return info(
        obs,
        "unlimited",
        variant="limited_no_rdma",
        memlock_kb=ctr.memlock_kb,
        evidence=(("container", "dev_infiniband"),),
    )


def _limits_read(ctx: Ctx) -> str:
    return f"cgroup files: {why_unusable(ctx, 'cgroup_limits', 'container')}"


def cpu_quota(ctx: Ctx) -> Verdict:
    host, ctr = ctx.of("host"), ctx.of("container")
    cfg, how = match_config(host, ctr) if host.configs else (None, "")
    limit = cfg.cpulimit if cfg is not None else None
    if not ctr.cpu_max_read and limit is None:
        return unknown(_limits_read(ctx), evidence=(("container", "cgroup_limits"),))
    quota = (
        f"cpu.max {ctr.cpu_quota_us} {ctr.cpu_period_us}"
        if ctr.cpu_quota_us
        else "cpu.max max (no quota in the container's cgroup)"
    )
    obs = quota + (f"; {how}: cpulimit {limit:g}" if limit else "")
    if ctr.nr_periods:
        obs += f"; throttled in {ctr.nr_throttled or 0} of {ctr.nr_periods} periods"
    ev = (("container", "cgroup_limits"), ("host", "pve_lxc_confs"))
    if not ctr.cpu_quota_us and not limit:
        return ok(
            obs,
            variant="no_quota_proxmox_checked" if cfg is not None else "no_quota",
            evidence=ev,
        )
    ratio = (ctr.nr_throttled or 0) / ctr.nr_periods if ctr.nr_periods else 0.0
    if ratio > 0.01:
        return warning(
            obs,
            "no throttling while serving",
            variant="cpu_quota_throttled_container_periods",
            throttled_pct=100 * ratio,
            evidence=ev,
        )
    return info(
        obs,
        variant="cpu_quota_set_little_throttling",
        evidence=ev,
    )


def memory_limit(ctx: Ctx) -> Verdict:
    host, ctr = ctx.of("host"), ctx.of("container")
    cfg, how = match_config(host, ctr) if host.configs else (None, "")
    ev = (("container", "cgroup_limits"), ("host", "pve_lxc_confs"))
    if not ctr.memory_max_read and (cfg is None or cfg.memory_mb is None):
        return unknown(_limits_read(ctx), evidence=ev)
    obs = (
        f"memory.max {gib(ctr.memory_max) if ctr.memory_max else 'max'}"
        + (f"; {how}: memory {cfg.memory_mb} MiB" if cfg is not None and cfg.memory_mb else "")
        + (f"; oom_kill {ctr.oom_kills}" if ctr.oom_kills is not None else "")
    )
    if ctr.oom_kills:
        return warning(
            obs,
            "oom_kill 0",
            variant="oom_kill_container_cgroup",
            oom_kills=ctr.oom_kills,
            evidence=ev,
        )
    return info(
        obs,
        variant="container_memory_limit",
        evidence=ev,
    )


def _cpus_available(host: ContainerFacts, ctr: ContainerFacts) -> tuple[float | None, str]:
    cands: list[tuple[float, str]] = []
    if ctr.cpuset_cpus:
        cands.append((float(ctr.cpuset_cpus), f"cpuset {ctr.cpuset_cpus} CPUs"))
    if ctr.cpu_quota_us and ctr.cpu_period_us:
        cands.append(
            (
                ctr.cpu_quota_us / ctr.cpu_period_us,
                f"cpu.max {ctr.cpu_quota_us} {ctr.cpu_period_us}",
            )
        )
    cfg, _how = match_config(host, ctr) if host.configs else (None, "")
    if cfg is not None and cfg.cores:
        cands.append((float(cfg.cores), f"PVE cores: {cfg.cores}"))
    if cfg is not None and cfg.cpulimit:
        cands.append((cfg.cpulimit, f"PVE cpulimit: {cfg.cpulimit:g}"))
    if not cands:
        return None, ""
    return min(c[0] for c in cands), ", ".join(c[1] for c in cands)


def limits_vs_model(ctx: Ctx) -> Verdict:
    host, ctr = ctx.of("host"), ctx.of("container")
    cpus, src = _cpus_available(host, ctr)
    ev = (("container", "cgroup_limits"), ("container", "smi_gpu_ids"), ("host", "pve_lxc_confs"))
    if cpus is None or ctr.gpus is None:
        gpus = (
            len(ctr.gpus) if ctr.gpus is not None else why_unusable(ctx, "smi_gpu_ids", "container")
        )
        return unknown(f"CPUs: {src or _limits_read(ctx)}; GPUs: {gpus}", evidence=ev)
    ranks = len(ctr.gpus)
    obs = f"{cpus:g} CPU(s) available ({src}) for {ranks} GPU rank(s) + API/scheduler; model size not read by this probe"
    if cpus < ranks + 1:
        return warning(
            obs,
            f">= {ranks + 1} CPUs (1-2 per rank plus the API/scheduler process)",
            variant="cpus_gpu_ranks",
            cpus=cpus,
            ranks=ranks,
            evidence=ev,
        )
    return ok(obs, f">= {ranks + 1} CPUs", variant="enough_cpus_gpu_ranks", evidence=ev)


def nofile(ctx: Ctx) -> Verdict:
    ctr: ContainerFacts = ctx.f
    if ctr.nofile is None:
        return unknown("ulimit -a printed no open-files line")
    if ctr.nofile != -1 and ctr.nofile < 65536:
        return info(
            f"ulimit -n {ctr.nofile} in the container shell",
            ">= 65536 for the API server",
            variant="nofile_low",
            nofile=ctr.nofile,
        )
    return ok(
        f"ulimit -n {ctr.nofile if ctr.nofile != -1 else 'unlimited'}", variant="nofile_enough"
    )
