"""Verdicts of the GPU checks of the power probe (one small function per check; rows in checks.py)."""

from __future__ import annotations

from typing import Any, cast

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
from gpuaudit.probes.power.facts import GpuPower, GpuReading, PowerFacts

BUSY_UTIL = 50
"""Utilisation (%) from which a GPU counts as under load."""
HOT_C = 85
"""Under load, without the GPU's own slowdown temperature: passively cooled cards throttle around here."""
SLOWDOWN_MARGIN_C = 5
HW_REASONS = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")
"""Reasons that cut clocks whatever the load: a PSU/BMC power-brake signal or a thermal alarm."""


def _busy(h: PowerFacts) -> list[GpuReading]:
    return [r for r in h.gpu_readings if r.util is not None and r.util >= BUSY_UTIL]


def _load_unknown(h: PowerFacts) -> str | None:
    """Why "idle" can't be claimed: utilisation [N/A] on a GPU while none is busy."""
    na = [r.index for r in h.gpu_readings if r.util is None]
    return (
        f"utilisation [N/A] on GPU {', '.join(na)}: idle or busy unknown"
        if na and not _busy(h)
        else None
    )


def _gpu_list(items: list[GpuReading]) -> str:
    return ", ".join(r.index for r in items)


def _no_gpus(h: PowerFacts) -> Verdict | None:
    return None if h.gpus else unknown("nvidia-smi listed no GPU")


def power_limit(ctx: Ctx) -> Verdict:
    h: PowerFacts = ctx.f
    if v := _no_gpus(h):
        return v
    if any(g.enforced_w is None or g.default_w is None for g in h.gpus):
        return unknown(
            "enforced or default power limit is [N/A]", variant="gpu_power_limits_not_reported"
        )
    low = [g for g in h.gpus if cast(float, g.enforced_w) < cast(float, g.default_w) - 0.5]
    if not low:
        return ok(
            f"{len(h.gpus)} GPU(s) at {', '.join(sorted({f'{g.enforced_w:.0f} W' for g in h.gpus}))}",
            variant="gpu_power_limits_default",
        )
    return warning(
        "; ".join(_limit_text(g) for g in low),
        "enforced = default power limit",
        variant="gpu_power_limit_below_default",
    )


def _limit_text(g: GpuPower) -> str:
    enforced, default = cast(float, g.enforced_w), cast(float, g.default_w)
    return f"GPU {g.index}: {enforced:.0f} W of {default:.0f} W ({100 * (1 - enforced / default):.0f}% below)"


def clock_events(ctx: Ctx) -> Verdict:
    """HW slowdown / power brake / thermal reasons are faults at any load (idle GPUs included, issue 12 item 5);
    only the reasons that describe load (idle, SW power cap at full load) need a busy GPU to mean anything."""
    h: PowerFacts = ctx.f
    if v := _no_gpus(h):
        return v
    hw = [r for r in h.gpu_readings if set(r.active_reasons) & set(HW_REASONS)]
    swt = [r for r in h.gpu_readings if "sw_thermal_slowdown" in r.active_reasons]

    def load(r: Any) -> str:
        return f"{r.util:.0f}%" if r.util is not None else "util [N/A]"

    if hw:
        return critical(
            "; ".join(f"GPU {r.index} ({load(r)}): {', '.join(r.active_reasons)}" for r in hw),
            "no HW slowdown, power brake or thermal slowdown (at any load)",
            variant="hardware_slowdown_active_on_idle"
            if not _busy(h)
            else "hardware_slowdown_active",
        )
    if swt:
        return warning(
            "; ".join(f"GPU {r.index} ({load(r)})" for r in swt),
            "no thermal slowdown",
            variant="software_thermal_slowdown_active",
        )
    unread = [r for r in h.gpu_readings if r.unread_reasons]
    if unread:
        return unknown("clock-event reasons [N/A] on GPU " + _gpu_list(unread))
    busy = _busy(h)
    if not busy:
        return ok(
            f"no slowdown reason active on {len(h.gpu_readings)} GPU(s)"
            + ("" if _load_unknown(h) else " (idle: low clocks at idle are normal)")
        )
    return ok(
        f"{len(busy)} busy GPU(s); "
        + (
            "SW power cap active (expected at full load)"
            if any("sw_power_cap" in r.active_reasons for r in busy)
            else "no reasons active"
        ),
        variant="no_harmful_clock_reductions_under",
    )


