"""firmware probe: verdicts through the checks framework (facts + records), real dmidecode/cpuinfo captures,
and the case-study replay."""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path

import hw_helpers as hw
import pytest
from gpuaudit.probes import firmware
from gpuaudit.probes.core.judge.checks import judge_checks
from gpuaudit.probes.core.models import CommandRecord
from gpuaudit.probes.firmware import Dimm, FirmwareFacts

rec = partial(hw.rec, "firmware")
run = partial(hw.run, firmware.PROBE)

CASE = Path(__file__).parents[2] / "snapshots/examples/case-study"
FX = Path(__file__).parents[1] / "fixtures/system"
VM_FLAG = "hypervisor\n"


def judged(facts: FirmwareFacts, vm: bool = False, **stdout: str) -> dict:
    """Every firmware check over these facts, every source answering (exit 0); `vm` sets the hypervisor flag."""
    outputs = {c.id: rec(c.id, stdout.get(c.id, ""), 0) for c in firmware.COMMANDS}
    outputs["cpu_hypervisor_flag"] = rec(
        "cpu_hypervisor_flag", VM_FLAG if vm else "", 0 if vm else 1
    )
    return {f.id: f for f in judge_checks(firmware.CHECKS, {"host": facts}, {"host": outputs})}


def sev(facts: FirmwareFacts, fid: str, vm: bool = False) -> str:
    return judged(facts, vm)[fid].severity.value


@pytest.mark.parametrize(
    "kw,vm,expected",
    [
        (dict(cpu_vendor="AMD", cppc={"highest_perf": "196"}), False, "ok"),
        (dict(cpu_vendor="AMD", cppc={}), False, "warning"),
        (dict(cpu_vendor="AMD", problems={"sys_cppc": "timed out"}), False, "unknown"),
        (dict(cpu_vendor="Intel", cppc={}), False, "n/a"),  # not applicable
        (dict(cpu_vendor="AMD", cppc={}), True, "n/a"),  # a guest: not applicable, the host decides
        (
            dict(cppc={}, problems={"lscpu_json": "timed out"}),
            False,
            "unknown",
        ),  # vendor unread is not "not applicable"
    ],
)
def test_cppc(kw, vm, expected):
    f = judged(FirmwareFacts(**kw), vm)["firmware.cppc"]
    assert f.severity.value == expected
    if vm:
        assert f.observed.startswith("virtual machine")


TWO_NODES = {
    "node0": {"cpulist": "0-63", "memtotal_kb": "791181312"},
    "node1": {"cpulist": "64-127", "memtotal_kb": "791181312"},
}


@pytest.mark.parametrize(
    "nodes,sockets,vm,expected",
    [
        (TWO_NODES, 2, False, "ok"),
        (
            {f"node{i}": {"cpulist": "0", "memtotal_kb": "99999999"} for i in range(8)},
            2,
            False,
            "info",
        ),
        (
            {
                "node0": {"cpulist": "0-7", "memtotal_kb": "99999999"},
                "node1": {"cpulist": "8-15", "memtotal_kb": "0"},
            },
            1,
            False,
            "warning",
        ),
        (
            {"node0": {"cpulist": "0-127", "memtotal_kb": "1582362624"}},
            2,
            False,
            "warning",
        ),  # 2 sockets, 1 node: interleaved
        (
            {"node0": {"cpulist": "0-7", "memtotal_kb": "16000000"}},
            2,
            True,
            "n/a",
        ),  # a guest: not applicable
        ({}, 2, False, "unknown"),
    ],
)
def test_numa_mode(nodes, sockets, vm, expected):
    problems = {} if nodes else {"sys_numa": "no NUMA node listed under /sys/devices/system/node"}
    f = judged(
        FirmwareFacts(numa_nodes=nodes, sockets=sockets, cpu_vendor="AMD", problems=problems), vm
    )["firmware.numa_mode"]
    assert f.severity.value == expected, f.observed
    if len(nodes) == 1 and not vm:
        assert "interleaved" in f.title and "0.5 node(s) per socket" in f.observed
    if vm:
        assert f.observed.startswith("virtual machine")


def lscpu_facts(name: str) -> tuple[FirmwareFacts, dict]:
    """Facts from a real text lscpu capture: identity through the probe's extract, nodes from its NUMA lines."""
    text = (FX / "lscpu" / name).read_text()
    f = firmware.extract({"lscpu_json": rec("lscpu_json", text)}, "host")
    nodes = {
        f"node{m[0]}": {"cpulist": m[1], "memtotal_kb": "67108864"}
        for m in re.findall(r"^NUMA node(\d+) CPU\(s\):\s+(\S+)", text, re.M)
    }
    return f.model_copy(update={"numa_nodes": nodes}), {"lscpu_json": text}


