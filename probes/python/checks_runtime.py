"""Verdicts on the inspected Python: torch and its arch list, CUDA wheels, FlashInfer, runtime vs driver, JIT caches."""

from __future__ import annotations

import re

from gpuaudit.probes.core.judge.checks import (
    Ctx,
    Verdict,
    critical,
    info,
    not_applicable,
    ok,
    unknown,
    warning,
)
from gpuaudit.probes.core.models import Role
from gpuaudit.probes.core.parsers.pyenv import arch_sms, cuda_major_minor
from gpuaudit.probes.python.parsers import GPU_SOURCE, driver_max_cuda, sm_of
from gpuaudit.probes.python.targets import engine, gpu_problem, gpus


def arch_coverage(arch_list: list[str], ccs: list[str]) -> tuple[str, list[str]]:
    """Worst severity and one note per compute capability: SASS present, only PTX (JIT), or no kernels."""
    sass, ptx = arch_sms(arch_list)
    worst, notes = "ok", []
    for cc in ccs:
        sm = sm_of(cc) or 0
        if sm in sass:
            notes.append(f"sm_{sm}: SASS present")
        elif any(p <= sm for p in ptx):
            worst = "warning" if worst == "ok" else worst
            notes.append(f"sm_{sm}: only PTX compute_{max(p for p in ptx if p <= sm)} (JIT)")
        else:
            worst = "critical"
            notes.append(f"sm_{sm}: no kernels")
    return worst, notes


def torch_arch_support(ctx: Ctx) -> Verdict:
    rt, g = ctx.f, gpus(ctx)
    if g is None:
        return unknown(gpu_problem(ctx), variant="gpu_compute_capability_unknown")
    grole, gf = g
    ev = ((grole, GPU_SOURCE),)
    if rt.torch is None:
        return not_applicable(
            f"{rt.interpreter or 'python3'} has no torch ({(rt.torch_error or '')[:120]})",
            variant="torch_not_installed_inspected_python",
            evidence=ev,
        )
    if rt.torch_cuda is None:
        return critical(
            f"torch {rt.torch}, torch.version.cuda=None",
            variant="torch_cpu_only_build",
            evidence=ev,
        )
    if rt.arch_list is None:
        return unknown(
            f"torch {rt.torch}, torch.version.cuda={rt.torch_cuda}",
            variant="torch_arch_list_unreadable",
            evidence=ev,
        )
    ccs = sorted({c for c in gf.compute_caps if sm_of(c) is not None})
    if (
        not ccs
    ):  # GPUs listed, but no compute capability readable: nothing to compare the arch list with
        return unknown(
            f"torch {rt.torch} arch list {' '.join(rt.arch_list)}; nvidia-smi compute_cap "
            f"{', '.join(gf.compute_caps)} for {len(gf.compute_caps)} GPU(s)",
            variant="gpu_compute_capability_unreadable",
            evidence=ev,
        )
    worst, notes = arch_coverage(rt.arch_list, ccs)
    obs = f"torch {rt.torch} (CUDA {rt.torch_cuda}), arch list {' '.join(rt.arch_list)}; GPUs {', '.join(ccs)}: {'; '.join(notes)}"
    unread = sum(1 for c in gf.compute_caps if sm_of(c) is None)
    if (
        unread and worst == "ok"
    ):  # "every GPU" cannot be claimed for GPUs whose capability is missing
        worst, obs = "unknown", obs + f"; {unread} GPU(s) with unreadable compute capability"
    return Verdict(worst, obs, variant=worst, evidence=ev)  # a variant per severity


def wheel_issues(
    packages: dict[str, str], torch_cuda: str | None, caps: list[str]
) -> list[tuple[str, str]]:
    """(severity, text) for mixed cu12/cu13 wheels, torch vs runtime wheels, Triton too old for sm_120."""
    issues: list[tuple[str, str]] = []
    cu12 = sorted(k for k in packages if k.endswith("-cu12"))
    cu13 = sorted(k for k in packages if k.endswith("-cu13"))
    if cu12 and cu13:
        issues.append(
            (
                "warning",
                f"mixed CUDA runtime wheels: {', '.join(cu12[:3])} and {', '.join(cu13[:3])}",
            )
        )
    tv = cuda_major_minor(torch_cuda)
    if tv and (cu12 and tv[0] == 13 and not cu13 or cu13 and tv[0] == 12 and not cu12):
        issues.append(
            (
                "warning",
                f"torch built for CUDA {torch_cuda} but runtime wheels are {'cu12' if cu12 else 'cu13'}",
            )
        )
    tri = packages.get("triton")
    m = re.match(r"(\d+)\.(\d+)", tri or "")
    if any(sm_of(c) == 120 for c in caps) and m and (int(m.group(1)), int(m.group(2))) < (3, 3):
        issues.append(
            (
                "critical",
                f"triton {tri} predates sm_120 support (needs ≥ 3.3, shipped with torch 2.7)",
            )
        )
    return issues


def cuda_stack_versions(ctx: Ctx) -> Verdict:
    rt = ctx.f
    if not rt.packages:
        return not_applicable(
            f"{rt.interpreter or 'python3'} has none of the tracked packages",
            variant="no_cuda_python_packages_installed",
        )
    g = gpus(ctx)
    pk = rt.packages
    issues = wheel_issues(pk, rt.torch_cuda, g[1].compute_caps if g else [])
    listed = ", ".join(
        f"{k} {pk[k]}"
        for k in ("torch", "triton", "flashinfer-python", "sglang", "sgl-kernel", "vllm")
        if k in pk
    )
    if not issues:
        runtime = (
            "cu13"
            if any(k.endswith("-cu13") for k in pk)
            else "cu12"
            if any(k.endswith("-cu12") for k in pk)
            else "none"
        )
        return ok(f"{listed}; runtime wheels {runtime}", variant="cuda_python_wheels_coherent")
    worst = "critical" if any(s == "critical" for s, _ in issues) else "warning"
    return Verdict(
        worst,
        "; ".join(t for _, t in issues) + f" ({listed})",
        variant="cuda_python_wheels_inconsistent",
    )


