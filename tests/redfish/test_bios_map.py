"""The attribute map on every real capture in tests/fixtures/redfish (SOURCES.md): normalised settings beside the
raw names, unknown names kept raw, every row sourced, and the BIOS checks on the normalised values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gpuaudit.probes import firmware
from gpuaudit.probes.core.judge.checks import judge_checks
from gpuaudit.probes.core.models import CommandRecord
from gpuaudit.probes.firmware.bios import normalise, pending_changes, read_bios, vendor_of
from gpuaudit.probes.firmware.bios_map import ROWS, SETTINGS

FX = Path(__file__).parents[1] / "fixtures/redfish"


def bios_of(sample: str) -> dict:
    return json.loads(next((FX / sample).glob("Systems/*/Bios/index.json")).read_text())


def system_of(sample: str) -> dict:
    return json.loads(
        next(
            p for p in (FX / sample).glob("Systems/*/index.json") if p.parent.name != "Systems"
        ).read_text()
    )


EXPECTED = {
    # sample: {setting: (normalised value, raw name)} — read off the capture by hand
    "hpe-dl385-gen10plus-v2": {
        "determinism": ("power", "PerformanceDeterminism"),
        "df_cstates": ("auto", "DataFabricCStateEnable"),
        "nps": ("auto", "NumaMemoryDomainsPerSocket"),
        "xgmi_width": ("auto", "XGMIForceLinkWidth"),
        "global_cstate": ("enabled", "MinProcIdlePower"),
        "iommu": ("enabled", "ProcAmdIoVt"),
        "power_profile": ("power-efficient", "WorkloadProfile"),
    },
    "dell-r750": {
        "global_cstate": ("disabled", "ProcCStates"),
        "aspm": ("disabled", "PcieAspmL1"),
        "above_4g": ("enabled", "MmioAbove4Gb"),
        "power_profile": ("max-performance", "SysProfile"),
        "smt": ("enabled", "LogicalProc"),
    },
    "lenovo-sr670-v2": {
        "global_cstate": ("enabled", "Processors_CStates"),
        "aspm": ("disabled", "Power_ASPM"),
        "iommu": ("enabled", "DevicesandIOPorts_IntelVTforDirectedIOVTd"),
        "numa": ("enabled", "Memory_SocketInterleave"),
    },
    "supermicro-sys-821ge-tnhr": {
        "above_4g": ("enabled", "Above4GDecoding_0041"),
        "rebar": ("disabled", "Re_SizeBARSupport_0042"),
        "aspm": ("disabled", "PCIeASPMSupport_Global__00A6"),
        "smt": ("enabled", "Hyper_Threading_ALL__F27F"),
    },
    "nvidia-dgx-h100": {
        "ten_bit_tags": ("enabled", "PciePort10bitTag"),
        "iommu": ("enabled", "VTdSupport"),
        "sriov": ("enabled", "SRIOVEnable"),
    },
    "cisco-ucsc-c225-m6s": {
        "df_cstates": ("auto", "CbsCmnGnbSMUDfCstates"),
        "nps": ("auto", "CbsDfCmnDramNps"),
        "determinism": ("auto", "CbsCmnDeterminismSlider"),
        "apbdis": ("auto", "CbsCmnApbdis"),
        "smt": ("enabled", "CbsCpuSmtCtrl"),
        "above_4g": ("enabled", "MemoryMappedIOAbove4GB"),
    },
    "dmtf-public-rackmount1": {
        "boost": ("enabled", "ProcTurboMode"),
        "smt": ("enabled", "ProcHyperthreading"),
    },
}


@pytest.mark.parametrize("sample", sorted(EXPECTED))
def test_each_capture_normalises_beside_its_raw_names(sample):
    attrs = bios_of(sample)["Attributes"]
    settings, unmapped = normalise(attrs, vendor_of(system_of(sample).get("Manufacturer")))
    for key, (value, raw_name) in EXPECTED[sample].items():
        assert settings[key].value == value, (sample, key, settings[key])
        assert settings[key].raw_name == raw_name
        assert settings[key].raw_value == str(attrs[raw_name])
        assert settings[key].source.startswith("https://github.com/")
    # every attribute is either normalised (once) or kept raw: nothing dropped, nothing invented
    assert len(settings) + len(unmapped) == len(attrs)
    assert set(unmapped) <= set(attrs)
    assert {s.raw_name for s in settings.values()} <= set(attrs)


def test_unknown_names_are_kept_raw_never_guessed():
    attrs = {"DfCstatesLookalike": "Disabled", "NpsSomething": "NPS4", "ProcCStates": "Disabled"}
    settings, unmapped = normalise(attrs, "dell")
    assert set(settings) == {"global_cstate"}
    assert unmapped == {"DfCstatesLookalike": "Disabled", "NpsSomething": "NPS4"}


def test_an_unreadable_value_stays_raw():
    settings, _ = normalise({"DataFabricCStateEnable": "Sometimes"}, "hpe")
    assert settings["df_cstates"].value is None and settings["df_cstates"].raw_value == "Sometimes"


def test_vendor_rows_do_not_cross():
    """HPE's DeterminismControl table does not read a Supermicro value, and the Dell rows are not HPE's."""
    settings, unmapped = normalise({"SysProfile": "PerfOptimized"}, "hpe")
    assert not settings and "SysProfile" in unmapped


def test_every_row_names_a_setting_and_a_source():
    for row in ROWS:
        assert row.setting in SETTINGS, row
        assert row.source.startswith("https://") or (not row.observed and "issue 27" in row.source)
        if row.observed and "libredfish" in row.source:
            sample = {
                "hpe/": "hpe-dl385-gen10plus-v2",
                "dell/": "dell-r750",
                "lenovo/": "lenovo-sr670-v2",
                "supermicro/": "supermicro-sys-821ge-tnhr",
                "nvidia_viking/": "nvidia-dgx-h100",
            }
            folder = next(v for k, v in sample.items() if f"mockups/{k}" in row.source)
            names = bios_of(folder)["Attributes"]
            assert any(n == row.attribute or n.startswith(row.attribute + "_") for n in names), row


def test_pending_changes_name_each_difference():
    current = bios_of("dmtf-public-rackmount1")["Attributes"]
    pending = json.loads(
        (FX / "dmtf-public-rackmount1/Systems/437XR1138R2/Bios/Settings/index.json").read_text()
    )["Attributes"]
    changes = pending_changes(
        {k: str(v) for k, v in current.items()}, {k: str(v) for k, v in pending.items()}
    )
    assert changes == {
        "AdminPhone": ("", "(404) 555-1212"),
        "EmbeddedSata": ("Raid", "Ahci"),
        "NicBoot2": ("Disabled", "NetworkBoot"),
        "ProcTurboMode": ("Enabled", "Disabled"),
    }


def test_no_attributes_is_a_problem_not_an_empty_answer():
    d, p = {}, {}
    read_bios(json.dumps({"@odata.id": "/redfish/v1/Systems/1/Bios", "Id": "BIOS"}), d, p)
    assert "no Attributes" in p["redfish_bios"] and "bios_settings" not in d


def _rec(cid: str, text: str, status: int | None = 0, error: str | None = None) -> CommandRecord:
    return CommandRecord(
        target="host",
        probe_id="firmware",
        command_id=cid,
        command=cid,
        stdout=text,
        exit_status=status,
        error=error,
    )


def judge(records: dict[str, CommandRecord], **outputs_text: str) -> dict:
    outs = {
        c.id: _rec(c.id, outputs_text.get(c.id, ""))
        for c in firmware.COMMANDS
        if not c.id.startswith("redfish")
    }
    outs.update(records)
    facts = firmware.extract(outs, "host")
    return {f.id: f for f in judge_checks(firmware.CHECKS, {"host": facts}, {"host": outs})}


def bmc_records(sample: str, pending: str | None = None) -> dict[str, CommandRecord]:
    recs = {
        "redfish_system": _rec("redfish_system", json.dumps(system_of(sample))),
        "redfish_bios": _rec("redfish_bios", json.dumps(bios_of(sample))),
    }
    if pending is not None:
        recs["redfish_bios_pending"] = _rec("redfish_bios_pending", pending)
    return recs


LSCPU_AMD = json.dumps(
    {
        "lscpu": [
            {"field": "Vendor ID:", "data": "AuthenticAMD"},
            {"field": "CPU family:", "data": "25"},
            {"field": "Socket(s):", "data": "2"},
        ]
    }
)


def test_without_bmc_the_bios_checks_are_not_applicable_and_the_manual_text_stays():
    found = judge({}, lscpu_json=LSCPU_AMD)
    for fid in ("firmware.bios_settings", "firmware.bios_pending"):
        assert found[fid].severity.value in ("n/a", "ok") and "no --bmc" in found[fid].observed
    assert found["firmware.df_pstates"].severity.value == "unknown"
    assert found["firmware.df_pstates"].observed.startswith("manual:")


def test_hpe_capture_judges_the_manual_checks():
    found = judge(bmc_records("hpe-dl385-gen10plus-v2"), lscpu_json=LSCPU_AMD)
    sp = found["firmware.socket_power"]
    assert sp.severity.value == "ok" and "PerformanceDeterminism=PowerDeterministic" in sp.observed
    assert "inference" in sp.expected
    df = found["firmware.df_pstates"]
    assert df.severity.value == "info" and "DataFabricCStateEnable=Auto" in df.observed
    xg = found["firmware.xgmi_links"]
    assert "XGMIForceLinkWidth=Auto" in xg.observed
    s = found["firmware.bios_settings"]
    assert (
        s.severity.value == "info" and "ProLiant DL385" in s.observed and "kept raw" in s.observed
    )


def test_pending_settings_differ_names_each_and_says_reboot():
    pending = (
        FX / "dmtf-public-rackmount1/Systems/437XR1138R2/Bios/Settings/index.json"
    ).read_text()
    found = judge(bmc_records("dmtf-public-rackmount1", pending))
    f = found["firmware.bios_pending"]
    assert f.severity.value == "warning"
    assert "ProcTurboMode: Enabled -> Disabled" in f.observed and "reboot" in f.title


def test_unusable_pending_object_is_unknown_naming_it():
    recs = bmc_records("dell-r750")
    recs["redfish_bios_pending"] = _rec(
        "redfish_bios_pending",
        "",
        None,
        "not run: non-compliant @Redfish.Settings: no SettingsObject/@odata.id link",
    )
    f = judge(recs)["firmware.bios_pending"]
    assert f.severity.value == "unknown" and "non-compliant" in f.observed


def test_nps_cross_check_against_the_kernel_nodes():
    bios = {"@odata.id": "/redfish/v1/Systems/1/Bios", "Attributes": {"CbsDfCmnDramNps": "NPS4"}}
    recs = {"redfish_bios": _rec("redfish_bios", json.dumps(bios))}
    numa = "/sys/devices/system/node/node0/cpulist:0-63\n/sys/devices/system/node/node1/cpulist:64-127\n"
    f = judge(recs, lscpu_json=LSCPU_AMD, sys_numa=numa)["firmware.bios_nps_vs_numa"]
    assert (
        f.severity.value == "warning"
        and "CbsDfCmnDramNps=NPS4" in f.observed
        and "kernel sees 2" in f.observed
    )


def test_iommu_cross_check_against_the_cmdline():
    bios = {
        "@odata.id": "/redfish/v1/Systems/1/Bios",
        "Attributes": {"CbsCmnGnbNbIOMMU": "Disabled"},
    }
    recs = {"redfish_bios": _rec("redfish_bios", json.dumps(bios))}
    f = judge(
        recs,
        proc_cmdline="BOOT_IMAGE=/vmlinuz ro amd_iommu=on iommu=pt",
        iommu_state="units: ivhd0\n",
    )["firmware.bios_iommu_vs_cmdline"]
    assert f.severity.value == "warning" and "CbsCmnGnbNbIOMMU=Disabled" in f.observed


def test_aspm_cross_check_on_the_case_studys_real_lspci():
    """The case study's lspci -vvv (every link ASPM Disabled, a real corpus capture) against BIOS ASPM values."""
    lspci = (
        Path(__file__).parents[2] / "snapshots/examples/case-study/before/host/lspci_vvv.out"
    ).read_text()
    for raw, expected in (("Disabled", "ok"), ("Enabled", "info"), ("Auto", "info")):
        bios = {"@odata.id": "/redfish/v1/Systems/1/Bios", "Attributes": {"PcieAspmL1": raw}}
        f = judge({"redfish_bios": _rec("redfish_bios", json.dumps(bios))}, lspci_vvv=lspci)[
            "firmware.bios_aspm_vs_lnkctl"
        ]
        assert f.severity.value == expected, (raw, f)
        assert "Disabled ×16" in f.observed and f"PcieAspmL1={raw}" in f.observed


