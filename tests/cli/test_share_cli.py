"""--share on the command line (issue 28): --json, --plan, --html and --save of the case study carry no original
identifier; the mapping goes to its own 0600 file, never into the output."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from gpuaudit.snapshots.share import share_snapshot_dict
from gpuaudit.tui.cli import entry

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def originals() -> list[str]:
    """Every identifier --share maps in the demo (hostnames that are also words of the trade excluded:
    `sglang` is the container's hostname and the engine's name; tests/snapshots/test_share.py checks it)."""
    doc = json.loads((ROOT / "snapshots/examples/case-study-before.json").read_text())
    _, sharer = share_snapshot_dict(doc)
    found = [o for kind, m in sharer.maps.items() for o in m if o != "sglang"]
    assert {"pve-gpu01", "sglang-ct101", "OM22CS039806"} <= set(found)
    assert any(o.startswith("5e0c0a21") for o in found) and "bc:24:11:3a:6e:21" in found
    return found


def survivors(text: str, originals: list[str]) -> list[str]:
    low = text.lower()
    return [o for o in originals if o.lower() in low]


def test_json_share(tmp_path: Path, capsysbinary, originals: list[str]) -> None:
    plain_rc = entry.main(["--demo", "--json"])
    plain = capsysbinary.readouterr().out.decode()
    assert len(survivors(plain, originals)) == len(originals)  # before: all there
    rc = entry.main(["--demo", "--json", "--share", str(tmp_path / "map.json")])
    out, err = capsysbinary.readouterr()
    assert rc == plain_rc
    assert survivors(out.decode(), originals) == []  # after: none
    doc = json.loads(out)
    assert doc["target_states"]["host"]["hostname"] == "host-1"
    assert "mapping" in err.decode() and str(tmp_path / "map.json") in err.decode()
    mapping = tmp_path / "map.json"
    assert stat.S_IMODE(mapping.stat().st_mode) == 0o600
    assert json.loads(mapping.read_text())["host"]["pve-gpu01"] == "host-1"


def test_plan_html_and_save_share(tmp_path: Path, capsys, originals: list[str]) -> None:
    entry.main(["--demo", "--plan", "--share", str(tmp_path / "m1.json")])
    plan = capsys.readouterr().out
    assert "action plan" in plan and "host-1" in plan and survivors(plan, originals) == []
    html = tmp_path / "r.html"
    store = tmp_path / "store"
    entry.main(
        ["--demo", "--html", str(html), "--save", "shared", "--snapshot-dir", str(store), "--share"]
    )
    assert survivors(html.read_text(), originals) == []
    saved = (store / "shared.json").read_text()
    assert survivors(saved, originals) == []


@pytest.mark.parametrize(
    ("argv", "what"),
    [
        (["--demo", "--share"], "--share applies to"),
        (["--demo", "--json", "--share", "/proc/map.json"], "kernel file system"),
        (["--hosts", "inventory.ini", "--json", "--share"], "per audit"),
        (["--hosts", "inventory.ini", "--html", "r.html"], "per audit"),
    ],
)
def test_share_usage_errors(argv: list[str], what: str, capsys) -> None:
    assert entry.main(argv) == 2
    assert what in capsys.readouterr().err
