"""Driver probe: rule table over facts, extraction on real outputs, the case study end to end, health classes."""

from __future__ import annotations

import shutil
from functools import partial
from pathlib import Path

import hw_helpers as hw
import pytest
from gpuaudit.probes import driver
from gpuaudit.probes.core.judge.checks import judge_checks
from gpuaudit.probes.core.models import CommandRecord, Finding
from gpuaudit.probes.driver import DriverFacts, GpuState

rec = partial(hw.rec, "driver")
run = partial(hw.run, driver.PROBE)


ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "snapshots" / "examples" / "case-study"
FIX = ROOT / "tests" / "fixtures" / "nvidia"
PRO = "NVIDIA RTX PRO 6000 Blackwell Server Edition"


def answered(roles) -> dict:
    """Every source of the probe answered (empty output) on each role: the framework's gates pass."""
    return {
        r: {
            c.id: CommandRecord(
                target=r, probe_id="driver", command_id=c.id, command=c.shell, exit_status=0
            )
            for c in driver.PROBE.commands_for(r)
        }
        for r in roles
    }


def findings(facts, outputs=None) -> list[Finding]:
    facts = facts if isinstance(facts, dict) else {"host": facts}
    return list(judge_checks(driver.CHECKS, facts, outputs or answered(facts)))


def sev(facts, fid: str) -> str:
    found = [f for f in findings(facts) if f.id == fid]
    assert len(found) == 1, (fid, [f.id for f in findings(facts)])
    return found[0].severity.value


def judged(outputs: dict) -> dict[str, Finding]:
    """Extract and judge raw records of the host: check id -> finding."""
    facts = {"host": driver.extract(outputs, "host")}
    return {f.id: f for f in judge_checks(driver.CHECKS, facts, {"host": outputs})}


def gpu(i=0, name=PRO, **kw) -> GpuState:
    base = dict(
        index=i,
        name=name,
        compute_cap="12.0",
        driver_version="590.48.01",
        persistence="Enabled",
        compute_mode="Default",
        mig_mode="Disabled",
        ecc_mode="Enabled",
        ecc_uncorrected=0,
        remap_pending="No",
        remap_failure="No",
    )
    return GpuState(**{**base, **kw})


def host(**kw) -> DriverFacts:
    base = dict(
        module_version="590.48.01",
        module_open=True,
        module_loaded=True,
        smi_driver_version="590.48.01",
        cuda_version="13.1",
        gpus=[gpu(i) for i in range(8)],
        gpu_source="smi_query_driver",
        modinfo_version="590.48.01",
        modinfo_license="Dual MIT/GPL",
        modinfo_vermagic="6.8.12-9-pve",
        kernel_release="6.8.12-9-pve",
        kernel_log_read=True,
        persistenced="active",
        modprobe_read=True,
        libs_read=True,
        libcuda=[("/usr/lib/x86_64-linux-gnu/libcuda.so.590.48.01", "590.48.01")],
        libnvml=[("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.590.48.01", "590.48.01")],
    )
    return DriverFacts(**{**base, **kw})


