"""firmware probe: rules over facts (table-driven), manual checklist items, and the case-study replay."""

from __future__ import annotations

from functools import partial

from pathlib import Path

import hw_helpers as hw
import pytest

from gpuaudit.probes import firmware
from gpuaudit.probes.core.models import CommandRecord
from gpuaudit.probes.firmware import Dimm, FirmwareFacts

sev = partial(hw.sev, firmware.PROBE)
rec = partial(hw.rec, "firmware")
run = partial(hw.run, firmware.PROBE)


CASE = Path(__file__).parents[2] / "snapshots/examples/case-study"
FX = Path(__file__).parents[1] / "fixtures/system"


@pytest.mark.parametrize("kw,expected", [
    (dict(cpu_vendor="AMD", cppc={"highest_perf": "196"}), "ok"),
    (dict(cpu_vendor="AMD", cppc={}), "warning"),
    (dict(cpu_vendor="AMD", problems={"sys_cppc": "timed out"}), "unknown"),
    (dict(cpu_vendor="Intel", cppc={}), "ok"),                       # not applicable
    (dict(cpu_vendor="AMD", cppc={}, hypervisor="KVM"), "info"),           # a guest: the hypervisor host decides
    (dict(cppc={}, problems={"lscpu_json": "timed out"}), "unknown"),      # vendor unread is not "not applicable"
])
def test_cppc(kw, expected):
    assert sev(FirmwareFacts(**kw), "firmware.cppc") == expected


@pytest.mark.parametrize("nodes,sockets,expected", [
    ({"node0": {"cpulist": "0-63", "memtotal_kb": "791181312"}, "node1": {"cpulist": "64-127", "memtotal_kb": "791181312"}}, 2, "ok"),
    ({f"node{i}": {"cpulist": "0", "memtotal_kb": "99999999"} for i in range(8)}, 2, "info"),
    ({"node0": {"cpulist": "0-7", "memtotal_kb": "99999999"}, "node1": {"cpulist": "8-15", "memtotal_kb": "0"}}, 1, "warning"),
    ({}, 2, "unknown"),
])
def test_numa_mode(nodes, sockets, expected):
    assert sev(FirmwareFacts(numa_nodes=nodes, sockets=sockets), "firmware.numa_mode") == expected


@pytest.mark.parametrize("units,types,expected", [
    (["ivhd0"], {"0000:01:00.0": "identity", "0000:21:00.0": "identity"}, "ok"),
    (["ivhd0"], {"0000:01:00.0": "DMA-FQ", "0000:21:00.0": "DMA-FQ"}, "warning"),
    (["ivhd0"], {"0000:01:00.0": "DMA"}, "info"),                    # single GPU
    ([], {"0000:01:00.0": ""}, "ok"),                                 # IOMMU off
    (None, {}, "unknown"),
])
def test_iommu(units, types, expected):
    assert sev(FirmwareFacts(iommu_units=units, gpu_iommu_types=types), "firmware.iommu_mode") == expected


@pytest.mark.parametrize("bar1,fb,expected", [
    ({"a": 131072, "b": 131072}, {"a": 97887, "b": 97887}, "ok"),
    ({"a": 256, "b": 256}, {"a": 97887, "b": 97887}, "warning"),
    ({"a": 256}, {"a": 97887}, "info"),
    ({}, {}, "unknown"),
])
def test_bar1(bar1, fb, expected):
    assert sev(FirmwareFacts(bar1_mib=bar1, fb_mib=fb), "firmware.bar1_large_bar") == expected


def test_manual_items_say_manual():
    found = {f.id: f for f in firmware.judge({"host": FirmwareFacts(cpu_vendor="AMD", sockets=2)})}
    for fid in ("firmware.df_pstates", "firmware.socket_power", "firmware.xgmi_links"):
        assert found[fid].observed.startswith("manual: check BIOS"), fid
        assert found[fid].severity.value in ("info", "unknown")
    assert sev(FirmwareFacts(cpu_vendor="AMD", sockets=1), "firmware.xgmi_links") == "ok"   # single socket: N/A


