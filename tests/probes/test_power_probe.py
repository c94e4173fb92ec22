"""power probe: rules over facts (table-driven) and the case-study replay end to end."""

from __future__ import annotations

from functools import partial

from pathlib import Path

import hw_helpers as hw
import pytest

from gpuaudit.probes import power
from gpuaudit.probes.power import GpuPower, IdleStateFact, PowerFacts

sev = partial(hw.sev, power.PROBE)
rec = partial(hw.rec, "power")
run = partial(hw.run, power.PROBE)


CASE = Path(__file__).parents[2] / "snapshots/examples/case-study"
AMD_TURIN = dict(cpu_vendor="AMD", cpu_family=26)


def idle(c2_disabled=False, usage=10, lat=400):
    return [IdleStateFact(cpu=0, name="POLL", latency_us=0, disabled=False, usage=1),
            IdleStateFact(cpu=0, name="C1", latency_us=1, disabled=False, usage=5),
            IdleStateFact(cpu=0, name="C2", latency_us=lat, disabled=c2_disabled, usage=usage)]


@pytest.mark.parametrize("facts,expected", [
    (PowerFacts(**AMD_TURIN, scaling_driver="acpi-cpufreq", cppc_present=True), "warning"),
    (PowerFacts(**AMD_TURIN, scaling_driver="acpi-cpufreq", cppc_present=False), "info"),     # precondition: no CPPC
    (PowerFacts(cpu_vendor="AMD", cpu_family=0x17, scaling_driver="acpi-cpufreq", cppc_present=True), "warning"),  # Zen 2 boundary
    (PowerFacts(cpu_vendor="AMD", cpu_family=0x16, scaling_driver="acpi-cpufreq", cppc_present=True), "info"),     # pre-Zen 2
    (PowerFacts(cpu_vendor="Intel", cpu_family=6, scaling_driver="acpi-cpufreq"), "info"),
    (PowerFacts(**AMD_TURIN, scaling_driver="amd-pstate-epp"), "ok"),
    (PowerFacts(cpu_vendor="Intel", scaling_driver="intel_pstate"), "ok"),
    (PowerFacts(cpu_vendor="Intel", scaling_driver="intel_cpufreq"), "info"),
    (PowerFacts(problems={"sys_cpufreq": "timed out"}), "unknown"),
    (PowerFacts(cpu_vendor="ARM"), "info"),                                                  # no driver at all
])
def test_scaling_driver(facts, expected):
    assert sev(facts, "power.cpu_scaling_driver") == expected


@pytest.mark.parametrize("driver,govs,expected", [
    ("acpi-cpufreq", {"performance": 256}, "ok"),
    ("acpi-cpufreq", {"schedutil": 256}, "warning"),
    ("acpi-cpufreq", {"performance": 255, "ondemand": 1}, "warning"),
    ("acpi-cpufreq", {"powersave": 256}, "critical"),
    ("amd-pstate-epp", {"powersave": 256}, "info"),                                          # trap 16
    ("acpi-cpufreq", {}, "unknown"),
    (None, {}, "info"),
])
def test_governor(driver, govs, expected):
    assert sev(PowerFacts(scaling_driver=driver, governors=govs), "power.cpu_governor") == expected


@pytest.mark.parametrize("epp,expected", [({"performance": 4}, "ok"), ({"balance_performance": 4}, "info"),
                                          ({"balance_power": 4}, "warning"),
                                          ({}, "unknown")])                 # amd-pstate-epp must expose EPP
def test_epp(epp, expected):
    assert sev(PowerFacts(scaling_driver="amd-pstate-epp", epp=epp), "power.cpu_epp") == expected


@pytest.mark.parametrize("facts,expected", [
    (PowerFacts(cpu_vendor="AMD", scaling_driver="acpi-cpufreq"), "ok"),       # positive: driver without EPP
    (PowerFacts(cpu_vendor="ARM"), "ok"),                                     # positive: no cpufreq driver at all
    (PowerFacts(cpu_vendor="AMD", scaling_driver="acpi-cpufreq", problems={"sys_epp": "timed out"}), "unknown"),
    (PowerFacts(cpu_vendor="Intel", scaling_driver="intel_pstate"), "unknown"),
    (PowerFacts(problems={"sys_cpufreq": "timed out"}), "unknown"),           # driver never read
])
def test_epp_not_applicable_only_on_a_positive_reading(facts, expected):
    assert sev(facts, "power.cpu_epp") == expected