@pytest.mark.parametrize(
    "name,vm,expected,needle",
    [
        # item 9: a dual E5-2680 v3 with node interleaving on (1 node) was ok "One NUMA node per socket (NPS1)"
        ("xeon-e5-2680v3-2s-1numa-interleaved.txt", False, "warning", "0.5 node(s) per socket"),
        ("xeon-e5-2680v3-2s-1numa-interleaved.txt", True, "n/a", "virtual machine"),
        ("epyc-7702-2s-smt-2numa.txt", False, "ok", "1 node(s) per socket"),
        ("epyc-7742-2s-nps4-8numa-boost.txt", False, "info", "4 node(s) per socket"),
    ],
)
def test_numa_mode_from_real_lscpu(name, vm, expected, needle):
    facts, out = lscpu_facts(name)
    assert facts.sockets == 2 and facts.numa_nodes
    f = judged(facts, vm, **out)["firmware.numa_mode"]
    assert f.severity.value == expected and needle in f.observed, f.observed
    if expected == "warning":
        assert "interleaved" in f.title


@pytest.mark.parametrize(
    "units,types,expected",
    [
        (["ivhd0"], {"0000:01:00.0": "identity", "0000:21:00.0": "identity"}, "ok"),
        (["ivhd0"], {"0000:01:00.0": "DMA-FQ", "0000:21:00.0": "DMA-FQ"}, "warning"),
        (["ivhd0"], {"0000:01:00.0": "DMA"}, "info"),  # single GPU
        ([], {"0000:01:00.0": ""}, "unknown"),  # IOMMU off, CPU count not read (issue 24: x2APIC)
    ],
)
def test_iommu(units, types, expected):
    assert (
        sev(FirmwareFacts(iommu_units=units, gpu_iommu_types=types), "firmware.iommu_mode")
        == expected
    )
    off = FirmwareFacts(iommu_units=[], cpu_vendor="AMD", cpus=128)
    assert sev(off, "firmware.iommu_mode") == "ok"


@pytest.mark.parametrize(
    "bar1,fb,expected",
    [
        ({"a": 131072, "b": 131072}, {"a": 97887, "b": 97887}, "ok"),
        ({"a": 256, "b": 256}, {"a": 97887, "b": 97887}, "warning"),
        ({"a": 256}, {"a": 97887}, "info"),
    ],
)
def test_bar1(bar1, fb, expected):
    assert sev(FirmwareFacts(bar1_mib=bar1, fb_mib=fb), "firmware.bar1_large_bar") == expected


def test_manual_items_say_manual():
    found = judged(FirmwareFacts(cpu_vendor="AMD", sockets=2))
    for fid in ("firmware.df_pstates", "firmware.socket_power", "firmware.xgmi_links"):
        assert found[fid].observed.startswith("manual: check BIOS"), fid
        assert found[fid].severity.value in ("info", "unknown")
    assert (
        sev(FirmwareFacts(cpu_vendor="AMD", sockets=1), "firmware.xgmi_links") == "n/a"
    )  # single socket: N/A


def test_vendor_unknown_is_not_not_applicable():
    f = FirmwareFacts(sockets=2, problems={"lscpu_json": "exit 1: lscpu: failed"})
    found = judged(f)
    for fid in ("firmware.df_pstates", "firmware.xgmi_links", "firmware.cppc"):
        assert found[fid].severity.value == "unknown" and "lscpu" in found[fid].observed, fid


def test_extract_bar1_and_fw_through_the_shared_smi_parsers():
    mem = (CASE / "before/host/smi_q_memory.out").read_text()
    fw = (CASE / "before/host/smi_query_fw.out").read_text()
    f = firmware.extract(
        {"smi_q_memory": rec("smi_q_memory", mem), "smi_query_fw": rec("smi_query_fw", fw)}, "host"
    )
    assert (
        f.bar1_mib["00000000:01:00.0"] == 131072
        and f.fb_mib["00000000:01:00.0"] == 97887
        and len(f.bar1_mib) == 8
    )
    assert f.gpu_fw["0"] == ("98.02.52.00.04", "G005.0000.98.01") and len(f.gpu_fw) == 8
    broken = firmware.extract(
        {
            "smi_q_memory": rec(
                "smi_q_memory", "Failed to initialize NVML: Driver/library version mismatch\n"
            ),
            "smi_query_fw": rec("smi_query_fw", "0, 1\n"),
        },
        "host",
    )
    assert (
        "nvidia-smi error" in broken.problems["smi_q_memory"] and "smi_query_fw" in broken.problems
    )
    found = judged(broken)
    assert found["firmware.bar1_large_bar"].severity.value == "unknown"
    assert found["firmware.gpu_firmware_consistency"].severity.value == "unknown"


