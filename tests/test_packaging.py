"""The built wheel installs into a fresh venv and its console script runs (catches missing package data)."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_installs_and_runs(tmp_path):
    dist = tmp_path / "dist"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(dist), str(ROOT)],
                           capture_output=True, text=True)
    if build.returncode != 0 and "hatchling" in build.stderr:
        build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(dist), str(ROOT)],
                               capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-2000:]
    wheel = next(dist.glob("gpuaudit_tui-*.whl"))
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False, system_site_packages=True).create(env_dir)
    py = env_dir / "bin" / "python"
    inst = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(wheel)],
                          capture_output=True, text=True)
    assert inst.returncode == 0, inst.stderr[-2000:]
    exe = env_dir / "bin" / "gpuaudit-tui"
    # run from a directory where the source tree is not importable
    helped = subprocess.run([str(exe), "--help"], capture_output=True, text=True, cwd=tmp_path)
    assert helped.returncode == 0 and "gpuaudit-tui" in helped.stdout
    where = subprocess.run([str(py), "-c", "import tui, probes; print(tui.__file__, probes.__file__)"],
                           capture_output=True, text=True, cwd=tmp_path)
    assert str(env_dir) in where.stdout, where.stdout
    audited = subprocess.run([str(exe), "--json", "--fail-on", "never"], capture_output=True, text=True, cwd=tmp_path,
                             env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin:/usr/sbin:/sbin"})
    assert audited.returncode == 0, audited.stderr[-2000:]
    assert len(json.loads(audited.stdout)["probes"]) == 10
    data = subprocess.run([str(py), "-c", "import themes, pathlib; print(sorted(p.name for p in pathlib.Path(themes.__file__).parent.glob('*.tcss')))"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert data.returncode == 0
    demo = subprocess.run([str(exe), "--demo", "--json", "--fail-on", "never"], capture_output=True, text=True, cwd=tmp_path,
                          env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    if (ROOT / "snapshots" / "examples" / "case-study-before.json").exists():
        assert demo.returncode == 0, demo.stderr[-2000:]
