"""lscpu / cpupower / sysfs / dmidecode parsers over every real corpus sample."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gpuaudit.probes.core.parsers.cpu import (
    cpu_identity,
    idle_states_from_sysfs,
    is_deep_cstate,
    parse_cpupower_frequency_info,
    parse_cpupower_idle_info,
    parse_grep_h,
    parse_lscpu,
)
from gpuaudit.probes.core.parsers.dmi import bios_info, memory_devices, parse_dmidecode

FX = Path(__file__).parents[1] / "fixtures/system"


@pytest.mark.parametrize("path", sorted((FX / "lscpu").glob("*.txt")), ids=lambda p: p.name)
def test_every_lscpu_sample_parses(path):
    parse_lscpu(path.read_text())


@pytest.mark.parametrize(
    "name,vendor,family,sockets,nodes",
    [
        ("epyc-9374f-2s-smt-off-new-format.txt", "AMD", 25, 2, 2),
        ("epyc-7742-2s-nps4-8numa-boost.txt", "AMD", 23, 2, 8),
        ("epyc-7532-1s-nps2-2numa.txt", "AMD", 23, 1, 2),
        ("xeon-platinum-8462y-2s-spr-new-format.txt", "Intel", 6, 2, 2),
        ("xeon-w2155-hyperv-vm-2vcpu.txt", "Intel", 6, 1, 1),
    ],
)
def test_lscpu_identity(name, vendor, family, sockets, nodes):
    i = cpu_identity(parse_lscpu((FX / "lscpu" / name).read_text()))
    assert (i.vendor, i.family, i.sockets, i.numa_nodes) == (vendor, family, sockets, nodes)


def test_lscpu_wrapped_flags_rejoined():
    i = cpu_identity(parse_lscpu((FX / "lscpu/epyc-9374f-2s-smt-off-new-format.txt").read_text()))
    assert i.has_cppc_flag is True and i.model == 17


def test_lscpu_extended_table_is_not_key_value():
    assert (
        cpu_identity(
            parse_lscpu((FX / "lscpu/epyc-9374f-2s-lscpu-e-extended.txt").read_text())
        ).vendor
        is None
    )


def test_lscpu_json_synthetic():
    # synthetic lscpu -J shape (util-linux >= 2.38 nests children)
    doc = {
        "lscpu": [
            {
                "field": "Vendor ID:",
                "data": "AuthenticAMD",
                "children": [
                    {"field": "CPU family:", "data": "26"},
                    {"field": "Socket(s):", "data": "2"},
                ],
            }
        ]
    }
    i = cpu_identity(parse_lscpu(json.dumps(doc)))
    assert (i.vendor, i.family, i.sockets) == ("AMD", 26, 2)
    assert parse_lscpu("{broken") == {}


@pytest.mark.parametrize(
    "path", sorted((FX / "cpupower-frequency-info").glob("*.txt")), ids=lambda p: p.name
)
def test_every_frequency_info_parses(path):
    parse_cpupower_frequency_info(path.read_text())


@pytest.mark.parametrize(
    "name,driver,governor,boost",
    [
        ("epyc-acpi-cpufreq-performance-governor-2800.txt", "acpi-cpufreq", "performance", True),
        (
            "epyc-acpi-cpufreq-conservative-governor-at-min.txt",
            "acpi-cpufreq",
            "conservative",
            True,
        ),
        ("amd-pstate-passive-schedutil-boost-inactive.txt", "amd-pstate", "schedutil", False),
        (
            "acpi-cpufreq-tr3970x-boost-inactive-EMAIL-INDENTED.txt",
            "acpi-cpufreq",
            "schedutil",
            False,
        ),
        ("intel-pstate-cometlake-policy-pinned-max.txt", "intel_pstate", "powersave", True),
        ("ampere-altra-no-cpufreq-driver.txt", None, None, None),
    ],
)
def test_frequency_info_values(name, driver, governor, boost):
    i = parse_cpupower_frequency_info((FX / "cpupower-frequency-info" / name).read_text())
    assert (i.driver, i.governor, i.boost_active) == (driver, governor, boost)


def test_frequency_info_pstates_and_wrapped_governors():
    i = parse_cpupower_frequency_info(
        (FX / "cpupower-frequency-info/epyc-acpi-cpufreq-performance-governor-2800.txt").read_text()
    )
    assert i.pstates_mhz == (2800, 2400, 1500) and i.hw_max_mhz == 2800
    t = parse_cpupower_frequency_info(
        (
            FX / "cpupower-frequency-info/acpi-cpufreq-tr3970x-boost-inactive-EMAIL-INDENTED.txt"
        ).read_text()
    )
    assert "schedutil" in t.governors
    assert parse_cpupower_frequency_info(
        (FX / "cpupower-frequency-info/hyperv-vm-empty-output.txt").read_text()
    ).empty


def test_idle_info_c2_400us():
    i = parse_cpupower_idle_info(
        (FX / "cpupower-idle-info/amd-server-acpi-idle-poll-c1-c2-lat400.txt").read_text()
    )
    assert i.driver == "acpi_idle" and i.cpu == 9
    assert [(s.name, s.latency_us, s.disabled) for s in i.states] == [
        ("POLL", 0, False),
        ("C1", 1, False),
        ("C2", 400, False),
    ]
    assert i.states[2].usage == 16537


def test_idle_info_no_states_and_disabled_marker():
    i = parse_cpupower_idle_info(
        (FX / "cpupower-idle-info/idle-poll-driver-none-no-idle-states.txt").read_text()
    )
    assert i.driver == "none" and i.states == ()
    # synthetic: cpupower marks a disabled state "C2 (DISABLED) :"
    assert parse_cpupower_idle_info("C2 (DISABLED) :\nLatency: 400\n").states[0].disabled


@pytest.mark.parametrize(
    "name,value",
    [
        ("scaling_driver-acpi-cpufreq-kernel-6.17-cpc-regression.txt", "acpi-cpufreq"),
        ("scaling_driver-amd-pstate-epp-after-cppc-enabled.txt", "amd-pstate-epp"),
        ("scaling_driver-amd-pstate-kernel-6.10.txt", "amd-pstate"),
    ],
)
def test_sysfs_scaling_driver_samples(name, value):
    text = (FX / "sysfs-cpufreq" / name).read_text()
    # the sample is a plain `cat`; the probe reads it through grep -H, so prefix the path
    files = parse_grep_h(f"/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver:{text.strip()}")
    assert files["/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver"] == [value]


def test_idle_states_from_sysfs_lines():
    text = (
        "/sys/devices/system/cpu/cpu0/cpuidle/state2/name:C2\n/sys/devices/system/cpu/cpu0/cpuidle/state2/latency:400\n"
        "/sys/devices/system/cpu/cpu0/cpuidle/state2/disable:1\n/sys/devices/system/node/node1/cpu255/cpuidle/state2/latency:400\n"
    )
    s = idle_states_from_sysfs(parse_grep_h(text))
    assert s[0][0].name == "C2" and s[0][0].disabled and s[255][0].latency_us == 400


@pytest.mark.parametrize("path", sorted((FX / "dmidecode").glob("*.txt")), ids=lambda p: p.name)
def test_every_dmidecode_sample_parses(path):
    assert bios_info(parse_dmidecode(path.read_text()))["bios_vendor"]


def test_dmidecode_values():
    r = parse_dmidecode((FX / "dmidecode/dell-r7625-full.txt").read_text())
    b = bios_info(r)
    assert (b["bios_vendor"], b["bios_version"], b["bios_release_date"]) == (
        "Dell Inc.",
        "1.2.3",
        "03/03/2023",
    )
    m = memory_devices(r)
    assert (
        len(m) == 24
        and len([d for d in m if d.size_mb]) == 8
        and {d.size_mb for d in m if d.size_mb} == {65536}
    )
    hpe = memory_devices(parse_dmidecode((FX / "dmidecode/hpe-dl380-gen11-full.txt").read_text()))
    d = next(d for d in hpe if d.size_mb)
    assert (d.speed_mts, d.configured_mts) == (5600, 5200)
    spr = bios_info(
        parse_dmidecode(
            (FX / "dmidecode/supermicro-spr-8462y-csit-spaces-indented.txt").read_text()
        )
    )
    assert spr["system_product_name"] == "SYS-741GE-TNRT"


@pytest.mark.parametrize(
    "name,lat,vendor,deep",
    [
        (
            "C2",
            30,
            "AMD",
            True,
        ),  # EPYC C2 (ACPI IOPORT) at the 30 µs ACPI reports: deep whatever the latency
        ("C2", 400, "AMD", True),
        ("C1", 1, "AMD", False),
        ("POLL", 0, "AMD", False),
        ("C1E", 10, "Intel", False),
        ("C6", 133, "Intel", True),
        ("C3", 40, "Intel", True),  # by name
        ("C2_ACPI", 41, "Intel", False),
        ("C3_ACPI", 60, "Intel", True),
        ("C2", 30, None, False),  # vendor unknown: the latency decides
        ("C2", 50, None, True),
    ],
)
def test_is_deep_cstate(name, lat, vendor, deep):
    assert is_deep_cstate(name, lat, vendor) is deep


def test_epyc_c2_at_30us_is_deep():
    """Real EPYC capture: C2 ACPI IOPORT at 30 µs, entered 9,864 times: a deep state that is used."""
    i = parse_cpupower_idle_info(
        (FX / "cpupower-idle-info/epyc-acpi-idle-c2-ioport-lat30-entered.txt").read_text()
    )
    c2 = i.states[-1]
    assert (c2.name, c2.latency_us, c2.usage, c2.disabled) == ("C2", 30, 9864, False)
    assert c2.description == "ACPI IOPORT 0x814"
    assert [s.name for s in i.states if is_deep_cstate(s.name, s.latency_us, "AMD")] == ["C2"]


@pytest.mark.parametrize(
    "name,policy,hw",
    [
        (
            "intel-cpufreq-policy-capped-1.32-of-3.30ghz-after-resume-EMAIL-WRAPPED.txt",
            (1200, 1320),
            (1200, 3300),
        ),
        ("intel-pstate-cometlake-policy-pinned-max.txt", (4300, 4300), None),
        ("ampere-altra-no-cpufreq-driver.txt", (None, None), (None, None)),
    ],
)
def test_frequency_info_policy_range(name, policy, hw):
    i = parse_cpupower_frequency_info((FX / "cpupower-frequency-info" / name).read_text())
    assert (i.policy_min_mhz, i.policy_max_mhz) == policy
    if hw is not None:
        assert (i.hw_min_mhz, i.hw_max_mhz) == hw
