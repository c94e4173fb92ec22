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
            variant="container_sees_gpus_host_does",
        )
    moved = [
        f"container GPU{g.index} = host GPU{on_host[g.uuid].index}"
        for g in ctr.gpus or []
        if g.uuid in on_host and g.index is not None and on_host[g.uuid].index != g.index
    ]
    if moved:
        return info(
            "; ".join(moved[:8]),
            variant="gpu_indices_differ_between_host",
        )
    return ok(
        f"{len(ctr.gpus or [])} container GPU(s), all on the host with the same index",
        variant="container_gpus_host_same_indices",
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
            variant="nvidia_smi_fails_inside_container",
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
            variant="container_sees_gpus",
            n_gpus=len(ctr.gpus),
            want=want,
        )
    return ok(obs, variant="container_sees_all_expected_gpu", want=want)


def userspace_driver(ctx: Ctx) -> Verdict:
    ctr: ContainerFacts = ctx.f
    versions = ctr.libcuda_versions or []
    if not versions:
        return warning(
            "no libcuda.so.<version> under /usr/lib/x86_64-linux-gnu, /usr/lib64, /usr/lib/aarch64-linux-gnu",
            "libcuda.so.<host driver version>",
            variant="no_libcuda_so_container_library",
        )
    return info(
        f"libcuda.so.{', libcuda.so.'.join(versions)} (compared with the host module in driver.userspace_match)",
        variant="container_libcuda",
        versions=", ".join(versions),
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
            variant="docker_container_has_no_gpu",
        )
    if ctr.smi_error:
        return critical(
            f"device nodes present, nvidia-smi: {ctr.smi_error}",
            "the requested GPUs listed",
            variant="docker_container_sees_no_gpu",
        )
    rec = ctx.outputs.get("container", {}).get("smi_gpu_ids")
    if rec is not None and rec.missing_tool and not rec.error:
        return warning(
            "device nodes present but no nvidia-smi in the container",
            "utility capability (nvidia-smi, NVML)",
            variant="docker_gpu_capabilities_lack_utility",
            evidence=(("container", "smi_gpu_ids"),),
        )
    if ctr.gpus is None:
        return unknown(
            f"device nodes present; GPU list: {why_unusable(ctx, 'smi_gpu_ids', 'container')}",
            evidence=(("container", "smi_gpu_ids"),),
        )
    return ok(
        f"{len(ctr.gpus)} GPU(s) visible",
        variant="docker_container_has_gpus",
        evidence=(("container", "smi_gpu_ids"),),
    )
