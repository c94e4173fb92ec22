"""A command a recording lacks is "not recorded" (nothing ran), never a failed command; a replay keeps the
records no probe asks for any more (issue 24)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from gpuaudit.probes.core.collect.replay_transport import (
    NOT_RECORDED,
    DirectoryTransport,
    ReplayTransport,
    is_not_recorded,
    keep_unasked,
)
from gpuaudit.probes.core.models import AuditRun, CommandRecord, ProbeResult, Target
from gpuaudit.snapshots.compact import unpack
from gpuaudit.snapshots.diff import diff_snapshots
from gpuaudit.snapshots.schema import Snapshot

pytestmark = pytest.mark.fast
ROOT = Path(__file__).resolve().parents[2]
NEWER = ("engine_model_files", "engine_metrics", "pci_nvidia_sysfs")
"""Sources added after the case study was recorded (review of issue 24: the demo showed them as exit 127)."""


def rec(cid: str, probe: str = "kernel", **kw) -> CommandRecord:
    base = dict(target="host", probe_id=probe, command_id=cid, command=cid, exit_status=0)
    return CommandRecord(**{**base, **kw})


def run_of(*probes: ProbeResult) -> AuditRun:
    t = Target(role="host", spec="h", kind="ssh", label="host")
    return AuditRun(targets=[t], probes=list(probes), started_at=datetime(2026, 1, 1, tzinfo=UTC))


def test_replay_answers_a_command_it_lacks_not_recorded_with_nothing_executed():
    raw = asyncio.run(
        ReplayTransport([rec("uname_r")]).run(
            "x", command_id="lspci_vvv", timeout_s=1, max_bytes=100
        )
    )
    assert raw.exit_status is None and raw.error == NOT_RECORDED and raw.executed == ""


def test_is_not_recorded_only_for_the_marker_without_an_answer():
    assert is_not_recorded(rec("a", exit_status=None, error=NOT_RECORDED, executed=""))
    assert not is_not_recorded(rec("a", exit_status=127, stderr="sh: a: not found"))
    assert not is_not_recorded(rec("a", exit_status=None, error="target failed: refused"))
    assert not is_not_recorded(rec("a", exit_status=None, error=NOT_RECORDED, stdout="x"))


def test_keep_unasked_puts_back_what_no_probe_asked_under_its_probe_only():
    asked = rec("uname_r")
    old = rec("lspci_acsctl", probe="pcie", stdout="ACSCtl: SrcValid+\n")
    other = rec("smi_gpu_cc", probe="driver")
    run = run_of(
        ProbeResult(probe_id="kernel", title="Kernel", records=[asked]),
        ProbeResult(probe_id="pcie", title="PCIe", records=[]),
    )
    kept = keep_unasked(run, [asked, old, other])
    by = {p.probe_id: p.records for p in kept.probes}
    assert by["pcie"] == [old]  # as recorded, under the probe that recorded it
    assert by["kernel"] == [asked]  # not doubled
    assert "driver" not in by  # a probe that did not run in this replay gets nothing
    assert keep_unasked(run, [asked]) is run


def _snap(*records: CommandRecord) -> Snapshot:
    return Snapshot.from_run(
        run_of(ProbeResult(probe_id="kernel", title="Kernel", records=list(records)))
    )


def test_diff_skips_a_command_one_side_never_recorded_and_shows_a_real_change():
    nr = rec("numa_balancing", exit_status=None, error=NOT_RECORDED, executed="")
    assert diff_snapshots(_snap(rec("uname_r")), _snap(rec("uname_r"), nr)).identical
    assert diff_snapshots(_snap(rec("uname_r"), nr), _snap(rec("uname_r"))).identical
    live = rec("numa_balancing", stdout="1\n")
    d = diff_snapshots(_snap(nr), _snap(live))
    assert not d.identical and [r.kind for p in d.probes for r in p.raw] == ["changed"]
    failed = rec("numa_balancing", exit_status=127, stderr="sh: not found\n")
    assert not diff_snapshots(_snap(), _snap(failed)).identical  # a failure is never skipped


def test_directory_transport_reads_its_not_recorded_list(tmp_path: Path):
    (tmp_path / "NOT-RECORDED.txt").write_text("# comment\nsmi_q_xml   # why\n\n")
    t = DirectoryTransport(tmp_path)

    def run(cid: str):
        return asyncio.run(t.run("x", command_id=cid, timeout_s=1, max_bytes=100))

    assert run("smi_q_xml").error and run("smi_q_xml").exit_status is None
    assert run("tuned_active").exit_status == 127  # not listed: the tool is not installed


@pytest.mark.parametrize("phase", ["before", "after"])
def test_the_demo_says_not_recorded_for_sources_newer_than_its_recording(phase: str):
    doc = unpack(json.loads((ROOT / "snapshots/examples" / f"case-study-{phase}.json").read_text()))
    records = [CommandRecord.model_validate(r) for p in doc["probes"] for r in p["records"]]
    for cid in NEWER:
        mine = [r for r in records if r.command_id == cid and r.target == "host"]
        assert mine and all(is_not_recorded(r) for r in mine), cid
    assert not [r for r in records if r.exit_status == 127 and r.command_id in NEWER]
    tuned = [r for r in records if r.command_id == "tuned_active"]
    assert tuned and all(r.exit_status == 127 for r in tuned)  # documented: tuned-adm not installed


NOT_INSTALLED = {("host", "tuned_active"), ("host", "fabricmanager_version")}
"""The demo's tools that are not installed on purpose (SOURCES-kernel-numa-container.md: Proxmox ships no tuned;
no NVSwitch, no Fabric Manager): the only exit 127 it may show."""


@pytest.mark.parametrize("phase", ["before", "after"])
def test_a_new_source_is_recorded_or_listed_not_recorded_in_the_demo(phase: str):
    doc = unpack(json.loads((ROOT / "snapshots/examples" / f"case-study-{phase}.json").read_text()))
    failed = {
        (r["target"], r["command_id"])
        for p in doc["probes"]
        for r in p["records"]
        if r.get("exit_status") == 127
    }
    assert failed <= NOT_INSTALLED, (
        f"{sorted(failed - NOT_INSTALLED)} read 'command not found' in the demo: record them under "
        "snapshots/examples/case-study/ or list them in that folder's NOT-RECORDED.txt, then "
        "python scripts/build_case_study.py"
    )


def test_directory_with_non_utf8_list_and_corrupt_exit_file_answers_without_a_traceback(tmp_path):
    """A recording folder is input too: a Latin-1 NOT-RECORDED.txt and a garbled `.exit` are answers, not crashes."""
    (tmp_path / "NOT-RECORDED.txt").write_bytes(b"lspci_vvv # caf\xe9\n")
    (tmp_path / "uname_r.out").write_bytes(b"6.8.0\n")
    (tmp_path / "uname_r.exit").write_bytes(b"\xff\xfe")
    transport = DirectoryTransport(tmp_path)
    assert transport.not_recorded == frozenset({"lspci_vvv"})
    raw = asyncio.run(transport.run("x", command_id="uname_r", timeout_s=1, max_bytes=100))
    assert raw.exit_status is None and "not an exit status" in (raw.error or "")
