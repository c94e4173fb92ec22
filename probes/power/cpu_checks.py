"""Verdicts of the CPU checks of the power probe: pure functions over PowerFacts (see checks.py for the rows)."""

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
from gpuaudit.probes.core.judge.combiners import vm_reason
from gpuaudit.probes.core.parsers.cpu import DEEP_LATENCY_US, is_deep_cstate
from gpuaudit.probes.power.facts import IdleStateFact, PowerFacts

EPP_DRIVERS = ("amd-pstate-epp", "intel_pstate")
POLICY_CAP_RATIO = 0.85
"""A policy ceiling below this share of the CPU's own maximum caps every busy core (PROBES.md's 85% bar)."""
NO_DRIVER = "no cpufreq driver (VM, ARM server or BIOS-controlled frequency)"


def in_vm(ctx: Ctx) -> str | None:
    """CPU frequency and idle policy of a guest are the hypervisor host's (the same reason every probe gives)."""
    return vm_reason(ctx.outputs.get(ctx.role or "host", {}))


def _is_zen2_plus(h: PowerFacts) -> bool:
    return h.cpu_vendor == "AMD" and (h.cpu_family or 0) >= 0x17


def scaling_driver(ctx: Ctx) -> Verdict:
    h: PowerFacts = ctx.f
    d = h.scaling_driver
    if d is None:
        if (
            h.cpu_vendor is None
        ):  # without the vendor "no driver" could be a read we do not understand
            return unknown(
                "no cpufreq driver listed and the CPU vendor was not read: "
                + ctx.why("lscpu_json", "cpuinfo_id")
            )
        return not_applicable(NO_DRIVER)
    if d == "acpi-cpufreq" and _is_zen2_plus(h):
        return _acpi_cpufreq_on_amd(h)
    if d in ("amd-pstate-epp", "amd-pstate", "intel_pstate"):
        return ok(
            f"scaling_driver={d}"
            + (f" (amd_pstate status {h.amd_pstate_status})" if h.amd_pstate_status else ""),
            variant="cpu_frequency_driver",
            driver=d,
        )
    if d == "intel_cpufreq":
        return info(
            "scaling_driver=intel_cpufreq",
            "intel_pstate (active, HWP)",
            variant="intel_pstate_passive_mode",
        )
    return info(
        f"scaling_driver={d}" + ("" if h.cpu_vendor else "; CPU vendor unknown"),
        variant="cpu_frequency_driver",
        driver=d,
    )


def _acpi_cpufreq_on_amd(h: PowerFacts) -> Verdict:
    cppc = True if (h.cppc_present or h.amd_pstate_status) else h.cppc_present
    fam = f"family {h.cpu_family:#x}" if h.cpu_family is not None else "AMD"
    if (
        cppc is None
    ):  # whether amd-pstate could run is the question: no verdict without the CPPC read
        return unknown(
            f"scaling_driver=acpi-cpufreq on AMD {fam}; ACPI CPPC state not read (sys_cppc)",
            evidence=(("host", "sys_cppc"),),
        )
    if not cppc:
        return info(
            f"scaling_driver=acpi-cpufreq on AMD {fam}; "
            + ("ACPI CPPC not exposed" if cppc is False else "CPPC state unknown"),
            "amd-pstate once BIOS CPPC is enabled",
            variant="acpi_cpufreq_on_amd_cpu",
        )
    return warning(
        f"scaling_driver=acpi-cpufreq on AMD {fam} with ACPI CPPC exposed",
        "amd-pstate-epp (active) or amd-pstate (passive/guided)",
        variant="acpi_cpufreq_zen5"
        if (h.cpu_family or 0) >= 0x1A
        else "acpi_cpufreq_instead_amd_pstate",
    )


def governor(ctx: Ctx) -> Verdict:
    h: PowerFacts = ctx.f
    g = h.governors
    if not g:
        if h.scaling_driver or not (ctx.usable("sys_cpufreq") or ctx.usable("cpupower_freq")):
            return unknown(
                "no cpufreq policy listed a governor"
                + (
                    ""
                    if h.scaling_driver
                    else "; cpufreq driver not read: " + ctx.why("sys_cpufreq")
                )
            )
        return not_applicable(NO_DRIVER)
    obs = ", ".join(f"{k} on {v} polic{'y' if v == 1 else 'ies'}" for k, v in sorted(g.items()))
    if set(g) == {"performance"}:
        return ok(obs, variant="governor_performance_everywhere")
    if "powersave" in g and h.scaling_driver not in EPP_DRIVERS:
        return critical(
            obs,
            "performance",
            variant="powersave_governor_pins_cpus_lowest",
            driver=h.scaling_driver or "this driver",
        )
    if set(g) & {"schedutil", "ondemand", "conservative", "userspace"}:
        return warning(
            obs,
            "performance",
            variant="load_following_governor_on_cpus",
        )
    return info(
        obs,
        "performance, or powersave with EPP=performance",
        variant="governor_powersave_hardware_managed_driver",
    )


