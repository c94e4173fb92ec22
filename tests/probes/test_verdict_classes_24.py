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


# --- class 3: ok from incomplete data -----------------------------------------------------------------

IDLE = FX / "system" / "cpupower-idle-info"


def test_an_enabled_c2_without_the_cpu_vendor_is_unknown_not_only_shallow():
    """Before: ok "only shallow states: C1 1µs, C2 30µs, POLL 0µs" (C2 is CC6 on AMD: deep)."""
    from gpuaudit.probes import power

    idle = (IDLE / "epyc-acpi-idle-c2-ioport-lat30-entered.txt").read_text()
    f = finding(power.PROBE, "power.cpu_cstates", cpupower_idle=idle)
    assert f.severity.value == "unknown", f
    assert "C2 30µs" in f.observed and "vendor" in f.observed
    amd = (LSCPU / "epyc-7702-2s-smt-2numa.txt").read_text()
    f = finding(power.PROBE, "power.cpu_cstates", cpupower_idle=idle, lscpu_json=amd)
    assert f.severity.value in ("warning", "info") and "C2" in f.observed, f


XML = FX / "nvidia" / "nvidia-smi-q-x"


def test_row_remapping_not_reported_never_reads_pending_on_none():
    """Before: ok "...; remap pending on none; remap failure on none (row remapping not reported)"."""
    from gpuaudit.probes import driver

    a100 = finding(
        driver.PROBE,
        "driver.ecc_rowremap",
        smi_q_xml=(XML / "telegraf-a100-sxm4-v12.xml").read_text(),
    )
    assert a100.severity.value == "unknown", a100  # an A100 remaps rows: N/A there is not "none"
    assert "pending on none" not in a100.observed
    for sample in ("telegraf-tesla-t4.xml", "netdata-tesla-p100.xml"):  # page retirement, read
        f = finding(driver.PROBE, "driver.ecc_rowremap", smi_q_xml=(XML / sample).read_text())
        assert f.severity.value == "ok" and "remap pending on none" not in f.observed, f
        assert "retired pages pending on none" in f.observed


# --- class 4: over-caution: unknown although another collected source proves the answer ---------------

NUMACTL = FX / "system" / "numactl-hardware"


def test_numa_mode_from_numactl_when_sysfs_was_not_read():
    """Before: unknown "sys_numa: ..." although `numactl -H` lists the nodes. The same machine's lscpu and
    numactl (luigifcruz/stelline, ASUS ESC8000A-E12); the Dell R7425 (2S EPYC 7401, six memory-less nodes)
    is paired with the 2S EPYC 7601 lscpu for its socket count."""
    from gpuaudit.probes import firmware

    f = finding(
        firmware.PROBE,
        "firmware.numa_mode",
        numactl_h=(NUMACTL / "asus-esc8000a-e12-epyc9374f-2s-smt-off.txt").read_text(),
        lscpu_json=(LSCPU / "epyc-9374f-2s-smt-off-new-format.txt").read_text(),
    )
    assert f.severity.value == "ok" and "2 node(s), 2 socket(s)" in f.observed, f
    f = finding(
        firmware.PROBE,
        "firmware.numa_mode",
        numactl_h=(NUMACTL / "epyc-7401-dell-r7425-8nodes-memoryless-QUOTED.txt").read_text(),
        lscpu_json=(LSCPU / "epyc-7601-2s-8numa-interleaved.txt").read_text(),
    )
    assert f.severity.value == "warning" and "memory-less" in f.observed, f


LSPCI = FX / "system" / "lspci-vvv"


def test_bar1_from_lspci_when_nvidia_smi_q_was_not_read():
    """Before: unknown "smi_q_memory: ..." although lspci -vvv shows the 128 GB / 64 GB region."""
    from gpuaudit.probes import firmware

    h100 = (LSPCI / "hpe-xd665-h100-sxm5-no-driver-bound-rebar-128g.txt").read_text()
    f = finding(firmware.PROBE, "firmware.bar1_large_bar", lspci_vvv=h100)
    assert f.severity.value == "ok" and "131072 MiB" in f.observed, f
    ada = (LSPCI / "rtx6000ada-esc8000a-idle-2.5gt-downgraded.txt").read_text()
    f = finding(firmware.PROBE, "firmware.bar1_large_bar", lspci_vvv=ada)
    assert f.severity.value == "ok" and "65536 MiB" in f.observed, f


NVLINK_FX = FX / "nvlink"
SMI_DOWN = (FX / "nvidia" / "nvidia-smi" / "err-couldnt-communicate-460.txt").read_text()