CASES = [
    # version_flavor
    ("driver.version_flavor", {}, "ok"),
    ("driver.version_flavor", {"module_open": False}, "warning"),  # Blackwell + proprietary
    (
        "driver.version_flavor",
        {"module_open": False, "gpus": [gpu(name="NVIDIA A100-SXM4-80GB", compute_cap="8.0")]},
        "info",
    ),
    ("driver.version_flavor", {"gpus": [gpu(driver_version="590.44.01")]}, "critical"),
    (
        "driver.version_flavor",
        {
            "module_version": None,
            "smi_driver_version": None,
            "gpus": [],
            "module_open": None,
            "modinfo_license": None,
        },
        "unknown",
    ),
    # min_for_arch: boundary R570 for Blackwell
    (
        "driver.min_for_arch",
        {
            "module_version": "570.86.15",
            "smi_driver_version": None,
            "gpus": [gpu(driver_version="570.86.15")],
        },
        "ok",
    ),
    (
        "driver.min_for_arch",
        {
            "module_version": "565.57.01",
            "smi_driver_version": None,
            "gpus": [gpu(driver_version="565.57.01")],
        },
        "critical",
    ),
    (
        "driver.min_for_arch",
        {
            "gpus": [gpu(name="NVIDIA H100 80GB HBM3", compute_cap="9.0")],
            "module_version": "515.65.01",
            "smi_driver_version": None,
        },
        "critical",
    ),
    (
        "driver.min_for_arch",
        {
            "module_version": "470.256.02",
            "smi_driver_version": None,
            "gpus": [
                gpu(name="Tesla V100-SXM2-16GB", compute_cap="7.0", driver_version="470.256.02")
            ],
        },
        "ok",
    ),
    ("driver.min_for_arch", {"gpus": []}, "unknown"),
    # persistence
    ("driver.persistence", {}, "ok"),
    ("driver.persistence", {"gpus": [gpu(0), gpu(1, persistence="Disabled")]}, "warning"),
    ("driver.persistence", {"gpus": [gpu(0, persistence="On")]}, "ok"),
    ("driver.persistence", {"gpus": [], "smi_error": "No devices were found"}, "unknown"),
    # xid_history
    ("driver.xid_history", {}, "ok"),
    ("driver.xid_history", {"xids": [("0000:01:00", 79)]}, "critical"),
    ("driver.xid_history", {"xids": [("0000:01:00", 63)]}, "warning"),
    ("driver.xid_history", {"xids": [("0000:01:00", 31)] * 4}, "info"),
    ("driver.xid_history", {"xids": [("0000:01:00", 31)] * 5}, "warning"),  # recurring boundary
    ("driver.xid_history", {"nvrm_problems": ["GPU has fallen off the bus"]}, "critical"),
    (
        "driver.xid_history",
        {"kernel_log_read": False, "problems": {"dmesg_nvrm": "needs root"}},
        "unknown",
    ),
    # ecc_rowremap
    ("driver.ecc_rowremap", {}, "ok"),
    ("driver.ecc_rowremap", {"gpus": [gpu(remap_failure="Yes")]}, "critical"),
    ("driver.ecc_rowremap", {"gpus": [gpu(ecc_uncorrected=2)]}, "critical"),
    ("driver.ecc_rowremap", {"gpus": [gpu(remap_pending="Yes")]}, "warning"),
    (
        "driver.ecc_rowremap",
        {"gpus": [gpu(ecc_mode="Disabled")]},
        "info",
    ),  # workstation GDDR: policy
    (
        "driver.ecc_rowremap",
        {"gpus": [gpu(name="NVIDIA H100 80GB HBM3", ecc_mode="Disabled")]},
        "warning",
    ),
    (
        "driver.ecc_rowremap",
        {
            "gpus": [
                gpu(
                    name="NVIDIA GeForce RTX 4090",
                    ecc_mode=None,
                    remap_pending=None,
                    remap_failure=None,
                )
            ]
        },
        "ok",
    ),
    ("driver.ecc_rowremap", {"gpus": []}, "unknown"),
    (
        "driver.ecc_rowremap",
        {
            "gpus": [
                gpu(
                    remap_pending=None,
                    remap_failure=None,
                    unreadable=["remapped_rows.pending", "remapped_rows.failure"],
                )
            ]
        },
        "unknown",
    ),
    (
        "driver.ecc_rowremap",
        {
            "gpus": [
                gpu(
                    name="NVIDIA GeForce RTX 4090",
                    ecc_mode=None,
                    remap_pending=None,
                    remap_failure=None,
                )
            ],
            "gpu_source": "smi_table",
        },
        "unknown",
    ),  # nothing read
    # mig_mode
    ("driver.mig_mode", {}, "ok"),
    ("driver.mig_mode", {"gpus": [gpu(mig_mode="Enabled")]}, "critical"),
    ("driver.mig_mode", {"gpus": [gpu(mig_mode=None)]}, "n/a"),
    ("driver.mig_mode", {"gpus": []}, "unknown"),
    ("driver.mig_mode", {"gpus": [gpu(mig_mode=None, unreadable=["mig.mode.current"])]}, "unknown"),
    # compute_mode
    ("driver.compute_mode", {}, "ok"),
    ("driver.compute_mode", {"gpus": [gpu(compute_mode="Exclusive_Process")]}, "info"),
    ("driver.compute_mode", {"gpus": [gpu(compute_mode="Prohibited")]}, "critical"),
    ("driver.compute_mode", {"gpus": []}, "unknown"),
    # dkms_kernel_match
    ("driver.dkms_kernel_match", {}, "ok"),
    ("driver.dkms_kernel_match", {"kernel_release": "6.14.11-2-pve"}, "critical"),
    ("driver.dkms_kernel_match", {"module_loaded": False, "module_version": None}, "critical"),
    ("driver.dkms_kernel_match", {"modinfo_missing": True, "modinfo_vermagic": None}, "critical"),
    ("driver.dkms_kernel_match", {"modinfo_version": "590.48.07"}, "warning"),
    ("driver.dkms_kernel_match", {"dkms": [("590.48.01", "6.8.12-9-pve", "built")]}, "warning"),
    (
        "driver.dkms_kernel_match",
        {"module_loaded": None, "modinfo_vermagic": None, "kernel_release": None},
        "unknown",
    ),
    # module_params
    ("driver.module_params", {}, "ok"),
    (
        "driver.module_params",
        {"modprobe_options": {"NVreg_DynamicPowerManagement": "0x02"}},
        "info",
    ),
    (
        "driver.module_params",
        {"modprobe_read": False, "problems": {"nvidia_modprobe_opts": "exit 2"}},
        "unknown",
    ),
    # userspace_match / compat (host only: the host's own libraries)
    ("driver.userspace_match", {}, "ok"),
    (
        "driver.userspace_match",
        {"libcuda": [("/usr/lib/libcuda.so.580.95.05", "580.95.05")]},
        "critical",
    ),
    ("driver.cuda_compat_libs", {}, "ok"),
    (
        "driver.cuda_compat_libs",
        {"libcuda": [("/usr/local/cuda-13.0/compat/libcuda.so.580.65.06", "580.65.06")]},
        "warning",
    ),
    (
        "driver.cuda_compat_libs",
        {"libs_read": False, "problems": {"nvidia_lib_files": "timed out"}},
        "unknown",
    ),
    # gpu_health
    ("driver.gpu_health", {}, "ok"),
    (
        "driver.gpu_health",
        {
            "handle_failures": [
                {
                    "bus_id": "0000:02:00.0",
                    "reason": "GPU is lost",
                    "lost": True,
                    "command_id": "smi_table",
                }
            ]
        },
        "critical",
    ),
    ("driver.gpu_health", {"smi_hung": ["smi_q_xml"]}, "critical"),
    (
        "driver.gpu_health",
        {"gpus": [], "smi_error": "No devices were found", "smi_error_kind": "no_devices"},
        "critical",
    ),
    ("driver.gpu_health", {"gpus": [gpu(sensor_errors=["fan"])]}, "warning"),
    (
        "driver.gpu_health",
        {
            "gpus": [],
            "smi_error": "Failed to initialize NVML: Driver/library version mismatch",
            "smi_error_kind": "driver_library_mismatch",
        },
        "unknown",
    ),
    ("driver.gpu_health", {"gpus": []}, "unknown"),
    # mig pending
    ("driver.mig_mode", {"gpus": [gpu(mig_pending="Enabled")]}, "warning"),
]


