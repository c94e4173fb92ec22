"""Power probe: CPU frequency driver, governor, EPP, boost, idle states; GPU power, clocks, RTD3.

Reads sysfs first (one `grep -H` command returns path:value lines) and falls back to `cpupower`.
Rules are conditional on the CPU vendor/family (from `lscpu -J`) and on GPU utilisation.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import cast

from pydantic import BaseModel

from gpuaudit.probes.core.models import Finding, Role
from gpuaudit.probes.core.parsers.cpu import (
    CpuIdleInfo,
    DEEP_LATENCY_US,
    cpu_identity,
    idle_states_from_sysfs,
    is_deep_cstate,
    parse_cpupower_frequency_info,
    parse_cpupower_idle_info,
    parse_grep_h,
    parse_lscpu,
)
from gpuaudit.probes.core.parsing import first_line
from gpuaudit.probes.core.sources import use
from gpuaudit.probes.core.spec import FactsByTarget, Outputs, Probe, finding, usable_stdout

PROBE_ID = "power"

SMI_POWER_FIELDS = (
    "index", "pci.bus_id", "pstate", "utilization.gpu", "power.draw", "enforced.power.limit", "power.default_limit",
    "power.max_limit", "clocks.sm", "clocks.max.sm", "clocks.mem", "clocks.max.mem", "clocks.applications.graphics",
    "temperature.gpu", "clocks_event_reasons.hw_slowdown", "clocks_event_reasons.hw_thermal_slowdown",
    "clocks_event_reasons.hw_power_brake_slowdown", "clocks_event_reasons.sw_thermal_slowdown",
    "clocks_event_reasons.sw_power_cap",
)

COMMANDS = (
    use('lscpu_json', 'sys_cpufreq', 'sys_governors', 'sys_epp', 'sys_cpuidle', 'sys_cppc', 'cpupower_freq',
    'cpupower_idle', 'proc_cmdline', 'smi_query_power', 'nvidia_rtd3')
)


class IdleStateFact(BaseModel, frozen=True):
    cpu: int
    name: str
    latency_us: int | None = None
    disabled: bool | None = None
    usage: int | None = None


class GpuPower(BaseModel, frozen=True):
    index: str
    bus_id: str | None = None
    pstate: str | None = None
    util: float | None = None
    draw_w: float | None = None
    enforced_w: float | None = None
    default_w: float | None = None
    max_w: float | None = None
    sm_mhz: float | None = None
    sm_max_mhz: float | None = None
    mem_mhz: float | None = None
    mem_max_mhz: float | None = None
    app_sm_mhz: float | None = None
    temp_c: float | None = None
    active_reasons: list[str] = []


class PowerFacts(BaseModel, frozen=True):
    cpu_vendor: str | None = None
    cpu_family: int | None = None
    cpu_model: int | None = None
    cpu_model_name: str | None = None
    cpu_has_cppc_flag: bool | None = None
    scaling_driver: str | None = None
    amd_pstate_status: str | None = None
    governors: dict[str, int] = {}
    epp: dict[str, int] = {}
    boost: bool | None = None
    boost_source: str | None = None
    cppc_present: bool | None = None
    idle_driver: str | None = None
    pm_qos_resume_latency_us: int | None = None
    idle_states: list[IdleStateFact] = []
    cmdline: str | None = None
    gpus: list[GpuPower] = []
    rtd3: dict[str, str] = {}
    problems: dict[str, str] = {}
    """command_id -> why its output could not be used."""


def parse_uniq_c(text: str) -> dict[str, int]:
    """`... | sort | uniq -c` -> {value: count}.

          192 performance
    -> {"performance": 192}
    """
    out: dict[str, int] = {}
    for line in (text or "").splitlines():
        m = re.match(r"^\s*(\d+)\s+(\S.*)$", line)
        if m:
            out[m.group(2).strip()] = out.get(m.group(2).strip(), 0) + int(m.group(1))
    return out


def _num(v: str | None) -> float | None:
    if v is None:
        return None
    m = re.match(r"\s*(-?[0-9.]+)", v)
    try:
        return float(m.group(1)) if m else None
    except ValueError:
        return None


def parse_smi_power(text: str) -> list[GpuPower]:
    """`nvidia-smi --query-gpu=<SMI_POWER_FIELDS> --format=csv,noheader,nounits` -> GpuPower per GPU.

        0, 00000000:01:00.0, P8, 0, 31.52, 600.00, 600.00, 600.00, 180, 3090, 405, 14001, 3090, 34, Not Active, ...
    Raises ParseError (from csv parsing) on a row of the wrong width; "[N/A]" cells become None.
    """
    from gpuaudit.probes.core.parsers.nvidia_smi import parse_query_gpu_csv

    out = []
    for row in parse_query_gpu_csv(text, list(SMI_POWER_FIELDS)):
        reasons = [k.split(".", 1)[1] for k in SMI_POWER_FIELDS if k.startswith("clocks_event_reasons.")
                   and (row.get(k) or "").strip().lower() == "active"]
        out.append(GpuPower(
            index=row.get("index") or "?", bus_id=row.get("pci.bus_id"), pstate=row.get("pstate"),
            util=_num(row.get("utilization.gpu")), draw_w=_num(row.get("power.draw")),
            enforced_w=_num(row.get("enforced.power.limit")), default_w=_num(row.get("power.default_limit")),
            max_w=_num(row.get("power.max_limit")), sm_mhz=_num(row.get("clocks.sm")),
            sm_max_mhz=_num(row.get("clocks.max.sm")), mem_mhz=_num(row.get("clocks.mem")),
            mem_max_mhz=_num(row.get("clocks.max.mem")), app_sm_mhz=_num(row.get("clocks.applications.graphics")),
            temp_c=_num(row.get("temperature.gpu")), active_reasons=reasons))
    return out


def extract(outputs: Outputs, role: Role) -> PowerFacts:
    problems: dict[str, str] = {}
    f: dict = {}
    if (t := usable_stdout(outputs, "lscpu_json", problems)) is not None:
        ident = cpu_identity(parse_lscpu(t))
        if ident.vendor is None:
            problems["lscpu_json"] = "unparsable lscpu output"
        f.update(cpu_vendor=ident.vendor, cpu_family=ident.family, cpu_model=ident.model,
                 cpu_model_name=ident.model_name, cpu_has_cppc_flag=ident.has_cppc_flag)
    sysf: dict[str, list[str]] = {}
    if (t := usable_stdout(outputs, "sys_cpufreq", problems)) is not None:
        sysf = {k.rsplit("/", 2)[-2] + "/" + k.rsplit("/", 1)[-1]: v for k, v in parse_grep_h(t).items()}
    one = {k: v[0] for k, v in sysf.items() if v}
    f["scaling_driver"] = one.get("cpufreq/scaling_driver")
    f["amd_pstate_status"] = one.get("amd_pstate/status")
    if "cpufreq/boost" in one:
        f["boost"], f["boost_source"] = one["cpufreq/boost"] == "1", "cpufreq/boost"
    elif "intel_pstate/no_turbo" in one:
        f["boost"], f["boost_source"] = one["intel_pstate/no_turbo"] == "0", "intel_pstate/no_turbo"
    if (t := usable_stdout(outputs, "sys_governors", problems)) is not None:
        f["governors"] = parse_uniq_c(t)
    if not f.get("governors") and one.get("cpufreq/scaling_governor"):
        f["governors"] = {one["cpufreq/scaling_governor"]: 1}
    if (t := usable_stdout(outputs, "sys_epp", problems)) is not None:
        f["epp"] = parse_uniq_c(t)
    if not f.get("epp") and one.get("cpufreq/energy_performance_preference"):
        f["epp"] = {one["cpufreq/energy_performance_preference"]: 1}
    # cpupower fills what sysfs did not give (e.g. a target with a restricted /sys)
    if (not f["scaling_driver"] or f.get("boost") is None) and (t := usable_stdout(outputs, "cpupower_freq", problems)):
        info = parse_cpupower_frequency_info(t)
        f["scaling_driver"] = f["scaling_driver"] or info.driver
        if not f.get("governors") and info.governor:
            f["governors"] = {info.governor: 1}
        if f.get("boost") is None and info.boost_active is not None:
            f["boost"], f["boost_source"] = info.boost_active, "cpupower"
    if (t := usable_stdout(outputs, "sys_cppc", problems)) is not None:
        f["cppc_present"] = bool(parse_grep_h(t))
    states: list[IdleStateFact] = []
    if (t := usable_stdout(outputs, "sys_cpuidle", problems)) is not None:
        files = parse_grep_h(t)
        for path, vals in files.items():
            if path.endswith("cpuidle/current_driver") and vals:
                f["idle_driver"] = vals[0]
            elif path.endswith("pm_qos_resume_latency_us") and vals:
                f["pm_qos_resume_latency_us"] = int(vals[0]) if vals[0].isdigit() else None
        for cpu, sts in idle_states_from_sysfs(files).items():
            states += [IdleStateFact(cpu=cpu, name=s.name, latency_us=s.latency_us, disabled=s.disabled, usage=s.usage)
                       for s in sts]
    if not states and (t := usable_stdout(outputs, "cpupower_idle", problems)):
        idle_info: CpuIdleInfo = parse_cpupower_idle_info(t)
        f["idle_driver"] = f.get("idle_driver") or idle_info.driver
        states = [IdleStateFact(cpu=idle_info.cpu or 0, name=s.name, latency_us=s.latency_us, disabled=s.disabled,
                                usage=s.usage) for s in idle_info.states]
    f["idle_states"] = states
    if (t := usable_stdout(outputs, "proc_cmdline", problems)) is not None:
        f["cmdline"] = first_line(t)
    if (t := usable_stdout(outputs, "smi_query_power", problems)) is not None:
        try:
            f["gpus"] = parse_smi_power(t)
        except Exception as exc:  # ParseError or an error banner: a fact, not a crash
            problems["smi_query_power"] = f"unparsable nvidia-smi output: {exc}"
    if (t := usable_stdout(outputs, "nvidia_rtd3", problems)) is not None:
        for path, lines in parse_grep_h(t).items():
            status = [v.split(":", 1)[1].strip() for v in lines if v.startswith("Runtime D3 status:")]
            if path.startswith("/proc/driver/nvidia/gpus/") and path.endswith("/power") and status:
                f.setdefault("rtd3", {})[path.rsplit("/", 2)[-2]] = status[0]
    return PowerFacts(**f, problems=problems)


# --------------------------------------------------------------------------- rules

def _is_zen2_plus(h: PowerFacts) -> bool:
    return h.cpu_vendor == "AMD" and (h.cpu_family or 0) >= 0x17


def _cppc_available(h: PowerFacts) -> bool | None:
    if h.cppc_present:
        return True
    if h.amd_pstate_status:
        return True
    return h.cppc_present


def _driver(h: PowerFacts) -> Iterator[Finding]:
    ev: list[tuple[Role, str]] = [("host", "sys_cpufreq"), ("host", "sys_cppc"), ("host", "lscpu_json")]
    d = h.scaling_driver
    slug, title = "cpu_scaling_driver", "CPU frequency driver"
    if d is None:
        if "sys_cpufreq" in h.problems or h.cpu_vendor is None:
            yield finding(PROBE_ID, slug, "unknown", title + " could not be read",
                          observed=h.problems.get("sys_cpufreq") or h.problems.get("cpupower_freq") or "no cpufreq data",
                          evidence=ev)
        else:
            yield finding(PROBE_ID, slug, "info", title + ": none active",
                          observed="not applicable: no cpufreq driver (VM, ARM server or BIOS-controlled frequency)",
                          evidence=ev)
        return
    if d == "acpi-cpufreq" and _is_zen2_plus(h):
        cppc = _cppc_available(h)
        fam = f"family {h.cpu_family:#x}" if h.cpu_family is not None else "AMD"
        kernel_note = (" On Zen 5 (family 0x1A) servers amd-pstate is only the default from kernel 6.13;"
                       " older kernels need amd_pstate=active." if (h.cpu_family or 0) >= 0x1A else "")
        if cppc:
            yield finding(PROBE_ID, slug, "warning", "acpi-cpufreq instead of amd-pstate on an AMD CPU",
                          observed=f"scaling_driver=acpi-cpufreq on AMD {fam} with ACPI CPPC exposed",
                          expected="amd-pstate-epp (active) or amd-pstate (passive/guided)",
                          why="acpi-cpufreq only knows the few coarse ACPI _PSS P-states, while amd-pstate uses CPPC so the"
                              " firmware picks frequency on a continuous scale and ramps faster between host-side steps."
                              + kernel_note,
                          fix="Boot with amd_pstate=active (kernel command line) or move to kernel >= 6.13; keep BIOS CPPC enabled.",
                          evidence=ev)
        else:
            yield finding(PROBE_ID, slug, "info", "acpi-cpufreq on an AMD CPU without visible CPPC",
                          observed=f"scaling_driver=acpi-cpufreq on AMD {fam}; "
                                   + ("ACPI CPPC not exposed" if cppc is False else "CPPC state unknown"),
                          expected="amd-pstate once BIOS CPPC is enabled",
                          why="amd-pstate needs the ACPI _CPC objects; without them the kernel falls back to acpi-cpufreq.",
                          fix="Enable CPPC in BIOS (see firmware.cppc), then boot with amd_pstate=active.", evidence=ev)
        return
    if d in ("amd-pstate-epp", "amd-pstate", "intel_pstate"):
        yield finding(PROBE_ID, slug, "ok", f"CPU frequency driver {d}",
                      observed=f"scaling_driver={d}" + (f" (amd_pstate status {h.amd_pstate_status})" if h.amd_pstate_status else ""),
                      evidence=ev)
    elif d == "intel_cpufreq":
        yield finding(PROBE_ID, slug, "info", "intel_pstate in passive mode",
                      observed="scaling_driver=intel_cpufreq", expected="intel_pstate (active, HWP)",
                      why="Passive mode lets a generic governor pick frequencies instead of the hardware (HWP).",
                      fix="Remove intel_pstate=passive from the kernel command line if it was not deliberate.", evidence=ev)
    else:
        yield finding(PROBE_ID, slug, "info", f"CPU frequency driver {d}", observed=f"scaling_driver={d}"
                      + ("" if h.cpu_vendor else "; CPU vendor unknown"), evidence=ev)


def _governor(h: PowerFacts) -> Iterator[Finding]:
    ev: list[tuple[Role, str]] = [("host", "sys_governors"), ("host", "sys_cpufreq")]
    slug = "cpu_governor"
    g = h.governors
    if not g:
        # "no cpufreq driver" only on a positive reading: sysfs read fine and showed no driver
        sev = "unknown" if (h.scaling_driver or {"sys_governors", "sys_cpufreq"} & set(h.problems)) else "info"
        yield finding(PROBE_ID, slug, sev, "CPU governor " + ("could not be read" if sev == "unknown" else "not applicable"),
                      observed=h.problems.get("sys_governors", "no cpufreq policies" if sev == "unknown"
                                              else "not applicable: no cpufreq driver"), evidence=ev)
        return
    obs = ", ".join(f"{k} on {v} polic{'y' if v == 1 else 'ies'}" for k, v in sorted(g.items()))
    epp_driver = h.scaling_driver in ("amd-pstate-epp", "intel_pstate")
    if set(g) == {"performance"}:
        yield finding(PROBE_ID, slug, "ok", "Governor performance everywhere", observed=obs, evidence=ev)
    elif "powersave" in g and not epp_driver:
        yield finding(PROBE_ID, slug, "critical", "powersave governor pins CPUs to the lowest P-state", observed=obs,
                      expected="performance", why=f"With {h.scaling_driver or 'this driver'} powersave selects the lowest"
                      " frequency, stretching every host-side step between GPU kernels.",
                      fix="cpupower frequency-set -g performance at boot (systemd unit or tuned profile).", evidence=ev)
    elif set(g) & {"schedutil", "ondemand", "conservative", "userspace"}:
        yield finding(PROBE_ID, slug, "warning", "Load-following governor on the CPUs", observed=obs, expected="performance",
                      why="schedutil/ondemand/conservative ramp frequency after load appears; short bursty host steps"
                          " between GPU kernels often finish before the clock rises.",
                      fix="cpupower frequency-set -g performance at boot (systemd unit or tuned accelerator-performance).",
                      evidence=ev)
    else:
        yield finding(PROBE_ID, slug, "info", "Governor powersave with a hardware-managed driver", observed=obs,
                      expected="performance, or powersave with EPP=performance",
                      why="With amd-pstate-epp/intel_pstate active the hardware picks the frequency from the EPP hint;"
                          " powersave is not slow by itself (see power.cpu_epp).", evidence=ev)


_EPP_DRIVERS = ("amd-pstate-epp", "intel_pstate")


def _no_cpufreq_proven(h: PowerFacts) -> bool:
    """sysfs cpufreq and lscpu were read, and no driver is active (the case _driver reports as "none active")."""
    return h.scaling_driver is None and "sys_cpufreq" not in h.problems and h.cpu_vendor is not None


def _epp(h: PowerFacts) -> Iterator[Finding]:
    ev: list[tuple[Role, str]] = [("host", "sys_epp")]
    slug = "cpu_epp"
    if not h.epp:
        # "not applicable" only on a positive reading: a known driver that has no EPP interface
        d = h.scaling_driver
        missing = (h.problems.get("sys_epp") or (f"driver {d} exposes EPP but none was read" if d in _EPP_DRIVERS else None)
                   or (None if d or _no_cpufreq_proven(h) else
                       h.problems.get("sys_cpufreq") or "cpufreq driver unknown"))
        if missing:
            yield finding(PROBE_ID, slug, "unknown", "EPP could not be read", observed=missing, evidence=ev)
            return
        yield finding(PROBE_ID, slug, "ok", "EPP not applicable",
                      observed=f"not applicable: driver {h.scaling_driver or 'unknown'} exposes no energy_performance_preference",
                      evidence=ev)
        return
    obs = ", ".join(f"{k} on {v}" for k, v in sorted(h.epp.items()))
    if set(h.epp) & {"power", "balance_power"}:
        sev, title = "warning", "EPP biased towards power saving"
    elif set(h.epp) == {"performance"}:
        sev, title = "ok", "EPP performance"
    else:
        sev, title = "info", "EPP balance_performance / default"
    yield finding(PROBE_ID, slug, sev, title, observed=obs, expected="performance",
                  why="The energy-performance preference tells the CPU's own frequency controller how eagerly to boost.",
                  fix="Set EPP to performance (tuned accelerator-performance, or cpupower set --epp performance).",
                  evidence=ev)


def _boost(h: PowerFacts) -> Iterator[Finding]:
    ev: list[tuple[Role, str]] = [("host", "sys_cpufreq"), ("host", "cpupower_freq")]
    if h.boost is None:
        sev = "unknown" if h.scaling_driver or "sys_cpufreq" in h.problems else "info"
        yield finding(PROBE_ID, "cpu_boost", sev, "CPU boost state " + ("unknown" if sev == "unknown" else "not applicable"),
                      observed="no boost control visible" if sev == "unknown" else "not applicable: no cpufreq driver",
                      evidence=ev)
    elif h.boost:
        yield finding(PROBE_ID, "cpu_boost", "ok", "CPU boost enabled", observed=f"boost on ({h.boost_source})", evidence=ev)
    else:
        yield finding(PROBE_ID, "cpu_boost", "warning", "CPU boost disabled", observed=f"boost off ({h.boost_source})",
                      expected="boost on", why="Without Core Performance Boost / Turbo the CPU stays at base clock,"
                      " slowing the single-threaded host steps of each decode iteration.",
                      fix="Enable Core Performance Boost in BIOS and echo 1 into /sys/devices/system/cpu/cpufreq/boost"
                          " (unless capped on purpose for power).", evidence=ev)


def _cmdline_cstate_cap(cmdline: str | None) -> str | None:
    if not cmdline:
        return None
    for tok in cmdline.split():
        if tok in ("idle=poll", "idle=halt") or re.fullmatch(r"(processor|intel_idle)\.max_cstate=[01]", tok):
            return tok
    return None


def _cstates(h: PowerFacts) -> Iterator[Finding]:
    ev: list[tuple[Role, str]] = [("host", "sys_cpuidle"), ("host", "cpupower_idle"), ("host", "proc_cmdline")]
    slug = "cpu_cstates"
    if not h.idle_states:
        if h.idle_driver != "none":  # "none" is the positive reading; an unread driver is not
            yield finding(PROBE_ID, slug, "unknown", "CPU idle states could not be read",
                          observed=h.problems.get("sys_cpuidle") or h.problems.get("cpupower_idle")
                          or ("no idle states listed" if h.idle_driver else "cpuidle driver not read"), evidence=ev)
        else:
            yield finding(PROBE_ID, slug, "ok", "No CPU idle states managed by the OS",
                          observed="not applicable: cpuidle driver none exposes no states", evidence=ev)
        return
    deep = [s for s in h.idle_states if is_deep_cstate(s.name, s.latency_us, h.cpu_vendor)]
    enabled = [s for s in deep if not s.disabled]
    cap = _cmdline_cstate_cap(h.cmdline)
    qos = h.pm_qos_resume_latency_us
    names = sorted({f"{s.name} {s.latency_us}µs" for s in enabled})
    cpus = sorted({s.cpu for s in enabled})
    if not enabled:
        obs = ("deep states disabled: " + ", ".join(sorted({f"{s.name} {s.latency_us}µs" for s in deep}))) if deep \
            else "only shallow states: " + ", ".join(sorted({f"{s.name} {s.latency_us}µs" for s in h.idle_states}))
        yield finding(PROBE_ID, slug, "ok", "No deep C-state enabled", observed=obs, evidence=ev)
        return
    if cap or (qos and 0 < qos < min(s.latency_us or 0 for s in enabled)):
        yield finding(PROBE_ID, slug, "ok", "Deep C-states capped by the kernel",
                      observed=f"{', '.join(names)} enabled in sysfs but capped by "
                               + (cap or f"pm_qos_resume_latency_us={qos}"), evidence=ev)
        return
    used = any((s.usage or 0) > 0 for s in enabled)
    sev = "warning" if used else "info"
    yield finding(PROBE_ID, slug, sev, "Deep CPU C-states enabled" + ("" if used else " (not entered yet)"),
                  observed=f"{', '.join(names)} enabled on CPU(s) {', '.join(map(str, cpus))}"
                           + (", entered" if used else ", usage 0") + f" (driver {h.idle_driver or '?'})",
                  expected=f"deep idle states (AMD C2+, Intel C3+ or exit latency >= {DEEP_LATENCY_US} µs) disabled on the CPUs"
                           " that run engine/NCCL threads",
                  why="Every wake from a deep state adds its exit latency to the next host-side step (scheduling, sampling,"
                      " kernel launch); with tensor parallelism all ranks wait for the slowest. Measure A/B: the effect"
                      " depends on the per-token step time.",
                  fix="cpupower idle-set -D 10 (or -d <state>) from a boot-time unit, or tuned accelerator-performance;"
                      " AMD keeps BIOS Global C-state Control on Auto and disables C2 from the OS.", evidence=ev)


def _gpu_rows(h: PowerFacts) -> Iterator[Finding]:
    ev: list[tuple[Role, str]] = [("host", "smi_query_power")]
    if not h.gpus:
        reason = h.problems.get("smi_query_power", "no GPUs listed")
        for slug in ("gpu_power_limit", "gpu_clock_events", "gpu_thermal_headroom", "gpu_locked_clocks",
                     "gpu_pstate_under_load"):
            yield finding(PROBE_ID, slug, "unknown", "GPU power data unavailable", observed=reason, evidence=ev)
        return
    # power limit
    # both limits are set on every GPU in `low` (cast below: mypy cannot narrow through the filter)
    low = [g for g in h.gpus if g.enforced_w and g.default_w and g.enforced_w < g.default_w - 0.5]
    if any(g.enforced_w is None or g.default_w is None for g in h.gpus):
        yield finding(PROBE_ID, "gpu_power_limit", "unknown", "GPU power limits not reported",
                      observed="enforced or default power limit is [N/A]", evidence=ev)
    elif low:
        yield finding(PROBE_ID, "gpu_power_limit", "warning", "GPU power limit below default",
                      observed="; ".join(f"GPU {g.index}: {g.enforced_w:.0f} W of {g.default_w:.0f} W"
                                         f" ({100 * (1 - cast(float, g.enforced_w) / cast(float, g.default_w)):.0f}% below)" for g in low),
                      expected="enforced = default power limit",
                      why="A lowered cap mostly slows compute-bound prefill; single-stream decode is bandwidth-bound and"
                          " barely changes.", fix="nvidia-smi -pl <default> (persisted by your boot tooling) if not deliberate.",
                      evidence=ev)
    else:
        w = sorted({f"{g.enforced_w:.0f} W" for g in h.gpus})
        yield finding(PROBE_ID, "gpu_power_limit", "ok", "GPU power limits at default", observed=f"{len(h.gpus)} GPU(s) at {', '.join(w)}",
                      evidence=ev)
    # clock event reasons
    busy = [g for g in h.gpus if g.util is not None and g.util >= 50]
    util_na = [g.index for g in h.gpus if g.util is None]
    idle_unproven = f"utilisation [N/A] on GPU {', '.join(util_na)}: idle or busy unknown"
    hw = [g for g in busy if set(g.active_reasons) & {"hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}]
    swt = [g for g in busy if "sw_thermal_slowdown" in g.active_reasons]
    if not busy and util_na:
        yield finding(PROBE_ID, "gpu_clock_events", "unknown", "GPU load unknown: clock reductions not judged",
                      observed=idle_unproven, evidence=ev)
    elif not busy:
        yield finding(PROBE_ID, "gpu_clock_events", "ok", "GPUs idle: clock reductions not judged",
                      observed="not applicable: all GPUs below 50% utilisation (low clocks at idle are normal)", evidence=ev)
    elif hw:
        yield finding(PROBE_ID, "gpu_clock_events", "critical", "Hardware slowdown active under load",
                      observed="; ".join(f"GPU {g.index}: {', '.join(g.active_reasons)}" for g in hw),
                      expected="no HW slowdown", why="HW slowdown/power brake cut clocks hard (often PSU or thermal signals).",
                      fix="Check PSU capacity, cabling and cooling; see nvidia-smi -q -d PERFORMANCE.", evidence=ev)
    elif swt:
        yield finding(PROBE_ID, "gpu_clock_events", "warning", "Software thermal slowdown under load",
                      observed="; ".join(f"GPU {g.index}" for g in swt), expected="no thermal slowdown",
                      why="The driver lowers clocks to stay under the temperature target.", fix="Improve airflow.", evidence=ev)
    else:
        yield finding(PROBE_ID, "gpu_clock_events", "ok", "No harmful clock reductions under load",
                      observed=f"{len(busy)} busy GPU(s); " + ("SW power cap active (expected at full load)"
                                                              if any("sw_power_cap" in g.active_reasons for g in busy) else "no reasons active"),
                      evidence=ev)
    # temperature
    temps = [g for g in h.gpus if g.temp_c is not None]
    hot = [g for g in busy if g.temp_c is not None and g.temp_c >= 85]
    if not temps:
        yield finding(PROBE_ID, "gpu_thermal_headroom", "unknown", "GPU temperatures not reported", observed="[N/A]", evidence=ev)
    elif hot:
        yield finding(PROBE_ID, "gpu_thermal_headroom", "warning", "GPUs hot under load",
                      observed="; ".join(f"GPU {g.index}: {g.temp_c:.0f} °C" for g in hot), expected="< 85 °C under load",
                      why="Passively cooled cards throttle near their slowdown temperature.", fix="Improve chassis airflow.",
                      evidence=ev)
    else:
        yield finding(PROBE_ID, "gpu_thermal_headroom", "ok", "GPU temperatures fine",
                      observed=f"max {max(g.temp_c or 0 for g in temps):.0f} °C", evidence=ev)
    # locked / application clocks
    locked = [g for g in h.gpus if g.app_sm_mhz and g.sm_max_mhz and g.app_sm_mhz < 0.9 * g.sm_max_mhz]
    if any(g.sm_max_mhz is None for g in h.gpus):
        yield finding(PROBE_ID, "gpu_locked_clocks", "unknown", "GPU max clocks not reported", observed="[N/A]", evidence=ev)
    elif locked:
        yield finding(PROBE_ID, "gpu_locked_clocks", "warning", "Application clocks below max",
                      observed="; ".join(f"GPU {g.index}: {g.app_sm_mhz:.0f} of {g.sm_max_mhz:.0f} MHz" for g in locked),
                      expected="application clock = max", why="-ac/-lgc settings survive in persistence mode and cap throughput.",
                      fix="nvidia-smi -rac / -rgc unless deliberate.", evidence=ev)
    else:
        yield finding(PROBE_ID, "gpu_locked_clocks", "ok", "No reduced application clocks", observed="application clocks at max or unset",
                      evidence=ev)
    # memory clock under load
    slow = [g for g in busy if g.mem_mhz and g.mem_max_mhz and g.mem_mhz < 0.95 * g.mem_max_mhz]
    mem_na = [g.index for g in busy if not (g.mem_mhz and g.mem_max_mhz)]
    if not busy and util_na:
        yield finding(PROBE_ID, "gpu_pstate_under_load", "unknown", "GPU load unknown: P-state not judged",
                      observed=idle_unproven, evidence=ev)
    elif not busy:
        yield finding(PROBE_ID, "gpu_pstate_under_load", "ok", "GPUs idle: P-state not judged",
                      observed="not applicable: idle (" + ", ".join(sorted({g.pstate or "?" for g in h.gpus})) + " at idle is normal)",
                      evidence=ev)
    elif slow:
        yield finding(PROBE_ID, "gpu_pstate_under_load", "warning", "Memory clock below max under load",
                      observed="; ".join(f"GPU {g.index}: {g.mem_mhz:.0f} of {g.mem_max_mhz:.0f} MHz ({g.pstate})" for g in slow),
                      expected="memory clock at max while busy", why="Decode is memory-bandwidth-bound.",
                      fix="Check clock locks and power limits.", evidence=ev)
    elif mem_na:
        yield finding(PROBE_ID, "gpu_pstate_under_load", "unknown", "Memory clock under load not reported",
                      observed=f"clocks.mem or clocks.max.mem [N/A] on busy GPU {', '.join(mem_na)}", evidence=ev)
    else:
        yield finding(PROBE_ID, "gpu_pstate_under_load", "ok", "Memory clocks at max under load",
                      observed=", ".join(sorted({g.pstate or "?" for g in busy})), evidence=ev)


def _rtd3(h: PowerFacts) -> Iterator[Finding]:
    ev: list[tuple[Role, str]] = [("host", "nvidia_rtd3")]
    if not h.rtd3:
        sev = "unknown" if "nvidia_rtd3" in h.problems else "info"
        yield finding(PROBE_ID, "gpu_rtd3", sev, "GPU runtime D3 status not visible",
                      observed=h.problems.get("nvidia_rtd3", "no /proc/driver/nvidia/gpus/*/power"), evidence=ev)
        return
    on = {b: s for b, s in h.rtd3.items() if s.lower().startswith("enabled")}
    if on:
        yield finding(PROBE_ID, "gpu_rtd3", "info", "Runtime D3 enabled on GPUs",
                      observed="; ".join(f"{b}: {s}" for b, s in sorted(on.items())), expected="disabled on a server",
                      why="RTD3 powers the GPU off when unused; waking adds latency and link retrains.",
                      fix="NVreg_DynamicPowerManagement=0x00 in the nvidia module options.", evidence=ev)
    else:
        yield finding(PROBE_ID, "gpu_rtd3", "ok", "Runtime D3 off",
                      observed=", ".join(sorted(set(h.rtd3.values()))), evidence=ev)


def judge(facts: FactsByTarget) -> Iterator[Finding]:
    h: PowerFacts | None = facts.get("host")
    if h is None:
        return
    yield from _driver(h)
    yield from _governor(h)
    yield from _epp(h)
    yield from _boost(h)
    yield from _cstates(h)
    yield finding(PROBE_ID, "cpu_effective_freq", "info", "Effective CPU clocks under load not measured",
                  observed="manual: run turbostat --show Core,CPU,Bzy_MHz,Busy%,PkgWatt while the engine is busy"
                           " (needs MSR access and load; the passive audit does not sample it)",
                  expected="busy engine cores >= ~85% of the all-core boost")
    yield from _gpu_rows(h)
    yield from _rtd3(h)


def summarize(facts: FactsByTarget) -> str:
    h: PowerFacts | None = facts.get("host")
    if h is None:
        return ""
    parts = [h.scaling_driver or "cpufreq ?"]
    if h.governors:
        parts.append("/".join(sorted(h.governors)))
    deep = [s for s in h.idle_states if is_deep_cstate(s.name, s.latency_us, h.cpu_vendor)]
    if deep:
        s = max(deep, key=lambda s: s.latency_us or 0)
        on = any(not x.disabled for x in deep)
        parts.append(f"{s.name} {s.latency_us}µs {'on' if on else 'off'}")
    elif h.idle_states:
        parts.append("no deep C-states")
    return " · ".join(parts)


PROBE = Probe(id=PROBE_ID, title="Power management", commands=COMMANDS, extract=extract, judge=judge, summarize=summarize)
