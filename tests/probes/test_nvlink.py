"""nvlink probe: table-driven check rows over facts (judged by the framework), extract on real outputs, replay."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import hw_helpers as hw
import pytest
from gpuaudit.probes import nvlink
from gpuaudit.probes.core.judge.checks import judge_checks
from gpuaudit.probes.nvlink import NvlinkFacts

rec = partial(hw.rec, "nvlink")
run = partial(hw.run, nvlink.PROBE)


def judged(facts: dict) -> dict:
    """Findings by id for role -> facts, every source of the probe collected and answered on each role
    (facts.problems still make a source unusable)."""
    outputs = {
        role: {c.id: rec(c.id, "x") for c in nvlink.COMMANDS if role in c.on} for role in facts
    }
    return {f.id: f for f in judge_checks(nvlink.CHECKS, facts, outputs)}


def sev(facts: dict, fid: str) -> str:
    return judged(facts)[fid].severity.value


ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "snapshots" / "examples" / "case-study"
FIX = ROOT / "tests" / "fixtures" / "nvidia"
PRO = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
H100 = "NVIDIA H100 80GB HBM3"


def links(n: int, active: int, speed: float = 26.562):
    return [(i, i < active, speed if i < active else None) for i in range(n)]


def hgx(**kw) -> NvlinkFacts:
    base = dict(
        gpu_names=[H100] * 8,
        links={i: links(18, 18) for i in range(8)},
        links_read=True,
        topo_nv_pairs=28,
        fabric=[(i, "Completed", "Success") for i in range(8)],
        fabric_read=True,
        fm_present=True,
        fm_active="active",
        fm_version="565.57.01",
        nvswitch_functions=4,
        ib_umad=False,
        error_counters={0: {0: {"Replay Errors": 0}}},
        xid74=0,
    )
    return NvlinkFacts(**{**base, **kw})


def pcie(**kw) -> NvlinkFacts:
    base = dict(
        gpu_names=[PRO] * 8,
        links={i: [] for i in range(8)},
        all_inactive_gpus=list(range(8)),
        links_read=True,
        topo_nv_pairs=0,
        fabric=[(i, None, None) for i in range(8)],
        fabric_read=True,
        fm_present=False,
    )
    return NvlinkFacts(**{**base, **kw})


CASES = [
    ("nvlink.presence", hgx(), "ok"),
    (
        "nvlink.presence",
        hgx(links={i: links(18, 0) for i in range(8)}, topo_nv_pairs=0),
        "critical",
    ),
    ("nvlink.presence", pcie(), "n/a"),
    (
        "nvlink.presence",
        pcie(gpu_names=["NVIDIA H100 PCIe"] * 2, links={0: links(18, 12), 1: links(18, 12)}),
        "ok",
    ),
    ("nvlink.presence", pcie(gpu_names=[]), "unknown"),
    ("nvlink.presence", hgx(links={}, links_read=False, topo_nv_pairs=None), "unknown"),
    ("nvlink.link_state", hgx(), "ok"),
    (
        "nvlink.link_state",
        hgx(links={**{i: links(18, 18) for i in range(8)}, 3: links(18, 17)}),
        "critical",
    ),
    (
        "nvlink.link_state",
        hgx(links={**{i: links(18, 18) for i in range(8)}, 3: links(18, 18, 13.0)}),
        "warning",
    ),
    (
        "nvlink.link_state",
        pcie(gpu_names=["NVIDIA H100 PCIe"] * 2, links={0: links(18, 12), 1: links(18, 12)}),
        "ok",
    ),
    ("nvlink.link_state", pcie(), "n/a"),
    ("nvlink.link_state", hgx(links={}, links_read=False), "unknown"),
    ("nvlink.errors", hgx(), "ok"),
    ("nvlink.errors", hgx(xid74=2), "critical"),
    ("nvlink.errors", hgx(error_counters={0: {1: {"CRC Errors": 5}}}), "info"),
    ("nvlink.errors", hgx(error_counters={}, xid74=None), "unknown"),
    (
        "nvlink.errors",
        hgx(error_counters={}, xid74=0, problems={"nvlink_errors": "tool not installed"}),
        "unknown",
    ),
    ("nvlink.errors", pcie(), "n/a"),
    ("nvlink.fabric_manager_service", hgx(), "ok"),
    ("nvlink.fabric_manager_service", hgx(fm_active="failed"), "critical"),
    ("nvlink.fabric_manager_service", hgx(fm_present=False, fm_active=None), "critical"),
    ("nvlink.fabric_manager_service", hgx(fm_present=None), "unknown"),
    ("nvlink.fabric_manager_service", pcie(), "n/a"),
    (
        "nvlink.fabric_manager_service",
        pcie(
            fm_present=True,
            fm_active="failed",
            fm_messages=["NVSwitch driver: nothing to do (no NVSwitch in this system)"],
        ),
        "info",
    ),
    ("nvlink.fabric_state", hgx(), "ok"),
    ("nvlink.fabric_state", hgx(fabric=[(0, "In Progress", None)]), "warning"),
    ("nvlink.fabric_state", hgx(fabric=[(0, "Not Started", None)]), "critical"),
    ("nvlink.fabric_state", hgx(fabric=[], fabric_read=False), "unknown"),
    ("nvlink.fabric_state", pcie(), "n/a"),
    ("nvlink.fabric_nvl5_prereqs", hgx(), "n/a"),  # H100: not NVL5
    ("nvlink.fabric_nvl5_prereqs", hgx(gpu_names=["NVIDIA B200"] * 8), "critical"),
    ("nvlink.fabric_nvl5_prereqs", hgx(gpu_names=["NVIDIA B200"] * 8, ib_umad=True), "ok"),
    ("nvlink.fabric_nvl5_prereqs", hgx(gpu_names=["NVIDIA B200"] * 8, ib_umad=None), "unknown"),
    ("nvlink.fabric_nvswitch_inventory", hgx(), "ok"),
    ("nvlink.fabric_nvswitch_inventory", hgx(nvswitch_functions=3), "critical"),
    ("nvlink.fabric_nvswitch_inventory", hgx(nvswitch_functions=None), "unknown"),
    ("nvlink.fabric_nvswitch_inventory", pcie(), "n/a"),
    ("nvlink.nvls", pcie(), "n/a"),
    ("nvlink.nvls", hgx(), "unknown"),
    ("nvlink.fabric_container_access", hgx(), "n/a"),
    ("nvlink.fabric_container_access", hgx(gpu_names=["NVIDIA GB200"] * 4), "info"),
]


@pytest.mark.parametrize(
    "fid,facts,expected", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_rule_table(fid, facts, expected):
    assert sev({"host": facts}, fid) == expected


@pytest.mark.parametrize(
    "host,ctr,expected",
    [
        (hgx(), hgx(), "ok"),
        (hgx(), hgx(fabric=[(0, "In Progress", None)]), "warning"),
        (
            hgx(),
            hgx(fabric=[], fabric_read=False, problems={"smi_query_fabric": "timed out"}),
            "unknown",
        ),
        (pcie(), pcie(fabric=[], fabric_read=False), "n/a"),
    ],
)
def test_fabric_vs_container(host, ctr, expected):
    facts = {"host": host} if ctr is None else {"host": host, "container": ctr}
    assert sev(facts, "nvlink.fabric_vs_container") == expected


def test_extract_real_bridged_h100_pcie():
    out = {
        "nvlink_s": rec(
            "nvlink_s",
            (FIX / "nvidia-smi-nvlink-s" / "h100-pcie-2gpu-bridge-12of18-active.txt").read_text(),
        ),
        "smi_topo_m": rec(
            "smi_topo_m", (FIX / "nvidia-smi-topo-m" / "h100-pcie-2gpu-nv12-bridge.txt").read_text()
        ),
    }
    f = nvlink.extract(out, "host")
    assert f.gpu_names == ["NVIDIA H100 PCIe"] * 2 and f.topo_nv_pairs == 1
    sevs = {i: x.severity.value for i, x in judged({"host": f}).items()}
    assert (
        sevs["nvlink.presence"] == "ok" and sevs["nvlink.link_state"] == "ok"
    )  # 12 of 18 is normal for a bridge
    assert nvlink.summarize({"host": f}) == "12 links/GPU @ 26.562 GB/s"


def test_extract_real_pcie_without_nvlink_and_a100_sxm():
    none = nvlink.extract(
        {
            "nvlink_s": rec(
                "nvlink_s",
                (
                    FIX / "nvidia-smi-nvlink-s" / "a100-pcie-2gpu-no-nvlink-all-links-inactive.txt"
                ).read_text(),
            )
        },
        "host",
    )
    assert none.all_inactive_gpus == [0, 1]
    assert sev({"host": none}, "nvlink.presence") == "n/a"
    sxm = nvlink.extract(
        {
            "nvlink_s": rec(
                "nvlink_s",
                (
                    FIX / "nvidia-smi-nvlink-s" / "a100-sxm4-4gpu-12links-25gbs-raw-tabs.txt"
                ).read_text(),
            )
        },
        "host",
    )
    assert sev({"host": sxm}, "nvlink.link_state") == "ok"  # 12 links = A100 SXM4 expectation


def test_extract_fm_failed_on_rtx4090_is_not_applicable():
    text = (
        FIX / "systemctl-status-nvidia-fabricmanager" / "journal-failed-pre-nvl5-2x-rtx4090.txt"
    ).read_text()
    f = nvlink.extract(
        {
            "fabricmanager_status": rec("fabricmanager_status", text, 3),
            "smi_query_fabric": rec("smi_query_fabric", "0, NVIDIA GeForce RTX 4090, N/A, N/A\n"),
        },
        "host",
    )
    assert sev({"host": f}, "nvlink.fabric_manager_service") == "info"


@pytest.mark.parametrize("phase", ["before", "after"])
def test_case_study_end_to_end(phase):
    r = run(CASE / phase)
    assert r.status == "done", r.error
    assert {f.severity.value for f in r.findings} == {"n/a"}
    assert len({f.id for f in r.findings}) == 10
    assert all(f.severity.value == "n/a" for f in r.findings)
    assert r.summary == "no NVLink (PCIe board) — n/a"


def test_broken_container_mismatch(tmp_path):
    import shutil

    shutil.copytree(CASE / "before", tmp_path / "b")
    banner = (FIX / "nvidia-smi" / "err-driver-library-mismatch-570.txt").read_text()
    (tmp_path / "b" / "container" / "smi_query_fabric.out").write_text(banner)
    (tmp_path / "b" / "container" / "smi_query_fabric.exit").write_text("18\n")
    r = run(tmp_path / "b")
    sevs = {f.id: f.severity.value for f in r.findings}
    assert (
        sevs["nvlink.fabric_vs_container"] == "n/a"
    )  # no NVSwitch on the host: not applicable either way
    assert sevs["nvlink.presence"] == "n/a"


def test_gpu_less_machine(tmp_path):
    (tmp_path / "host").mkdir()
    r = run(tmp_path)
    assert r.status == "done", r.error
    sevs = {f.id: f.severity.value for f in r.findings}
    assert sevs["nvlink.presence"] == "unknown" and sevs["nvlink.link_state"] == "unknown"
    assert sevs["nvlink.fabric_state"] == "unknown" and sevs["nvlink.errors"] == "unknown"
    assert all(s == "unknown" for fid, s in sevs.items() if fid != "nvlink.fabric_vs_container"), (
        sevs
    )
    assert r.summary == "unknown"


def test_errors_unknown_when_no_counter_parsed():
    # `nvlink --errorcounters` listed the GPUs but no counter line matched: not "no errors"
    assert (
        sev({"host": hgx(error_counters={i: {} for i in range(8)})}, "nvlink.errors") == "unknown"
    )
    text = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n\t Link 0: <something new>\n"
    f = nvlink.extract(
        {"nvlink_errors": rec("nvlink_errors", text), "dmesg_nvrm": rec("dmesg_nvrm", "")}, "host"
    )
    assert f.error_counters == {0: {}}
    assert (
        sev({"host": f.model_copy(update={"gpu_names": [H100] * 8})}, "nvlink.errors") == "unknown"
    )


def test_fabric_state_unknown_on_nvswitch_system_without_state():
    assert (
        sev({"host": hgx(fabric=[(i, None, None) for i in range(8)])}, "nvlink.fabric_state")
        == "unknown"
    )
    assert (
        sev({"host": pcie()}, "nvlink.fabric_state") == "n/a"
    )  # PCIe board: N/A is the positive reading


def test_fabric_state_error_token_is_unknown():
    text = "".join(f"{i}, {H100}, [Unknown Error], [Unknown Error]\n" for i in range(8))
    f = nvlink.extract({"smi_query_fabric": rec("smi_query_fabric", text)}, "host")
    assert f.fabric_unreadable == list(range(8))
    assert (
        sev(
            {"host": f.model_copy(update={"nvswitch_functions": 0, "links_read": True})},
            "nvlink.fabric_state",
        )
        == "unknown"
    )


def test_fabric_state_gpus_without_a_state_are_unknown_not_skipped():
    """Review leftover (issue 23): GPUs that report no fabric state beside others that do were skipped, so
    "all 6 GPUs Completed/Success" was ok for an 8-GPU fabric; they are unknown, named."""
    fabric = [(i, "Completed", "Success") for i in range(6)] + [(6, None, None), (7, "", None)]
    f = judged({"host": hgx(fabric=fabric)})["nvlink.fabric_state"]
    assert f.severity.value == "unknown"
    assert "GPU6, GPU7" in f.observed
    # a GPU that is proven not registered still decides (the silent ones are named beside it)
    fabric[0] = (0, "Not Started", None)
    f = judged({"host": hgx(fabric=fabric)})["nvlink.fabric_state"]
    assert f.severity.value == "critical" and "GPU6, GPU7" in f.observed
