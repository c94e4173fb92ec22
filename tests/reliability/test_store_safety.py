"""The snapshot store refuses a symlink, a foreign or world-writable directory, a non-directory (issue 14 item 6)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from gpuaudit.probes.core.errors import SnapshotError
from gpuaudit.snapshots import store
from gpuaudit.snapshots.schema import Snapshot
from gpuaudit.tui.cli.entry import main


def _refused(directory: Path, capsys, why: str) -> None:
    code = main(["--demo", "--json", "--save", "x", "--snapshot-dir", str(directory)])
    out, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert why in err and str(directory) in err, err


def test_symlink_to_etc_is_refused(tmp_path, capsys):
    link = tmp_path / "snaps"
    link.symlink_to("/etc")
    _refused(link, capsys, "symbolic link (to /etc)")
    assert not list(Path("/etc").glob("x*.json"))


def test_world_writable_foreign_directory_is_refused(tmp_path, capsys):
    d = tmp_path / "shared"
    d.mkdir()
    os.chmod(d, 0o777)
    _refused(d, capsys, "writable by others (mode 777)")
    if os.geteuid() == 0:  # only root can give a directory away
        os.chmod(d, 0o700)
        os.chown(d, 65534, 65534)
        _refused(d, capsys, "owned by uid 65534")
    assert not list(d.iterdir())


def test_a_file_is_not_a_store(tmp_path, capsys):
    f = tmp_path / "passwd"
    f.write_text("root:x:0:0\n")
    _refused(f, capsys, "is not a directory")
    assert f.read_text() == "root:x:0:0\n"


def test_the_saved_path_is_said_absolute(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = main(["--demo", "--json", "--save", "mine", "--snapshot-dir", "rel-store"])
    err = capsys.readouterr().err
    assert code in (0, 1, 3)
    assert f"saved snapshot: {tmp_path / 'rel-store' / 'mine.json'}" in err
    assert (tmp_path / "rel-store").stat().st_mode & 0o777 == 0o700


def test_a_private_existing_store_is_used(tmp_path):
    d = tmp_path / "mine"
    d.mkdir(mode=0o755)
    os.chmod(d, 0o755)
    assert store.save(Snapshot(), "ok", d) == d / "ok.json"
    with pytest.raises(SnapshotError, match="symbolic link"):
        (tmp_path / "ln").symlink_to(d)
        store.save(Snapshot(), "ok", tmp_path / "ln")
