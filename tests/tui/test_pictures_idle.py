"""The PCIe picture says an idle GPU's Gen1 link is the idle downclock, not ▼ (issue 24 review): NVIDIA GPUs
train the link down at idle and back up under load; ▼ stays for a busy GPU, a narrowed link, an unknown load."""

from __future__ import annotations

import pytest
from gpuaudit.probes.core.models import AuditRun, ProbeResult
from gpuaudit.tui.views import pictures as P

GPU = "0000:01:00.0"


def run_with(util: float | None, *, narrow: bool = False) -> AuditRun:
    link = {"gen_cur": 1, "width_cur": 8 if narrow else 16, "speed_downgraded": True}
    link |= {"width_downgraded": narrow, "util": util}
    facts = {
        "gpu_bdfs": [GPU],
        "devices": [{"bdf": GPU, "lnkcap_speed": 32.0, "lnkcap_width": 16}],
        "smi": [{"bus_id": "00000000:01:00.0", "index": 0}],
        "link_now": {GPU: link},
    }
    return AuditRun(probes=[ProbeResult(probe_id="pcie", title="PCIe", facts={"host": facts})])


def gpu(run: AuditRun) -> P.TreeNode:
    return next(n for b in P.pcie_tree(run) for n in P._nodes(b.roots) if n.kind == "GPU")


def test_idle_gpu_at_gen1_is_said_idle_not_marked():
    n = gpu(run_with(0.0))
    assert n.idle and not n.degraded
    assert P.node_text(n).endswith("idle Gen1 x16 / can Gen5 x16")
    assert "▼" not in P.node_text(n)


@pytest.mark.parametrize(
    ("util", "narrow"),
    [(97.0, False), (None, False), (0.0, True)],
    ids=["busy", "load unknown", "narrowed"],
)
def test_a_real_or_unexplained_downgrade_keeps_the_mark(util, narrow):
    n = gpu(run_with(util, narrow=narrow))
    assert n.degraded and not n.idle and P.node_text(n).endswith("▼")