def test_vendor_unknown_is_not_not_applicable():
    f = FirmwareFacts(sockets=2, problems={"lscpu_json": "exit 1: lscpu: failed"})
    for fid in ("firmware.df_pstates", "firmware.xgmi_links", "firmware.cppc"):
        found = [x for x in firmware.judge({"host": f}) if x.id == fid][0]
        assert found.severity.value == "unknown" and "lscpu" in found.observed, fid


def test_extract_bar1_and_fw_through_the_shared_smi_parsers():
    mem = (CASE / "before/host/smi_q_memory.out").read_text()
    fw = (CASE / "before/host/smi_query_fw.out").read_text()
    f = firmware.extract({"smi_q_memory": rec("smi_q_memory", mem), "smi_query_fw": rec("smi_query_fw", fw)}, "host")
    assert f.bar1_mib["00000000:01:00.0"] == 131072 and f.fb_mib["00000000:01:00.0"] == 97887 and len(f.bar1_mib) == 8
    assert f.gpu_fw["0"] == ("98.02.52.00.04", "G005.0000.98.01") and len(f.gpu_fw) == 8
    broken = firmware.extract({"smi_q_memory": rec("smi_q_memory", "Failed to initialize NVML: Driver/library version mismatch\n"),
                               "smi_query_fw": rec("smi_query_fw", "0, 1\n")}, "host")
    assert "nvidia-smi error" in broken.problems["smi_q_memory"] and "smi_query_fw" in broken.problems
    assert sev(broken, "firmware.bar1_large_bar") == "unknown" and sev(broken, "firmware.gpu_firmware_consistency") == "unknown"


def test_memory_population_from_real_dmidecode():
    def facts(name, sockets):
        rec = CommandRecord(target="host", probe_id="firmware", command_id="dmidecode_memory", command="x",
                            exit_status=0, stdout=(FX / "dmidecode" / name).read_text(), stderr="")
        f = firmware.extract({"dmidecode_memory": rec}, "host")
        return f.model_copy(update={"cpu_vendor": "AMD", "cpu_family": 25, "sockets": sockets})
    assert sev(facts("hpe-cray-xd665-full.txt", 2), "firmware.memory_population") == "ok"      # 24 of 24
    assert sev(facts("dell-r7625-full.txt", 2), "firmware.memory_population") == "warning"     # 8 of 24 on SP5
    slow = FirmwareFacts(dimms=[Dimm(locator="A", size_mb=32768, speed_mts=5600, configured_mts=5200)], sockets=1)
    assert sev(slow, "firmware.memory_population") == "info"
    assert sev(FirmwareFacts(problems={"dmidecode_memory": "needs root (run with --sudo)"}), "firmware.memory_population") == "unknown"


def test_inventory_and_fw_consistency():
    assert sev(FirmwareFacts(bios={"bios_vendor": "Dell Inc.", "bios_version": "1.2.3"}), "firmware.inventory") == "info"
    assert sev(FirmwareFacts(problems={"dmidecode_bios": "needs root"}), "firmware.inventory") == "unknown"
    assert sev(FirmwareFacts(gpu_fw={"0": ("98.1", "G1"), "1": ("98.1", "G1")}), "firmware.gpu_firmware_consistency") == "ok"
    assert sev(FirmwareFacts(gpu_fw={"0": ("98.1", "G1"), "1": ("98.2", "G1")}), "firmware.gpu_firmware_consistency") == "info"


def test_cstate_exposure():
    assert "only POLL/C1" in [f for f in firmware.judge({"host": FirmwareFacts(idle_state_names=["POLL:0", "C1:1"])})
                              if f.id == "firmware.cstate_exposure"][0].title


@pytest.mark.parametrize("phase", ["before", "after"])
def test_case_study(phase):
    r = run(phase)
    by = {f.id: f.severity.value for f in r.findings}
    assert r.status == "done"
    assert by["firmware.cppc"] == "ok" and by["firmware.iommu_mode"] == "ok" and by["firmware.bar1_large_bar"] == "ok"
    assert by["firmware.memory_population"] == "ok" and by["firmware.numa_mode"] == "ok"
    assert r.summary == "AMI 1.2 (2025-03) · IOMMU pt"
