"""Verdicts on the serving engine's NCCL setup: environment overrides, the libnccl it maps, its custom all-reduce.

Each runs where `targets.engine` found the API server; `targets.no_engine` (the `applies` predicate) says
"not applicable" only when every process scan answered without one.
"""

from __future__ import annotations

import re

from gpuaudit.probes.core.judge.checks import Ctx, Verdict, ok, unknown, warning
from gpuaudit.probes.nccl.parsers import nccl_version_from_path
from gpuaudit.probes.nccl.targets import (
    engine,
    engine_missing,
    interconnect,
    iommu_gate,
    no_engine,
    ordered,
    p2p_all_ok,
    topology,
    topology_problem,
)

_TUNING = (
    "NCCL_ALGO",
    "NCCL_PROTO",
    "NCCL_MIN_NCHANNELS",
    "NCCL_MAX_NCHANNELS",
    "NCCL_BUFFSIZE",
    "NCCL_NTHREADS",
    "NCCL_MIN_CTAS",
    "NCCL_MAX_CTAS",
    "NCCL_CUMEM_ENABLE",
    "NCCL_NET_GDR_LEVEL",
)
_RANK = ("info", "warning", "critical")


def env_issues(
    env: dict[str, str], p2p_ok: bool, gate: str, inter: str | None
) -> list[tuple[str, str]]:
    """(severity, text) per NCCL variable that changes transport or algorithm (PROBES.md nccl.env_overrides)."""
    issues: list[tuple[str, str]] = []
    if env.get("NCCL_P2P_DISABLE") == "1" or env.get("NCCL_P2P_LEVEL", "").upper() in ("LOC", "0"):
        v = (
            "NCCL_P2P_DISABLE=1"
            if env.get("NCCL_P2P_DISABLE") == "1"
            else f"NCCL_P2P_LEVEL={env['NCCL_P2P_LEVEL']}"
        )
        issues.append(
            (
                "warning" if p2p_ok and gate == "ok" else "info",
                f"{v} (P2P {'OK in the driver matrix' if p2p_ok else 'capability not confirmed'})",
            )
        )
    if env.get("NCCL_SHM_DISABLE") == "1":
        issues.append(("warning", "NCCL_SHM_DISABLE=1"))
    if env.get("NCCL_DEBUG", "").upper() in ("INFO", "TRACE"):
        issues.append(("info", f"NCCL_DEBUG={env['NCCL_DEBUG']}"))
    if env.get("NCCL_NVLS_ENABLE") == "0":
        issues.append(
            ("warning", "NCCL_NVLS_ENABLE=0")
            if inter == "nvlink"
            else (
                "info",
                "NCCL_NVLS_ENABLE=0"
                + (
                    " (interconnect unknown: a warning on NVSwitch systems)"
                    if inter is None
                    else ""
                ),
            )
        )
    tuning = [f"{k}={env[k]}" for k in _TUNING if k in env]
    if tuning:
        issues.append(("info", "tuning in effect: " + ", ".join(tuning)))
    return issues


def env_overrides(ctx: Ctx) -> Verdict:
    if (found := engine(ctx)) is None:
        return unknown(engine_missing(ctx))
    role, e = found
    ev = ((role, "engine_procs"),)
    if not e.engine_env_readable:
        return unknown(
            "/proc/<pid>/environ unreadable (needs root or the engine's uid)",
            variant="engine_environment_not_readable",
            evidence=ev,
        )
    topo = topology(ctx)
    issues = env_issues(
        e.engine_env,
        p2p_all_ok(ctx.of("host")),
        iommu_gate(ctx)[0],
        interconnect(topo[1]) if topo else None,
    )
    if not issues:
        nccl_vars = sorted(k for k in e.engine_env if k.startswith("NCCL_"))
        return ok(
            f"{e.engine_kind or 'engine'}: "
            + (", ".join(nccl_vars) if nccl_vars else "no NCCL_* variables"),
            variant="no_nccl_overrides_engine_environment",
            evidence=ev,
        )
    worst = max((s for s, _ in issues), key=_RANK.index)
    return Verdict(
        worst,
        "; ".join(t for _, t in issues),
        evidence=ev,
        variant="nccl_knobs_override_transport_algorithm"
        if worst != "info"
        else "nccl_tuning_debug_variables_set",
    )


