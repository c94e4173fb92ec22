"""Raw outputs of the host -> PowerFacts. Pure; never raises (broken output becomes facts.problems).

Sysfs first (one `grep -H` command returns path:value lines); `cpupower` fills what sysfs did not give.
"""

from __future__ import annotations

import re
from typing import Any

from gpuaudit.probes.core.judge.combiners import cpu_identity_of, kernel_cmdline
from gpuaudit.probes.core.judge.probe import Reads, read_table
from gpuaudit.probes.core.models import Role
from gpuaudit.probes.core.parsers.cpu import (
    cpu_identity,
    idle_states_from_sysfs,
    parse_cpupower_frequency_info,
    parse_cpupower_idle_info,
    parse_grep_h,
    parse_lscpu,
)
from gpuaudit.probes.core.parsers.nvidia_smi import (
    SmiXmlGpu,
    csv_row_errors,
    parse_query_gpu_csv,
    parse_smi_q_xml,
)
from gpuaudit.probes.core.parsing import parse_once
from gpuaudit.probes.core.spec import Outputs, record_problem
from gpuaudit.probes.power.facts import GpuPower, GpuReading, IdleStateFact, PowerFacts

SMI_POWER_FIELDS = (
    "index",
    "pci.bus_id",
    "pstate",
    "utilization.gpu",
    "power.draw",
    "enforced.power.limit",
    "power.default_limit",
    "power.max_limit",
    "clocks.sm",
    "clocks.max.sm",
    "clocks.mem",
    "clocks.max.mem",
    "clocks.applications.graphics",
    "temperature.gpu",
    "clocks_event_reasons.hw_slowdown",
    "clocks_event_reasons.hw_thermal_slowdown",
    "clocks_event_reasons.hw_power_brake_slowdown",
    "clocks_event_reasons.sw_thermal_slowdown",
    "clocks_event_reasons.sw_power_cap",
)
REASON_FIELDS = tuple(f for f in SMI_POWER_FIELDS if f.startswith("clocks_event_reasons."))

Fields = dict[str, Any]


@parse_once
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
    m = re.match(r"\s*(-?[0-9]+(?:\.[0-9]+)?)", v or "")
    return float(m.group(1)) if m else None


@parse_once
def parse_smi_power(text: str) -> tuple[list[GpuPower], list[GpuReading]]:
    """`nvidia-smi --query-gpu=<SMI_POWER_FIELDS> --format=csv,noheader,nounits` -> (limits, readings) per GPU.

        0, 00000000:01:00.0, P8, 0, 31.52, 600.00, 600.00, 600.00, 22, 3090, 405, 14001, [N/A], 30, Not Active, ...
    Raises ParseError on a row of the wrong width; "[N/A]" cells become None (reasons: `unread_reasons`).
    """
    gpus, readings = [], []
    for row in parse_query_gpu_csv(text, SMI_POWER_FIELDS):
        idx = row.get("index") or "?"
        errors = csv_row_errors(row)
        state = {f: (row.get(f) or "").strip().lower() for f in REASON_FIELDS}
        gpus.append(
            GpuPower(
                index=idx,
                bus_id=row.get("pci.bus_id"),
                enforced_w=_num(row.get("enforced.power.limit")),
                default_w=_num(row.get("power.default_limit")),
                max_w=_num(row.get("power.max_limit")),
                sm_max_mhz=_num(row.get("clocks.max.sm")),
                mem_max_mhz=_num(row.get("clocks.max.mem")),
                app_sm_mhz=_num(row.get("clocks.applications.graphics")),
            )
        )
        readings.append(
            GpuReading(
                index=idx,
                pstate=row.get("pstate"),
                util=_num(row.get("utilization.gpu")),
                draw_w=_num(row.get("power.draw")),
                sm_mhz=_num(row.get("clocks.sm")),
                mem_mhz=_num(row.get("clocks.mem")),
                temp_c=_num(row.get("temperature.gpu")),
                active_reasons=[f.split(".", 1)[1] for f in REASON_FIELDS if state[f] == "active"],
                unread_reasons=[
                    f.split(".", 1)[1]
                    for f in REASON_FIELDS
                    if f in errors or state[f] not in ("active", "not active")
                ],
            )
        )
    return gpus, readings


