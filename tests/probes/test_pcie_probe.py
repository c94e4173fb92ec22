"""pcie probe: check rows over facts (table-driven, incl. the idle-link and MPS-256 traps), the framework's gates,
topology without `lspci -tv`, and the case-study replay."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import hw_helpers as hw
import pytest
from gpuaudit.probes import pcie
from gpuaudit.probes.core.judge.checks import judge_checks
from gpuaudit.probes.core.models import CommandRecord
from gpuaudit.probes.pcie import PciDev, PcieFacts, SmiLink
from gpuaudit.probes.pcie.extract import ACCESS_DENIED

rec = partial(hw.rec, "pcie")
run = partial(hw.run, pcie.PROBE)
SOURCE_IDS = [c.id for c in pcie.COMMANDS]


def answered(**over: CommandRecord | None) -> dict[str, CommandRecord]:
    """Every pcie source answered (exit 0); an override replaces one record, None drops it (not collected)."""
    outs = {cid: rec(cid, "") for cid in SOURCE_IDS}
    for cid, r in over.items():
        if r is None:
            outs.pop(cid, None)
        else:
            outs[cid] = r
    return outs


def judge(f: PcieFacts, outputs: dict | None = None) -> dict:
    return {
        x.id: x for x in judge_checks(pcie.CHECKS, {"host": f}, {"host": outputs or answered()})
    }


def sev(f: PcieFacts, fid: str, outputs: dict | None = None) -> str:
    return judge(f, outputs)[fid].severity.value


CASE = Path(__file__).parents[2] / "snapshots/examples/case-study"
FX = Path(__file__).parents[1] / "fixtures"


def gpu(bdf="0000:01:00.0", **kw):
    base = dict(
        description="VGA compatible controller: NVIDIA Corporation Device 2bb5",
        is_gpu=True,
        devcap_mps=256,
        devctl_mps=256,
        devctl_mrrs=512,
        aspm_ctl="Disabled",
    )
    return PciDev(bdf=bdf, **{**base, **kw})


def port(bdf="0000:00:01.1", **kw):
    base = dict(
        port_type="Root Port",
        devcap_mps=512,
        devctl_mps=256,
        devctl_mrrs=512,
        aspm_ctl="Disabled",
        acs_ctl={"ReqRedir": False, "CmpltRedir": False},
    )
    return PciDev(bdf=bdf, **{**base, **kw})


def facts(devs, **kw):
    gpus = [d.bdf for d in devs if d.is_gpu]
    parents = {g: ["0000:00:01.1"] for g in gpus}
    return PcieFacts(devices=devs, gpu_bdfs=gpus, parents=kw.pop("parents", parents), **kw)


@pytest.mark.parametrize(
    "mrrs,expected",
    [(128, "warning"), (512, "warning"), (1024, "info"), (2048, "info"), (4096, "ok")],
)
def test_max_read_req_thresholds(mrrs, expected):
    assert sev(facts([gpu(devctl_mrrs=mrrs), port()]), "pcie.max_read_req") == expected


def test_max_read_req_bridges_do_not_count():
    # trap 6: a 128 B bridge MRRS does not govern the GPU's reads
    assert sev(facts([gpu(devctl_mrrs=4096), port(devctl_mrrs=128)]), "pcie.max_read_req") == "ok"


def test_max_read_req_unknown_without_root_and_na_without_gpu():
    assert (
        sev(PcieFacts(problems={"lspci_vvv": "needs root (run with --sudo)"}), "pcie.max_read_req")
        == "unknown"
    )
    denied = facts(
        [gpu(devctl_mrrs=None, devctl_mps=None, access_denied=True)],
        problems={"lspci_vvv": ACCESS_DENIED},
    )
    f = judge(denied)["pcie.max_read_req"]
    assert (
        f.severity.value == "unknown" and "needs root" in f.observed and "lspci_vvv" in f.observed
    )
    # "no NVIDIA GPU" is not applicable only on a positive reading (no module, no NVIDIA function in sysfs)
    assert judge(PcieFacts(), NO_GPU)["pcie.max_read_req"].observed.startswith("no NVIDIA GPU")
    assert sev(PcieFacts(), "pcie.max_read_req") == "unknown"


NO_GPU = answered(
    proc_driver_version=rec(
        "proc_driver_version", "", 1, "cat: /proc/driver/nvidia/version: No such file or directory"
    ),
    pci_nvidia_sysfs=rec("pci_nvidia_sysfs", "", 1),
)


ALL_GPU_SOURCES_FAILED = {
    "lspci_vvv": rec("lspci_vvv", "", 1, "lspci: Unable to read config space: Permission denied"),
    "sys_pci_nvidia": CommandRecord(
        target="host",
        probe_id="pcie",
        command_id="sys_pci_nvidia",
        command="x",
        exit_status=None,
        timed_out=True,
    ),
    "smi_query_pcie": rec("smi_query_pcie", "NVIDIA-SMI has failed", 9),
    "lspci_tv": None,
    "aspm_policy": None,
}


@pytest.mark.parametrize("fid", [c.id for c in pcie.CHECKS])
def test_no_gpu_is_unknown_when_every_gpu_source_failed_and_na_when_proven(fid):
    f = judge(PcieFacts(), answered(**ALL_GPU_SOURCES_FAILED))[fid]
    assert f.severity.value == "unknown" and f.observed, fid
    proven = judge(PcieFacts(), NO_GPU)[fid]
    assert (
        proven.severity.value == "n/a" and proven.observed == "no NVIDIA GPU or driver on this host"
    )


def test_pcie_bus_perf_fingerprint():
    f = judge(facts([gpu(devctl_mrrs=256), port()], cmdline="ro pci=pcie_bus_perf"))[
        "pcie.max_read_req"
    ]
    assert f.severity.value == "warning" and "pcie_bus_perf" in f.observed


@pytest.mark.parametrize(
    "g,p,expected",
    [
        (gpu(), port(), "ok"),  # trap 7: MPS 256 on NVIDIA is normal
        (gpu(devctl_mps=128), port(devctl_mps=128), "warning"),  # below the path's capability
        (gpu(), port(devctl_mps=512, devcap_mps=512), "warning"),  # mismatch along the path
    ],
)
def test_max_payload(g, p, expected):
    assert sev(facts([g, p]), "pcie.max_payload") == expected


def link(i, util, cur, gmax=5, hmax=5, wcur=16, wmax=16):
    return SmiLink(
        index=str(i),
        bus_id=f"0000:0{i}:00.0",
        util=util,
        gen_cur=cur,
        gen_gpumax=gmax,
        gen_hostmax=hmax,
        width_cur=wcur,
        width_max=wmax,
    )


@pytest.mark.parametrize(
    "links,cap,load",
    [
        ([link(1, 0, 1)], "ok", "info"),  # trap 1: idle at Gen1 is power saving
        ([link(1, 95, 5)], "ok", "ok"),
        ([link(1, 95, 1)], "ok", "critical"),  # downtrained while busy
        ([link(1, 50, 5, wcur=8)], "ok", "critical"),  # boundary: 50% counts as busy
        ([link(1, 49, 1)], "ok", "info"),  # 49%: idle
        ([link(1, 0, 1, hmax=4)], "warning", "info"),  # host caps the link
        ([link(1, 0, 1, wmax=8)], "warning", "info"),  # x8 slot
    ],
)
def test_link_rules(links, cap, load):
    f = PcieFacts(smi=links, gpu_bdfs=[s.bus_id for s in links])
    assert sev(f, "pcie.link_capability") == cap and sev(f, "pcie.link_current_under_load") == load


def test_link_under_load_unknown_when_generations_not_reported():
    na = SmiLink(index="0", bus_id="0000:01:00.0")  # every gen/width/util field [N/A]
    assert (
        sev(PcieFacts(smi=[na], gpu_bdfs=[na.bus_id]), "pcie.link_current_under_load") == "unknown"
    )


def test_aspm_unknown_without_lnkctl_data():
    assert (
        sev(facts([gpu(aspm_ctl=None), port(aspm_ctl=None)], aspm_policy="default"), "pcie.aspm")
        == "unknown"
    )


def test_link_errors_lspci_fallback_counts_only_parsed_aer_status():
    # no sysfs counters; GPU block without an AER capability: not "AER counters 0"
    assert sev(facts([gpu(), port()]), "pcie.link_errors") == "unknown"
    assert sev(facts([gpu(ue_status=[], ce_status=[]), port()]), "pcie.link_errors") == "ok"
    denied = facts([gpu(ue_status=[], ce_status=[])], problems={"lspci_vvv": ACCESS_DENIED})
    assert sev(denied, "pcie.link_errors") == "unknown"
    text = (
        "0000:01:00.0 VGA compatible controller: NVIDIA Corporation Device [10de:2bb5] (rev a1)\n"
        "\tCapabilities: [100 v2] Advanced Error Reporting\n"
        "\t\tUESta:\tDLP- SDES- TLP- FCP- CmpltTO- CmpltAbrt- UnxCmplt- RxOF- MalfTLP- ECRC- UnsupReq+ ACSViol-\n"
        "\t\tCESta:\tRxErr- BadTLP- BadDLLP- Rollover- Timeout- AdvNonFatalErr-\n"
        "0000:02:00.0 VGA compatible controller: NVIDIA Corporation Device [10de:2bb5] (rev a1)\n"
        "\tCapabilities: <access denied>\n"
    )
    f = pcie.extract({"lspci_vvv": rec("lspci_vvv", text)}, "host")
    assert f.devices[0].ue_status == ["UnsupReq"] and f.devices[0].ce_status == []
    assert f.devices[1].ue_status is None and f.devices[1].ce_status is None


def test_link_unknown_when_smi_broken():
    f = PcieFacts(
        gpu_bdfs=["0000:01:00.0"], problems={"smi_query_pcie": "unparsable nvidia-smi output"}
    )
    found = judge(f)["pcie.link_current_under_load"]
    assert found.severity.value == "unknown" and "smi_query_pcie: unparsable" in found.observed


@pytest.mark.parametrize(
    "acs,ptype,expected",
    [
        ({"ReqRedir": True, "CmpltRedir": True}, "Root Port", "warning"),
        ({"ReqRedir": True, "CmpltRedir": True}, "Downstream Port", "critical"),
        ({"ReqRedir": False, "CmpltRedir": False}, "Root Port", "ok"),
    ],
)
def test_acs(acs, ptype, expected):
    devs = [gpu("0000:01:00.0"), gpu("0000:02:00.0"), port(acs_ctl=acs, port_type=ptype)]
    assert sev(facts(devs), "pcie.acs") == expected


def test_acs_single_gpu_not_applicable():
    f = judge(facts([gpu(), port(acs_ctl={"ReqRedir": True})]))["pcie.acs"]
    assert f.severity.value == "n/a" and f.observed == "fewer than two GPUs"


@pytest.mark.parametrize(
    "aspm,policy,expected",
    [
        ("Disabled", "default", "ok"),
        ("L1 Enabled", "default", "warning"),
        ("Disabled", "powersupersave", "warning"),
    ],
)
def test_aspm(aspm, policy, expected):
    assert sev(facts([gpu(aspm_ctl=aspm), port()], aspm_policy=policy), "pcie.aspm") == expected


def test_link_errors_and_port_pm_from_sysfs_lines():
    text = (
        "/sys/bus/pci/devices/0000:01:00.0/upstream:/sys/devices/pci0000:00/0000:00:01.1\n"
        "/sys/bus/pci/devices/0000:01:00.0/class:0x030000\n"
        "/sys/bus/pci/devices/0000:01:00.0/aer_dev_correctable:TOTAL_ERR_COR 3\n"
        "/sys/bus/pci/devices/0000:01:00.0/aer_dev_fatal:TOTAL_ERR_FATAL 0\n"
        "/sys/devices/pci0000:00/0000:00:01.1/power/control:auto\n"
    )
    s = pcie.parse_sys_pci(text)
    assert s[0].upstream == "0000:00:01.1" and s[0].upstream_values["power/control"] == "auto"
    f = PcieFacts(sysfs=s, gpu_bdfs=["0000:01:00.0"])
    assert sev(f, "pcie.link_errors") == "info" and sev(f, "pcie.port_pm") == "info"
    fatal = pcie.parse_sys_pci(text.replace("TOTAL_ERR_FATAL 0", "TOTAL_ERR_FATAL 1"))
    assert sev(PcieFacts(sysfs=fatal, gpu_bdfs=["0000:01:00.0"]), "pcie.link_errors") == "critical"


def test_extract_real_corpus_gpu_block_idle_trap():
    text = (FX / "system/lspci-vvv/rtx6000ada-esc8000a-idle-2.5gt-downgraded.txt").read_text()
    csv = (FX / "nvidia/nvidia-smi-query-gpu-csv/l40s-8gpu-idle-gen1-of-gen4-x16.txt").read_text()
    f = pcie.extract(
        {"lspci_vvv": rec("lspci_vvv", text), "smi_query_pcie": rec("smi_query_pcie", csv)}, "host"
    )
    now = f.link_now[f.devices[0].bdf]
    assert now.lnksta_speed == 2.5 and now.speed_downgraded
    # the L40S capture uses the deprecated gen.current/gen.max names with a header: read by name
    rows = f.smi_rows()
    assert len(rows) == 8 and (rows[0].gen_cur, rows[0].gen_gpumax, rows[0].width_max) == (1, 4, 16)
    assert (
        f.smi[0].gen_cur is None and f.smi[0].util is None
    )  # the current values live in the volatile link_now
    got = {k: x.severity.value for k, x in judge(f).items()}
    assert got["pcie.max_read_req"] == "warning" and got["pcie.max_payload"] == "ok"
    assert got["pcie.link_current_under_load"] == "info"  # idle Gen1 of Gen4: not a fault
    broken = pcie.extract({"smi_query_pcie": rec("smi_query_pcie", "0, 1, 2")}, "host")
    assert "unparsable" in broken.problems["smi_query_pcie"]


def test_case_study_before():
    r = run("before")
    by = {f.id: f.severity.value for f in r.findings}
    assert r.status == "done" and by["pcie.max_read_req"] == "warning"
    assert (
        by["pcie.link_current_under_load"] == "info" and by["pcie.max_payload"] == "ok"
    )  # traps stay quiet
    assert by["pcie.link_capability"] == "ok"
    assert r.summary == "8 GPUs Gen5 x16 · MRRS 512"


def test_case_study_after():
    r = run("after")
    by = {f.id: f.severity.value for f in r.findings}
    assert by["pcie.max_read_req"] == "ok" and r.summary == "8 GPUs Gen5 x16 · MRRS 4096"
    assert (
        by["pcie.acs"] == "warning"
    )  # root-port ACS redirect stays (not part of the recorded fix)


# ---------------------------------------------------------------- issue 12 item 14: topology without a tree

HPE = (FX / "system/lspci-vvv-filtered/hpe-xd665-two-h100-behind-pex890xx-no-tree.txt").read_text()
NO_TREE = rec("lspci_tv", "", 127, "sh: 1: lspci: not found")


@pytest.mark.parametrize(
    "tree", [NO_TREE, rec("lspci_tv", "", 1, "lspci: Cannot open /sys/bus/pci/devices"), None]
)
def test_acs_and_topology_from_bus_lines_when_lspci_tv_fails(tree):
    """Two H100s behind PEX890xx switches, no `lspci -tv`: the bridges' Bus: lines give the paths (real capture)."""
    outs = answered(lspci_vvv=rec("lspci_vvv", HPE), lspci_tv=tree)
    f = pcie.extract(outs, "host")
    assert f.tree_source == "lspci -vvv bus numbers"
    assert f.parents["0000:04:00.0"] == ["0000:02:01.0", "0000:01:00.0", "0000:00:01.1"]
    found = judge(f, outs)
    acs = found["pcie.acs"]
    assert acs.severity.value == "critical", (
        acs.observed
    )  # ReqRedir+ on the switch downstream ports above the GPUs
    assert (
        "0000:02:01.0 (Downstream Port)" in acs.observed
        and "0000:62:01.0 (Downstream Port)" in acs.observed
    )
    topo = found["pcie.topology_map"]
    assert topo.title == "2 GPU(s) on 2 root port(s)" and "lspci -vvv bus numbers" in topo.observed
    assert "0000:00:01.1 > 0000:01:00.0 > 0000:02:01.0" in topo.observed