def dimm_facts(name: str, sockets: int, family: int = 25, vendor: str = "AMD") -> FirmwareFacts:
    out = (FX / "dmidecode" / name).read_text()
    f = firmware.extract({"dmidecode_memory": rec("dmidecode_memory", out)}, "host")
    return f.model_copy(update={"cpu_vendor": vendor, "cpu_family": family, "sockets": sockets})


@pytest.mark.parametrize(
    "name,sockets,vendor,expected,needles",
    [
        ("hpe-cray-xd665-full.txt", 2, "AMD", "ok", ["24 of 24"]),  # 12 channels x 2
        ("dell-r7625-full.txt", 2, "AMD", "warning", ["8 of 24"]),  # SP5, 4 per socket
        (
            "asrockrack-ep2c622d16-12of16-all-channels.txt",
            2,
            "Intel",
            "ok",
            ["6/6 channels"],
        ),  # 2DPC board, every channel
        # Item 8: each of these was ok "Memory evenly populated" before
        (
            "supermicro-x8dtn-3of18-uneven.txt",
            2,
            "Intel",
            "warning",
            ["socket 1: 2/9 slots", "socket 2: 1/9 slots", "unevenly"],
        ),
        (
            "supermicro-sys-620u-tnr-6of32-uneven.txt",
            2,
            "Intel",
            "warning",
            ["4 vs 2", "2 of 8 channels"],
        ),
        (
            "intel-m50cyp2sb-8of32-half-channels.txt",
            2,
            "Intel",
            "warning",
            ["4 of 8 channels populated"],
        ),
        ("supermicro-sys-4029gp-trt-full.txt", 2, "Intel", "warning", ["2 of 6 channels"]),
    ],
)
def test_memory_population_from_real_dmidecode(name, sockets, vendor, expected, needles):
    f = judged(dimm_facts(name, sockets, vendor=vendor, family=6 if vendor == "Intel" else 25))[
        "firmware.memory_population"
    ]
    assert f.severity.value == expected, f.observed
    for s in needles:
        assert s in f.observed, f.observed


def test_memory_population_in_a_vm_is_not_applicable():
    facts = dimm_facts("qemu-standard-pc-kvm-guest.txt", 1)
    assert facts.dimms and facts.dimms[0].size_mb
    f = judged(facts, vm=True)["firmware.memory_population"]
    assert f.severity.value == "n/a" and f.observed.startswith("virtual machine")


def test_memory_population_speed_and_unknown():
    slow = FirmwareFacts(
        dimms=[Dimm(locator="A", size_mb=32768, speed_mts=5600, configured_mts=5200)], sockets=1
    )
    assert sev(slow, "firmware.memory_population") == "info"
    assert (
        sev(
            FirmwareFacts(problems={"dmidecode_memory": "needs root (run with --sudo)"}),
            "firmware.memory_population",
        )
        == "unknown"
    )


def test_inventory_and_fw_consistency():
    assert (
        sev(
            FirmwareFacts(bios={"bios_vendor": "Dell Inc.", "bios_version": "1.2.3"}),
            "firmware.inventory",
        )
        == "info"
    )
    f = FirmwareFacts(problems={"dmidecode_bios": "needs root", "dmi_bios": "exit 1"})
    assert sev(f, "firmware.inventory") == "unknown"
    assert (
        sev(
            FirmwareFacts(gpu_fw={"0": ("98.1", "G1"), "1": ("98.1", "G1")}),
            "firmware.gpu_firmware_consistency",
        )
        == "ok"
    )
    assert (
        sev(
            FirmwareFacts(gpu_fw={"0": ("98.1", "G1"), "1": ("98.2", "G1")}),
            "firmware.gpu_firmware_consistency",
        )
        == "info"
    )


def test_cstate_exposure_uses_the_shared_deep_definition():
    shallow = judged(FirmwareFacts(cpu_vendor="AMD", idle_state_names=["POLL:0", "C1:1"]))[
        "firmware.cstate_exposure"
    ]
    assert "only shallow" in shallow.title
    # item 7: AMD C2 at 30 µs (real EPYC idle-info) is deep, as power.cpu_cstates says
    deep = judged(FirmwareFacts(cpu_vendor="AMD", idle_state_names=["POLL:0", "C1:1", "C2:30"]))[
        "firmware.cstate_exposure"
    ]
    assert "deep C-states (C2)" in deep.title
    assert (
        sev(
            FirmwareFacts(cpu_vendor="AMD", idle_state_names=["POLL:0"]),
            "firmware.cstate_exposure",
            vm=True,
        )
        == "n/a"
    )