# --------------------------------------------------------------------------- one function per source


def _lscpu(text: str, f: Fields, problems: dict[str, str]) -> None:
    """The CPU's flags (cppc); its identity is the shared combiner's (lscpu -J, else /proc/cpuinfo)."""
    ident = cpu_identity(parse_lscpu(text))
    if ident.vendor is None:
        problems["lscpu_json"] = "unparsable lscpu output"
    f.update(cpu_has_cppc_flag=ident.has_cppc_flag)


def _identity(outputs: Outputs, f: Fields) -> None:
    ident, _source = cpu_identity_of(outputs)
    if ident is not None:
        f.update(
            cpu_vendor=ident.vendor,
            cpu_family=ident.family,
            cpu_model=ident.model,
            cpu_model_name=ident.model_name,
        )


def _sys_cpufreq(text: str, f: Fields, problems: dict[str, str]) -> None:
    """path:value lines of cpu0's cpufreq files and the global boost/pstate switches."""
    one = {
        k.rsplit("/", 2)[-2] + "/" + k.rsplit("/", 1)[-1]: v[0]
        for k, v in parse_grep_h(text).items()
        if v
    }
    f["scaling_driver"] = one.get("cpufreq/scaling_driver")
    f["amd_pstate_status"] = one.get("amd_pstate/status")
    if "cpufreq/boost" in one:
        f["boost"], f["boost_source"] = one["cpufreq/boost"] == "1", "cpufreq/boost"
    elif "intel_pstate/no_turbo" in one:
        f["boost"], f["boost_source"] = one["intel_pstate/no_turbo"] == "0", "intel_pstate/no_turbo"
    # cpu0's own governor/EPP only when the all-policies counts said nothing
    if not f.get("governors") and one.get("cpufreq/scaling_governor"):
        f["governors"] = {one["cpufreq/scaling_governor"]: 1}
    if not f.get("epp") and one.get("cpufreq/energy_performance_preference"):
        f["epp"] = {one["cpufreq/energy_performance_preference"]: 1}
    smax, hmax = (
        _num(one.get("cpufreq/scaling_max_freq")),
        _num(one.get("cpufreq/cpuinfo_max_freq")),
    )
    if smax and hmax:  # kHz in sysfs
        f.update(
            policy_max_mhz=smax / 1000,
            hw_max_mhz=hmax / 1000,
            policy_source="cpu0 scaling_max_freq/cpuinfo_max_freq",
        )


def _cpupower_freq(text: str, f: Fields, problems: dict[str, str]) -> None:
    """Fills only what sysfs did not give (a target with a restricted /sys)."""
    info = parse_cpupower_frequency_info(text)
    f["scaling_driver"] = f.get("scaling_driver") or info.driver
    if not f.get("governors") and info.governor:
        f["governors"] = {info.governor: 1}
    if f.get("boost") is None and info.boost_active is not None:
        f["boost"], f["boost_source"] = info.boost_active, "cpupower"
    if f.get("policy_max_mhz") is None and info.policy_max_mhz and info.hw_max_mhz:
        f.update(
            policy_max_mhz=info.policy_max_mhz,
            hw_max_mhz=info.hw_max_mhz,
            policy_source="cpupower current policy/hardware limits",
        )


def _sys_cpuidle(text: str, f: Fields, problems: dict[str, str]) -> None:
    files = parse_grep_h(text)
    for path, vals in files.items():
        if path.endswith("cpuidle/current_driver") and vals:
            f["idle_driver"] = vals[0]
        elif path.endswith("pm_qos_resume_latency_us") and vals:
            f["pm_qos_resume_latency_us"] = int(vals[0]) if vals[0].isdigit() else None
    _set_states(f, [(cpu, s) for cpu, sts in idle_states_from_sysfs(files).items() for s in sts])


