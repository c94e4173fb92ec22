"""Issue 12 classes on real samples through extract + the framework: lost GPU, hung nvidia-smi, no devices with the
module loaded, ERR! cells, E. Process, the MIG table's ECC "On", XML as the primary per-GPU source, a host without
NVIDIA hardware. Each test failed on the previous release (noted per test)."""

from __future__ import annotations

from pathlib import Path

from gpuaudit.probes import driver
from gpuaudit.probes.core.judge.checks import judge_checks
from gpuaudit.probes.core.models import CommandRecord, Finding

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "nvidia"
PROC = (FIX / "proc-driver-nvidia-version" / "open-565.57.01-ubuntu24.04.txt").read_text()


def rec(
    cid: str, stdout: str = "", exit_status: int | None = 0, stderr: str = "", **kw
) -> CommandRecord:
    return CommandRecord(
        target="host",
        probe_id="driver",
        command_id=cid,
        command=cid,
        exit_status=exit_status,
        stdout=stdout,
        stderr=stderr,
        **kw,
    )


def judged(**records: CommandRecord) -> dict[str, Finding]:
    outputs = {"proc_driver_version": rec("proc_driver_version", PROC), **records}
    facts = {"host": driver.extract(outputs, "host")}
    return {f.id: f for f in judge_checks(driver.CHECKS, facts, {"host": outputs})}


def severities(found: dict[str, Finding]) -> dict[str, str]:
    return {k: f.severity.value for k, f in found.items()}


def test_lost_gpu_is_one_critical_naming_the_bus_id():
    # before: no check judged the banner (driver findings unknown/ok, no critical)
    banner = (FIX / "nvidia-smi" / "err-gpu-lost-device-handle-owod.txt").read_text()
    found = judged(
        smi_table=rec("smi_table", banner, 15), smi_query_driver=rec("smi_query_driver", banner, 15)
    )
    crit = [f for f in found.values() if f.severity.value == "critical"]
    assert [f.id for f in crit] == ["driver.gpu_health"]
    f = crit[0]
    assert (
        "0000:02:00.0" in f.observed and "GPU is lost" in f.observed and "0000:02:00.0" in f.title
    )
    assert "Xid 79" in f.fix and "reboot" in f.fix.lower() and "seating" in f.fix
    assert {"persistence", "mig_mode", "compute_mode", "ecc_rowremap"} <= {
        k.split(".")[1] for k, v in found.items() if v.severity.value == "unknown"
    }


def test_lost_gpu_windows_wrapped_and_unknown_error_banners():
    for name, bus in [
        ("err-gpu-lost-device-handle-windows-console-wrapped.txt", "0000:03:00.0"),
        ("err-unknown-error-device-handle-2024.txt", "0000:07:00.0"),
        ("err-unknown-error-device-handle-2015.txt", "0000:0b:00.0"),
    ]:
        text = (FIX / "nvidia-smi" / name).read_text()
        f = judged(smi_table=rec("smi_table", text, 15))["driver.gpu_health"]
        assert f.severity.value == "critical" and bus.lower() in f.observed.lower(), (
            name,
            f.observed,
        )


def test_lost_gpu_query_cell_is_critical():
    row = (
        "0, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 9.0, 565.57.01, Enabled, Default, [GPU is lost],"
        " [GPU is lost], [GPU is lost], [GPU is lost], [GPU is lost]\n"
    )
    f = judged(smi_query_driver=rec("smi_query_driver", row))["driver.gpu_health"]
    assert f.severity.value == "critical" and "00000000:18:00.0" in f.observed


def test_hung_nvidia_smi_is_critical():
    # before: a timed-out nvidia-smi made every GPU check unknown, nothing critical
    found = judged(
        smi_table=rec("smi_table", "", None, timed_out=True),
        smi_q_xml=rec("smi_q_xml", "", None, timed_out=True),
    )
    assert found["driver.gpu_health"].severity.value == "critical"
    assert "hung" in found["driver.gpu_health"].observed


def test_no_devices_with_the_module_loaded_is_critical():
    # before: driver.persistence etc. unknown, dkms_kernel_match ok, nothing critical
    text = (FIX / "nvidia-smi" / "err-no-devices-found-rtx5090.txt").read_text()
    sysfs = "/sys/bus/pci/devices/0000:01:00.0/vendor\n/sys/bus/pci/devices/0000:01:00.1/vendor\n"
    found = judged(
        smi_table=rec("smi_table", text, 6), pci_nvidia_sysfs=rec("pci_nvidia_sysfs", sysfs)
    )
    f = found["driver.gpu_health"]
    assert (
        f.severity.value == "critical"
        and "0000:01:00.0" in f.observed
        and "565.57.01" in f.observed
    )