@pytest.mark.parametrize("boost,driver,expected", [(True, "acpi-cpufreq", "ok"), (False, "acpi-cpufreq", "warning"),
                                                   (None, "acpi-cpufreq", "unknown"), (None, None, "info")])
def test_boost(boost, driver, expected):
    assert sev(PowerFacts(scaling_driver=driver, boost=boost, boost_source="x"), "power.cpu_boost") == expected


@pytest.mark.parametrize("kw,expected", [
    (dict(idle_states=idle()), "warning"),
    (dict(idle_states=idle(c2_disabled=True)), "ok"),
    (dict(idle_states=idle(usage=0)), "info"),                                              # enabled but never entered
    (dict(idle_states=idle(lat=49)), "ok"),                                                 # boundary below 50 µs
    (dict(idle_states=idle(lat=50)), "warning"),                                            # boundary at 50 µs
    (dict(idle_states=idle(), cmdline="ro processor.max_cstate=1"), "ok"),                  # capped by the kernel
    (dict(idle_states=idle(), pm_qos_resume_latency_us=10), "ok"),                          # PM-QoS holder
    (dict(idle_driver="none"), "ok"),                                                       # VM: no states
    (dict(idle_driver="acpi_idle", problems={"sys_cpuidle": "timed out"}), "unknown"),
    (dict(problems={"sys_cpuidle": "timed out", "cpupower_idle": "tool not installed"}), "unknown"),
    (dict(), "unknown"),                                                                    # driver never read
])
def test_cstates(kw, expected):
    assert sev(PowerFacts(**kw), "power.cpu_cstates") == expected


def gpu(**kw):
    base = dict(index="0", util=0, enforced_w=600, default_w=600, sm_max_mhz=3090, temp_c=30, mem_mhz=405, mem_max_mhz=14001)
    return GpuPower(**{**base, **kw})


@pytest.mark.parametrize("g,fid,expected", [
    (gpu(), "power.gpu_power_limit", "ok"),
    (gpu(enforced_w=400), "power.gpu_power_limit", "warning"),
    (gpu(enforced_w=None), "power.gpu_power_limit", "unknown"),
    (gpu(), "power.gpu_clock_events", "ok"),                                                 # idle: not judged
    (gpu(util=90, active_reasons=["hw_slowdown"]), "power.gpu_clock_events", "critical"),
    (gpu(util=90, active_reasons=["sw_thermal_slowdown"]), "power.gpu_clock_events", "warning"),
    (gpu(util=90, active_reasons=["sw_power_cap"]), "power.gpu_clock_events", "ok"),
    (gpu(util=90, temp_c=88), "power.gpu_thermal_headroom", "warning"),
    (gpu(temp_c=88), "power.gpu_thermal_headroom", "ok"),                                    # hot only matters under load
    (gpu(app_sm_mhz=1500), "power.gpu_locked_clocks", "warning"),
    (gpu(), "power.gpu_pstate_under_load", "ok"),                                            # P8 idle is normal
    (gpu(util=90, mem_mhz=405), "power.gpu_pstate_under_load", "warning"),
    (gpu(util=90, mem_mhz=14001), "power.gpu_pstate_under_load", "ok"),
    (gpu(util=None), "power.gpu_clock_events", "unknown"),                                  # [N/A] is not idle
    (gpu(util=None), "power.gpu_pstate_under_load", "unknown"),
    (gpu(util=90, mem_mhz=None, mem_max_mhz=None), "power.gpu_pstate_under_load", "unknown"),
])
def test_gpu_rules(g, fid, expected):
    assert sev(PowerFacts(gpus=[g]), fid) == expected


def test_gpu_rules_unknown_without_smi():
    f = PowerFacts(problems={"smi_query_power": "tool not installed"})
    assert sev(f, "power.gpu_power_limit") == "unknown" and sev(f, "power.gpu_rtd3") == "info"


