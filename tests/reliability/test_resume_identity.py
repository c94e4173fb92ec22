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
