"""The /proc scans read a process's command line with a fork only when one grep named it a candidate.

They forked twice per process (`$(tr ... < cmdline)`): ~1 s for 90 processes on a loaded box, seconds on a
server running thousands, the audit's slowest commands. Here a stand-in /proc of 300 processes, two engines (one
by name, one named by nothing) and the rest idle: the output is byte-identical to the full scan (every process
read, what happens where grep cannot run), and `tr` runs for the engine alone. On the real /proc, a process that
only nvidia-smi's list names is still read.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from gpuaudit.probes.core.parsers.engine import (
    ENGINE_LOGS_SHELL,
    ENGINE_PROCS_SHELL,
    ENGINE_STATUS_SHELL,
)
from gpuaudit.probes.core.parsers.model_files import MODEL_FILES_SHELL

SHELLS = {
    "engine_procs": ENGINE_PROCS_SHELL,
    "engine_proc_status": ENGINE_STATUS_SHELL,
    "engine_logs": ENGINE_LOGS_SHELL,
    "engine_model_files": MODEL_FILES_SHELL,
}
FULL_SCAN = "cand=ALL; "
GREP_GUARD = "[ $? -lt 126 ] || cand=ALL; "


def _proc(root: Path, pid: int, argv: list[str]) -> None:
    d = root / str(pid)
    d.mkdir(parents=True)
    (d / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
    (d / "status").write_text(f"Name:\tx\nUid:\t{os.getuid()}\t{os.getuid()}\t{os.getuid()}\t0\n")
    (d / "environ").write_bytes(b"NCCL_DEBUG=INFO\0HOME=/root\0")
    (d / "maps").write_text("7f00-7f01 r-xp 0 00:00 1 /usr/lib/libnccl.so.2\n")


@pytest.fixture
def stand_in(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "proc"
    for pid in range(1000, 1300):
        _proc(root, pid, ["/usr/bin/bash", "-l"])
    _proc(root, 4200, ["python3", "-m", "sglang.launch_server", "--model-path", "/nonexistent/m"])
    _proc(root, 4300, ["/opt/worker", "--rank", "0"])
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text("#!/bin/sh\necho 4300\n")
    count = tmp_path / "tr-calls"
    (bin_dir / "tr").write_text(f'#!/bin/sh\necho x >> "{count}"\nexec /usr/bin/tr "$@"\n')
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:/usr/bin:/bin", COUNT=str(count))
    return root, env


def _run(shell: str, root: Path, env: dict[str, str]) -> tuple[str, int]:
    count = Path(env["COUNT"])
    count.unlink(missing_ok=True)
    line = shell.replace("/proc/[0-9]*", f"{root}/[0-9]*")
    r = subprocess.run(["sh", "-c", line], capture_output=True, text=True, timeout=120, env=env)
    calls = len(count.read_text().splitlines()) if count.exists() else 0
    return r.stdout + "\n--stderr--\n" + r.stderr + f"\n--exit {r.returncode}", calls


@pytest.mark.parametrize("cid", sorted(SHELLS))
def test_same_output_as_reading_every_process_with_forks_only_for_candidates(
    stand_in: tuple[Path, dict[str, str]], cid: str
) -> None:
    root, env = stand_in
    shell = SHELLS[cid]
    assert shell.count(GREP_GUARD) == 1
    filtered, tr_filtered = _run(shell, root, env)
    full, tr_full = _run(shell.replace(GREP_GUARD, FULL_SCAN), root, env)
    assert filtered == full
    assert "@@pid" in filtered or cid != "engine_procs"
    assert tr_full >= 300  # the old way: every process's command line through tr
    assert tr_filtered <= 12, tr_filtered  # the engines' own reads only


def test_without_grep_every_process_is_read(stand_in: tuple[Path, dict[str, str]]) -> None:
    root, env = stand_in
    shell = ENGINE_PROCS_SHELL.replace("grep -l -s -E", "no-such-grep -l -s -E")
    out, calls = _run(shell, root, env)
    assert calls >= 300  # fell back to the full scan
    # and still finds the engine (the stand-in's pid is its path)
    assert f"@@pid {root}/4200\n" in out


def test_a_process_only_nvidia_smi_names_is_still_read(tmp_path: Path) -> None:
    worker = subprocess.Popen(["sleep", "60"])
    try:
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        smi = bin_dir / "nvidia-smi"
        smi.write_text(f"#!/bin/sh\necho {worker.pid}\n")
        smi.chmod(0o755)
        env = dict(os.environ, PATH=f"{bin_dir}:/usr/bin:/bin")
        for shell in (ENGINE_PROCS_SHELL, ENGINE_STATUS_SHELL):
            out = subprocess.run(
                ["sh", "-c", shell], capture_output=True, text=True, timeout=120, env=env
            ).stdout
            assert f"@@pid {worker.pid}\n" in out
    finally:
        worker.kill()
        worker.wait()


NUL_STOPPING_GREP = r"""#!/usr/bin/env python3
# A grep whose -l/-q read each file only up to its first NUL (regexec without REG_STARTEND); else the real one.
import os, re, sys
args = sys.argv[1:]
if "-l" not in args and "-q" not in args:
    os.execv("/bin/grep", ["grep", *args])
flags = [a for a in args if a.startswith("-")]
pattern, *files = [a for a in args if not a.startswith("-")]
hits = []
for name in files:
    try:
        text = open(name, "rb").read().split(b"\0", 1)[0].decode("utf-8", "replace")
    except OSError:
        continue
    if re.search(pattern, text):
        hits.append(name)
if "-l" in flags:
    print("\n".join(hits))
sys.exit(0 if hits else 1)
"""


def test_a_grep_that_stops_at_a_nul_falls_back_to_reading_every_process(
    stand_in: tuple[Path, dict[str, str]],
) -> None:
    """`python3 -m sglang...` holds the engine's name only after a NUL: such a grep named no candidate and the
    engine went unseen; the scan's own command line (the names after `sh\\0-c\\0`) tells that grep apart."""
    root, env = stand_in
    grep = Path(env["PATH"].split(":", 1)[0]) / "grep"
    grep.write_text(NUL_STOPPING_GREP)
    grep.chmod(0o755)
    out, calls = _run(ENGINE_PROCS_SHELL, root, env)
    assert "4200" in out and calls >= 300, out


def test_a_model_argument_cannot_forge_the_listings_lines(tmp_path: Path) -> None:
    """The model path is the engine owner's text: dash's `echo` turned its `\\n` into a new line, so a chosen
    `--model-path` printed a `@@file` line of its own; printf '%s' prints it as it is."""
    root = tmp_path / "proc"
    _proc(
        root, 4200, ["python3", "-m", "sglang.launch_server", "--model-path", r"/none/m\n@@file x"]
    )
    line = MODEL_FILES_SHELL.replace("/proc/[0-9]*", f"{root}/[0-9]*")
    out = subprocess.run(["sh", "-c", line], capture_output=True, text=True, timeout=60).stdout
    assert "@@model /none/m\\n@@file x\n" in out
    assert not [ln for ln in out.splitlines() if ln.startswith("@@file")], out
