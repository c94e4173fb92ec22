"""A root audit never runs or reads what a local user planted (issue 29).

A user-owned fake engine: its argv[0] is the user's own `python3` script (which leaves a marker when run),
its venv carries a `.pth` file and a `sitecustomize.py` that leave markers, one dist-info METADATA, its model
directory's `config.json` and its stdout log are symlinks to a root-only file. A local root audit of the python
probe (the real CLI, real /proc scans) must execute none of it and copy nothing root-only into --json, while
still reading the user's genuine files as data (torch version, CUDA, arch flags, NCCL).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from gpuaudit.probes.core.parsers.engine import AS_OWNER_SHELL
from gpuaudit.probes.core.readonly import write_risks
from gpuaudit.snapshots.compact import unpack

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from sshd_server import TEST_USER, ensure_user  # noqa: E402

SECRET = "ROOTONLY-H29-SECRET"
ARCH = b"sm_75 sm_80 sm_86 sm_90 sm_100 sm_120 compute_120"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv (a root audit of another user's process)",
)


def _own(path: Path, uid: int, gid: int) -> None:
    for p in [path, *path.rglob("*")]:
        os.lchown(p, uid, gid)


@pytest.fixture
def planted():
    ensure_user()
    import pwd

    pw = pwd.getpwnam(TEST_USER)
    root_dir = Path(tempfile.mkdtemp(prefix="h29root-"))  # 0700, root's
    secret = root_dir / "secret"
    secret.write_text(
        f'{{"architectures": ["{SECRET}"]}}\nNCCL INFO {SECRET} via P2P\nVersion: {SECRET}\n'
    )
    secret.chmod(0o600)
    base = Path(tempfile.mkdtemp(prefix="h29user-"))
    base.chmod(0o755)
    site = base / "venv/lib/python3.11/site-packages"
    (site / "torch/lib").mkdir(parents=True)
    (base / "venv/bin").mkdir(parents=True)
    py = base / "venv/bin/python3"
    py.write_text(f'#!/bin/sh\necho run > {base}/EXECUTED-$(id -u)\nexec /usr/bin/python3 "$@"\n')
    py.chmod(0o755)
    (base / "venv/pyvenv.cfg").write_text(
        "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.2\n"
    )
    (site / "torch/version.py").write_text(
        "from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda']\n"
        "__version__ = '2.9.1+cu130'\ndebug = False\ncuda: Optional[str] = '13.0'\n"
        "git_version = '0'\nhip: Optional[str] = None\n"
    )
    (site / "torch/lib/libtorch_python.so").write_bytes(
        b"\x7fELF" + os.urandom(4096).replace(b"sm_", b"xx_") + b"\0" + ARCH + b"\0" + b"\0" * 64
    )
    for name, ver in (("torch", "2.9.1+cu130"), ("nvidia_nccl_cu13", "2.27.7")):
        d = site / f"{name}-{ver}.dist-info"
        d.mkdir()
        (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {ver}\n")
    evil = site / "vllm-0.1.dist-info"
    evil.mkdir()
    (evil / "METADATA").symlink_to(secret)
    (site / "zz-evil.pth").write_text(
        f"import os; open('{base}/PTH-' + str(os.getuid()), 'w').write('x')\n"
    )
    (site / "sitecustomize.py").write_text(
        f"import os; open('{base}/SITECUSTOMIZE-' + str(os.getuid()), 'w').write('x')\n"
    )
    (base / "model").mkdir()
    (base / "model/config.json").symlink_to(secret)
    log = base / "engine.log"
    _own(base, pw.pw_uid, pw.pw_gid)
    out = open(log, "wb")
    os.lchown(log, pw.pw_uid, pw.pw_gid)
    proc = subprocess.Popen(
        [str(py), "-c", "import time; time.sleep(120)", "vllm", "serve", str(base / "model")],
        executable="/usr/bin/python3",
        user=pw.pw_uid,
        group=pw.pw_gid,
        extra_groups=[],
        stdout=out,
        stderr=subprocess.DEVNULL,
        cwd=str(base),
    )
    out.close()
    # the user swaps its open log for a symlink to the root-only file (fd/1 still names the path)
    log.rename(base / "engine.old")
    log.symlink_to(secret)
    os.lchown(log, pw.pw_uid, pw.pw_gid)
    time.sleep(0.3)
    yield base, proc.pid
    proc.terminate()
    proc.wait(timeout=5)
    shutil.rmtree(base, ignore_errors=True)
    shutil.rmtree(root_dir, ignore_errors=True)


def _records(doc: dict) -> dict[str, str]:
    out = {}
    for probe in doc["probes"]:
        for rec in probe["records"]:
            out[rec["command_id"]] = rec["stdout"] + rec["stderr"]
    return out


def test_root_audit_of_a_user_planted_engine(planted):
    base, pid = planted
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpuaudit.tui",
            "--json",
            "--probes",
            "python",
            "--timeout",
            "30",
            "--fail-on",
            "never",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
    )
    assert res.returncode == 0, res.stderr[-2000:]
    # nothing of the user's ran as root: argv[0], .pth, sitecustomize (the engine itself runs its own as the user)
    ran_as_root = sorted(p.name for p in base.glob("*-0"))
    assert ran_as_root == []
    # nothing root-only reached the output (config.json, the log, a METADATA symlink)
    assert SECRET not in res.stdout
    recs = _records(unpack(json.loads(res.stdout)))
    # ... while the user's genuine files were read, as data, as the user
    pyenv = recs["pyenv"]
    assert f"@@python {base}/venv/bin/python3" in pyenv
    line = next(ln for ln in pyenv.splitlines() if ln.startswith("{"))
    env = json.loads(line)
    assert env["torch"] == "2.9.1+cu130" and env["torch_cuda"] == "13.0"
    assert env["arch_list"] == ARCH.decode().split()
    assert env["nccl"] == "2.27.7" and env["python"] == "3.11.2"
    assert "vllm" not in env["packages"] and env["read_as_uid"] != 0
    assert "unreadable as the engine's user" in recs["engine_model_files"]
    assert "@@source file" in recs["engine_logs"]


def test_reads_of_user_paths_run_as_the_user(planted):
    """The log tail and the model files go through `rd`: as root it reads with the process owner's uid, so a
    path swapped to a root-only file between the readlink and the read (or seen through another mount
    namespace) is refused by the kernel, while the user's own files read."""
    base, pid = planted
    secret = (base / "engine.log").resolve()
    body = (
        f"d=/proc/{pid}; "
        + AS_OWNER_SHELL
        + f'rd head -c 100 "{secret}"; echo "rc=$?"; rd head -c 100 "{base}/venv/pyvenv.cfg"'
    )
    assert write_risks(body) == []
    out = subprocess.run(["sh", "-c", body], capture_output=True, text=True, timeout=30)
    assert SECRET not in out.stdout and "rc=1" in out.stdout
    assert "home = /usr/bin" in out.stdout


