"""--resume: only failed, timed-out or cancelled commands run again; the merge is stored as a new snapshot."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from gpuaudit.probes.catalogue import get
from gpuaudit.probes.core.collect.transport import RawResult, TransportBase
from gpuaudit.probes.core.models import Target
from gpuaudit.probes.core.run.events import apply_event, initial_run
from gpuaudit.probes.core.run.resume import needs_rerun, rerun_plan, resume_bindings
from gpuaudit.probes.core.run.runner import Audit, TargetBinding
from gpuaudit.snapshots import store
from gpuaudit.snapshots.compact import unpack
from snapfactory import REPO, T0, fnd, probe, rec, snap
from sshd_server import free_port

KERNEL = get("kernel")


class FakeTransport(TransportBase):
    """Synthetic answers per command id; remembers every command id it was asked to run."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.label = "fake"
        self.answers = answers
        self.asked: list[str] = []
        self.lines: list[str] = []
        self.connected = False

    async def connect(self) -> None:
        self.connected = True

    async def run(
        self, line: str, *, command_id: str, timeout_s: float, max_bytes: int
    ) -> RawResult:
        self.asked.append(command_id)
        self.lines.append(line)
        if command_id == "preflight":
            return RawResult(exit_status=0, stdout=b"0\ntimeout=yes\nlive-host\n")
        return RawResult(exit_status=0, stdout=self.answers.get(command_id, "").encode())

    async def aclose(self) -> None:
        pass


def _kernel_records(role: str = "host", **broken: dict) -> list:
    """A clean record for every kernel command on `role`, with some replaced by broken ones."""
    out = []
    for cmd in KERNEL.commands_for(role):
        out.append(rec(cmd.id, f"recorded {cmd.id}\n", role=role, **broken.get(cmd.id, {})))
    return out


async def _run(audit: Audit):
    run = initial_run(audit.targets, [(p.id, p.title) for p in audit.probes])
    async for ev in audit.events():
        run = apply_event(run, ev)
    await audit.aclose()
    return run


def test_what_needs_a_rerun() -> None:
    assert not needs_rerun(rec("a", "x"))
    assert not needs_rerun(rec("a", "", exit_status=127))  # "not installed" is an answer
    assert needs_rerun(rec("a", exit_status=None, timed_out=True))
    assert needs_rerun(rec("a", exit_status=None, error="connection lost"))
    assert needs_rerun(rec("a", exit_status=None))  # cancelled


async def test_only_failed_commands_run_live_and_the_container_keeps_its_route() -> None:
    records = _kernel_records(
        numa_balancing={"exit_status": None, "timed_out": True},
        node_list={"exit_status": None, "error": "connection lost: reset"},
    )
    records += _kernel_records("container")
    s = snap(probe("kernel", records=records, status="cancelled"))
    plan = rerun_plan(s.records, [KERNEL], ["host", "container"])
    assert plan == {"host": ["numa_balancing", "node_list"], "container": []}
    fake = FakeTransport({"numa_balancing": "0\n", "node_list": "/sys/devices/system/node/node0\n"})
    host_t = Target(role="host", spec="root@127.0.0.1:1", kind="ssh", label="host")
    cont_t = Target(role="container", spec="pct:101", kind="pct", label="container")
    live = [
        TargetBinding(host_t, fake),
        TargetBinding(cont_t, fake, wrap_prefix="pct exec 101 --", via="host"),
    ]
    run = await _run(
        Audit(resume_bindings(s.targets, s.records, plan, live, s.target_states), [KERNEL])
    )
    assert sorted(fake.asked) == ["node_list", "numa_balancing", "preflight"]
    assert fake.connected
    result = run.probe("kernel")
    assert result.status == "done"
    by = {(r.target, r.command_id): r for r in result.records}
    assert by[("host", "uname_r")].stdout == "recorded uname_r\n"  # from the recording
    assert by[("host", "numa_balancing")].stdout == "0\n" and not needs_rerun(
        by[("host", "numa_balancing")]
    )
    assert (
        run.target_states["container"].hostname == "ct"
    )  # recorded identity, no live preflight needed


async def test_a_container_only_failure_connects_through_the_host() -> None:
    records = _kernel_records() + _kernel_records(
        "container", uname_r={"exit_status": None, "error": "target failed: x"}
    )
    s = snap(probe("kernel", records=records))
    plan = rerun_plan(s.records, [KERNEL], ["host", "container"])
    assert plan == {"host": [], "container": ["uname_r"]}
    fake = FakeTransport({"uname_r": "6.14.11-1-pve\n"})
    live = [
        TargetBinding(s.targets[0], fake),
        TargetBinding(s.targets[1], fake, wrap_prefix="pct exec 101 --", via="host"),
    ]
    run = await _run(
        Audit(resume_bindings(s.targets, s.records, plan, live, s.target_states), [KERNEL])
    )
    assert fake.connected and "uname_r" in fake.asked
    assert any("pct exec 101 --" in line for line in fake.lines)
    (cont,) = [
        r
        for r in run.probe("kernel").records
        if r.target == "container" and r.command_id == "uname_r"
    ]
    assert cont.stdout == "6.14.11-1-pve\n"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuaudit.tui", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )


