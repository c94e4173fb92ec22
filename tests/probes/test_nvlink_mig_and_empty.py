"""Issue 12 item 3: MIG mode is not "no NVLink", and an empty `nvlink -s` is never "links ok".

Real MIG-enabled A100-SXM4 XML captures give the GPU models and MIG mode; the nvlink -s answers are in
tests/fixtures/nvlink (SOURCES.md). Before the fix: presence critical "No NVLink on an SXM/HGX system" and link_state
ok "active links " (empty observed).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import hw_helpers as hw
import pytest
from gpuaudit.probes import nvlink
from gpuaudit.probes.core.judge.probe import judge_probe

rec = partial(hw.rec, "nvlink")
FX = Path(__file__).parents[1] / "fixtures"
XML = FX / "nvidia" / "nvidia-smi-q-x"
MIG_REFUSED = (FX / "nvlink" / "nvlink-s-mig-mode-refused-h200.txt").read_text()
EMPTY = (FX / "nvlink" / "nvlink-s-empty-a10.txt").read_text()


def judge(**stdout_by_cid: str | tuple[str, int]) -> dict:
    records = [
        rec(cid, v[0], v[1]) if isinstance(v, tuple) else rec(cid, v)
        for cid, v in stdout_by_cid.items()
    ]
    result = judge_probe(nvlink.PROBE, {"host": records})
    assert result.status == "done", result.error
    return {f.id: f for f in result.findings}


@pytest.mark.parametrize("xml", ["netdata-a100-sxm4-mig.xml", "telegraf-a100-sxm4-v12.xml"])
def test_mig_refusal_is_not_applicable_not_critical(xml):
    by = judge(nvlink_s=MIG_REFUSED, smi_q_xml=(XML / xml).read_text())
    for fid in ("nvlink.presence", "nvlink.link_state"):
        assert by[fid].severity.value == "n/a" and by[fid].observed.startswith(
            "GPU 0 in MIG mode"
        ), by[fid]
    assert (
        nvlink.summarize(
            {
                "host": nvlink.extract(
                    {
                        "nvlink_s": rec("nvlink_s", MIG_REFUSED),
                        "smi_q_xml": rec("smi_q_xml", (XML / xml).read_text()),
                    },
                    "host",
                )
            }
        )
        == "MIG mode — NVLink n/a"
    )


def test_mig_refusal_with_a_failing_exit_is_unknown_naming_it_never_critical():
    by = judge(
        nvlink_s=(MIG_REFUSED, 255), smi_q_xml=(XML / "netdata-a100-sxm4-mig.xml").read_text()
    )
    assert by["nvlink.link_state"].severity.value == "unknown"
    assert "MIG mode" in by["nvlink.link_state"].observed
    assert by["nvlink.presence"].severity.value != "critical"


def test_mig_mode_from_the_xml_alone_makes_links_not_applicable():
    """MIG Enabled in the XML with an empty nvlink -s: judged from MIG mode, not from the missing links."""
    by = judge(nvlink_s=EMPTY, smi_q_xml=(XML / "telegraf-a100-sxm4-v12.xml").read_text())
    assert by["nvlink.presence"].observed.startswith("GPU 0 in MIG mode")
    assert by["nvlink.link_state"].observed.startswith("GPU 0 in MIG mode")


def test_mig_mode_from_the_driver_csv():
    f = nvlink.extract(
        {
            "smi_query_driver": rec(
                "smi_query_driver",
                (
                    Path(__file__).parents[2] / "snapshots/examples/"
                    "case-study/before/host/smi_query_driver.out"
                ).read_text(),
            )
        },
        "host",
    )
    assert f.mig_enabled == [] and len(f.gpu_names) == 8  # all Disabled: read, none in MIG mode


def test_empty_nvlink_s_is_never_ok():
    by = judge(nvlink_s=EMPTY)
    assert by["nvlink.link_state"].severity.value == "unknown"
    assert "listed no GPU" in by["nvlink.link_state"].observed
    assert by["nvlink.presence"].severity.value == "unknown"


def test_empty_nvlink_s_on_a_pcie_board_is_not_applicable():
    by = judge(nvlink_s=EMPTY, smi_q_xml=(XML / "netdata-rtx-4090-driver-535.xml").read_text())
    for fid in ("nvlink.presence", "nvlink.link_state"):
        assert by[fid].severity.value == "n/a", by[fid]
    assert all(f.observed.strip() for f in by.values())


def test_every_row_of_the_probe_is_judged_once_and_owned():
    by = judge(nvlink_s=MIG_REFUSED, smi_q_xml=(XML / "netdata-a100-sxm4-mig.xml").read_text())
    assert set(by) == {c.id for c in nvlink.CHECKS if not c.cross}
    assert all(f.owner in ("bios", "host", "container", "engine", "hardware") for f in by.values())


def test_a_gpu_in_mig_mode_is_left_out_of_the_link_count():
    """One of eight H100s in MIG mode lists no links: the other seven are judged, the MIG one is not 'missing'."""
    from test_nvlink import H100, hgx, links, sev

    facts = hgx(links={**{i: links(18, 18) for i in range(8)}, 3: []}, mig_enabled=[3])
    assert sev({"host": facts}, "nvlink.link_state") == "ok"
    assert (
        sev({"host": facts.model_copy(update={"mig_enabled": []})}, "nvlink.link_state")
        == "critical"
    )
    assert sev({"host": facts}, "nvlink.presence") == "ok" and facts.gpu_names == [H100] * 8