def test_no_gpu_makes_gpu_checks_not_applicable():
    outputs = {c.id: rec(c.id, "", 0) for c in firmware.COMMANDS}
    outputs["proc_driver_version"] = rec(
        "proc_driver_version", "", 1, "cat: /proc/driver/nvidia/version: No such file or directory"
    )
    outputs["pci_nvidia_sysfs"] = rec("pci_nvidia_sysfs", "", 1)
    found = {
        f.id: f for f in judge_checks(firmware.CHECKS, {"host": FirmwareFacts()}, {"host": outputs})
    }
    for fid in ("firmware.bar1_large_bar", "firmware.gpu_firmware_consistency"):
        assert found[fid].observed == "no NVIDIA GPU or driver on this host", fid


def test_missing_dmidecode_names_its_package():
    r = CommandRecord(
        target="host",
        probe_id="firmware",
        command_id="dmidecode_memory",
        command="dmidecode -t memory",
        exit_status=127,
        stderr="sh: 1: dmidecode: not found",
    )
    outputs = {c.id: rec(c.id, "", 0) for c in firmware.COMMANDS} | {"dmidecode_memory": r}
    f = firmware.extract(outputs, "host")
    found = {x.id: x for x in judge_checks(firmware.CHECKS, {"host": f}, {"host": outputs})}
    assert found["firmware.memory_population"].severity.value == "unknown"
    assert (
        "dmidecode not installed (package dmidecode)"
        in found["firmware.memory_population"].observed
    )


@pytest.mark.parametrize("phase", ["before", "after"])
def test_case_study(phase):
    r = run(phase)
    by = {f.id: f.severity.value for f in r.findings}
    assert r.status == "done"
    assert (
        by["firmware.cppc"] == "ok"
        and by["firmware.iommu_mode"] == "ok"
        and by["firmware.bar1_large_bar"] == "ok"
    )
    assert by["firmware.memory_population"] == "ok" and by["firmware.numa_mode"] == "ok"
    assert r.summary == "AMI 1.2 (2025-03) · IOMMU pt"
    assert all(f.owner for f in r.findings)


def test_memory_population_in_a_vm_without_dmidecode_is_still_not_applicable():
    outputs = {c.id: rec(c.id, "", 0) for c in firmware.COMMANDS}
    outputs["dmidecode_memory"] = CommandRecord(
        target="host",
        probe_id="firmware",
        command_id="dmidecode_memory",
        command="dmidecode -t memory",
        exit_status=127,
        stderr="sh: 1: dmidecode: not found",
    )
    outputs["cpu_hypervisor_flag"] = rec("cpu_hypervisor_flag", VM_FLAG, 0)
    f = firmware.extract(outputs, "host")
    found = {x.id: x for x in judge_checks(firmware.CHECKS, {"host": f}, {"host": outputs})}
    assert found["firmware.memory_population"].observed.startswith("virtual machine")


def test_bios_flash_chip_does_not_make_mixed_sizes():
    f = judged(
        dimm_facts("supermicro-x8dtl-bios-flash-as-type17.txt", 2, vendor="Intel", family=6)
    )["firmware.memory_population"]
    assert f.severity.value == "ok" and "6 of 6 slots" in f.observed, f.observed


def test_cstate_exposure_real_epyc_c2_at_30us_is_deep():
    """Item 7 (firmware side): a real EPYC `cpupower idle-info` with C2 (ACPI IOPORT) at 30 µs, entered 9,864 times.
    power.cpu_cstates and firmware.cstate_exposure share is_deep_cstate: both call it deep."""
    text = (FX / "cpupower-idle-info/epyc-acpi-idle-c2-ioport-lat30-entered.txt").read_text()
    outputs = {"sys_cpuidle": rec("sys_cpuidle", ""), "cpupower_idle": rec("cpupower_idle", text)}
    f = firmware.extract(outputs, "host").model_copy(update={"cpu_vendor": "AMD"})
    assert f.idle_state_names == ["POLL:0", "C1:1", "C2:30"]
    v = judged(f, **{"cpupower_idle": text})["firmware.cstate_exposure"]
    assert "deep C-states (C2)" in v.title and "C2 (30 µs)" in v.observed


@pytest.mark.parametrize(
    "name,expected,needles,absent",
    [
        (
            "intel-s2600wttr-2of24-sockets-by-slot-order.txt",
            "warning",
            ["2 DIMM(s) in 24 slots leave channels empty", "sockets assumed from the slot order"],
            ["unevenly"],
        ),
        (
            "dell-cs24-ty-9of18-sockets-by-slot-order.txt",
            "ok",
            ["sockets assumed from the slot order"],
            ["unevenly", "no memory"],
        ),
    ],
)
def test_memory_population_when_locators_name_no_socket(name, expected, needles, absent):
    f = judged(dimm_facts(name, 2, vendor="Intel", family=6))["firmware.memory_population"]
    assert f.severity.value == expected, f.observed
    assert all(s in f.observed for s in needles) and not any(s in f.observed for s in absent), (
        f.observed
    )