def _cpupower_idle(text: str, f: Fields, problems: dict[str, str]) -> None:
    info = parse_cpupower_idle_info(text)
    f["idle_driver"] = f.get("idle_driver") or info.driver
    _set_states(f, [(info.cpu or 0, s) for s in info.states])


def _set_states(f: Fields, states: list[tuple[int, Any]]) -> None:
    facts = [
        IdleStateFact(cpu=cpu, name=s.name, latency_us=s.latency_us, disabled=s.disabled)
        for cpu, s in states
    ]
    f["idle_states"] = facts
    f["idle_usage"] = {st.key: s.usage for st, (_, s) in zip(facts, states) if s.usage is not None}


def _smi_power(text: str, f: Fields, problems: dict[str, str]) -> None:
    try:
        f["gpus"], f["gpu_readings"] = parse_smi_power(text)
    except Exception as exc:  # ParseError or an error banner: a fact, not a crash
        problems["smi_query_power"] = f"unparsable nvidia-smi output: {exc}"


XML_REASONS = (
    "hw_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
    "sw_thermal_slowdown",
    "sw_power_cap",
)
"""The reasons the checks judge (the CSV's set); the XML's gpu_idle/applications_clocks/sync_boost describe load."""


def _from_xml(g: SmiXmlGpu) -> tuple[dict[str, Any], dict[str, Any]]:
    """One `nvidia-smi -q -x` GPU -> (GpuPower fields, GpuReading fields); absent values left out."""
    limits = dict(
        bus_id=g.bus_id,
        enforced_w=g.power_limit_w,
        default_w=g.power_default_limit_w,
        max_w=g.power_max_limit_w,
        mem_max_mhz=g.mem_clock_max_mhz,
        sm_max_mhz=g.sm_clock_max_mhz,  # the XML has it too (issue 24: the fallback read none)
        app_sm_mhz=g.app_clock_mhz,
        temp_slowdown_c=g.temp_slowdown_c,
    )
    events = {r: g.clock_events[r] for r in XML_REASONS if r in g.clock_events}
    reading = dict(
        pstate=g.performance_state,
        util=g.utilization_gpu_pct,
        draw_w=g.power_draw_w,
        temp_c=g.temp_c,
        sm_mhz=g.sm_clock_mhz,
        active_reasons=[r for r, v in events.items() if v] if events else None,
        unread_reasons=[r for r, v in events.items() if v is None] if events else None,
    )
    return (
        {k: v for k, v in limits.items() if v is not None},
        {k: v for k, v in reading.items() if v is not None},
    )


def _smi_xml(text: str, f: Fields, problems: dict[str, str]) -> None:
    """The XML fills what the CSV did not give (a driver without a CSV field, [N/A] cells) and adds the slowdown
    temperature; without a usable CSV it is the only per-GPU source (its SM clock and max SM clock included)."""
    try:
        xml = parse_smi_q_xml(text)
    except Exception as exc:  # ParseError or an error banner
        problems["smi_q_xml"] = f"unparsable nvidia-smi -q -x output: {exc}"
        return
    gpus = {g.index: g for g in f.get("gpus", [])}
    readings = {r.index: r for r in f.get("gpu_readings", [])}
    for x in xml.gpus:
        idx = str(x.index)
        limits, reading = _from_xml(x)
        old_g, old_r = gpus.get(idx), readings.get(idx)
        gpus[idx] = GpuPower(
            index=idx,
            **{
                **limits,
                **(old_g.model_dump(exclude_none=True, exclude={"index"}) if old_g else {}),
            },
        )
        keep = (
            old_r.model_dump(
                exclude_none=True, exclude={"index", "active_reasons", "unread_reasons"}
            )
            if old_r
            else {}
        )
        if old_r and (old_r.active_reasons or not old_r.unread_reasons):  # the CSV read the reasons
            keep.update(active_reasons=old_r.active_reasons, unread_reasons=old_r.unread_reasons)
        readings[idx] = GpuReading(index=idx, **{**reading, **keep})
    f["gpus"], f["gpu_readings"] = list(gpus.values()), list(readings.values())