def test_aspm_cross_check_warns_when_the_os_enabled_it():
    from gpuaudit.probes.firmware import FirmwareFacts
    from gpuaudit.probes.firmware.bios import normalise

    settings, _ = normalise({"PcieAspmL1": "Disabled"}, "dell")
    facts = FirmwareFacts(bios_settings=settings, link_aspm={"L1 Enabled": 3, "Disabled": 5})
    outs = {
        "redfish_bios": _rec("redfish_bios", "{}"),
        "lspci_vvv": _rec("lspci_vvv", "(facts given)"),
    }
    (f,) = [
        x
        for x in judge_checks(firmware.CHECKS, {"host": facts}, {"host": outs})
        if x.id == "firmware.bios_aspm_vs_lnkctl"
    ]
    assert f.severity.value == "warning" and "3 link(s)" in f.title


def test_cross_checks_without_the_os_side_are_not_ok():
    """BIOS ASPM/C-states stated but no LnkCtl / no idle state read: nothing proves agreement (unknown, not ok);
    NPS0 (one node for the system) with 4 kernel nodes is a mismatch, not ok."""
    for raw in ("Disabled", "Enabled"):
        bios = {"@odata.id": "/redfish/v1/Systems/1/Bios", "Attributes": {"PcieAspmL1": raw}}
        f = judge({"redfish_bios": _rec("redfish_bios", json.dumps(bios))}, lspci_vvv="")[
            "firmware.bios_aspm_vs_lnkctl"
        ]
        assert f.severity.value == "unknown", (raw, f)
    bios = {"@odata.id": "/redfish/v1/Systems/1/Bios", "Attributes": {"CbsDfCmnDramNps": "NPS0"}}
    numa = "".join(
        f"/sys/devices/system/node/node{i}/cpulist:{i * 32}-{i * 32 + 31}\n" for i in range(4)
    )
    recs = {"redfish_bios": _rec("redfish_bios", json.dumps(bios))}
    f = judge(recs, lscpu_json=LSCPU_AMD, sys_numa=numa)["firmware.bios_nps_vs_numa"]
    assert f.severity.value == "warning" and "kernel sees 4" in f.observed, f
    one = "/sys/devices/system/node/node0/cpulist:0-127\n"
    f = judge(recs, lscpu_json=LSCPU_AMD, sys_numa=one)["firmware.bios_nps_vs_numa"]
    assert f.severity.value == "ok", f
