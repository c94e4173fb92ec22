"""Verdicts comparing the GPUs the container sees with the host's, the Docker runtime and the user-space driver."""

from __future__ import annotations

from gpuaudit.probes.container.configs import match_config, why_unusable
from gpuaudit.probes.container.facts import ContainerFacts
from gpuaudit.probes.core.judge.checks import Ctx, Verdict, critical, info, ok, unknown, warning


def _pair(ctx: Ctx) -> tuple[ContainerFacts, ContainerFacts]:
    return ctx.of("host"), ctx.of("container")


def gpu_visibility(ctx: Ctx) -> Verdict:
    host, ctr = _pair(ctx)
    on_host = {g.uuid: g for g in host.gpus or [] if g.uuid}
    foreign = [g.uuid for g in ctr.gpus or [] if g.uuid and g.uuid not in on_host]
    if foreign:
        return warning(
            f"container UUIDs not on the host: {', '.join(u for u in foreign if u)}",
            "container GPUs are a subset of the host's",
            title="Container sees GPUs the host does not list",
            why="The container target is probably not on this host (or a VM with its own GPUs).",
            fix="Check which host and container the audit points at.",
        )
    moved = [
        f"container GPU{g.index} = host GPU{on_host[g.uuid].index}"
        for g in ctr.gpus or []
        if g.uuid in on_host and g.index is not None and on_host[g.uuid].index != g.index
    ]
    if moved:
        return info(
            "; ".join(moved[:8]),
            title="GPU indices differ between host and container",
            why="Index-based pinning (CUDA_VISIBLE_DEVICES, NUMA binding) then refers to different boards.",
            fix="Set CUDA_DEVICE_ORDER=PCI_BUS_ID or pin by UUID.",
        )
    return ok(
        f"{len(ctr.gpus or [])} container GPU(s), all on the host with the same index",
        title="Container GPUs are the host's, same indices",
    )


def _expected_gpu_count(ctx: Ctx) -> tuple[int | None, str]:
    host, ctr = _pair(ctx)
    cfg, how = match_config(host, ctr) if host.configs else (None, "")
    if cfg is not None and cfg.gpu_minors:
        return len(cfg.gpu_minors), f"{len(cfg.gpu_minors)} passed by {how}"
    if host.gpus is not None:
        return len(host.gpus), f"{len(host.gpus)} on the host"
    return None, f"host GPU list: {why_unusable(ctx, 'smi_gpu_ids', 'host')}"


def gpu_inventory_match(ctx: Ctx) -> Verdict:
    host, ctr = _pair(ctx)
    want, src = _expected_gpu_count(ctx)
    host_n = len(host.gpus) if host.gpus is not None else None
    if ctr.smi_error:  # nvidia-smi answered with an error banner: NVML cannot open the GPUs, neither can the engine
        return critical(
            f"container: {ctr.smi_error}; host: {host_n if host_n is not None else 'unknown'} GPU(s)",
            f"the container lists {src if want is not None else 'its GPUs'}",
            title="nvidia-smi fails inside the container",
            why="If NVML cannot open the devices the serving engine cannot either.",
            fix="See container.device_nodes / device_cgroup and driver.userspace_match.",
        )
    if ctr.gpus is None:
        return unknown(f"container GPU list: {why_unusable(ctx, 'smi_gpu_ids', 'container')}")
    if want is None:
        return unknown(src)
    obs = f"container sees {len(ctr.gpus)} GPU(s); host has {host_n if host_n is not None else 'unknown'}; expected {src}"
    if len(ctr.gpus) < want:
        return critical(
            obs,
            f"{want} GPU(s) in the container",
            title=f"Container sees {len(ctr.gpus)} of {want} GPUs",
            why="An engine configured for more GPUs than it can see fails to start or silently runs with a "
            "smaller tensor-parallel size.",
            fix="Pass every intended /dev/nvidiaN (mount entries or devN:) and restart the container.",
        )
    return ok(obs, title=f"Container sees all {want} expected GPU(s)")


def userspace_driver(ctx: Ctx) -> Verdict:
    ctr: ContainerFacts = ctx.f
    versions = ctr.libcuda_versions or []
    if not versions:
        return warning(
            "no libcuda.so.<version> under /usr/lib/x86_64-linux-gnu, /usr/lib64, /usr/lib/aarch64-linux-gnu",
            "libcuda.so.<host driver version>",
            title="No libcuda.so in the container's library paths",
            why="LXC does not inject the user-space driver; without libcuda the CUDA runtime cannot start "
            "(unless installed elsewhere).",
            fix="Install the same driver version in the container with --no-kernel-module, or bind-mount the "
            "host libraries.",
        )
    return info(
        f"libcuda.so.{', libcuda.so.'.join(versions)} (compared with the host module in driver.userspace_match)",
        title=f"Container libcuda {', '.join(versions)}",
    )


def docker_only(ctx: Ctx) -> str | None:
    ctr = ctx.of("container")
    kind = ctr.kind if ctr is not None else None
    return f"{kind} container, not Docker" if kind and kind != "docker" else None


def kind_unknown(ctx: Ctx) -> Verdict:
    return unknown(
        f"container kind not determined: virt: {why_unusable(ctx, 'virt', 'container')}, "
        "and the target spec names no kind (give --container docker:NAME / lxc:NAME / pct:ID)",
        evidence=(("container", "virt"),),
    )


def docker_gpu_runtime(ctx: Ctx) -> Verdict:
    ctr: ContainerFacts = ctx.f
    if ctr.kind is None:
        return kind_unknown(ctx)
    if "/dev/nvidiactl" not in ctr.char_nodes():
        return critical(
            "no NVIDIA device nodes in the container (/dev/nvidiactl missing)",
            "--gpus / NVIDIA runtime with compute,utility capabilities",
            title="Docker container has no GPU devices",
            why="Without a device request and the NVIDIA runtime no GPU nodes or driver libraries are injected.",
            fix="docker run --gpus all (or runtime: nvidia, NVIDIA_DRIVER_CAPABILITIES=compute,utility).",
        )
    if ctr.smi_error:
        return critical(
            f"device nodes present, nvidia-smi: {ctr.smi_error}",
            "the requested GPUs listed",
            title="Docker container sees no GPU",
            fix="Check NVIDIA_VISIBLE_DEVICES / --gpus and the toolkit's runtime configuration.",
        )
    rec = ctx.outputs.get("container", {}).get("smi_gpu_ids")
    if rec is not None and rec.missing_tool and not rec.error:
        return warning(
            "device nodes present but no nvidia-smi in the container",
            "utility capability (nvidia-smi, NVML)",
            title="Docker GPU capabilities lack 'utility'",
            fix="NVIDIA_DRIVER_CAPABILITIES=compute,utility (or all).",
            evidence=(("container", "smi_gpu_ids"),),
        )
    if ctr.gpus is None:
        return unknown(
            f"device nodes present; GPU list: {why_unusable(ctx, 'smi_gpu_ids', 'container')}",
            evidence=(("container", "smi_gpu_ids"),),
        )
    return ok(
        f"{len(ctr.gpus)} GPU(s) visible",
        title="Docker container has GPUs",
        evidence=(("container", "smi_gpu_ids"),),
    )
