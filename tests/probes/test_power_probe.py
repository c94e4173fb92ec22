"""power probe: check rows over facts (table-driven, judged by the framework) and real recordings end to end."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import hw_helpers as hw
import pytest
from gpuaudit.probes import power
from gpuaudit.probes.core.judge.checks import judge_checks
from gpuaudit.probes.core.judge.probe import judge_probe
from gpuaudit.probes.power import GpuPower, GpuReading, IdleStateFact, PowerFacts

rec = partial(hw.rec, "power")
run = partial(hw.run, power.PROBE)

FX = Path(__file__).parents[1] / "fixtures/system"
CASE = Path(__file__).parents[2] / "snapshots/examples/case-study"
AMD_TURIN = dict(cpu_vendor="AMD", cpu_family=26)
SOURCE_IDS = [c.id for c in power.COMMANDS]


def findings(facts: PowerFacts, collected=SOURCE_IDS) -> dict:
    """Judge `facts` as the host's, every source collected and answered (facts.problems still make one unusable)."""
    outputs = {"host": {cid: rec(cid, "x") for cid in collected}}
    return {f.id: f for f in judge_checks(power.CHECKS, {"host": facts}, outputs)}


def sev(facts: PowerFacts, fid: str, collected=SOURCE_IDS) -> str:
    return findings(facts, collected)[fid].severity.value


def replay(**stdout_by_cid: str) -> dict:
    """extract + judge over real outputs (only the given sources collected)."""
    result = judge_probe(
        power.PROBE, {"host": [rec(cid, text) for cid, text in stdout_by_cid.items()]}
    )
    assert result.status == "done", result.error
    return {f.id: f for f in result.findings}


def idle(c2_disabled=False, usage=10, lat=400):
    states = [
        IdleStateFact(cpu=0, name="POLL", latency_us=0, disabled=False),
        IdleStateFact(cpu=0, name="C1", latency_us=1, disabled=False),
        IdleStateFact(cpu=0, name="C2", latency_us=lat, disabled=c2_disabled),
    ]
    return dict(idle_states=states, idle_usage={"cpu0/POLL": 1, "cpu0/C1": 5, "cpu0/C2": usage})


@pytest.mark.parametrize(
    "facts,expected",
    [
        (PowerFacts(**AMD_TURIN, scaling_driver="acpi-cpufreq", cppc_present=True), "warning"),
        (
            PowerFacts(**AMD_TURIN, scaling_driver="acpi-cpufreq", cppc_present=False),
            "info",
        ),  # precondition: no CPPC
        (
            PowerFacts(
                cpu_vendor="AMD", cpu_family=0x17, scaling_driver="acpi-cpufreq", cppc_present=True
            ),
            "warning",
        ),  # Zen 2 boundary
        (
            PowerFacts(
                cpu_vendor="AMD", cpu_family=0x16, scaling_driver="acpi-cpufreq", cppc_present=True
            ),
            "info",
        ),  # pre-Zen 2
        (PowerFacts(cpu_vendor="Intel", cpu_family=6, scaling_driver="acpi-cpufreq"), "info"),
        (PowerFacts(**AMD_TURIN, scaling_driver="amd-pstate-epp"), "ok"),
        (PowerFacts(cpu_vendor="Intel", scaling_driver="intel_pstate"), "ok"),
        (PowerFacts(cpu_vendor="Intel", scaling_driver="intel_cpufreq"), "info"),
        (PowerFacts(problems={"sys_cpufreq": "timed out"}), "unknown"),
        (PowerFacts(cpu_vendor="ARM"), "n/a"),  # no driver at all
    ],
)
def test_scaling_driver(facts, expected):
    assert sev(facts, "power.cpu_scaling_driver") == expected


@pytest.mark.parametrize(
    "driver,govs,expected",
    [
        ("acpi-cpufreq", {"performance": 256}, "ok"),
        ("acpi-cpufreq", {"schedutil": 256}, "warning"),
        ("acpi-cpufreq", {"performance": 255, "ondemand": 1}, "warning"),
        ("acpi-cpufreq", {"powersave": 256}, "critical"),
        ("amd-pstate-epp", {"powersave": 256}, "info"),  # trap 16
        ("acpi-cpufreq", {}, "unknown"),
        (None, {}, "n/a"),
    ],
)
def test_governor(driver, govs, expected):
    assert sev(PowerFacts(scaling_driver=driver, governors=govs), "power.cpu_governor") == expected


