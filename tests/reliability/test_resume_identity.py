"""`--resume A --host B` never silently merges two machines (issue 29): it refuses unless the live machine's
hostname/machine-id/board serial match what A recorded, or --yes, which the resumed snapshot's note records."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from gpuaudit.snapshots import store
from reliability.faultkit import cli_env, home  # noqa: F401
from sshd_server import leftover_processes  # noqa: F401

pytestmark = pytest.mark.sshd
REPO = Path(__file__).resolve().parents[2]


def cli(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuaudit.tui", *args],
        cwd=REPO,
        env=cli_env(home),
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def recorded(sshd, home, tmp_path):  # noqa: F811
    """A real snapshot of the sshd host, one record marked failed (so a resume runs it live), stored as
    recorded on another address; `hostname` None keeps the real one."""
    snaps = tmp_path / "snaps"

    def make(hostname: str | None) -> Path:
        res = cli(
            [
                "--json",
                "--host",
                sshd.spec,
                *sshd.cli_args(),
                "--probes",
                "kernel",
                "--fail-on",
                "never",
                "--save",
                "a",
                "--snapshot-dir",
                str(snaps),
            ],
            home,
        )
        assert res.returncode == 0, res.stderr[-1500:]
        path = store.resolve("a", snaps)
        snap = store.load(path)
        rec = snap.records[0]
        probes = [
            p.model_copy(
                update={
                    "records": [
                        r.model_copy(
                            update={"error": "connection lost: planted", "exit_status": None}
                        )
                        if r is rec
                        else r
                        for r in p.records
                    ]
                }
            )
            for p in snap.probes
        ]
        states = dict(snap.target_states)
        if hostname is not None:
            states["host"] = states["host"].model_copy(update={"hostname": hostname})
        targets = [t.model_copy(update={"spec": "gpuaudit-test@10.200.0.77"}) for t in snap.targets]
        snap = snap.model_copy(
            update={"probes": probes, "target_states": states, "targets": targets}
        )
        return store.save(snap, "planted", snaps)

    return make, snaps


def test_resume_on_another_machine_refuses(sshd, recorded, home):  # noqa: F811
    make, snaps = recorded
    path = make("node-a")
    res = cli(
        [
            "--resume",
            str(path),
            "--host",
            sshd.spec,
            *sshd.cli_args(),
            "--json",
            "--snapshot-dir",
            str(snaps),
        ],
        home,
    )
    assert res.returncode == 2, res.stderr[-1500:]
    lines = res.stderr.strip().splitlines()
    assert (
        len(lines) == 1
        and "may be another machine" in lines[0]
        and "hostname node-a vs" in lines[0]
    )
    assert res.stdout == ""


def test_resume_with_yes_merges_and_records_it(sshd, recorded, home):  # noqa: F811
    make, snaps = recorded
    path = make("node-a")
    res = cli(
        [
            "--resume",
            str(path),
            "--host",
            sshd.spec,
            *sshd.cli_args(),
            "--json",
            "--yes",
            "--fail-on",
            "never",
            "--snapshot-dir",
            str(snaps),
        ],
        home,
    )
    assert res.returncode == 0, res.stderr[-1500:]
    assert "merged although the machine differs (hostname node-a vs" in res.stdout


def test_resume_of_the_same_machine_at_another_address_goes_on(sshd, recorded, home):  # noqa: F811
    make, snaps = recorded
    path = make(None)
    res = cli(
        [
            "--resume",
            str(path),
            "--host",
            sshd.spec,
            *sshd.cli_args(),
            "--json",
            "--fail-on",
            "never",
            "--snapshot-dir",
            str(snaps),
        ],
        home,
    )
    assert res.returncode == 0, res.stderr[-1500:]
    assert "merged although" not in res.stdout


def test_the_snapshot_records_the_machine_id(sshd, recorded):  # noqa: F811
    """The kernel probe records /etc/machine-id (a declared read-only source): resume compares it."""
    make, _ = recorded
    snap = store.load(make(None))
    rec = next(r for r in snap.records if r.command_id == "machine_id")
    assert rec.command == "cat /etc/machine-id" and rec.target == "host"
    live = Path("/etc/machine-id").read_text().strip() if Path("/etc/machine-id").exists() else ""
    assert rec.stdout.strip() == live


def test_same_hostname_but_another_machine_id_refuses(sshd, recorded, home):  # noqa: F811
    """A reinstalled twin with the same hostname: the machine-id tells them apart."""
    if not Path("/etc/machine-id").read_text().strip():
        pytest.skip("this machine has no machine-id")
    make, snaps = recorded
    path = make(None)
    snap = store.load(path)
    probes = [
        p.model_copy(
            update={
                "records": [
                    r.model_copy(update={"stdout": "0123456789abcdef0123456789abcdef\n"})
                    if r.command_id == "machine_id"
                    else r
                    for r in p.records
                ]
            }
        )
        for p in snap.probes
    ]
    path = store.save(snap.model_copy(update={"probes": probes}), "twin", snaps)
    args = ["--resume", str(path), "--host", sshd.spec, *sshd.cli_args(), "--json"]
    res = cli([*args, "--snapshot-dir", str(snaps)], home)
    assert res.returncode == 2, res.stderr[-1500:]
    assert "machine-id 0123456789abcdef0123456789abcdef vs" in res.stderr
    assert "hostname" not in res.stderr.split("(", 1)[1]  # the hostname matched
    res = cli([*args, "--yes", "--fail-on", "never", "--snapshot-dir", str(snaps)], home)
    assert res.returncode == 0, res.stderr[-1500:]
    assert "merged although the machine differs (machine-id 0123456789abcdef" in res.stdout


def test_share_maps_the_machine_id():
    """--share: the machine-id is an identifier, mapped like the others wherever it appears."""
    from gpuaudit.snapshots.share import Sharer

    mid = "5d1f0e3a9b7c4e21a0f6c3d2b1e4f5a6"
    doc = {
        "records": [
            {"command_id": "machine_id", "stdout": mid + "\n"},
            {"command_id": "x", "stdout": f"journal of {mid} boot"},
        ]
    }
    sharer = Sharer()
    sharer.learn_snapshot(doc)
    shared = sharer.document(doc)
    assert mid not in str(shared)
    assert shared["records"][0]["stdout"].strip() == "0" * 31 + "1"
    assert sharer.mapping()["machine-id"] == {mid: "0" * 31 + "1"}