def _pyenv_without_python3_on_path(tmp: Path) -> subprocess.CompletedProcess[str]:
    """The pyenv command where PATH holds no python3 (a container with only the engine's interpreter)."""
    from gpuaudit.probes.core.parsers.pyenv import PYENV_SHELL

    tools = tmp / "bin"
    tools.mkdir()
    for t in ("tr", "readlink", "find", "id", "cat", "sh"):
        (tools / t).symlink_to(shutil.which(t) or f"/bin/{t}")
    return subprocess.run(
        ["/bin/sh", "-c", "LC_ALL=C; export LC_ALL; " + PYENV_SHELL.replace("{python}", "python3")],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": str(tools)},
    )


@pytest.fixture
def engine_as(tmp_path):
    """Start a fake engine whose /proc/PID/exe is `exe`, as the test user."""
    import pwd

    ensure_user()
    pw = pwd.getpwnam(TEST_USER)
    procs = []

    def start(exe: str) -> None:
        procs.append(
            subprocess.Popen(
                [exe, "-c", "import time; time.sleep(60)", "vllm", "serve", "/nonexistent"],
                user=pw.pw_uid,
                group=pw.pw_gid,
                extra_groups=[],
                cwd="/",
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        time.sleep(0.3)

    yield start
    for p in procs:
        p.kill()
        p.wait(5)


def test_without_python3_the_reader_runs_only_a_root_owned_engine_binary(engine_as, tmp_path):
    real = os.path.realpath("/usr/bin/python3")
    engine_as("/usr/bin/python3")
    res = _pyenv_without_python3_on_path(tmp_path)
    assert f"@@reader {real}" in res.stdout, res.stderr
    assert '"read_as_uid"' in res.stdout


def test_without_python3_a_user_owned_engine_binary_is_refused(engine_as, tmp_path):
    import pwd

    pw = pwd.getpwnam(TEST_USER)
    own = Path(tempfile.mkdtemp(prefix="h29own-"))
    own.chmod(0o755)
    try:
        shutil.copy2(os.path.realpath("/usr/bin/python3"), own / "python3")
        for p in (own, own / "python3"):
            os.chown(p, pw.pw_uid, pw.pw_gid)
        engine_as(str(own / "python3"))
        res = _pyenv_without_python3_on_path(tmp_path)
    finally:
        shutil.rmtree(own, ignore_errors=True)
    assert res.returncode == 126 and "refused" in res.stderr, (res.returncode, res.stderr)
    assert "@@reader" not in res.stdout


def test_a_root_engine_does_not_read_another_users_hub_as_root(tmp_path):
    # a root engine serving a hub model name; a user plants that name in its own hub with config.json ->
    # a root-only file. rd reads as the engine's uid (root), so that hub must not be read at all.
    import pwd
    import uuid

    from gpuaudit.probes.core.parsers.model_files import MODEL_FILES_SHELL

    ensure_user()
    pw = pwd.getpwnam(TEST_USER)
    secret = tmp_path / "secret"
    secret.write_text(f'{{"architectures": ["{SECRET}"]}}\n')
    secret.chmod(0o600)
    tmp_path.chmod(0o700)
    name = f"zz-h29/planted-{uuid.uuid4().hex[:8]}"
    home_hub = Path(pw.pw_dir) / ".cache/huggingface/hub"
    made = not home_hub.exists()
    snap = home_hub / ("models--" + name.replace("/", "--")) / "snapshots/abc"
    snap.mkdir(parents=True)
    (snap / "config.json").symlink_to(secret)
    top = home_hub.parents[1] if made else home_hub / ("models--" + name.replace("/", "--"))
    _own(top, pw.pw_uid, pw.pw_gid)
    env = {k: v for k, v in os.environ.items() if k != "HF_HOME"}
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "vllm", "serve", name],
        cwd=str(tmp_path),
        env=env,
    )
    try:
        time.sleep(0.3)
        out = subprocess.run(
            ["sh", "-c", MODEL_FILES_SHELL], capture_output=True, text=True, timeout=30
        )
    finally:
        proc.terminate()
        proc.wait(timeout=5)
        shutil.rmtree(top, ignore_errors=True)
    assert f"@@model {name}" in out.stdout
    assert SECRET not in out.stdout + out.stderr


def test_without_python3_a_root_owned_non_python_binary_of_a_look_alike_is_not_run(tmp_path):
    """A user's look-alike whose exe is a root-owned binary that is no python3 (here dash): the reader is
    not run with it as root (`dash -I -S -B -c READER`)."""
    import pwd

    ensure_user()
    pw = pwd.getpwnam(TEST_USER)
    p = subprocess.Popen(
        ["/bin/sh", "-c", "sleep 60; :", "vllm", "serve", "/nonexistent"],
        user=pw.pw_uid,
        group=pw.pw_gid,
        extra_groups=[],
        cwd="/",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(0.3)
        res = _pyenv_without_python3_on_path(tmp_path)
    finally:
        p.kill()
        p.wait(5)
    assert f"@@reader {os.path.realpath('/bin/sh')}" not in res.stdout, (
        res.stdout[:300],
        res.stderr,
    )