def _version(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


def library_in_use(ctx: Ctx) -> Verdict:
    if (found := engine(ctx)) is None:
        return unknown(engine_missing(ctx))
    role, e = found
    torch_nccl = next((f.torch_nccl for _r, f in ordered(ctx) if f.torch_nccl), None)
    system: list[str] = next((f.system_nccl for _r, f in ordered(ctx) if f.system_nccl), [])
    vers = f"torch bundles NCCL {torch_nccl or 'unknown'}; system: {', '.join(system) if system else 'none'}"
    ev = ((role, "engine_procs"), (role, "ldconfig_nccl"), (role, "pyenv"))
    libs = e.engine_nccl_libs
    if not libs:
        return Verdict(
            "unknown" if not e.engine_env_readable else "info",
            f"no libnccl in the main process maps (workers load it; or maps unreadable); {vers}",
            variant="libnccl_mapped_engine_not_seen",
            evidence=ev,
        )
    if len(set(libs)) > 1 and len({re.sub(r"^.*/", "", lib) for lib in libs}) > 1:
        return warning(
            ", ".join(libs) + f"; {vers}",
            "one libnccl per process",
            variant="two_different_libnccl_copies_mapped",
            evidence=ev,
        )
    lib_v = next((v for lib in libs if (v := nccl_version_from_path(lib))), None)
    older = bool(lib_v and torch_nccl and _version(lib_v) < _version(torch_nccl))
    return Verdict(
        "info" if older else "ok",
        f"{', '.join(libs)}" + (f" ({lib_v})" if lib_v else "") + f"; {vers}",
        evidence=ev,
        variant="engine_loads_nccl_older_torch" if older else "engine_loads_one_libnccl",
    )


def custom_allreduce_verdict(
    kind: str, tp: int, disabled: bool, inter: str | None, topo_note: str
) -> Verdict:
    """Severity of the engine's custom all-reduce state on one interconnect class (None = not read)."""
    if not disabled:
        return ok(
            f"{kind} TP={tp}, --disable-custom-all-reduce absent ({inter or 'topology unknown'})",
            variant="not_disabled",
        )
    if inter is None:  # NVLink -> warning, PCIe -> info: which one needs the topology
        return unknown(
            f"{kind} TP={tp} with --disable-custom-all-reduce; interconnect unknown ({topo_note})",
            variant="disabled_interconnect_unknown",
        )
    return Verdict(
        "warning" if inter == "nvlink" else "info",
        f"{kind} TP={tp} with --disable-custom-all-reduce on {inter} topology",
        "custom all-reduce on for NVLink systems; on > 2 PCIe GPUs vLLM disables it by design",
        variant="disabled",
    )


def tp_one(ctx: Ctx) -> str | None:
    """`applies`: no engine (proven), or tensor parallel size 1 (no all-reduce between GPUs)."""
    if why := no_engine(ctx):
        return why
    found = engine(ctx)
    return (
        "tensor parallel size 1" if found is not None and (found[1].engine_tp or 1) <= 1 else None
    )


def custom_allreduce(ctx: Ctx) -> Verdict:
    if (found := engine(ctx)) is None:
        return unknown(engine_missing(ctx))
    role, e = found
    topo = topology(ctx)
    v = custom_allreduce_verdict(
        e.engine_kind or "engine",
        e.engine_tp or 1,
        bool(e.custom_allreduce_disabled),
        interconnect(topo[1]) if topo else None,
        topology_problem(ctx),
    )
    ev = ((role, "engine_procs"),) + (((topo[0], "smi_topo_m"),) if topo else ())
    return Verdict(v.severity, v.observed, v.expected, v.variant, v.params, evidence=ev)