@pytest.mark.parametrize(
    "epp,expected",
    [
        ({"performance": 4}, "ok"),
        ({"balance_performance": 4}, "info"),
        ({"balance_power": 4}, "warning"),
        ({}, "unknown"),
    ],
)  # amd-pstate-epp must expose EPP
def test_epp(epp, expected):
    assert sev(PowerFacts(scaling_driver="amd-pstate-epp", epp=epp), "power.cpu_epp") == expected


@pytest.mark.parametrize(
    "facts,expected",
    [
        (
            PowerFacts(cpu_vendor="AMD", scaling_driver="acpi-cpufreq"),
            "n/a",
        ),  # positive: driver without EPP
        (PowerFacts(cpu_vendor="ARM"), "n/a"),  # positive: no cpufreq driver at all
        (
            PowerFacts(
                cpu_vendor="AMD", scaling_driver="acpi-cpufreq", problems={"sys_epp": "timed out"}
            ),
            "unknown",
        ),
        (PowerFacts(cpu_vendor="Intel", scaling_driver="intel_pstate"), "unknown"),
        (PowerFacts(problems={"sys_cpufreq": "timed out"}), "unknown"),  # driver never read
    ],
)
def test_epp_not_applicable_only_on_a_positive_reading(facts, expected):
    assert sev(facts, "power.cpu_epp") == expected


@pytest.mark.parametrize(
    "boost,driver,expected",
    [
        (True, "acpi-cpufreq", "ok"),
        (False, "acpi-cpufreq", "warning"),
        (None, "acpi-cpufreq", "unknown"),
        (None, None, "n/a"),
    ],
)
def test_boost(boost, driver, expected):
    assert (
        sev(PowerFacts(scaling_driver=driver, boost=boost, boost_source="x"), "power.cpu_boost")
        == expected
    )


@pytest.mark.parametrize(
    "kw,expected",
    [
        (idle(), "warning"),
        (idle(c2_disabled=True), "ok"),
        (idle(usage=0), "info"),  # enabled but never entered
        (idle(lat=49), "unknown"),  # vendor unknown: C2 at 49 µs is deep on AMD (issue 24)
        (idle(lat=50), "warning"),  # vendor unknown: at 50 µs
        ({**idle(lat=30), "cpu_vendor": "AMD"}, "warning"),  # AMD C2 is deep at any latency
        ({**idle(), "cmdline": "ro processor.max_cstate=1"}, "ok"),  # capped by the kernel
        ({**idle(), "pm_qos_resume_latency_us": 10}, "ok"),  # PM-QoS holder
        (dict(idle_driver="none"), "n/a"),  # VM: no states
        (dict(idle_driver="acpi_idle", problems={"sys_cpuidle": "timed out"}), "unknown"),
        (
            dict(problems={"sys_cpuidle": "timed out", "cpupower_idle": "tool not installed"}),
            "unknown",
        ),
        (dict(), "unknown"),  # driver never read
    ],
)
def test_cstates(kw, expected):
    assert sev(PowerFacts(**kw), "power.cpu_cstates") == expected


def gpu(**kw):
    """One GPU's facts: limits (GpuPower) and readings (GpuReading) from one set of keywords."""
    limits = dict(index="0", enforced_w=600, default_w=600, sm_max_mhz=3090, mem_max_mhz=14001)
    reading = dict(index="0", util=0, temp_c=30, mem_mhz=405)
    kw = {**limits, **reading, **kw}
    return dict(
        gpus=[GpuPower(**{k: kw[k] for k in [*limits, "app_sm_mhz"] if k in kw})],
        gpu_readings=[GpuReading(**{k: v for k, v in kw.items() if k in GpuReading.model_fields})],
    )


@pytest.mark.parametrize(
    "g,fid,expected",
    [
        (gpu(), "power.gpu_power_limit", "ok"),
        (gpu(enforced_w=400), "power.gpu_power_limit", "warning"),
        (gpu(enforced_w=None), "power.gpu_power_limit", "unknown"),
        (gpu(), "power.gpu_clock_events", "ok"),  # idle, no reason active
        (
            gpu(active_reasons=["hw_slowdown", "hw_power_brake_slowdown"]),
            "power.gpu_clock_events",
            "critical",
        ),  # idle too
        (
            gpu(active_reasons=["sw_thermal_slowdown"]),
            "power.gpu_clock_events",
            "warning",
        ),  # idle too
        (gpu(unread_reasons=["hw_slowdown"]), "power.gpu_clock_events", "unknown"),
        (gpu(util=90, active_reasons=["hw_slowdown"]), "power.gpu_clock_events", "critical"),
        (gpu(util=90, active_reasons=["sw_thermal_slowdown"]), "power.gpu_clock_events", "warning"),
        (gpu(util=90, active_reasons=["sw_power_cap"]), "power.gpu_clock_events", "ok"),
        (gpu(util=90, temp_c=88), "power.gpu_thermal_headroom", "warning"),
        (gpu(temp_c=88), "power.gpu_thermal_headroom", "ok"),  # hot only matters under load
        (gpu(app_sm_mhz=1500), "power.gpu_locked_clocks", "warning"),
        (gpu(), "power.gpu_pstate_under_load", "n/a"),  # P8 idle is normal
        (gpu(util=90, mem_mhz=405), "power.gpu_pstate_under_load", "warning"),
        (gpu(util=90, mem_mhz=14001), "power.gpu_pstate_under_load", "ok"),
        (gpu(util=None), "power.gpu_clock_events", "ok"),  # reasons read: load not needed
        (gpu(util=None), "power.gpu_pstate_under_load", "unknown"),
        (gpu(util=90, mem_mhz=None, mem_max_mhz=None), "power.gpu_pstate_under_load", "unknown"),
    ],
)
def test_gpu_rules(g, fid, expected):
    assert sev(PowerFacts(**g), fid) == expected