def test_rtd3():
    text = ("/proc/driver/nvidia/gpus/0000:01:00.0/power:Runtime D3 status:          Enabled (fine-grained)\n"
            "/proc/driver/nvidia/gpus/0000:01:00.0/power:Video Memory:                Active\n"
            "/proc/driver/nvidia/gpus/10000:02:00.0/power:Runtime D3 status:          Disabled by default\n")
    f = power.extract({"nvidia_rtd3": rec("nvidia_rtd3", text)}, "host")
    assert f.rtd3 == {"0000:01:00.0": "Enabled (fine-grained)", "10000:02:00.0": "Disabled by default"}
    assert sev(PowerFacts(rtd3={"0000:01:00.0": "Enabled (fine-grained)"}), "power.gpu_rtd3") == "info"
    assert sev(PowerFacts(rtd3={"0000:01:00.0": "Disabled by default"}), "power.gpu_rtd3") == "ok"


def test_extract_broken_outputs_become_facts():
    facts = power.extract({"smi_query_power": rec("smi_query_power", "0, garbage"),
                           "lscpu_json": rec("lscpu_json", "{not json"),
                           "sys_cpufreq": rec("sys_cpufreq", "", exit_status=2)}, "host")
    assert "unparsable" in facts.problems["smi_query_power"] and "lscpu_json" in facts.problems
    assert facts.problems["sys_cpufreq"].startswith("exit 2")
    assert {f.severity.value for f in power.judge({"host": facts}) if f.id.startswith("power.gpu_p")} == {"unknown"}


def test_extract_cpupower_fallback_from_corpus():
    fx = Path(__file__).parents[1] / "fixtures/system"
    facts = power.extract({
        "cpupower_freq": rec("cpupower_freq", (fx / "cpupower-frequency-info/epyc-acpi-cpufreq-performance-governor-2800.txt").read_text()),
        "cpupower_idle": rec("cpupower_idle", (fx / "cpupower-idle-info/amd-server-acpi-idle-poll-c1-c2-lat400.txt").read_text()),
    }, "host")
    assert facts.scaling_driver == "acpi-cpufreq" and facts.governors == {"performance": 1} and facts.boost
    assert [(s.name, s.latency_us) for s in facts.idle_states][-1] == ("C2", 400)


def test_case_study_before():
    r = run("before")
    by = {f.id: f for f in r.findings}
    assert r.status == "done"
    assert by["power.cpu_scaling_driver"].severity.value == "warning"
    assert by["power.cpu_cstates"].severity.value == "warning" and "C2 400µs" in by["power.cpu_cstates"].observed
    assert r.summary == "acpi-cpufreq · performance · C2 400µs on"


def test_case_study_after():
    r = run("after")
    bad = [f.id for f in r.findings if f.severity.value in ("warning", "critical")]
    assert bad == []
    assert r.summary.startswith("amd-pstate-epp · performance")


def test_no_cpufreq_driver_is_not_applicable_only_when_sysfs_was_read():
    unread = PowerFacts(problems={"sys_cpufreq": "timed out"})
    assert sev(unread, "power.cpu_governor") == "unknown"
    assert sev(unread, "power.cpu_boost") == "unknown"
    read_no_driver = PowerFacts()
    assert sev(read_no_driver, "power.cpu_governor") == "info"
    assert sev(read_no_driver, "power.cpu_boost") == "info"


def test_epyc_c2_at_30us_entered_is_a_deep_state_warning():
    """Issue 12 item 7: a real EPYC C2 (ACPI IOPORT) at 30 µs, entered 9,864 times, was 'ok only shallow states'."""
    fx = Path(__file__).parents[1] / "fixtures/system"
    facts = power.extract({
        "lscpu_json": rec("lscpu_json", (fx / "lscpu/epyc-7742-2s-smt-off.txt").read_text()),
        "cpupower_idle": rec("cpupower_idle", (fx / "cpupower-idle-info/epyc-acpi-idle-c2-ioport-lat30-entered.txt").read_text()),
    }, "host")
    assert facts.cpu_vendor == "AMD"
    found = [f for f in hw.findings(power.PROBE, facts) if f.id == "power.cpu_cstates"]
    assert found[0].severity.value == "warning" and "C2 30µs" in found[0].observed
