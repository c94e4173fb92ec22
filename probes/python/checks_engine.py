"""Verdicts on the serving engine: CUDA graphs, environment, attention backend, threads, measured decode speed.

Each runs only where `targets.engine` found the API server; `targets.no_engine` (the `applies` predicate)
says "not applicable" only when every process scan answered without one.
"""

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
from gpuaudit.probes.python.parsers import median, sm_of
from gpuaudit.probes.python.targets import engine, engine_missing, gpus

# Attention backends with no sm_120 kernels (Hopper/datacenter-Blackwell only).
_NO_SM120_BACKENDS = {
    "fa3",
    "flashmla",
    "cutlass_mla",
    "trtllm_mla",
    "trtllm_mha",
    "flash_attn_3",
    "fa4",
}


def cuda_graphs(ctx: Ctx) -> Verdict:
    if (found := engine(ctx)) is None:
        return unknown(engine_missing(ctx))
    role, e = found
    ev = ((role, "engine_procs"),)
    if e.cuda_graphs_disabled:
        return critical(
            f"{e.engine_kind} (pid {e.engine_pid}) started with {e.graph_flag}, TP={e.tp}",
            evidence=ev,
            variant="cuda_graphs_disabled_serving_engine",
            graph_flag=e.graph_flag,
        )
    return ok(
        f"{e.engine_kind} (pid {e.engine_pid}): no --disable-cuda-graph/--enforce-eager, TP={e.tp}",
        variant="cuda_graphs_not_disabled",
        evidence=ev,
    )


def env_issues(env: dict[str, str], needed: int, ngpu: int | None) -> list[tuple[str, str]]:
    """(severity, text) for debug/limiting variables and GPUs hidden from the TP x PP layout."""
    issues: list[tuple[str, str]] = []
    if env.get("CUDA_LAUNCH_BLOCKING", "0") not in ("0", ""):
        issues.append(
            (
                "critical",
                f"CUDA_LAUNCH_BLOCKING={env['CUDA_LAUNCH_BLOCKING']} (every kernel launch synchronous)",
            )
        )
    if env.get("NCCL_DEBUG", "").upper() == "TRACE":
        issues.append(("warning", "NCCL_DEBUG=TRACE"))
    issues += [
        ("warning", f"{k}={env[k]}")
        for k in ("TORCH_USE_CUDA_DSA", "PYTORCH_NO_CUDA_MEMORY_CACHING")
        if env.get(k, "0") not in ("0", "")
    ]
    vis = env.get("CUDA_VISIBLE_DEVICES")
    if vis is not None:
        visible = len([x for x in vis.split(",") if x.strip() and x.strip() != "-1"])
        if visible < needed:
            issues.append(
                (
                    "critical",
                    f"CUDA_VISIBLE_DEVICES={vis} shows {visible} GPU(s) but TP×PP={needed}",
                )
            )
    elif ngpu is not None and needed > ngpu:
        issues.append(("critical", f"TP×PP={needed} exceeds the {ngpu} GPU(s) visible"))
    if "OMP_NUM_THREADS" not in env:
        issues.append(("info", "OMP_NUM_THREADS unset (thread pools sized to all CPUs)"))
    return issues


def dangerous_env(ctx: Ctx) -> Verdict:
    if (found := engine(ctx)) is None:
        return unknown(engine_missing(ctx))
    role, e = found
    ev = ((role, "engine_procs"),)
    if not e.engine_env_readable:
        return unknown(
            "/proc/<pid>/environ unreadable (needs root or the engine's uid)",
            evidence=ev,
            variant="engine_environment_not_readable",
        )
    needed = (e.tp or 1) * (e.pp or 1)
    g = gpus(ctx)
    ngpu = len(g[1].compute_caps) if g else None
    issues = env_issues(e.engine_env, needed, ngpu)
    if not [i for i in issues if i[0] != "info"]:
        return Verdict(
            "info" if issues else "ok",
            "; ".join(t for _, t in issues)
            or f"checked {len(e.engine_env)} CUDA/NCCL/torch variables; TP×PP={needed}"
            + (f" on {ngpu} GPUs" if ngpu else ""),
            variant="no_performance_wrecking_variables_engine",
            evidence=ev,
        )
    worst = "critical" if any(s == "critical" for s, _ in issues) else "warning"
    return Verdict(
        worst,
        "; ".join(t for _, t in issues),
        "no debug variables in production; every GPU the TP×PP layout needs visible",
        variant="debug_limiting_variables_set_engine",
        evidence=ev,
    )


