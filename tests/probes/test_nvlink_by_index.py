"""Issue 24 class 1: the expected link count is looked up by GPU index, not by position in the listing.

Real `nvidia-smi nvlink -s` answers that do not start at GPU 0 (tests/fixtures/nvlink/SOURCES.md): GPU 3 of a
V100-SXM2 board with two links down (Azure/azhpc-diagnostics#73) and GPU 2 of an HGX B200 with every link down
(leptonai/gpud#1085). Before the fix both read ok ("links up")."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import hw_helpers as hw
import pytest
from gpuaudit.probes import nvlink
from gpuaudit.probes.core.judge.probe import judge_probe

rec = partial(hw.rec, "nvlink")
FX = Path(__file__).parents[1] / "fixtures"


def link_state(text: str):
    result = judge_probe(nvlink.PROBE, {"host": [rec("nvlink_s", text)]})
    assert result.status == "done", result.error
    (f,) = [f for f in result.findings if f.id == "nvlink.link_state"]
    return f


@pytest.mark.parametrize(
    ("fixture", "gpu", "want"),
    [
        ("nvlink-s-v100-sxm2-gpu3-two-inactive.txt", 3, 6),
        ("nvlink-s-b200-gpu2-all-inactive.txt", 2, 18),
    ],
)
def test_links_down_on_a_gpu_listed_past_index_0_are_critical(fixture, gpu, want):
    f = link_state((FX / "nvlink" / fixture).read_text())
    assert f.severity.value == "critical", f
    assert f"GPU{gpu}: {want} active" in f.expected


def test_a_healthy_dense_listing_stays_ok():
    text = FX / "nvidia" / "nvidia-smi-nvlink-s" / "a100-sxm4-4gpu-12links-25gbs-raw-tabs.txt"
    assert link_state(text.read_text()).severity.value == "ok"