def test_err_cells_are_reported():
    # before: ERR! cells were dropped; every driver check ok
    text = (FIX / "nvidia-smi" / "rtx4000ada-err-fan-gpu14-fragment.txt").read_text()
    f = judged(smi_table=rec("smi_table", text))["driver.gpu_health"]
    assert f.severity.value == "warning" and "GPU14 fan" in f.observed


def test_e_process_is_exclusive_info():
    # before: compute_mode read "Process" -> ok
    for name in ("v100-sxm2-580-exclusive-process.txt", "t4-530-exclusive-process-mps.txt"):
        f = judged(smi_table=rec("smi_table", (FIX / "nvidia-smi" / name).read_text()))[
            "driver.compute_mode"
        ]
        assert f.severity.value == "info" and "Exclusive_Process" in f.observed


def test_mig_table_ecc_on_is_read():
    # before: "ECC not supported/not reported" -> unknown
    text = (
        FIX / "nvidia-smi" / "rtx-pro-6000-server-610-kmd-umd-header-mig-in-k8s-pod.txt"
    ).read_text()
    found = judged(smi_table=rec("smi_table", text))
    assert found["driver.ecc_rowremap"].observed.startswith("ECC enabled")
    assert found["driver.mig_mode"].severity.value == "critical"


def test_xml_is_the_primary_per_gpu_source():
    xml = (FIX / "nvidia-smi-q-x" / "netdata-a100-sxm4-mig.xml").read_text()
    csv = "0, NVIDIA A100-SXM4-40GB, 00000000:00:04.0, 8.0, 510.47.03, Disabled, Default, Enabled, Enabled, [N/A], No, No\n"
    found = judged(smi_q_xml=rec("smi_q_xml", xml), smi_query_driver=rec("smi_query_driver", csv))
    f = driver.extract(
        {"smi_q_xml": rec("smi_q_xml", xml), "smi_query_driver": rec("smi_query_driver", csv)},
        "host",
    )
    assert (
        f.gpu_source == "smi_q_xml"
        and f.gpus[0].compute_cap == "8.0"
        and f.gpus[0].mig_pending == "Enabled"
    )
    assert found["driver.mig_mode"].severity.value == "critical"
    assert any(e.command_id == "smi_q_xml" for e in found["driver.mig_mode"].evidence)
    assert found["driver.persistence"].severity.value == "warning"
    ws = (FIX / "nvidia-smi-q-x" / "telegraf-rtx-4000-sff-ada-v13.xml").read_text()
    found = judged(smi_q_xml=rec("smi_q_xml", ws))
    assert (
        found["driver.ecc_rowremap"].severity.value == "info"
    )  # GDDR workstation card, ECC off by policy
    assert found["driver.min_for_arch"].severity.value == "ok"  # Ada from <product_architecture>
    assert found["driver.gpu_health"].severity.value == "ok"


def test_unparseable_xml_falls_back_to_the_table():
    table = (FIX / "nvidia-smi" / "h100-sxm-hgx-8gpu-565.txt").read_text()
    f = driver.extract(
        {
            "smi_q_xml": rec("smi_q_xml", "<nvidia_smi_log><gpu"),
            "smi_table": rec("smi_table", table),
        },
        "host",
    )
    assert f.gpu_source == "smi_table" and len(f.gpus) == 8 and "smi_q_xml" in f.problems


def test_host_without_nvidia_hardware():
    # before: every check unknown "tool not installed" without naming the tool
    outputs = {
        "proc_driver_version": rec(
            "proc_driver_version",
            "",
            1,
            "cat: /proc/driver/nvidia/version: No such file or directory\n",
        ),
        "pci_nvidia_sysfs": rec("pci_nvidia_sysfs", "", 1),
        "smi_table": rec("smi_table", "", 127, "sh: 1: nvidia-smi: not found\n"),
    }
    facts = {"host": driver.extract(outputs, "host")}
    found = {f.id: f for f in judge_checks(driver.CHECKS, facts, {"host": outputs})}
    flavour = found.pop("driver.version_flavor")
    assert (
        flavour.severity.value == "n/a"
        and "no NVIDIA GPU or driver on this host" in flavour.observed
    )
    assert all(
        f.severity.value == "n/a" and f.observed.startswith("no NVIDIA GPU") for f in found.values()
    ), {k: f.observed for k, f in found.items()}
    assert driver.summarize(facts) == "no NVIDIA GPU or driver on this host"


