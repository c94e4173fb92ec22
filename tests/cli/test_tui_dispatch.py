"""Where the command line sends a terminal's audit (issue 30): the dashboard straight through the bridge, and
`--resume` through tui/cli/headless.py's `run_then_show` (resumed headless, then the dashboard's `run_app`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from gpuaudit.tui.cli import bridge, entry, headless

DEMO = Path(__file__).resolve().parents[2] / "snapshots" / "examples" / "case-study-after.json"


class Interactive:
    """Stands for tui/interactive.py: records what the bridge was asked to show."""

    def __init__(self) -> None:
        self.shown: list[object] = []

    def main(self, request: object) -> int:
        self.shown.append(request)
        return 0

    def run_app(self, request: object) -> int:
        return self.main(request)


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Interactive:
    monkeypatch.setenv("HOME", str(tmp_path))
    fake = Interactive()
    monkeypatch.setattr(bridge, "interactive", lambda: fake)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    return fake


def test_demo_on_a_terminal_opens_the_dashboard(terminal: Interactive) -> None:
    assert entry.main(["--demo"]) == 0
    assert [r.demo for r in terminal.shown] == [True]  # type: ignore[attr-defined]


def test_resume_on_a_terminal_resumes_then_shows(
    terminal: Interactive, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[object, object]] = []

    def run_then_show(request: object, run_app: object) -> int:
        calls.append((request, run_app))
        return 0

    monkeypatch.setattr(headless, "run_then_show", run_then_show)
    assert entry.main(["--resume", str(DEMO), "--yes"]) == 0
    assert len(calls) == 1 and calls[0][1] == terminal.run_app
    assert calls[0][0].resume == str(DEMO)  # type: ignore[attr-defined]
    # not the dashboard's door: the resumed result is shown by run_then_show
    assert terminal.shown == []


def test_unknown_probe_is_one_line_before_the_tui(
    terminal: Interactive, capsys: pytest.CaptureFixture[str]
) -> None:
    assert entry.main(["--demo", "--probes", "pcie,nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "gpuaudit-tui: error: --probes: unknown probe id(s) nope; known: firmware, container, driver, "
        "kernel, pcie, power, nccl, numa, python, nvlink"
    ]
    assert terminal.shown == []
