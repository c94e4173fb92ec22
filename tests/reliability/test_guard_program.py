"""The remote guard's shell program (remote_line.GUARD) where the target has no setsid(1): the line runs as
before, its exit status and output unchanged (a line that does not `exec` went on into the setsid branch:
`setsid: not found`, exit 127), and the guard's TERM trap is not left standing over it."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from gpuaudit.probes.core.collect.remote_line import guarded


@pytest.fixture
def no_setsid(tmp_path: Path) -> dict[str, str]:
    tools = tmp_path / "bin"
    tools.mkdir()
    for t in ("sh", "sleep"):
        (tools / t).symlink_to(shutil.which(t) or f"/bin/{t}")
    return {"PATH": str(tools)}


@pytest.mark.parametrize("term_first", [False, True])
@pytest.mark.parametrize(
    "line,rc,out",
    [
        ("echo hi; true", 0, "hi\n"),
        ("echo hi; (exit 4)", 4, "hi\n"),
        ("exec sh -c 'exit 5'", 5, ""),
    ],
)
def test_without_setsid_the_line_keeps_its_exit_status_and_output(
    no_setsid, term_first, line, rc, out
):
    res = subprocess.run(
        ["/bin/sh", "-c", guarded(line, term_first=term_first)],
        capture_output=True,
        text=True,
        env=no_setsid,
        stdin=subprocess.DEVNULL,
        timeout=20,
    )
    assert (res.returncode, res.stdout, res.stderr) == (rc, out, "")


def test_without_setsid_a_term_to_the_guard_stops_a_line_that_does_not_exec(no_setsid):
    proc = subprocess.Popen(
        ["/bin/sh", "-c", guarded("sleep 3; echo after", term_first=False)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=no_setsid,
        stdin=subprocess.DEVNULL,
    )
    time.sleep(0.5)
    os.kill(proc.pid, 15)
    out, _err = proc.communicate(timeout=20)
    assert "after" not in out