def test_gpu_rules_unknown_without_smi():
    f = PowerFacts(
        problems={"smi_query_power": "tool not installed", "smi_q_xml": "tool not installed"}
    )
    assert sev(f, "power.gpu_power_limit") == "unknown" and sev(f, "power.gpu_rtd3") == "info"
    assert "smi_query_power: tool not installed" in findings(f)["power.gpu_clock_events"].observed


def test_rtd3():
    text = (
        "/proc/driver/nvidia/gpus/0000:01:00.0/power:Runtime D3 status:          Enabled (fine-grained)\n"
        "/proc/driver/nvidia/gpus/0000:01:00.0/power:Video Memory:                Active\n"
        "/proc/driver/nvidia/gpus/10000:02:00.0/power:Runtime D3 status:          Disabled by default\n"
    )
    f = power.extract({"nvidia_rtd3": rec("nvidia_rtd3", text)}, "host")
    assert f.rtd3 == {
        "0000:01:00.0": "Enabled (fine-grained)",
        "10000:02:00.0": "Disabled by default",
    }
    assert (
        sev(PowerFacts(rtd3={"0000:01:00.0": "Enabled (fine-grained)"}), "power.gpu_rtd3") == "info"
    )
    assert sev(PowerFacts(rtd3={"0000:01:00.0": "Disabled by default"}), "power.gpu_rtd3") == "ok"


def test_extract_broken_outputs_become_facts():
    facts = power.extract(
        {
            "smi_query_power": rec("smi_query_power", "0, garbage"),
            "lscpu_json": rec("lscpu_json", "{not json"),
            "sys_cpufreq": rec("sys_cpufreq", "", exit_status=2),
        },
        "host",
    )
    assert "unparsable" in facts.problems["smi_query_power"] and "lscpu_json" in facts.problems
    assert facts.problems["sys_cpufreq"].startswith("exit 2")
    assert {
        f.severity.value for f in findings(facts).values() if f.id.startswith("power.gpu_p")
    } == {"unknown"}


def test_extract_cpupower_fallback_from_corpus():
    fx = Path(__file__).parents[1] / "fixtures/system"
    facts = power.extract(
        {
            "cpupower_freq": rec(
                "cpupower_freq",
                (
                    fx / "cpupower-frequency-info/epyc-acpi-cpufreq-performance-governor-2800.txt"
                ).read_text(),
            ),
            "cpupower_idle": rec(
                "cpupower_idle",
                (fx / "cpupower-idle-info/amd-server-acpi-idle-poll-c1-c2-lat400.txt").read_text(),
            ),
        },
        "host",
    )
    assert facts.idle_usage["cpu9/C2"] == 16537
    assert (
        facts.scaling_driver == "acpi-cpufreq"
        and facts.governors == {"performance": 1}
        and facts.boost
    )
    assert [(s.name, s.latency_us) for s in facts.idle_states][-1] == ("C2", 400)


def test_case_study_before():
    r = run("before")
    by = {f.id: f for f in r.findings}
    assert r.status == "done"
    assert by["power.cpu_scaling_driver"].severity.value == "warning"
    assert (
        by["power.cpu_cstates"].severity.value == "warning"
        and "C2 400µs" in by["power.cpu_cstates"].observed
    )
    assert r.summary == "acpi-cpufreq · performance · C2 400µs on"


def test_case_study_after():
    r = run("after")
    bad = [f.id for f in r.findings if f.severity.value in ("warning", "critical")]
    assert bad == []
    assert r.summary.startswith("amd-pstate-epp · performance")


