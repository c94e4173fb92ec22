"""The /proc scans that find the serving engine never take the audit's own commands for it.

Seen on a real run (heavy login shell, one channel per command): the container's `engine_procs` matched a
concurrent audit command whose login shell (`bash -c "printf ... @@gpuaudit-<marker>@@; ... sglang ..."`) was
still running its rc files, so `nccl.env_vs_topology` became "engine environment unreadable". Every line the runner
sends starts with the start marker, and every command body with `LC_ALL=C; export LC_ALL;`: both are skipped.
"""

from __future__ import annotations

import subprocess
import time

import pytest
from gpuaudit.probes.core.collect.remote_line import LOCALE, remote_line
from gpuaudit.probes.core.parsers.engine import (
    ENGINE_LOGS_SHELL,
    ENGINE_PROCS_SHELL,
    ENGINE_STATUS_SHELL,
)
from gpuaudit.probes.core.parsers.model_files import MODEL_FILES_SHELL
from gpuaudit.probes.core.parsers.pyenv import PYENV_SHELL
from gpuaudit.probes.core.readonly import write_risks

SCANS = {
    "engine_procs": ENGINE_PROCS_SHELL,
    "engine_status": ENGINE_STATUS_SHELL,
    "engine_logs": ENGINE_LOGS_SHELL,
    "model_files": MODEL_FILES_SHELL,
    "pyenv": PYENV_SHELL,
}
DECOY_BODY = "sleep 4891 || python3 -m sglang.launch_server --model-path /m vllm serve"


@pytest.fixture
def decoys():
    """Two processes shaped like the audit's own commands: a login shell before its `exec` (marker in its argv)
    and a command body after it (`LC_ALL=C; export LC_ALL; ...`), both naming sglang/vllm."""
    marker = "@@gpuaudit-0123456789abcdef@@"
    line = remote_line(DECOY_BODY, marker=marker).replace(
        "exec sh -c", "sh -c"
    )  # the shell stays, as an rc would keep it
    procs = [
        subprocess.Popen(["bash", "-c", line + "; true"]),
        subprocess.Popen(["sh", "-c", LOCALE + DECOY_BODY + "; true"]),
    ]
    time.sleep(0.3)
    yield [p.pid for p in procs]
    for p in procs:
        p.kill()
        p.wait()
    subprocess.run(["pkill", "-f", "sleep 4891"], check=False)


@pytest.mark.parametrize("name", sorted(SCANS))
def test_scan_skips_the_audits_own_commands(decoys, name):
    shell = SCANS[name]
    assert write_risks(shell) == []
    out = subprocess.run(
        ["sh", "-c", LOCALE + shell], capture_output=True, text=True, timeout=60
    ).stdout
    for pid in decoys:
        assert (
            f"@@pid {pid}\n" not in out
            and f"/proc/{pid}/" not in out
            and "--model-path /m" not in out
        ), (name, out[:800])