@pytest.mark.parametrize(
    "fid,changes,expected", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_rule_table(fid, changes, expected):
    assert sev({"host": host(**changes)}, fid) == expected


CROSS = [
    ({}, "ok"),
    (
        {
            "smi_error": "Failed to initialize NVML: Driver/library version mismatch",
            "smi_error_kind": "driver_library_mismatch",
            "gpus": [],
        },
        "critical",
    ),
    ({"libcuda": [("/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05", "580.95.05")]}, "critical"),
    (
        {"libcuda": [], "libnvml": []},
        "ok",
    ),  # nvidia-smi works in the container: NVML loaded without mismatch
    ({"libcuda": [], "libnvml": [], "gpus": [], "smi_error": "nvidia-smi missing"}, "unknown"),
]


@pytest.mark.parametrize("ctr_changes,expected", CROSS)
def test_userspace_match_cross(ctr_changes, expected):
    assert (
        sev({"host": host(), "container": host(**ctr_changes)}, "driver.userspace_match")
        == expected
    )


@pytest.mark.parametrize(
    "ctr_changes,expected",
    [({}, "ok"), ({"gpus": [gpu(persistence="Disabled")]}, "warning"), ({"gpus": []}, "unknown")],
)
def test_persistence_host_vs_container(ctr_changes, expected):
    assert (
        sev(
            {"host": host(), "container": host(**ctr_changes)},
            "driver.persistence_host_vs_container",
        )
        == expected
    )


def test_arch_and_names():
    assert driver.gpu_arch("12.0", None) == "Blackwell" and driver.gpu_arch("8.9", None) == "Ada"
    assert driver.gpu_arch(None, "NVIDIA RTX PRO 6000 Blac...") == "Blackwell"
    assert driver.gpu_arch(None, "NVIDIA H100 80GB HBM3") == "Hopper"
    assert (
        driver.short_name("NVIDIA RTX PRO 6000 Blac...") == "RTX PRO 6000" == driver.short_name(PRO)
    )


def test_extract_real_outputs():
    out = {
        "smi_table": rec(
            "smi_table", (FIX / "nvidia-smi" / "h100-sxm-hgx-8gpu-565.txt").read_text()
        ),
        "proc_driver_version": rec(
            "proc_driver_version",
            (FIX / "proc-driver-nvidia-version" / "open-565.57.01-ubuntu24.04.txt").read_text(),
        ),
        "dmesg_nvrm": rec(
            "dmesg_nvrm",
            (FIX / "dmesg-xid" / "xid31-mmu-fault-then-xid62-xid45-cascade.txt").read_text(),
        ),
    }
    f = driver.extract(out, "host")
    assert (f.module_version, f.module_open, f.cuda_version, len(f.gpus), f.gpu_source) == (
        "565.57.01",
        True,
        "12.7",
        8,
        "smi_table",
    )
    assert f.gpus[0].ecc_mode == "Enabled" and f.gpus[0].mig_mode == "Disabled"
    assert [c for _, c in f.xids][:3] == [31, 62, 45]
    assert sev({"host": f}, "driver.xid_history") == "warning"  # Xid 62
    assert sev({"host": f}, "driver.min_for_arch") == "ok"
    assert sev({"host": f}, "driver.gpu_health") == "ok"


@pytest.mark.parametrize(
    "name,fid,expected",
    [
        ("err-driver-library-mismatch-570.txt", "driver.userspace_match", "critical"),
        ("err-couldnt-communicate-460.txt", "driver.dkms_kernel_match", "critical"),
        ("err-no-devices-found-rtx5090.txt", "driver.persistence", "unknown"),
    ],
)
def test_extract_error_banners(name, fid, expected):
    text = (FIX / "nvidia-smi" / name).read_text()
    out = {
        "smi_table": rec("smi_table", text, exit_status=9 if "mismatch" in text else 0),
        "smi_query_driver": rec("smi_query_driver", text, exit_status=9),
    }
    f = driver.extract(out, "host")
    assert f.smi_error and f.gpus == []
    assert sev({"host": f}, fid) == expected


def test_extract_dmesg_denied_is_unknown():
    out = {
        "dmesg_nvrm": rec(
            "dmesg_nvrm", "", 0, "dmesg: read kernel buffer failed: Operation not permitted\n"
        )
    }
    assert sev({"host": driver.extract(out, "host")}, "driver.xid_history") == "unknown"


# ---------------------------------------------------------------- end to end through the replay path


@pytest.mark.parametrize("phase", ["before", "after"])
def test_case_study_end_to_end(phase):
    r = run(CASE / phase)
    assert r.status == "done", r.error
    sevs = {f.id: f.severity.value for f in r.findings}
    assert all(s in ("ok", "info") for s in sevs.values()), sevs
    for fid in (
        "driver.version_flavor",
        "driver.persistence",
        "driver.xid_history",
        "driver.userspace_match",
        "driver.dkms_kernel_match",
        "driver.min_for_arch",
        "driver.persistence_host_vs_container",
    ):
        assert sevs[fid] == "ok", fid
    assert r.summary == "590.48.01 open · CUDA 13.1 · 8× RTX PRO 6000"


@pytest.mark.parametrize("phase", ["before", "after"])
def test_case_study_kernel_matches_modinfo(phase):
    uname = CASE / phase / "host" / "uname_r.out"
    if uname.exists():  # written by the kernel probe's owner; both must name the same kernel
        assert (
            uname.read_text().strip() in (CASE / phase / "host" / "modinfo_nvidia.out").read_text()
        )


def test_broken_container_mismatch(tmp_path):
    shutil.copytree(CASE / "before", tmp_path / "broken")
    ctr = tmp_path / "broken" / "container"
    banner = (FIX / "nvidia-smi" / "err-driver-library-mismatch-570.txt").read_text()
    for cid in ("smi_table", "smi_query_driver"):
        (ctr / f"{cid}.out").write_text(banner)
        (ctr / f"{cid}.exit").write_text("18\n")
    (ctr / "nvidia_lib_files.out").write_text(
        "/usr/lib/x86_64-linux-gnu/libcuda.so.570.124.06\n"
        "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.570.124.06\n"
    )
    r = run(tmp_path / "broken")
    sevs = {f.id: f.severity.value for f in r.findings}
    assert sevs["driver.userspace_match"] == "critical"
    assert sevs["driver.persistence_host_vs_container"] == "unknown"
    assert sevs["driver.persistence"] == "ok"  # the host itself is fine
    um = next(f for f in r.findings if f.id == "driver.userspace_match")
    assert "mismatch" in um.observed and "590.48.01" in um.observed and "570.124" in um.observed


def test_persistence_host_vs_container_needs_both_targets():
    assert "driver.persistence_host_vs_container" not in {f.id for f in findings(host())}


def test_one_finding_per_check_and_target_set():
    ids = [f.id for f in findings({"host": host(), "container": host()})]
    assert sorted(ids) == sorted(c.id for c in driver.CHECKS) and len(ids) == len(set(ids))


def test_gpu_less_machine_is_never_ok_for_data(tmp_path):
    for role in ("host", "container"):
        (tmp_path / role).mkdir()  # no files: every command "not found" (exit 127)
    r = run(tmp_path)
    assert r.status == "done", r.error
    sevs = {f.id: f.severity.value for f in r.findings}
    for fid in (
        "driver.version_flavor",
        "driver.min_for_arch",
        "driver.persistence",
        "driver.xid_history",
        "driver.ecc_rowremap",
        "driver.mig_mode",
        "driver.compute_mode",
        "driver.dkms_kernel_match",
        "driver.module_params",
        "driver.userspace_match",
        "driver.persistence_host_vs_container",
        "driver.cuda_compat_libs",
    ):
        assert sevs[fid] == "unknown", (fid, sevs[fid])
    assert sevs["driver.gpu_health"] == "unknown"


def test_no_driver_installed_is_unknown_but_installed_not_loaded_is_critical(tmp_path):
    h = tmp_path / "host"
    h.mkdir()
    (h / "proc_driver_version.err").write_text(
        "cat: /proc/driver/nvidia/version: No such file or directory\n"
    )
    (h / "proc_driver_version.exit").write_text("1\n")
    sevs = {f.id: f.severity.value for f in run(tmp_path).findings}
    assert sevs["driver.dkms_kernel_match"] == "unknown"  # no nvidia-smi either: nothing installed
    (h / "smi_table.out").write_text(
        (FIX / "nvidia-smi" / "err-couldnt-communicate-460.txt").read_text()
    )
    (h / "smi_table.exit").write_text("9\n")
    sevs = {f.id: f.severity.value for f in run(tmp_path).findings}
    assert sevs["driver.dkms_kernel_match"] == "critical"


def test_error_tokens_are_not_read_as_not_supported():
    fields = (
        "0, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 9.0, 565.57.01, Enabled, Default, [Unknown Error],"
        " [Insufficient Permissions], [GPU is lost], [Unknown Error], [Unknown Error]\n"
    )
    f = driver.extract({"smi_query_driver": rec("smi_query_driver", fields)}, "host")
    assert f.gpus[0].mig_mode is None and "mig.mode.current" in f.gpus[0].unreadable
    assert (
        sev({"host": f}, "driver.mig_mode") == "unknown"
        and sev({"host": f}, "driver.ecc_rowremap") == "unknown"
    )
    na = (
        fields.replace("[Unknown Error]", "[N/A]")
        .replace("[Insufficient Permissions]", "[N/A]")
        .replace("[GPU is lost]", "[N/A]")
    )
    f = driver.extract({"smi_query_driver": rec("smi_query_driver", na)}, "host")
    assert f.gpus[0].unreadable == []
    assert (
        sev({"host": f}, "driver.mig_mode") == "n/a"  # [N/A]: MIG not supported
        # an H100 remaps rows: [N/A] there says nothing about pending remaps (issue 24)
        and sev({"host": f}, "driver.ecc_rowremap") == "unknown"
    )