def test_topology_unknown_names_what_is_missing():
    f = PcieFacts(
        gpu_bdfs=["0000:04:00.0", "0000:64:00.0"], parents={"0000:04:00.0": [], "0000:64:00.0": []}
    )
    t = judge(f, answered(lspci_tv=NO_TREE))["pcie.topology_map"]
    assert t.severity.value == "unknown" and "lspci not installed (package pciutils)" in t.observed


def test_bus_numbers_parse_from_real_root_port_block():
    from gpuaudit.probes.core.parsers.lspci import parse_lspci_vvv

    d = parse_lspci_vvv(
        (
            FX
            / "system/lspci-vvv/amd-rome-root-port-romed8-pve-8gt-downgraded-x4-ok-acs-enabled.txt"
        ).read_text()
    )
    assert (d[0].secondary_bus, d[0].subordinate_bus) == (1, 1)


def test_every_row_has_an_owner_and_bar1_is_not_emitted():
    assert {c.owner for c in pcie.CHECKS} <= {"bios", "host", "hardware"}
    assert "pcie.bar1" not in {c.id for c in pcie.CHECKS}
    assert {c.id: c.owner for c in pcie.CHECKS}["pcie.acs"] == "bios"


def test_current_link_state_is_the_only_volatile_fact():
    """Two audits of an unchanged idle machine differ only in link_now (idle downclock, utilisation)."""
    text = (FX / "system/lspci-vvv/rtx6000ada-esc8000a-idle-2.5gt-downgraded.txt").read_text()
    csv = (FX / "nvidia/nvidia-smi-query-gpu-csv/l40s-8gpu-idle-gen1-of-gen4-x16.txt").read_text()
    idle = pcie.extract(
        {"lspci_vvv": rec("lspci_vvv", text), "smi_query_pcie": rec("smi_query_pcie", csv)}, "host"
    )
    busy_csv = csv.replace(", 1, 4,", ", 4, 4,")
    busy = pcie.extract(
        {
            "lspci_vvv": rec("lspci_vvv", text.replace("2.5GT/s (downgraded)", "16GT/s")),
            "smi_query_pcie": rec("smi_query_pcie", busy_csv),
        },
        "host",
    )
    a, b = idle.model_dump(), busy.model_dump()
    assert a["link_now"] != b["link_now"]
    assert {k: v for k, v in a.items() if k != "link_now"} == {
        k: v for k, v in b.items() if k != "link_now"
    }
    assert pcie.PROBE.volatile_facts == frozenset({"link_now"})
