"""Each datum read once (issue 11 item 3): no shell line declared twice, and the data merged into one source
(ACS via `lspci -vvv`, the IOMMU domain types, GPU names/compute capability via nvidia-smi) has one reader."""

from __future__ import annotations

import re
from collections import Counter

from gpuaudit.probes.catalogue import REGISTRY
from gpuaudit.probes.core.sources import ALIASES, SOURCES

MERGED = {"lspci_acsctl": "lspci_vvv", "sys_iommu_groups": "iommu_state"}
"""Old id -> the source that now holds its data (older snapshots hold both records: no alias needed)."""


def _query_fields(shell: str) -> frozenset[str]:
    m = re.search(r"--query-gpu=(\S+)", shell)
    return frozenset(m.group(1).split(",")) if m else frozenset()


def test_no_shell_line_is_declared_twice():
    twice = {s: n for s, n in Counter(src.shell for src in SOURCES.values()).items() if n > 1}
    assert not twice, twice


def test_every_probe_command_is_the_registry_row():
    """A probe may narrow a source's roles, never change its line: the runner then runs the line once per target."""
    for probe in REGISTRY:
        for c in probe.commands:
            assert c.id in SOURCES and c.shell == SOURCES[c.id].shell, (probe.id, c.id)


def test_merged_ids_are_gone_and_their_data_has_one_reader():
    assert not set(MERGED) & set(SOURCES)
    assert all(new in SOURCES for new in MERGED.values())
    assert all(old not in SOURCES and new in SOURCES for old, new in ALIASES.items())
    # `lspci -vvv` (ACS, config space) runs once: one source line holds -vvv
    vvv = [cid for cid, s in SOURCES.items() if re.search(r"\blspci\b[^|;]*-\w*vvv", s.shell)]
    assert vvv == ["lspci_vvv"], vvv
    # the IOMMU domain types are read by one source
    iommu = [cid for cid, s in SOURCES.items() if "iommu_group" in s.shell]
    assert iommu == ["iommu_state"], iommu


def test_no_query_gpu_line_asks_a_subset_of_another():
    """A probe that needs some of another line's fields (same roles, same format) reads that line instead."""
    rows = [
        (cid, s, _query_fields(s.shell))
        for cid, s in SOURCES.items()
        if _query_fields(s.shell) and not s.active
    ]
    subset = [
        (a, b) for a, sa, fa in rows for b, sb, fb in rows if a != b and fa <= fb and sa.on <= sb.on
    ]
    assert not subset, subset


def test_nccl_and_python_read_the_gpu_lines_other_probes_read():
    """GPU names (nccl) from the container/numa `smi_gpu_ids` line, compute capability and driver (python) from the
    driver probe's `smi_query_driver` line: the demo's recordings give what the dropped `smi_gpu_cc` gave."""
    from pathlib import Path

    from gpuaudit.probes import nccl, python
    from gpuaudit.probes.core.models import CommandRecord

    host = Path(__file__).parents[2] / "snapshots/examples/case-study/before/host"

    def rec(cid: str) -> CommandRecord:
        return CommandRecord(
            target="host",
            probe_id="x",
            command_id=cid,
            command=cid,
            exit_status=0,
            stdout=(host / f"{cid}.out").read_text(),
        )

    assert "smi_gpu_cc" not in SOURCES
    n = nccl.extract({"smi_gpu_ids": rec("smi_gpu_ids")}, "host")
    assert n.gpu_names == ["NVIDIA RTX PRO 6000 Blackwell Server Edition"] * 8 and not n.problems
    p = python.extract({"smi_query_driver": rec("smi_query_driver")}, "host")
    assert (p.compute_caps, p.driver, p.problems) == (["12.0"] * 8, "590.48.01", {})
