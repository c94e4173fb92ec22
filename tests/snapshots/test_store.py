"""Store: round trip, private modes, atomic writes, names vs paths, default locations."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from gpuaudit.probes.core.errors import SnapshotError
from gpuaudit.snapshots import store
from gpuaudit.snapshots.naming import default_name
from snapfactory import kernel_probe, snap


def test_round_trip_is_equal(store_dir: Path) -> None:
    s = snap(kernel_probe(), name="before")
    path = store.save(s, "before", store_dir)
    assert path == store_dir / "before.json"
    assert store.load(path) == s


def test_file_0600_directory_0700_even_with_permissive_umask(tmp_path: Path) -> None:
    old = os.umask(0o000)
    try:
        path = store.save(snap(kernel_probe()), "x", tmp_path / "a" / "b")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "a" / "b").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700


def test_existing_directory_mode_is_left_alone(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    store.save(snap(kernel_probe()), "x", tmp_path)
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o755


def test_failing_write_keeps_the_existing_file(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = store.save(snap(kernel_probe(), name="keep"), "keep", store_dir)
    before = path.read_bytes()

    def broken_replace(src, dst):  # the disk fills up just before the rename
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store.os, "replace", broken_replace)
    with pytest.raises(SnapshotError, match="No space left"):
        store.save(snap(kernel_probe("6.14.11-1-pve")), "keep", store_dir, overwrite=True)
    assert path.read_bytes() == before
    assert [p.name for p in store_dir.iterdir()] == ["keep.json"]  # no temp file left behind


def test_interrupted_write_keeps_the_existing_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "s.json"
    store.write_atomic(target, b"old")
    monkeypatch.setattr(store.os, "fsync", lambda fd: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        store.write_atomic(target, b"new")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]


def test_save_never_overwrites_by_default(store_dir: Path) -> None:
    a = store.save(snap(kernel_probe()), "same", store_dir)
    b = store.save(snap(kernel_probe()), "same", store_dir)
    assert (a.name, b.name) == ("same.json", "same-2.json")


def test_unsafe_names_become_file_names(store_dir: Path) -> None:
    path = store.save(snap(kernel_probe()), "../../etc/passwd x", store_dir)
    assert path.parent == store_dir and path.name == "etc_passwd_x.json"


def test_resolve_by_name_path_and_example(
    store_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = store.save(snap(kernel_probe()), "pve1 before", store_dir)
    assert store.resolve("pve1_before", store_dir) == path
    assert store.resolve("pve1 before", store_dir) == path  # as typed, made safe
    assert store.resolve("pve1_before.json", store_dir) == path
    assert store.resolve(str(path), None) == path
    monkeypatch.chdir(tmp_path)
    assert store.resolve(str(path.relative_to(tmp_path))) == path.relative_to(tmp_path)
    assert (
        store.resolve("case-study-before", store_dir)
        == store.EXAMPLES_DIR / "case-study-before.json"
    )
    with pytest.raises(SnapshotError, match="no such snapshot"):
        store.resolve("nope", store_dir)


def test_default_dir_env_and_platformdirs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    xdg = Path(os.environ["XDG_DATA_HOME"])  # set by the isolation fixture
    assert store.default_dir() == xdg / "gpuaudit-tui" / "snapshots"
    monkeypatch.setenv(store.ENV_DIR, str(tmp_path / "env"))
    assert store.default_dir() == tmp_path / "env"
    path = store.save(snap(kernel_probe()), "e")
    assert path.parent == tmp_path / "env"


def test_default_name_carries_host_kernel_driver_time() -> None:
    s = snap(kernel_probe("6.8.12-9-pve"))
    s.probes.append(
        s.probes[0].model_copy(
            update={"probe_id": "driver", "facts": {"host": {"driver_version": "590.48.01"}}}
        )
    )
    assert default_name(s) == "pve1_6.8.12-9-pve_590.48.01_20260110T090000Z"
    bare = snap()
    bare.target_states.clear()
    assert default_name(bare) == "127.0.0.1_kernel-unknown_driver-unknown_20260110T090000Z"
