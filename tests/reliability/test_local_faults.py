"""Local machine faults around snapshot saving: read-only store, disk full, killed mid-write, permissions."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from gpuaudit.snapshots import store
from gpuaudit.snapshots.schema import Snapshot
from reliability.faultkit import REPO, assert_one_line_error, cli_env, home, run_cli  # noqa: F401

OLD = Snapshot(name="old", note="earlier snapshot that must survive")


@pytest.fixture
def tmpfs(tmp_path):
    """A 64 KiB tmpfs mounted by the test (root only); unmounted always."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    res = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


@pytest.fixture
def big_snapshot(tmp_path) -> Path:
    """A valid snapshot of ~200 KiB (synthetic: a long note): more than the 64 KiB tmpfs holds."""
    path = tmp_path / "big.json"
    path.write_text(Snapshot(name="big", note="n" * 200_000).model_dump_json())
    return path


def _save_old(directory: Path) -> bytes:
    path = store.save(OLD, "snap", directory)
    return path.read_bytes()


def test_disk_full_is_one_line_and_keeps_the_earlier_snapshot(tmpfs, big_snapshot, home):
    snaps = tmpfs / "snaps"
    old = _save_old(snaps)
    res = run_cli(
        ["--json", "--replay", str(big_snapshot), "--save", "snap", "--snapshot-dir", str(snaps)],
        home,
    )
    # the audit's --json is complete on stdout; the failed --save is one line and exit 4 (issue 29)
    assert res.returncode == 4 and "Traceback" not in res.stderr, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "--save failed" in lines[0], lines
    line = lines[0]
    assert "No space left" in line and "snaps/snap" in line, line
    assert isinstance(json.loads(res.stdout), dict)  # the whole document
    assert (snaps / "snap.json").read_bytes() == old
    assert sorted(p.name for p in snaps.iterdir()) == [
        "snap.json"
    ]  # no half-written temp left behind


def test_read_only_snapshot_dir_is_one_line_and_keeps_the_earlier_snapshot(
    tmpfs, big_snapshot, home
):
    snaps = tmpfs / "snaps"
    old = _save_old(snaps)
    res = subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"cannot remount read-only: {res.stderr.strip()}")
    out = run_cli(
        ["--json", "--replay", str(big_snapshot), "--save", "snap", "--snapshot-dir", str(snaps)],
        home,
    )
    line = assert_one_line_error(out)
    assert "Read-only file system" in line, line
    res = run_cli(
        [
            "--json",
            "--replay",
            str(big_snapshot),
            "--save",
            "new",
            "--snapshot-dir",
            str(tmpfs / "absent" / "d"),
        ],
        home,
    )
    assert_one_line_error(res)
    assert (snaps / "snap.json").read_bytes() == old


KILLER = """
import os, signal, sys
from pathlib import Path
from gpuaudit.snapshots import store
from gpuaudit.snapshots.schema import Snapshot
real_write = os.write
def die_on_fsync(fd):
    os.kill(os.getpid(), signal.SIGKILL)   # the process dies after writing the temp file, before the rename
os.fsync = die_on_fsync
store.save(Snapshot(name="new", note="x" * 200000), "snap", Path(sys.argv[1]))
"""


def test_killed_while_saving_leaves_the_old_snapshot_intact(tmp_path, home):
    snaps = tmp_path / "snaps"
    old = _save_old(snaps)
    res = subprocess.run(
        [sys.executable, "-c", KILLER, str(snaps)], cwd=REPO, env=cli_env(home), capture_output=True
    )
    assert res.returncode == -9, res.stderr
    assert (snaps / "snap.json").read_bytes() == old
    assert store.load(snaps / "snap.json").note == OLD.note


def test_snapshot_file_is_0600_and_its_directory_0700(tmp_path, big_snapshot, home):
    snaps = tmp_path / "fresh" / "snaps"
    res = run_cli(
        ["--json", "--replay", str(big_snapshot), "--save", "perm", "--snapshot-dir", str(snaps)],
        home,
    )
    assert res.returncode in (0, 1), res.stderr
    assert stat.S_IMODE((snaps / "perm.json").stat().st_mode) == 0o600
    assert stat.S_IMODE(snaps.stat().st_mode) == 0o700
    # the default store (XDG data dir) too
    path = store.save(OLD, "default-dir")
    assert (
        stat.S_IMODE(path.stat().st_mode) == 0o600
        and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    )
    os.unlink(path)
