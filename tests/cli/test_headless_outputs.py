"""`--health` and `--plan` alone print from the audit's run: no Snapshot document is built for them (issue 30: its
roofline and packing cost ~60 ms of CPU on the case study); every output that is the snapshot still builds it."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpuaudit.snapshots.schema import Snapshot
from gpuaudit.tui.cli import entry

DEMO = Path(__file__).resolve().parents[2] / "snapshots" / "examples" / "case-study-after.json"


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[object]:
    monkeypatch.setenv("HOME", str(tmp_path))  # no baseline or store of the user
    calls: list[object] = []
    real = Snapshot.from_run

    def from_run(run: object) -> Snapshot:
        calls.append(run)
        return real(run)  # type: ignore[arg-type]

    monkeypatch.setattr(Snapshot, "from_run", staticmethod(from_run))
    return calls


@pytest.mark.parametrize("output", ["--health", "--plan"])
def test_health_and_plan_alone_build_no_snapshot(output, built, capsys):
    assert entry.main([output, "--fail-on", "never", "--replay", str(DEMO)]) == 0
    out = capsys.readouterr().out
    assert out.strip(), "nothing printed"
    assert built == [], f"{output} built the snapshot document"


@pytest.mark.parametrize(
    "extra", [["--json"], ["--health", "--prom", "PROM"], ["--plan", "--share", "SHARE"]]
)
def test_outputs_that_are_the_snapshot_build_it(extra, built, tmp_path, capsys):
    extra = [
        str(tmp_path / "x.prom") if a == "PROM" else str(tmp_path / "m.json") if a == "SHARE" else a
        for a in extra
    ]
    assert entry.main([*extra, "--fail-on", "never", "--replay", str(DEMO)]) == 0
    assert capsys.readouterr().out.strip()
    assert len(built) == 1
