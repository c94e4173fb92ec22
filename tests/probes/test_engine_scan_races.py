"""The engine's own /proc scans stay silent when a process exits (or hides its environ) during the scan.

A process that vanishes between the `/proc/[0-9]*` glob and the read of its files leaves a directory
entry whose files cannot be opened. The shell reported that on stderr ("cannot open /proc/N/cmdline"), so
two audits of an unchanged machine differed in stderr. Here the scan runs over a stand-in /proc folder
holding exactly that state: a pid folder without files, and an engine whose environ is missing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from gpuaudit.probes.core.parsers.engine import (
    ENGINE_LOGS_SHELL,
    ENGINE_PROCS_SHELL,
    ENGINE_STATUS_SHELL,
    parse_engine_procs,
)
from gpuaudit.probes.core.parsers.pyenv import PYENV_SHELL
from gpuaudit.probes.core.readonly import write_risks

SHELLS = {
    "engine_procs": ENGINE_PROCS_SHELL,
    "engine_proc_status": ENGINE_STATUS_SHELL,
    "engine_logs": ENGINE_LOGS_SHELL,
    "pyenv": PYENV_SHELL.replace("{python}", "python3"),
}


def _fake_proc(tmp: Path) -> Path:
    root = tmp / "proc"
    (root / "4100").mkdir(parents=True)  # exited between the glob and the reads: no files at all
    eng = root / "4200"
    eng.mkdir()
    (eng / "cmdline").write_bytes(
        b"python3\0-m\0sglang.launch_server\0--tp\0002\0"
    )  # environ missing (exited)
    return root


@pytest.mark.parametrize("cid", sorted(SHELLS))
def test_scan_is_silent_on_vanished_processes(tmp_path: Path, cid: str) -> None:
    shell = SHELLS[cid]
    assert write_risks(shell) == []
    if cid == "pyenv":  # a stdlib reader (issue 29): its /proc root is one constant
        assert 'PROC = "/proc"' in shell
        run = shell.replace('PROC = "/proc"', f'PROC = "{_fake_proc(tmp_path)}"')
    else:
        assert "/proc/[0-9]*" in shell
        run = shell.replace("/proc/[0-9]*", f"{_fake_proc(tmp_path)}/[0-9]*")
    r = subprocess.run(["sh", "-c", run], capture_output=True, text=True, timeout=60)
    assert "cannot open" not in r.stderr and "No such file" not in r.stderr, r.stderr


def test_engine_found_with_unreadable_environ(tmp_path: Path) -> None:
    run = ENGINE_PROCS_SHELL.replace("/proc/[0-9]*", f"{_fake_proc(tmp_path)}/[0-9]*")
    out = subprocess.run(["sh", "-c", run], capture_output=True, text=True, timeout=60).stdout
    procs = parse_engine_procs(out)
    assert [p.argv[2] for p in procs] == ["sglang.launch_server"] and procs[0].env_readable is False