def flashinfer_sm120(ctx: Ctx) -> Verdict:
    rt, g = ctx.f, gpus(ctx)
    fi = rt.packages.get("flashinfer-python")
    if not fi:
        return not_applicable(
            "FlashInfer not installed",
            variant="flashinfer_sm_120_check_not",
        )
    if g is None:
        return unknown(
            f"flashinfer-python {fi}; {gpu_problem(ctx)}", variant="flashinfer_gpu_arch_unknown"
        )
    if not any(sm_of(c) in (120, 121) for c in g[1].compute_caps):
        return not_applicable("no sm_120/121 GPU", variant="flashinfer_sm_120_check_not")
    cubin = rt.packages.get("flashinfer-cubin")
    eng = engine(ctx)
    archs = eng[1].engine_env.get("FLASHINFER_CUDA_ARCH_LIST") if eng else None
    ev = ((eng[0], "engine_procs"),) if eng else ()
    if cubin and cubin.startswith("0.6.11"):
        return critical(
            f"flashinfer-python {fi}, flashinfer-cubin {cubin}",
            variant="flashinfer_cubin_0_6_11",
        )
    if archs and not re.search(r"12\.0|12\.1|120|121", archs):
        return critical(
            f"FLASHINFER_CUDA_ARCH_LIST={archs}",
            variant="flashinfer_cuda_arch_list_excludes",
            evidence=ev,
        )
    obs = (
        f"flashinfer-python {fi}"
        + (f", cubin {cubin}" if cubin else "")
        + (
            f", jit-cache {rt.packages['flashinfer-jit-cache']}"
            if "flashinfer-jit-cache" in rt.packages
            else ""
        )
        + (f", FLASHINFER_CUDA_ARCH_LIST={archs}" if archs else "")
        + "; cubin contents not inspected"
    )
    return ok(obs, variant="flashinfer_installed_sm_120_no", evidence=ev)


def cuda_runtime_vs_driver(ctx: Ctx) -> Verdict:
    rt = ctx.f
    runtime = cuda_major_minor(rt.torch_cuda)
    if runtime is None:
        return not_applicable(
            "no CUDA build of torch found",
            variant="cuda_runtime_vs_driver_no",
        )
    host = ctx.of("host")
    drv_role: Role | None = (
        "host"
        if host is not None and host.driver
        else ("container" if ctx.of("container") and ctx.of("container").driver else None)
    )
    driver = ctx.of(drv_role).driver if drv_role else None
    maxc = driver_max_cuda(driver)
    ev = ((drv_role, GPU_SOURCE),) if drv_role else ()
    if driver is None or maxc is None:
        return unknown(
            f"torch CUDA {rt.torch_cuda}; driver {driver or 'not read'} ({gpu_problem(ctx)})",
            variant="driver_cuda_support_unknown",
            evidence=ev,
        )
    wheel = next((v for k, v in rt.packages.items() if k.startswith("nvidia-cuda-runtime")), None)
    obs = (
        f"torch built for CUDA {rt.torch_cuda}"
        + (f" (runtime wheel {wheel})" if wheel else "")
        + f"; {drv_role} driver {driver} supports CUDA ≤ {maxc[0]}.{maxc[1]}"
    )
    if runtime[0] > maxc[0]:
        return critical(
            obs,
            f"runtime major ≤ {maxc[0]} (or valid forward-compat libs)",
            evidence=ev,
            variant="cuda_runtime_newer_host_driver",
        )
    if runtime > maxc:
        return ok(
            obs + "; minor-version compatibility applies",
            variant="cuda_runtime_newer_minor_driver",
            evidence=ev,
        )
    return ok(obs, variant="cuda_runtime_supported_driver", evidence=ev)


def jit_caches(ctx: Ctx) -> Verdict:
    rt = ctx.f
    dirs = rt.jit_dirs or []
    if not dirs:
        eng = engine(ctx)
        return Verdict(
            "info" if eng else "n/a",
            ("" if eng else "no serving engine found; ")
            + "no FlashInfer/Triton/vLLM/SGLang/DeepGEMM/inductor cache under the audit user's home"
            + " (an engine running as another user, or with *_CACHE_DIR set, keeps them elsewhere)",
            variant="no_jit_cache_folders_found",
        )
    fi = rt.packages.get("flashinfer-python")
    stale = [
        f"{d.path} holds {', '.join(other[:3])} next to the installed {fi}"
        for d in dirs
        if d.path.endswith("/flashinfer")
        and fi
        and (other := [x for x in d.entries if re.fullmatch(r"\d+\.\d+\.\d+\S*", x) and x != fi])
    ]
    volatile = [f"{d.path} on {d.fs}" for d in dirs if (d.fs or "") in ("tmpfs", "ramfs")]
    readonly = [d.path for d in dirs if not d.writable]
    listing = "; ".join(
        f"{d.path} ({d.fs or '?'}{', read-only' if not d.writable else ''}, {len(d.entries)} entries)"
        for d in dirs
    )
    if stale:
        return warning(
            "; ".join(stale),
            "only the installed version's entries after an upgrade",
            variant="jit_cache_carries_kernels_another",
        )
    if volatile or readonly:
        return info(
            "; ".join(volatile + [f"{r} not writable" for r in readonly]) + f" ({listing})",
            variant="jit_caches_not_persistent" if volatile else "jit_cache_folders_read_only",
        )
    return ok(listing, variant="jit_caches_persistent")
