"""--html (issue 28): one self-contained offline file, rendered by a real headless browser (Debian's chromium).

The page is rendered by `chromium --headless --dump-dom` (the DOM after parsing and layout) and read back: the
header, the plan, findings with their evidence excerpts, the SVG pictures, the roofline and the diff are there.
Without chromium the browser tests skip, except in CI (`.ci/run` installs it and sets GPUAUDIT_REQUIRE_SSHD).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from gpuaudit.tui.cli import entry

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "snapshots" / "examples"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def need_chromium() -> str:
    if CHROMIUM is None:
        if os.environ.get("GPUAUDIT_REQUIRE_SSHD") == "1" or os.environ.get("CI"):
            pytest.fail("chromium is required in CI (apt-get install chromium)")
        pytest.skip("chromium not installed (apt-get install chromium)")
    return CHROMIUM


def chromium(tmp_path: Path, page: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        need_chromium(),
        "--headless",
        "--no-sandbox",  # root in CI containers
        "--disable-gpu",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        *args,
        page.as_uri(),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.tags: dict[str, int] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] = self.tags.get(tag, 0) + 1

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def page_text(dom: str) -> tuple[str, dict[str, int]]:
    p = _Text()
    p.feed(dom)
    return " ".join(" ".join(p.parts).split()), p.tags


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("html")
    out = {"demo": d / "demo.html", "diff": d / "diff.html"}
    assert entry.main(["--demo", "--html", str(out["demo"])]) in (0, 1)
    before, after = EXAMPLES / "case-study-before.json", EXAMPLES / "case-study-after.json"
    assert entry.main(["diff", str(before), str(after), "--html", str(out["diff"])]) == 1
    return out


def test_self_contained_and_offline(reports: dict[str, Path]) -> None:
    for path in reports.values():
        html = path.read_text(encoding="utf-8")
        assert "<script" not in html.lower()
        assert not re.search(r"(?i)(?:src|href)\s*=\s*[\"']?(?:https?:|//)", html), "no fetch"
        assert "@import" not in html and "url(" not in html
        assert "default-src 'none'" in html  # the page tells the browser too
        assert html.count("<svg") >= 3  # roofline bar, PCIe tree, GPU matrix


def test_chromium_renders_the_demo(reports: dict[str, Path], tmp_path: Path) -> None:
    res = chromium(tmp_path, reports["demo"], "--dump-dom")
    assert res.returncode == 0, res.stderr[-2000:]
    text, tags = page_text(res.stdout)
    for expected in (
        "gpuaudit-tui report",
        "DEMO: illustrative example",
        "Action plan",
        "CUDA graphs disabled",  # the critical step
        "Decode roofline",
        "all-reduce 98",  # the bound, drawn in the SVG bar
        "PCIe / NUMA tree",
        "GPU0 01:00.0 idle Gen1 x16 / can Gen5 x16",  # a GPU's link at idle vs capable
        "MRRS 512",
        "GPU x GPU paths",
        "NODE✓",
        "Per GPU",
        "600/600 W",
        "Findings by probe",
        "MaxReadReq",  # an evidence excerpt: lspci's DevCtl line
    ):
        assert expected in text, expected
    assert tags.get("svg", 0) >= 3 and tags.get("details", 0) > 10
    assert "What changed" not in text


def test_chromium_renders_the_diff_and_lays_it_out(
    reports: dict[str, Path], tmp_path: Path
) -> None:
    res = chromium(tmp_path, reports["diff"], "--dump-dom")
    assert res.returncode == 0, res.stderr[-2000:]
    text, _ = page_text(res.stdout)
    assert "What changed" in text and "case-study-before" in text and "case-study-after" in text
    assert "MRRS 4096" in text  # B's tree: MaxReadReq after the fix
    shot = tmp_path / "page.png"
    res = chromium(tmp_path, reports["diff"], "--window-size=1100,1400", f"--screenshot={shot}")
    assert res.returncode == 0 and shot.exists()
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1100, 1400)
    assert len(data) > 40_000, "a laid-out page, not a blank one"


def test_html_path_checked_before_the_audit(tmp_path: Path, capsys) -> None:
    assert entry.main(["--demo", "--html", str(tmp_path / "missing" / "r.html")]) == 2
    assert "folder" in capsys.readouterr().err
