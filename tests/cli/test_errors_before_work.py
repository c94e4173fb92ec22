"""Errors before work (issue 28): every output path and key file is checked before the audit starts.

Each case is one stderr line, exit 2, no traceback, and no audit: the headless/TUI entry points are replaced by
a tripwire, so a check that only happens after the audit fails the test.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from gpuaudit.tui.cli import entry


@pytest.fixture
def no_audit(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    started: list[str] = []
    import gpuaudit.tui.cli.headless as headless

    monkeypatch.setattr(
        headless, "main", lambda request, early=None: started.append("headless") or 0
    )
    return started


def one_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    rc = entry.main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and re.match(r"gpuaudit-tui( \w+)?: error: ", lines[0]), err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize(
    ("where", "expect"),
    [
        ("missing/x.prom", "does not exist"),
        (".", "is a folder"),
        ("/proc/gpuaudit.prom", "kernel file system"),
        ("/sys/x.prom", "kernel file system"),
    ],
)
def test_prom_path_refused_before_the_audit(
    where: str, expect: str, tmp_path: Path, capsys, no_audit, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    line = one_error(capsys, ["--demo", "--prom", where])
    assert "--prom" in line and expect in line
    assert no_audit == []


def test_unwritable_folder(tmp_path: Path, capsys, no_audit) -> None:
    folder = tmp_path / "ro"
    folder.mkdir(mode=0o500)
    # root writes into a 0500 folder (and CI runs as root): there the folder is a read-only tmpfs instead
    mounted = os.geteuid() == 0
    if mounted:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(folder)],
            capture_output=True,
            text=True,
        )
        if (
            done.returncode != 0
        ):  # root without the right to mount (a container): nothing read-only to try
            if os.environ.get("GPUAUDIT_REQUIRE_SSHD") == "1":  # CI: the machine must allow it
                pytest.fail(f"cannot mount a read-only tmpfs as root: {done.stderr.strip()}")
            pytest.skip(f"root cannot mount a read-only tmpfs here: {done.stderr.strip()}")
    try:
        line = one_error(capsys, ["--demo", "--prom", str(folder / "x.prom")])
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(folder)], check=False)
    assert "cannot write" in line and no_audit == []


def test_file_in_place_of_folder(tmp_path: Path, capsys, no_audit) -> None:
    (tmp_path / "f").write_text("")
    line = one_error(capsys, ["--demo", "--json", "--prom", str(tmp_path / "f" / "x.prom")])
    assert "not a folder" in line or "does not exist" in line


def test_save_store_refused_before_the_audit(tmp_path: Path, capsys, no_audit) -> None:
    (tmp_path / "file").write_text("")
    line = one_error(
        capsys, ["--demo", "--json", "--save", "--snapshot-dir", str(tmp_path / "file" / "s")]
    )
    assert "--save" in line and no_audit == []
    line = one_error(capsys, ["--demo", "--json", "--save", "--snapshot-dir", "/proc/x"])
    assert "kernel file system" in line


def test_good_paths_pass(tmp_path: Path, capsys, no_audit) -> None:
    assert entry.main(["--demo", "--prom", str(tmp_path / "x.prom"), "--save"]) == 0
    assert no_audit == ["headless"]
    assert not list(tmp_path.iterdir()), "the writability probe leaves nothing behind"


@pytest.mark.parametrize("flag", ["--identity", "--known-hosts"])
def test_missing_key_files_exit_2(flag: str, tmp_path: Path, capsys, no_audit) -> None:
    line = one_error(capsys, ["--json", "--host", "127.0.0.1", flag, str(tmp_path / "nope")])
    assert flag in line and "no such file" in line and no_audit == []


@pytest.mark.parametrize("spec", ["dockr:sglang", "foo:bar", "pct:abc", "podman:x", "lxc:"])
def test_container_errors_name_the_forms(spec: str, capsys, no_audit) -> None:
    line = one_error(capsys, ["--json", "--container", spec])
    assert all(k in line for k in ("pct:", "lxc:", "docker:")), line
    if spec.startswith("dockr"):
        assert "did you mean docker:sglang?" in line


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        (["--jsn"], "did you mean --json?"),
        (["--demo", "--pln"], "did you mean --plan?"),
        (["dif", "a", "b"], "did you mean `diff`?"),
        (["snapshot"], "did you mean `snapshots`?"),
        (["diff", "a", "b", "--jsno"], "did you mean --json?"),
        (["fleet", "x", "--jsn"], "did you mean --json?"),
    ],
)
def test_mistyped_flag_or_subcommand_suggests(argv: list[str], hint: str, capsys) -> None:
    assert hint in one_error(capsys, argv)