def test_xml_recovery_action_is_critical():
    # a real R595 capture (RTX 4000 Ada) with <gpu_recovery_action> set the way nvidia_gpu_exporter issue #393's
    # ERR! GPU reported it ("GPU Recovery Action : Reset"); the unmodified capture says None and is ok
    text = (FIX / "nvidia-smi-q-x" / "telegraf-rtx-4000-sff-ada-v13.xml").read_text()
    assert judged(smi_q_xml=rec("smi_q_xml", text))["driver.gpu_health"].severity.value == "ok"
    bad = text.replace(
        "<gpu_recovery_action>None</gpu_recovery_action>",
        "<gpu_recovery_action>Reset</gpu_recovery_action>",
    )
    f = judged(smi_q_xml=rec("smi_q_xml", bad))["driver.gpu_health"]
    assert f.severity.value == "critical" and "00000000:06:00.0 Reset" in f.observed


def test_xml_sram_uncorrectable_counts():
    text = (FIX / "nvidia-smi-q-x" / "telegraf-a100-sxm4-v12.xml").read_text()
    # MIG A100 of R535: volatile DRAM 0 and SRAM 0 -> 0 uncorrectable
    f = driver.extract({"smi_q_xml": rec("smi_q_xml", text)}, "host")
    assert f.gpus[0].ecc_uncorrected == 0


def test_gpu_fallen_off_the_bus_and_missing_from_nvidia_smi_is_critical():
    # the kernel log names 0000:b3:00.0 (570 open module, three-line message); nvidia-smi lists another GPU only
    dmesg = (FIX / "dmesg-xid" / "fallen-off-bus-570-open-multiline-no-xid.txt").read_text()
    table = (FIX / "nvidia-smi" / "rtx5090-570-single.txt").read_text()
    found = judged(dmesg_nvrm=rec("dmesg_nvrm", dmesg), smi_table=rec("smi_table", table))
    f = found["driver.gpu_health"]
    assert f.severity.value == "critical" and "0000:b3:00" in f.observed
    assert (
        found["driver.xid_history"].severity.value == "critical"
    )  # the history check says it too, as before


def test_fallen_off_bus_parser():
    from gpuaudit.probes.core.parsers.nvidia_misc import parse_fallen_off_bus

    assert parse_fallen_off_bus(
        (FIX / "dmesg-xid" / "fallen-off-bus-old-2014.txt").read_text()
    ) == ["0000:01:00"]
    assert (
        parse_fallen_off_bus((FIX / "dmesg-xid" / "xid63-row-remapper-a100.txt").read_text()) == []
    )


def test_hung_nvidia_smi_through_the_replay_path(tmp_path):
    import shutil
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    import hw_helpers as hw

    case = Path(__file__).resolve().parents[2] / "snapshots" / "examples" / "case-study" / "after"
    shutil.copytree(case, tmp_path / "hung")
    for cid in ("smi_table", "smi_query_driver"):
        (tmp_path / "hung" / "host" / f"{cid}.out").write_text("")
        (tmp_path / "hung" / "host" / f"{cid}.exit").write_text("timeout\n")
    r = hw.run(driver.PROBE, tmp_path / "hung")
    sevs = {(f.id, tuple(f.targets)): f.severity.value for f in r.findings}
    assert sevs[("driver.gpu_health", ("host",))] == "critical"
    assert [k for k, v in sevs.items() if v == "critical"] == [("driver.gpu_health", ("host",))]


def test_unknown_names_the_missing_tool_and_its_package():
    # an NVIDIA GPU in sysfs, the module loaded, but no nvidia-smi (the driver's utilities package not installed)
    missing = {
        cid: rec(cid, "", 127, "sh: 1: nvidia-smi: not found\n")
        for cid in ("smi_table", "smi_query_driver", "smi_q_xml")
    }
    for cid, r in missing.items():
        missing[cid] = r.model_copy(
            update={
                "command": {
                    "smi_table": "nvidia-smi",
                    "smi_query_driver": "nvidia-smi --query-gpu=...",
                    "smi_q_xml": "nvidia-smi -q -x",
                }[cid]
            }
        )
    found = judged(**missing)
    for fid in (
        "driver.persistence",
        "driver.mig_mode",
        "driver.compute_mode",
        "driver.ecc_rowremap",
    ):
        f = found[fid]
        assert (
            f.severity.value == "unknown" and "nvidia-smi not installed (package" in f.observed
        ), (fid, f.observed)
    assert "nvidia-smi not installed (package" in found["driver.gpu_health"].observed


def test_nvidia_smi_hung_in_another_probe_is_critical():
    # the runner starts no nvidia-smi line after one timed out on the target (here the power probe's query)
    gated = "not run: nvidia-smi hung in smi_query_power (not started: it would wait out its timeout too)"
    found = judged(
        smi_table=rec("smi_table", "", None, error=gated),
        smi_query_driver=rec("smi_query_driver", "", None, error=gated),
    )
    f = found["driver.gpu_health"]
    assert f.severity.value == "critical" and "smi_query_power" in f.observed
