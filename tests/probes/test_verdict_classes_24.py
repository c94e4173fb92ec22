"""Issue 24, wrong-verdict classes 2-5 on real outputs (each file's SOURCES.md names where it was published).

Each test failed on the code before its fix: the verdict named in the test's docstring is the old one."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import hw_helpers as hw
from gpuaudit.probes import firmware
from gpuaudit.probes.core.judge.probe import judge_probe

FX = Path(__file__).parents[1] / "fixtures"
LSCPU = FX / "system" / "lscpu"
IOMMU_OFF = "units: \n"
"""What the `iommu_state` line prints when /sys/class/iommu is empty (the IOMMU off in BIOS or on the cmdline)."""


def finding(probe, fid: str, **stdout_by_cid: str):
    records = [partial(hw.rec, probe.id)(cid, text) for cid, text in stdout_by_cid.items()]
    result = judge_probe(probe, {"host": records})
    assert result.status == "done", result.error
    (f,) = [f for f in result.findings if f.id == fid]
    return f


# --- class 2: IOMMU off on an AMD host with more than 255 hardware threads (x2APIC) -------------------


def test_iommu_off_on_a_256_thread_epyc_is_critical():
    """Before: ok "no IOMMU units"."""
    for sample in ("epyc-7702-2s-smt-2numa.txt", "epyc-7742-2s-nps4-8numa-boost.txt"):
        f = finding(
            firmware.PROBE,
            "firmware.iommu_mode",
            iommu_state=IOMMU_OFF,
            lscpu_json=(LSCPU / sample).read_text(),
        )
        assert f.severity.value == "critical", (sample, f)
        assert "256 hardware threads" in f.observed


def test_iommu_off_below_256_threads_or_on_intel_stays_ok():
    for sample in ("epyc-7742-2s-smt-off.txt", "xeon-platinum-8462y-2s-spr-new-format.txt"):
        f = finding(
            firmware.PROBE,
            "firmware.iommu_mode",
            iommu_state=IOMMU_OFF,
            lscpu_json=(LSCPU / sample).read_text(),
        )
        assert f.severity.value == "ok", (sample, f)


def test_iommu_off_without_lscpu_is_unknown_not_ok():
    f = finding(firmware.PROBE, "firmware.iommu_mode", iommu_state=IOMMU_OFF)
    assert f.severity.value == "unknown" and "lscpu" in f.observed
