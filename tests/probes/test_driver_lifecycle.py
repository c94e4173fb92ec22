"""driver.branch_lifecycle (issue 24): the bundled, dated branch table judges real /proc/driver/nvidia/version
captures (tests/fixtures/driver-lifecycle/SOURCES.md): an end-of-life branch is a warning, a new-feature branch
info, a supported production/LTS branch ok, and a CUDA toolkit of a newer major than the driver serves (without the
forward-compatibility libcuda) critical. The audit date is pinned: verdicts on EOL depend on it."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from gpuaudit.probes import driver
from gpuaudit.probes.core.judge.probe import judge_probe
from gpuaudit.probes.core.models import CommandRecord
from gpuaudit.probes.driver import lifecycle
from gpuaudit.probes.driver.lifecycle_table import AS_OF, BRANCHES, SOURCES

FX = Path(__file__).parents[1] / "fixtures"
LIFE = FX / "driver-lifecycle"
NVCC13 = (
    FX / "nvidia" / "nvcc-version" / "cuda-13.0-V13.0.88-host-with-8x-rtx5060ti-580.txt"
).read_text()


def rec(role: str, cid: str, stdout: str) -> CommandRecord:
    return CommandRecord(
        target=role, probe_id="driver", command_id=cid, command=cid, exit_status=0, stdout=stdout
    )


LIBS = (
    Path(__file__).parents[2] / "snapshots/examples/case-study/before/host/nvidia_lib_files.out"
).read_text()  # a real listing: libcuda.so.590.48.01, no compat/ directory


def judge(proc: str, nvcc: str | None = None, libs: str | None = LIBS):
    records = {"host": [rec("host", "proc_driver_version", proc)]}
    if nvcc is not None:
        records["container"] = [
            rec("container", "proc_driver_version", proc),
            rec("container", "nvcc_version", nvcc),
        ] + ([rec("container", "nvidia_lib_files", libs)] if libs is not None else [])
    result = judge_probe(driver.PROBE, records)
    assert result.status == "done", result.error
    (f,) = [f for f in result.findings if f.id == "driver.branch_lifecycle"]
    return f


@pytest.fixture(autouse=True)
def audit_day(monkeypatch):
    monkeypatch.setattr(lifecycle, "TODAY", lambda: date(2026, 12, 3))


@pytest.mark.parametrize(
    ("fixture", "severity", "words"),
    [
        ("r535-proprietary-535.113.01.txt", "warning", "end of life June 2026"),
        (
            "r570-open-570.172.08.txt",
            "warning",
            "R570 production branch, end of life February 2026",
        ),
        ("r580-open-580.95.05.txt", "ok", "R580 long-term support branch, end of life June 2028"),
        ("r590-open-590.48.01-case-study.txt", "info", "R590 new feature branch"),
        ("r595-open-595.84.txt", "ok", "R595 production branch, end of life March 2027"),
    ],
)
def test_each_branch_of_the_issue(fixture, severity, words):
    f = judge((LIFE / fixture).read_text())
    assert f.severity.value == severity, f
    assert words in f.observed


def test_a_cuda_13_toolkit_on_an_r535_driver_without_compat_is_critical():
    f = judge((LIFE / "r535-proprietary-535.113.01.txt").read_text(), NVCC13)
    assert f.severity.value == "critical", f
    assert "CUDA 13.0" in f.observed and ">= 580.65.06" in f.expected


def test_the_same_toolkit_on_r580_is_judged_on_the_branch_alone():
    assert judge((LIFE / "r580-open-580.95.05.txt").read_text(), NVCC13).severity.value == "ok"


def test_the_table_is_dated_and_sourced():
    assert AS_OF.year >= 2026 and all(s.startswith("https://") for s in SOURCES)
    assert {535, 570, 580, 590, 595} <= set(BRANCHES)


def test_a_newer_toolkit_with_the_library_listing_unread_is_unknown_not_critical():
    """No nvidia_lib_files record: nothing says the forward-compatibility libcuda is absent."""
    f = judge((LIFE / "r535-proprietary-535.113.01.txt").read_text(), NVCC13, libs=None)
    assert f.severity.value == "unknown", f
    assert "not read" in f.observed


def test_a_host_toolkit_is_judged_against_the_hosts_libraries_not_the_containers():
    """Review leftover (issue 23): the CUDA version came from the host's nvcc (the container has none), but the
    forward-compatibility libcuda was looked up in the container's listing (unread there: unknown). The side the
    CUDA version came from is the side whose libraries decide: the host's real listing has no compat libcuda."""
    proc = (LIFE / "r535-proprietary-535.113.01.txt").read_text()
    records = {
        "host": [
            rec("host", "proc_driver_version", proc),
            rec("host", "nvcc_version", NVCC13),
            rec("host", "nvidia_lib_files", LIBS),
        ],
        "container": [rec("container", "proc_driver_version", proc)],
    }
    result = judge_probe(driver.PROBE, records)
    (f,) = [f for f in result.findings if f.id == "driver.branch_lifecycle"]
    assert f.severity.value == "critical", f
    assert "CUDA 13.0" in f.observed and "on the host" in f.observed