def thermal_headroom(ctx: Ctx) -> Verdict:
    h: PowerFacts = ctx.f
    if v := _no_gpus(h):
        return v
    temps = [r for r in h.gpu_readings if r.temp_c is not None]
    if not temps:
        return unknown("temperature.gpu [N/A]", variant="gpu_temperatures_not_reported")
    slowdown = {g.index: g.temp_slowdown_c for g in h.gpus if g.temp_slowdown_c}
    over = [r for r in temps if r.index in slowdown and cast(float, r.temp_c) >= slowdown[r.index]]
    if over:  # at any load: the GPU is already slowing itself down
        return critical(
            "; ".join(
                f"GPU {r.index}: {r.temp_c:.0f} °C, slowdown at {slowdown[r.index]:.0f} °C"
                for r in over
            ),
            "below the slowdown temperature",
            variant="gpus_their_slowdown_temperature",
        )
    busy = [r for r in _busy(h) if r.temp_c is not None]  # an unread temperature is never compared
    near = [
        r
        for r in busy
        if r.index in slowdown and cast(float, r.temp_c) >= slowdown[r.index] - SLOWDOWN_MARGIN_C
    ]
    hot = near or [r for r in busy if r.index not in slowdown and cast(float, r.temp_c) >= HOT_C]
    if hot:
        return warning(
            "; ".join(
                f"GPU {r.index}: {r.temp_c:.0f} °C"
                + (f" (slowdown {slowdown[r.index]:.0f} °C)" if r.index in slowdown else "")
                for r in hot
            ),
            f"more than {SLOWDOWN_MARGIN_C} °C below the slowdown temperature (< {HOT_C} °C if not reported)",
            variant="gpus_hot_under_load",
        )
    top = max(temps, key=lambda r: r.temp_c or 0)
    read = {r.index for r in temps}
    unread = [g.index for g in h.gpus if g.index not in read]  # [N/A], or no reading row at all
    if unread:  # fine where read, but not a claim about the GPUs whose temperature is unknown
        return unknown(
            f"temperature.gpu [N/A] on GPU {', '.join(unread)}; max {top.temp_c:.0f} °C on the others",
            variant="gpu_temperatures_not_reported",
        )
    return ok(
        f"max {top.temp_c:.0f} °C"
        + (f" (slowdown {slowdown[top.index]:.0f} °C)" if top.index in slowdown else ""),
        variant="gpu_temperatures_fine",
    )


def locked_clocks(ctx: Ctx) -> Verdict:
    h: PowerFacts = ctx.f
    if v := _no_gpus(h):
        return v
    if any(g.sm_max_mhz is None for g in h.gpus):
        return unknown("clocks.max.sm [N/A]", variant="gpu_max_clocks_not_reported")
    locked = [
        g for g in h.gpus if g.app_sm_mhz and g.sm_max_mhz and g.app_sm_mhz < 0.9 * g.sm_max_mhz
    ]
    if locked:
        return warning(
            "; ".join(
                f"GPU {g.index}: {g.app_sm_mhz:.0f} of {g.sm_max_mhz:.0f} MHz" for g in locked
            ),
            "application clock = max",
            variant="application_clocks_below_max",
        )
    return ok("application clocks at max or unset", variant="no_reduced_application_clocks")


def pstate_under_load(ctx: Ctx) -> Verdict:
    h: PowerFacts = ctx.f
    if v := _no_gpus(h):
        return v
    if why := _load_unknown(h):
        return unknown(why, variant="gpu_load_unknown_p_state")
    busy = _busy(h)
    if not busy:
        return not_applicable(
            "idle ("
            + ", ".join(sorted({r.pstate or "?" for r in h.gpu_readings}))
            + " at idle is normal)"
        )
    maxima = {g.index: g.mem_max_mhz for g in h.gpus}
    slow = [
        r
        for r in busy
        if r.mem_mhz and maxima.get(r.index) and r.mem_mhz < 0.95 * cast(float, maxima[r.index])
    ]
    if slow:
        return warning(
            "; ".join(
                f"GPU {r.index}: {r.mem_mhz:.0f} of {maxima[r.index]:.0f} MHz ({r.pstate})"
                for r in slow
            ),
            "memory clock at max while busy",
            variant="memory_clock_below_max_under",
        )
    if na := [r.index for r in busy if not (r.mem_mhz and maxima.get(r.index))]:
        return unknown(
            f"clocks.mem or clocks.max.mem [N/A] on busy GPU {', '.join(na)}",
            variant="memory_clock_under_load_not",
        )
    return ok(
        ", ".join(sorted({r.pstate or "?" for r in busy})), variant="memory_clocks_max_under_load"
    )


def rtd3(ctx: Ctx) -> Verdict:
    h: PowerFacts = ctx.f
    if not h.rtd3:
        return info("no /proc/driver/nvidia/gpus/*/power", variant="gpu_runtime_d3_status_not")
    on = {b: s for b, s in h.rtd3.items() if s.lower().startswith("enabled")}
    if on:
        return info(
            "; ".join(f"{b}: {s}" for b, s in sorted(on.items())),
            "disabled on a server",
            variant="runtime_d3_enabled_on_gpus",
        )
    return ok(", ".join(sorted(set(h.rtd3.values()))), variant="runtime_d3_off")
