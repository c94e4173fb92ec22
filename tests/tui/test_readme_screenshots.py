"""The README's screenshots (issue 28) are screen baselines: the demo's dashboard at 120x40 and its PCIe tree at
80x24, copied to docs/screenshots/ and held equal to the baselines here, so the README never shows an old screen.

After `pytest tests/tui --snapshot-update`, refresh the copies with `python3 tests/tui/test_readme_screenshots.py`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from gpuaudit.tui.app import make_app
from tui_support import FixedClock, case_study_run

ROOT = Path(__file__).resolve().parents[2]
SNAPS = Path(__file__).resolve().parent / "__snapshots__"
SCREENSHOTS = {
    "dashboard.svg": SNAPS / "test_readme_screenshots" / "test_demo_dashboard.svg",
    "pcie-tree.svg": SNAPS / "test_keys_and_pictures" / "test_picture_baselines[tree-80x24].svg",
    "gpu-paths.svg": SNAPS / "test_keys_and_pictures" / "test_picture_baselines[matrix-120x40].svg",
}


def demo_app():
    app = make_app(case_study_run(), clock=FixedClock(), theme="gpuaudit-dark")
    app.animation_level = "none"
    return app


def test_demo_dashboard(snap_compare) -> None:
    assert snap_compare(demo_app(), terminal_size=(120, 40))


@pytest.mark.parametrize("name", list(SCREENSHOTS))
def test_readme_screenshot_is_the_baseline(name: str) -> None:
    copy = ROOT / "docs" / "screenshots" / name
    assert copy.read_bytes() == SCREENSHOTS[name].read_bytes(), (
        f"docs/screenshots/{name} is stale: python3 tests/tui/test_readme_screenshots.py"
    )
    assert f"docs/screenshots/{name}" in (ROOT / "README.md").read_text()


if __name__ == "__main__":
    for name, src in SCREENSHOTS.items():
        shutil.copyfile(src, ROOT / "docs" / "screenshots" / name)
        print(f"docs/screenshots/{name} <- {src.relative_to(ROOT)}")
