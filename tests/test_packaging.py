"""The built wheel installs into a fresh venv and its console script runs (catches missing package data).

Runs the same whether the suite itself runs in the system Python or inside a venv (the README's path):
the fresh venv sees the *running* interpreter's site-packages (for the dependencies) through a .pth
line, never the base interpreter's, and never the editable install of this checkout.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import sysconfig
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOP_LEVEL = ("probes", "snapshots", "tui", "themes")
CITED_DOCS = ("CHECKS.md", "ROOFLINE-METHOD.md", "JSON.md")
"""Documents the findings, the roofline and --json-schema's help cite (docs/NAME.md)."""


def package_folders() -> set[str]:
    """Every folder with an __init__.py under the four top-level folders, as its gpuaudit.* name."""
    names = set()
    for top in TOP_LEVEL:
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT)
            if "__pycache__" not in rel.parts and "examples" not in rel.parts:
                names.add("gpuaudit." + ".".join(rel.parts))
    return names


def test_every_package_folder_is_listed_in_pyproject():
    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    missing = sorted(package_folders() - listed)
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {missing}"


def fresh_venv(env_dir: Path) -> Path:
    """A venv without system site-packages whose only extra path is this interpreter's site-packages."""
    venv.EnvBuilder(with_pip=False, system_site_packages=False).create(env_dir)
    py = env_dir / "bin" / "python"
    site_dir = Path(
        subprocess.run(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    deps = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    # plain path lines: .pth files inside them (the editable install's finder) are not processed
    (site_dir / "outer_site.pth").write_text("\n".join(deps) + "\n")
    return py


@pytest.mark.slow
def test_wheel_installs_and_runs(tmp_path):
    dist = tmp_path / "dist"
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(dist),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
    )
    if build.returncode != 0 and "setuptools" in build.stderr:
        build = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(dist), str(ROOT)],
            capture_output=True,
            text=True,
        )
    assert build.returncode == 0, build.stderr[-2000:]
    wheel = next(dist.glob("gpuaudit_tui-*.whl"))
    with zipfile.ZipFile(wheel) as zf:  # the documents the UI and JSON cite ship in the wheel
        names = set(zf.namelist())
        for cited in CITED_DOCS:
            inside = f"gpuaudit/tui/docs/{cited}"
            assert inside in names, f"{cited} not in the wheel"
            assert zf.read(inside) == (ROOT / "docs" / cited).read_bytes(), cited
    env_dir = tmp_path / "venv"
    py = fresh_venv(env_dir)
    inst = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(py),
            "install",
            "-q",
            "--no-deps",
            str(wheel),
        ],
        capture_output=True,
        text=True,
    )
    if (
        inst.returncode != 0 and "--python" in inst.stderr
    ):  # pip < 22.3: install with the venv's own pip if any
        inst = subprocess.run(
            [str(py), "-m", "pip", "install", "-q", "--no-deps", str(wheel)],
            capture_output=True,
            text=True,
        )
    assert inst.returncode == 0, inst.stderr[-2000:]
    exe = env_dir / "bin" / "gpuaudit-tui"
    elsewhere = tmp_path / "elsewhere"  # a directory where the source tree is not importable
    elsewhere.mkdir()
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin:/usr/sbin:/sbin"}

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(argv), capture_output=True, text=True, cwd=elsewhere, env=env, timeout=300
        )

    helped = run(str(exe), "--help")
    assert helped.returncode == 0 and "gpuaudit-tui" in helped.stdout, helped.stderr[-2000:]
    where = run(
        str(py),
        "-c",
        "import gpuaudit.tui, gpuaudit.probes; print(gpuaudit.tui.__file__, gpuaudit.probes.__file__)",
    )
    assert where.returncode == 0 and where.stdout.count(str(env_dir)) == 2, (
        where.stdout,
        where.stderr[-2000:],
    )
    for top in TOP_LEVEL:  # the repository's folder names are not installed as top-level packages
        bare = run(str(py), "-c", f"import {top}")
        assert bare.returncode != 0 and "ModuleNotFoundError" in bare.stderr, (
            top,
            bare.stdout,
            bare.stderr,
        )
    listed = run(str(exe), "--docs")  # where a pip-only user finds them
    assert listed.returncode == 0, listed.stderr
    for cited in CITED_DOCS:
        assert f"{env_dir}" in listed.stdout and f"/gpuaudit/tui/docs/{cited}\n" in listed.stdout
        shown = run(str(exe), "--docs", cited.removesuffix(".md"))
        assert shown.returncode == 0 and shown.stdout == (ROOT / "docs" / cited).read_text()
    unknown = run(str(exe), "--docs", "NOPE")
    assert unknown.returncode == 2 and len(unknown.stderr.splitlines()) == 1, unknown.stderr
    audited = run(str(exe), "--json", "--fail-on", "never")
    assert audited.returncode == 0, audited.stderr[-2000:]
    assert len(json.loads(audited.stdout)["probes"]) == 10
    data = run(
        str(py),
        "-c",
        "import gpuaudit.themes as t, pathlib; print(sorted(p.name for p in pathlib.Path(t.__file__).parent.glob('*.tcss')))",
    )
    assert data.returncode == 0 and "base.tcss" in data.stdout, data.stderr
    if (ROOT / "snapshots" / "examples" / "case-study-before.json").exists():
        demo = run(str(exe), "--demo", "--json", "--fail-on", "never")
        assert demo.returncode == 0, demo.stderr[-2000:]


def test_the_docs_link_is_the_repository_docs_and_every_cited_document_is_there():
    """tui/docs -> ../docs (package data of gpuaudit.tui); every docs/NAME.md a shown string cites is in it."""
    link = ROOT / "tui" / "docs"
    assert link.is_symlink() and link.resolve() == (ROOT / "docs").resolve()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "docs/*.md" in data["package-data"]["gpuaudit.tui"]
    cited = set()
    for top in ("probes", "tui", "snapshots"):
        for src in (ROOT / top).rglob("*.py"):
            cited |= set(re.findall(r"docs/([A-Z][A-Z-]+\.md)", src.read_text(encoding="utf-8")))
    assert {"CHECKS.md", "ROOFLINE-METHOD.md"} <= cited
    assert set(CITED_DOCS) >= cited & set(CITED_DOCS)
    missing = sorted(c for c in cited if not (link / c).is_file())
    assert not missing, f"cited but not shipped: {missing}"