def epp(ctx: Ctx) -> Verdict:
    h: PowerFacts = ctx.f
    d = h.scaling_driver
    if not h.epp:
        # "not applicable" only on a positive reading: a known driver that has no EPP interface
        if d in EPP_DRIVERS:
            return unknown(f"driver {d} exposes EPP but none was read")
        if d is None and h.cpu_vendor is None:
            return unknown("cpufreq driver unknown: " + ctx.why("lscpu_json", "cpuinfo_id"))
        return not_applicable(f"driver {d or 'none'} exposes no energy_performance_preference")
    obs = ", ".join(f"{k} on {v}" for k, v in sorted(h.epp.items()))
    if set(h.epp) & {"power", "balance_power"}:
        return warning(obs, variant="epp_biased_towards_power_saving")
    if set(h.epp) == {"performance"}:
        return ok(obs, variant="epp_performance")
    return info(obs, variant="epp_balance_performance_default")


def boost(ctx: Ctx) -> Verdict:
    h: PowerFacts = ctx.f
    if h.boost is None:
        return (
            unknown("no boost control visible") if h.scaling_driver else not_applicable(NO_DRIVER)
        )
    if h.boost:
        return ok(f"boost on ({h.boost_source})", variant="cpu_boost_enabled")
    return warning(f"boost off ({h.boost_source})", "boost on", variant="cpu_boost_disabled")


def cmdline_cstate_cap(cmdline: str | None) -> str | None:
    """The kernel parameter that keeps CPUs out of deep states (idle=poll, processor.max_cstate=1...), or None."""
    for tok in (cmdline or "").split():
        if tok in ("idle=poll", "idle=halt") or re.fullmatch(
            r"(processor|intel_idle)\.max_cstate=[01]", tok
        ):
            return tok
    return None


def deep_states(h: PowerFacts) -> list[IdleStateFact]:
    return [s for s in h.idle_states if is_deep_cstate(s.name, s.latency_us, h.cpu_vendor)]


def _names(states: list[IdleStateFact]) -> str:
    return ", ".join(sorted({f"{s.name} {s.latency_us}µs" for s in states}))


def cstates(ctx: Ctx) -> Verdict:
    h: PowerFacts = ctx.f
    if not h.idle_states:
        if h.idle_driver == "none":  # the positive reading; an unread driver is not
            return not_applicable("cpuidle driver none exposes no states")
        return unknown("no idle states listed" if h.idle_driver else "cpuidle driver not read")
    deep = deep_states(h)
    enabled = [s for s in deep if not s.disabled]
    if not enabled:
        basis = (
            ""
            if h.cpu_vendor
            else f" (CPU vendor not read: deep = exit latency >= {DEEP_LATENCY_US} µs)"
        )
        amd_deep = [  # what "deep" means depends on the vendor: on AMD every state past C1 is
            s
            for s in h.idle_states
            if not s.disabled and is_deep_cstate(s.name, s.latency_us, "AMD")
        ]
        if not h.cpu_vendor and amd_deep:
            return unknown(
                f"{_names(amd_deep)} enabled: deep on AMD (every state past C1), shallow on Intel below "
                f"{DEEP_LATENCY_US} µs; the CPU vendor (lscpu / /proc/cpuinfo) was not read"
            )
        return ok(
            (
                f"deep states disabled: {_names(deep)}"
                if deep
                else f"only shallow states: {_names(h.idle_states)}"
            )
            + basis,
            variant="no_deep_c_state_enabled",
        )
    cap = cmdline_cstate_cap(h.cmdline)
    qos = h.pm_qos_resume_latency_us
    if cap or (qos and 0 < qos < min(s.latency_us or 0 for s in enabled)):
        return ok(
            f"{_names(enabled)} enabled in sysfs but capped by "
            + (cap or f"pm_qos_resume_latency_us={qos}"),
            variant="deep_c_states_capped_kernel",
        )
    used = any(h.idle_usage.get(s.key, 0) > 0 for s in enabled)
    cpus = ", ".join(map(str, sorted({s.cpu for s in enabled})))
    obs = (
        f"{_names(enabled)} enabled on CPU(s) {cpus}"
        + (", entered" if used else ", usage 0")
        + f" (driver {h.idle_driver or '?'})"
    )
    if used:
        return warning(obs, variant="deep_cpu_c_states_enabled")
    return info(obs, variant="deep_c_states_not_entered")


def effective_freq(ctx: Ctx) -> Verdict:
    """Passive part: a frequency policy capped far below the CPU's maximum caps every busy core (issue 12 item 10)."""
    h: PowerFacts = ctx.f
    pmax, hmax = h.policy_max_mhz, h.hw_max_mhz
    manual = (
        "manual: run turbostat --show Core,CPU,Bzy_MHz,Busy%,PkgWatt while the engine is busy"
        " (needs MSR access and load; the passive audit does not sample it)"
    )
    if not (pmax and hmax) or pmax >= POLICY_CAP_RATIO * hmax:
        return info(manual)
    obs = f"frequency policy capped at {pmax / 1000:.2f} GHz of the CPU's {hmax / 1000:.2f} GHz ({h.policy_source})"
    if (
        h.boost is False
    ):  # amd-pstate/acpi-cpufreq lower the ceiling to nominal with boost off: one cause, one warning
        return info(
            obs + "; consistent with boost off (see power.cpu_boost)",
            variant="frequency_policy_nominal_boost_off",
        )
    return warning(
        obs,
        f"policy maximum = hardware maximum ({hmax / 1000:.2f} GHz)",
        variant="cpu_frequency_policy_capped_below",
    )


__all__ = [
    "DEEP_LATENCY_US",
    "EPP_DRIVERS",
    "boost",
    "cmdline_cstate_cap",
    "cstates",
    "deep_states",
    "effective_freq",
    "epp",
    "governor",
    "in_vm",
    "scaling_driver",
]