def test_nvswitch_count_from_lspci_when_nvidia_smi_cannot_name_the_gpus():
    """Before: unknown "GPU models unknown: ..." although lspci lists the H100 NVSwitch functions."""
    from gpuaudit.probes import nvlink

    four = (NVLINK_FX / "lspci-nvswitch-h100-openshift-4.txt").read_text()
    f = finding(
        nvlink.PROBE, "nvlink.fabric_nvswitch_inventory", nvlink_s=SMI_DOWN, lspci_nvswitch=four
    )
    assert f.severity.value == "ok" and "4 NVSwitch PCI functions" in f.observed, f
    three = (NVLINK_FX / "lspci-nvswitch-h100-rhel-blog-3-of-4.txt").read_text()
    f = finding(
        nvlink.PROBE, "nvlink.fabric_nvswitch_inventory", nvlink_s=SMI_DOWN, lspci_nvswitch=three
    )
    assert f.severity.value == "critical" and f.expected.startswith("4"), f


DMESG = FX / "nvidia" / "dmesg-xid"
SMI = FX / "nvidia" / "nvidia-smi"


def test_gpu_health_from_a_kernel_log_init_failure():
    """Before: unknown "GPU state not readable: nvidia-smi: ..." although the kernel log names the GPU that failed
    to initialise (RTX 5090 with ReBAR off, open-gpu-kernel-modules#862; RTX 5080 after Xid 79, #1151)."""
    from gpuaudit.probes import driver

    cases = (
        (
            "rtx5090-rminitadapter-failed-rebar-off.txt",
            "err-no-devices-found-rtx5090.txt",
            "0000:01:00.0",
        ),
        (
            "rminitadapter-failed-0x22-0x56-894-journal-rtx5080.txt",
            "err-couldnt-communicate-460.txt",
            "0000:09:00.0",
        ),
    )
    for log, smi, bus in cases:
        text = (SMI / smi).read_text()
        f = finding(
            driver.PROBE,
            "driver.gpu_health",
            dmesg_nvrm=(DMESG / log).read_text(),
            smi_table=text,
            smi_query_driver=text,
            smi_q_xml=text,
        )
        assert f.severity.value == "critical", (log, f)
        assert bus in f.observed and "failed to initialise" in f.observed


# --- class 5: the XML fallback reads the maximum SM clock ---------------------------------------------


def test_the_xml_fallback_reads_max_and_application_sm_clocks():
    """Before: unknown "clocks.max.sm [N/A]" with only `nvidia-smi -q -x` (its <max_clocks><sm_clock> unread)."""
    from gpuaudit.probes import power

    for sample, sm_max in (
        ("telegraf-a100-sxm4-v12.xml", 1410),
        ("telegraf-rtx-3080-v13.xml", 2100),
    ):
        f = finding(power.PROBE, "power.gpu_locked_clocks", smi_q_xml=(XML / sample).read_text())
        assert f.severity.value == "ok", (sample, f)
        facts = power.extract(
            {"smi_q_xml": partial(hw.rec, "power")("smi_q_xml", (XML / sample).read_text())}, "host"
        )
        assert facts.gpus[0].sm_max_mhz == sm_max


def test_gpu_architecture_of_boards_missing_from_the_name_table():
    """Before: unknown "GPU architecture unknown" for a GTX 1080 (R460) and a Quadro P2000 (R418): their drivers
    predate the compute_cap query, the XML names no architecture, and the name table had no Pascal board. And a
    Volta board on R590 (the case study's driver) is critical: R580 is the last branch for Maxwell/Pascal/Volta."""
    from gpuaudit.probes import driver

    for sample in ("a0s-2x-gtx1080-460-v11.xml", "a0s-quadro-p2000-418-v10.xml"):
        f = finding(driver.PROBE, "driver.min_for_arch", smi_q_xml=(XML / sample).read_text())
        assert f.severity.value == "ok" and "on Pascal" in f.observed, (sample, f)
    v100 = (SMI / "v100-sxm2-580-exclusive-process.txt").read_text()
    f = finding(driver.PROBE, "driver.min_for_arch", smi_table=v100)
    assert f.severity.value == "ok" and "on Volta" in f.observed, f
    r590 = (FX / "driver-lifecycle" / "r590-open-590.48.01-case-study.txt").read_text()
    f = finding(driver.PROBE, "driver.min_for_arch", smi_table=v100, proc_driver_version=r590)
    assert f.severity.value == "critical" and "R580" in f.expected, f