def attention_backend(ctx: Ctx) -> Verdict:
    if (found := engine(ctx)) is None:
        return unknown(engine_missing(ctx))
    role, e = found
    g = gpus(ctx)
    sm120 = g is not None and any(sm_of(c) in (120, 121) for c in g[1].compute_caps)
    backend = (
        e.attention_backend
        or e.engine_env.get("VLLM_ATTENTION_BACKEND")
        or e.engine_env.get("SGLANG_ATTENTION_BACKEND")
    )
    deepgemm = next(
        (
            f"{k}={v}"
            for k, v in e.engine_env.items()
            if "DEEPGEMM" in k and v not in ("0", "false", "False")
        ),
        None,
    )
    extra = (f"; MoE runner {e.moe_backend}" if e.moe_backend else "") + (
        f"; {deepgemm}" if deepgemm else ""
    )
    if sm120 and backend and backend.lower() in _NO_SM120_BACKENDS:
        sev, variant = "warning", "no_sm120_kernels"
    elif sm120 and deepgemm:
        sev, variant = "warning", "deepgemm_on_sm120"
    elif backend and backend.lower() in ("torch_native", "torch_sdpa", "sdpa"):
        sev, variant = "warning", "slow_fallback"
    elif backend:
        sev, variant = "ok", "backend_set"
    else:
        sev, variant = "info", "engine_default"
    return Verdict(
        sev,
        f"{e.engine_kind}: attention backend {backend or 'not set (auto)'}{extra}",
        variant=variant,
        params={"backend": backend},
        evidence=((role, "engine_procs"),),
    )


def engine_threads(ctx: Ctx) -> Verdict:
    """Thread pools sized to the machine while the engine may use only a few CPUs."""
    if (found := engine(ctx)) is None:
        return unknown(engine_missing(ctx))
    role, e = found
    ev = ((role, "engine_proc_status"), (role, "engine_procs"))
    if e.proc_threads is None:
        return unknown(
            ctx.problem("engine_proc_status", role) or "not collected",
            variant="engine_thread_counts_not_read",
            evidence=ev,
        )
    known = [(n, t, c) for n, t, c in e.proc_threads if c]
    if not known or not e.cpus_online:
        return unknown(
            f"{len(e.proc_threads)} engine process(es); allowed CPUs or online CPUs unreadable",
            variant="engine_cpu_affinity_not_read",
            evidence=ev,
        )
    allowed = min(c for _n, _t, c in known)
    busiest = max(known, key=lambda x: x[1])
    omp = e.engine_env.get("OMP_NUM_THREADS") if e.engine_env_readable else None
    ranks = max(1, len([n for n, _t, _c in known if re.search(r"TP\d+|Worker", n)]))
    obs = (
        f"{len(known)} engine process(es), up to {busiest[1]} threads ({busiest[0]}); allowed {allowed} of "
        f"{e.cpus_online} online CPUs; OMP_NUM_THREADS={omp or 'unset'}; {ranks} rank(s)"
    )
    if omp and omp.isdigit() and int(omp) * ranks > allowed:
        return warning(
            obs,
            f"OMP_NUM_THREADS × ranks ≤ {allowed}",
            variant="omp_threads_ranks_exceed_engine",
            evidence=ev,
        )
    if not omp and allowed < e.cpus_online and busiest[1] > allowed:
        return warning(
            obs,
            f"thread pools ≤ {allowed} allowed CPUs (OMP_NUM_THREADS set)",
            evidence=ev,
            variant="engine_threads_sized_host_cpuset",
        )
    if not omp and allowed >= e.cpus_online:
        return not_applicable(
            f"cpuset is the whole machine; {obs}",
            evidence=ev,
            variant="engine_may_use_every_cpu",
        )
    return ok(obs, variant="engine_thread_pools_fit_cpus", evidence=ev)


def measured_throughput(ctx: Ctx) -> Verdict:
    """The engine's own decode figures (the measured side of the roofline, PROBES.md §13)."""
    if (found := engine(ctx)) is None:
        return unknown(engine_missing(ctx))
    role, e = found
    ev = ((role, "engine_logs"),)
    if e.log_sources is None:
        return unknown(
            ctx.problem("engine_logs", role) or "not collected",
            variant="engine_log_not_read",
            evidence=ev,
        )
    if not e.throughput:
        return unknown(
            f"log: {', '.join(e.log_sources) or 'none found'}; no 'gen throughput' / 'Avg generation throughput' lines",
            variant="no_throughput_figures_engine_log",
            evidence=ev,
        )
    single = [t for t, r in e.throughput if r == 1]
    last_t, last_r = e.throughput[-1]
    obs = (
        f"{len(e.throughput)} sample(s); last {last_t:.1f} tok/s at {last_r if last_r is not None else '?'} running request(s); "
        f"peak {max(t for t, _r in e.throughput):.1f} tok/s"
        + (
            f"; single stream median {median(single):.1f} tok/s ({len(single)} samples)"
            if single
            else ""
        )
        + (
            f"; speculative acceptance {e.decode_accept_len:.2f} tokens/step"
            if e.decode_accept_len is not None
            else ""
        )
    )
    return info(obs, variant="decode_throughput_engine_reports", evidence=ev)
