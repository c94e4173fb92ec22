"""The DaemonSet's capabilities are the least that let the audit read what its checks need (proved with setpriv:
which /proc reads of a serving engine succeed under exactly the manifest's capabilities, and fail with none),
it mounts nothing no code reads, and the image it names is built by the repository's Containerfile with the
package's version as its tag."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from gpuaudit.probes.core.version import __version__

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "docs" / "deploy" / "kubernetes"
MARK = "GPUAUDIT_ENGINE_STAND_IN"
READS = ("environ", "maps", "exe", "cmdline")  # exe: readlink, the rest: read


def manifest() -> dict:
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load((K8S / "gpuaudit-daemonset.yaml").read_text())


def container() -> dict:
    (ctr,) = manifest()["spec"]["template"]["spec"]["containers"]
    return ctr


def test_image_tag_and_containerfile_follow_the_package_version():
    image = container()["image"]
    assert image == f"ghcr.io/gpuaudit/gpuaudit-tui:{__version__}"
    text = (K8S / "Containerfile").read_text()
    assert re.search(rf"^ARG VERSION={re.escape(__version__)}$", text, re.M)
    assert f"-t {image} ." in text, (
        "the documented build command makes the image the DaemonSet runs"
    )
    assert 'test "$(gpuaudit-tui --version)" = "gpuaudit-tui ${VERSION}"' in text
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(rf'^version = "{re.escape(__version__)}"', pyproject, re.M)


def test_no_host_path_that_no_code_reads():
    pod = manifest()["spec"]["template"]["spec"]
    host_paths = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
    assert host_paths == {"textfile": "/var/lib/node_exporter/textfile_collector"}
    sources = "\n".join(
        p.read_text(errors="replace") for d in ("probes", "tui") for p in (ROOT / d).rglob("*.py")
    )
    assert "/host/" not in sources, "a probe reads a /host/ path: mount it in the DaemonSet"


def _caps() -> list[str]:
    return [c.lower() for c in container()["securityContext"]["capabilities"]["add"]]


def _read(pid: int, what: str, bounding: str) -> bool:
    """Can a root process whose capabilities are exactly `bounding` read /proc/PID/what?"""
    op = f"readlink /proc/{pid}/exe" if what == "exe" else f"cat /proc/{pid}/{what}"
    proc = subprocess.run(
        [
            "setpriv",
            f"--bounding-set={bounding}",
            "--inh-caps=-all",
            "sh",
            "-c",
            f"{op} >/dev/null 2>&1",
        ],
        capture_output=True,
        timeout=10,
    )
    return proc.returncode == 0


def test_setpriv_the_manifest_capabilities_read_the_engine_and_none_do_not():
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv (util-linux)")
    if _read(os.getpid(), "cmdline", "-all,+sys_ptrace") is False:
        pytest.skip("this sandbox cannot drop capabilities with setpriv")
    engines = [
        subprocess.Popen(["sleep", "60"], env={MARK: "root", "PATH": "/usr/bin:/bin"}),
        # an engine under another uid (a non-root serving container)
        subprocess.Popen(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "sleep",
                "60",
            ],
            env={MARK: "nobody", "PATH": "/usr/bin:/bin"},
        ),
    ]
    try:
        time.sleep(0.3)
        manifest_caps = "-all," + ",".join(f"+{c}" for c in _caps())
        table = {}
        for p in engines:
            for what in READS:
                table[(p.pid, what, "manifest")] = _read(p.pid, what, manifest_caps)
                table[(p.pid, what, "none")] = _read(p.pid, what, "-all")
        # every read the engine checks make succeeds with the manifest's capabilities
        assert all(table[(p.pid, w, "manifest")] for p in engines for w in READS), table
        # and with every capability dropped, the engine's environment and maps are refused
        assert not any(table[(p.pid, w, "none")] for p in engines for w in ("environ", "maps"))
        # least: dropping either of the two /proc capabilities loses a read
        for dropped in ("sys_ptrace", "dac_read_search"):
            fewer = "-all," + ",".join(f"+{c}" for c in _caps() if c != dropped)
            assert not all(_read(p.pid, "environ", fewer) for p in engines), dropped
    finally:
        for p in engines:
            p.kill()
            p.wait(timeout=5)