def test_no_cpufreq_driver_is_not_applicable_only_when_sysfs_was_read():
    unread = PowerFacts(problems={"sys_cpufreq": "timed out"})
    no_cpupower = [c for c in SOURCE_IDS if c != "cpupower_freq"]
    assert sev(unread, "power.cpu_governor", no_cpupower) == "unknown"
    assert sev(unread, "power.cpu_boost", no_cpupower) == "unknown"
    read_no_driver = PowerFacts()
    assert sev(read_no_driver, "power.cpu_governor") == "n/a"
    assert sev(read_no_driver, "power.cpu_boost") == "n/a"


def test_epyc_c2_at_30us_entered_is_a_deep_state_warning():
    """Issue 12 item 7: a real EPYC C2 (ACPI IOPORT) at 30 µs, entered 9,864 times, was 'ok only shallow states'."""
    fx = Path(__file__).parents[1] / "fixtures/system"
    facts = power.extract(
        {
            "lscpu_json": rec("lscpu_json", (fx / "lscpu/epyc-7742-2s-smt-off.txt").read_text()),
            "cpupower_idle": rec(
                "cpupower_idle",
                (fx / "cpupower-idle-info/epyc-acpi-idle-c2-ioport-lat30-entered.txt").read_text(),
            ),
        },
        "host",
    )
    assert facts.cpu_vendor == "AMD"
    found = findings(facts)["power.cpu_cstates"]
    assert found.severity.value == "warning" and "C2 30µs" in found.observed


def test_capped_frequency_policy_is_a_warning():
    """Issue 12 item 10: real kernel bug 218805 capture, policy 1.20-1.32 GHz on a 3.30 GHz part (was never judged)."""
    by = replay(
        cpupower_freq=(
            FX / "cpupower-frequency-info/"
            "intel-cpufreq-policy-capped-1.32-of-3.30ghz-after-resume-EMAIL-WRAPPED.txt"
        ).read_text()
    )
    f = by["power.cpu_effective_freq"]
    assert f.severity.value == "warning", f.observed
    assert "1.32 GHz of the CPU's 3.30 GHz" in f.observed and "cpupower frequency-set -u" in f.fix
    assert by["power.cpu_governor"].severity.value == "warning"  # schedutil, judged separately


def test_policy_at_hardware_max_stays_manual_info():
    by = replay(sys_cpufreq=(CASE / "after/host/sys_cpufreq.out").read_text())
    assert by["power.cpu_effective_freq"].severity.value == "info"
    assert by["power.cpu_effective_freq"].observed.startswith("manual: run turbostat")


def test_policy_at_nominal_with_boost_off_is_one_warning_not_two():
    f = PowerFacts(
        scaling_driver="amd-pstate-epp",
        boost=False,
        boost_source="cpufreq/boost",
        policy_max_mhz=2400,
        hw_max_mhz=3700,
        policy_source="cpu0",
    )
    assert sev(f, "power.cpu_boost") == "warning" and sev(f, "power.cpu_effective_freq") == "info"


def test_hw_slowdown_on_idle_gpus_is_critical():
    """Issue 12 item 5. The reasons are read from the real Dell C4130 V100-SXM2 capture (HW Slowdown + HW Power Brake
    Slowdown Active, SM stuck at 382 MHz: tests/fixtures/nvidia/nvidia-smi-q, source in its SOURCES.md), on a GPU at
    0% utilisation as in the HGX H100 capture of the issue: was ok "GPUs idle: clock reductions not judged"."""
    text = (
        Path(__file__).parents[1]
        / "fixtures/nvidia/nvidia-smi-q/v100-sxm2-32gb-c4130-hw-power-brake-fragment.txt"
    ).read_text()
    names = {
        "HW Slowdown": "hw_slowdown",
        "HW Thermal Slowdown": "hw_thermal_slowdown",
        "HW Power Brake Slowdown": "hw_power_brake_slowdown",
        "SW Power Cap": "sw_power_cap",
    }
    active = [
        names[k.strip()]
        for k, v in (ln.split(":", 1) for ln in text.splitlines() if ":" in ln)
        if k.strip() in names and v.strip() == "Active"
    ]
    assert active == ["hw_slowdown", "hw_power_brake_slowdown"]
    facts = PowerFacts(**gpu(util=0, sm_mhz=382, active_reasons=active))
    f = findings(facts)["power.gpu_clock_events"]
    assert (
        f.severity.value == "critical"
        and "idle" in f.title
        and "hw_power_brake_slowdown" in f.observed
    )
    assert f.owner == "hardware"