def test_resume_cli_runs_failures_locally_and_stores_a_merged_snapshot(tmp_path: Path) -> None:
    records = [
        r.model_copy(update={"stdout": "9.9.9-recorded\n"})
        if r.command_id == "uname_r"
        else r.model_copy(update={"exit_status": None, "error": "connection lost: reset"})
        for r in _kernel_records()
    ]
    power = probe(
        "power",
        records=[rec("scaling_driver", "acpi-cpufreq\n", probe="power")],
        findings=[fnd("power.cpu_scaling_driver", "warning")],
    )
    s = snap(probe("kernel", records=records, status="failed"), power, container=None)
    s = s.model_copy(
        update={"targets": [Target(role="host", spec="local", kind="local", label="host (local)")]}
    )
    src = store.save(s, "interrupted", tmp_path / "store")
    d = tmp_path / "store"
    r = _cli(
        "--resume",
        "interrupted",
        "--snapshot-dir",
        str(d),
        "--probes",
        "kernel",
        "--json",
        "--fail-on",
        "never",
    )
    assert r.returncode == 0, r.stderr
    (new,) = [p for p in d.glob("*.json") if p != src]
    assert f"saved resumed snapshot: {new}" in r.stderr
    assert (
        "re-ran live: host: " in r.stderr
        and "numa_balancing" in r.stderr
        and "uname_r" not in r.stderr
    )
    out = unpack(json.loads(r.stdout))
    assert out == unpack(json.loads(new.read_text()))
    assert out["mode"] == "resume" and "RESUME of interrupted.json" in out["note"]
    kernel = next(p for p in out["probes"] if p["probe_id"] == "kernel")
    by = {x["command_id"]: x for x in kernel["records"]}
    assert by["uname_r"]["stdout"] == "9.9.9-recorded\n"  # not re-run
    assert (
        by["numa_balancing"]["error"] is None and by["numa_balancing"]["exit_status"] is not None
    )  # re-run here
    assert kernel["status"] == "done"
    power_out = next(
        p for p in out["probes"] if p["probe_id"] == "power"
    )  # outside --probes: kept as recorded
    assert [f["id"] for f in power_out["findings"]] == ["power.cpu_scaling_driver"]
    assert "power.cpu_scaling_driver" in [f["id"] for f in out["findings"]]
    assert json.loads(src.read_text())["mode"] == "live"  # the original is untouched


def test_nothing_failed_means_no_connection(tmp_path: Path) -> None:
    s = snap(
        probe("kernel", records=_kernel_records() + _kernel_records("container")),
        host="root@127.0.0.1:1",
    )
    path = store.save(s, "complete", tmp_path)
    r = _cli(
        "--resume",
        str(path),
        "--probes",
        "kernel",
        "--json",
        "--snapshot-dir",
        str(tmp_path),
        "--fail-on",
        "never",
    )
    assert r.returncode == 0, r.stderr
    assert "re-ran live: nothing" in r.stderr
    out = json.loads(r.stdout)
    assert all(st["state"] == "connected" for st in out["target_states"].values())
    assert out["created_at"] > T0.isoformat()


def test_demo_snapshots_cannot_be_resumed() -> None:
    r = _cli("--resume", "snapshots/examples/case-study-before.json", "--json")
    assert (
        r.returncode == 2
        and "demo snapshot" in r.stderr
        and len(r.stderr.strip().splitlines()) == 1
    )


@pytest.mark.parametrize("kind", ["directory", "replay"])
def test_unreachable_recorded_targets_need_an_address(tmp_path: Path, kind: str) -> None:
    s = snap(
        probe(
            "kernel",
            records=_kernel_records(numa_balancing={"exit_status": None, "timed_out": True}),
        ),
        container=None,
    )
    s = s.model_copy(update={"targets": [Target(role="host", spec="dir:/x", kind=kind, label="h")]})
    path = store.save(s, "dir", tmp_path)
    r = _cli("--resume", str(path), "--probes", "kernel", "--json")
    assert r.returncode == 2 and "cannot reach the host again" in r.stderr


def _ssh_snapshot_with_a_failure(tmp_path: Path) -> Path:
    records = _kernel_records(
        numa_balancing={"exit_status": None, "error": "connection lost: reset"}
    )
    s = snap(probe("kernel", records=records), container=None, host=f"root@127.0.0.1:{free_port()}")
    return store.save(s, "foreign", tmp_path)


def test_a_foreign_snapshot_names_its_targets_and_needs_consent(tmp_path: Path) -> None:
    """issue 14 item 7: the file names root@127.0.0.1:PORT; nothing is contacted until the user says so."""
    path = _ssh_snapshot_with_a_failure(tmp_path)
    spec = json.loads(path.read_text())["targets"][0]["spec"]
    r = _cli("--resume", str(path), "--probes", "kernel", "--json", "--snapshot-dir", str(tmp_path))
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1, (
        r.stderr
    )
    assert f"would connect to host {spec}" in r.stderr and "--yes" in r.stderr
    assert len(list(tmp_path.glob("*.json"))) == 1  # nothing stored
    for consent in (
        ["--yes"],
        ["--host", spec],
    ):  # confirmed: it connects (nothing listens: exit 3)
        r = _cli(
            "--resume",
            str(path),
            "--probes",
            "kernel",
            "--json",
            "--snapshot-dir",
            str(tmp_path),
            *consent,
        )
        assert r.returncode == 3 and "connection refused" in r.stderr, r.stderr
        assert "still unreachable: host (" in r.stderr and "nothing was re-run for it" in r.stderr
        assert "all recorded answers were usable" not in r.stderr  # issue 24: never when down
    resumed = [p for p in tmp_path.glob("*.json") if p != path]
    assert len(resumed) == 2
    for stored in resumed:  # the host is still down: its recorded answers are kept as recorded
        uname = [rec for rec in store.load(stored).records if rec.command_id == "uname_r"]
        assert uname and all(rec.stdout == "recorded uname_r\n" for rec in uname), stored