def _rtd3(text: str, f: Fields, problems: dict[str, str]) -> None:
    for path, lines in parse_grep_h(text).items():
        status = [v.split(":", 1)[1].strip() for v in lines if v.startswith("Runtime D3 status:")]
        if path.startswith("/proc/driver/nvidia/gpus/") and path.endswith("/power") and status:
            f.setdefault("rtd3", {})[path.rsplit("/", 2)[-2]] = status[0]


def _cmdline(text: str, f: Fields, problems: dict[str, str]) -> None:
    f["cmdline"] = kernel_cmdline(text).line  # the shared reading (combiners)


# source -> reader, in order: a fallback comes after the source it completes, and runs only when `when` holds.
TABLE: tuple[Reads, ...] = (
    Reads("lscpu_json", fill=_lscpu),
    Reads("sys_governors", fill=lambda t, f, p: f.update(governors=parse_uniq_c(t))),
    Reads("sys_epp", fill=lambda t, f, p: f.update(epp=parse_uniq_c(t))),
    Reads("sys_cpufreq", fill=_sys_cpufreq),
    Reads(
        "cpupower_freq",
        fill=_cpupower_freq,
        when=lambda f: (
            not f.get("scaling_driver") or f.get("boost") is None or f.get("policy_max_mhz") is None
        ),
    ),
    Reads("sys_cppc", fill=lambda t, f, p: f.update(cppc_present=bool(parse_grep_h(t)))),
    Reads("sys_cpuidle", fill=_sys_cpuidle),
    Reads("cpupower_idle", fill=_cpupower_idle, when=lambda f: not f.get("idle_states")),
    Reads("proc_cmdline", fill=_cmdline),
    Reads("smi_query_power", fill=_smi_power),
    Reads("smi_q_xml", fill=_smi_xml),
    Reads("nvidia_rtd3", fill=_rtd3),
)


def _unparsable(exc: Exception) -> str:
    return f"unparsable output: {exc.__class__.__name__}: {exc}"


def extract(outputs: Outputs, role: Role) -> PowerFacts:
    # the framework's loop: a parser bug on odd output makes that source unusable, the rest is still judged
    read = read_table(outputs, TABLE, why=_unparsable, usability=record_problem)
    f = read.fields
    _identity(outputs, f)
    return PowerFacts.of(f, problems=read.problems)


FIELD_SOURCES: dict[str, tuple[str, ...]] = {
    "cpu_vendor": ("cpuinfo_id",),
    "cpu_family": ("cpuinfo_id",),
    "cpu_model": ("cpuinfo_id",),
    "cpu_model_name": ("cpuinfo_id",),
    "cpu_has_cppc_flag": ("lscpu_json",),
    "scaling_driver": ("sys_cpufreq",),
    "amd_pstate_status": ("sys_cpufreq",),
    "governors": ("sys_governors",),
    "epp": ("sys_epp",),
    "boost": ("sys_cpufreq",),
    "boost_source": ("sys_cpufreq",),
    "policy_max_mhz": ("sys_cpufreq",),
    "hw_max_mhz": ("sys_cpufreq",),
    "policy_source": ("sys_cpufreq",),
    "cppc_present": ("sys_cppc",),
    "idle_driver": ("sys_cpuidle",),
    "pm_qos_resume_latency_us": ("sys_cpuidle",),
    "idle_states": ("sys_cpuidle",),
    "idle_usage": ("sys_cpuidle",),
    "cmdline": ("proc_cmdline",),
    "gpus": ("smi_query_power",),
    "gpu_readings": ("smi_query_power",),
    "rtd3": ("nvidia_rtd3",),
}
"""Each fact field -> the sources it is read from (provenance; the read-tracking test holds verdicts to
their checks' declarations through it). () = from the records' wrapping, not a source's output."""