def test_clock_event_reasons_parse_from_the_csv_row():
    line = (
        "0, 00000000:01:00.0, P8, 0, 31.52, 600.00, 600.00, 600.00, 22, 3090, 405, 14001, [N/A], 30, "
        "Active, Not Active, Active, Not Active, [N/A]"
    )
    gpus, readings = power.parse_smi_power(line)
    assert readings[0].active_reasons == ["hw_slowdown", "hw_power_brake_slowdown"]
    assert readings[0].unread_reasons == ["sw_power_cap"] and gpus[0].app_sm_mhz is None


def test_volatile_facts_hold_the_counters_and_readings():
    assert power.PROBE.volatile_facts == {"idle_usage", "gpu_readings"}
    facts = power.extract(
        {"sys_cpuidle": rec("sys_cpuidle", (CASE / "before/host/sys_cpuidle.out").read_text())},
        "host",
    )
    assert all(not hasattr(s, "usage") for s in facts.idle_states) and facts.idle_usage


XML = Path(__file__).parents[1] / "fixtures/nvidia/nvidia-smi-q-x"


def test_xml_alone_judges_limits_reasons_and_slowdown_headroom():
    """Real RTX 3080 capture (R595, v13 schema) at 65% utilisation, 27 °C, slowdown at 95 °C; no CSV collected."""
    by = replay(smi_q_xml=(XML / "telegraf-rtx-3080-v13.xml").read_text())
    assert (
        by["power.gpu_power_limit"].severity.value == "ok"
        and "320 W" in by["power.gpu_power_limit"].observed
    )
    assert by["power.gpu_clock_events"].severity.value == "ok"
    assert by["power.gpu_thermal_headroom"].observed == "max 27 °C (slowdown 95 °C)"
    # the XML's <max_clocks><sm_clock> 2100 MHz is read (issue 24); its application clocks are "deprecated"
    assert by["power.gpu_locked_clocks"].severity.value == "ok"


def test_xml_mig_gpu_without_utilisation_is_not_called_idle():
    by = replay(smi_q_xml=(XML / "netdata-a100-sxm4-mig.xml").read_text())
    assert by["power.gpu_pstate_under_load"].severity.value == "unknown"
    assert by["power.gpu_clock_events"].severity.value == "ok"  # reasons read: Not Active


def test_xml_fills_reasons_the_csv_could_not_read():
    csv = (
        "0, 00000000:01:00.0, P8, 0, 31.52, 170.00, 170.00, 170.00, 210, 2100, 405, 7501, [N/A], 42, "
        "[N/A], [N/A], [N/A], [N/A], [N/A]"
    )
    facts = power.extract(
        {
            "smi_query_power": rec("smi_query_power", csv),
            "smi_q_xml": rec("smi_q_xml", (XML / "telegraf-rtx-3060-v12.xml").read_text()),
        },
        "host",
    )
    r = facts.gpu_readings[0]
    assert r.unread_reasons == [] and r.active_reasons == [] and facts.gpus[0].temp_slowdown_c == 95
    assert facts.gpus[0].sm_max_mhz == 2100  # the CSV's value kept


def test_at_the_slowdown_temperature_is_critical_at_any_load():
    f = PowerFacts(
        gpus=[GpuPower(index="0", temp_slowdown_c=90)],
        gpu_readings=[GpuReading(index="0", util=0, temp_c=91)],
    )
    assert sev(f, "power.gpu_thermal_headroom") == "critical"
    near = PowerFacts(
        gpus=[GpuPower(index="0", temp_slowdown_c=90)],
        gpu_readings=[GpuReading(index="0", util=90, temp_c=86)],
    )
    assert sev(near, "power.gpu_thermal_headroom") == "warning"


def test_cpu_policy_checks_are_not_applicable_in_a_virtual_machine():
    """Real Hyper-V guest captures (cpuidle driver none, empty cpupower frequency-info) with the CPU's hypervisor flag:
    the guest's frequency/idle policy belongs to the hypervisor host (one virtualisation fact, issue 12 item 12)."""
    by = replay(
        cpu_hypervisor_flag="hypervisor\n",
        sys_cpuidle="/sys/devices/system/cpu/cpuidle/current_driver:"
        + (FX / "sysfs-cpuidle/hyperv-vm-current_driver-none.txt").read_text(),
        sys_cpufreq="",
        cpupower_freq=(FX / "cpupower-frequency-info/hyperv-vm-empty-output.txt").read_text(),
    )
    for fid in (
        "power.cpu_scaling_driver",
        "power.cpu_governor",
        "power.cpu_boost",
        "power.cpu_cstates",
        "power.cpu_effective_freq",
    ):
        assert by[fid].observed.startswith("virtual machine"), (
            fid,
            by[fid].observed,
        )
