"""Hostile snapshot files: one line + exit 2 for the bad file, the store listing keeps the good ones (issue 14 item 3)."""

from __future__ import annotations

import json

import pytest
from gpuaudit.snapshots import store
from gpuaudit.snapshots.listing import list_snapshots
from gpuaudit.snapshots.schema import Snapshot
from gpuaudit.tui.cli.entry import main

DEPTH = 200_000
HOSTILE = {
    "nested-list": b'{"schema_version": 1, "probes": ' + b"[" * DEPTH + b"]" * DEPTH + b"}",
    "nested-dict": b'{"schema_version": 1, "probes": [], "note": '
    + b'{"a": ' * DEPTH
    + b"1"
    + b"}" * DEPTH
    + b"}",
    "nested-bare": b"[" * DEPTH,
    "nested-no-header": b'{"probes": [], "x": '
    + b"[" * DEPTH
    + b"]" * DEPTH
    + b', "schema_version": 1}',
}


def one_line(err: str) -> str:
    assert "Traceback" not in err and "RecursionError" not in err, err[-2000:]
    lines = err.strip().splitlines()
    assert len(lines) == 1 and len(lines[0]) < 400, err[-2000:]
    return lines[0]


@pytest.fixture
def store_dir(tmp_path):
    d = tmp_path / "store"
    store.save(Snapshot(name="good-one"), "good-one", d)
    for name, data in HOSTILE.items():
        (d / f"{name}.json").write_bytes(data)
    return d


@pytest.mark.parametrize("name", list(HOSTILE))
def test_replay_of_a_deeply_nested_file_is_one_line_exit_2(name, store_dir, capsys):
    code = main(["--json", "--replay", str(store_dir / f"{name}.json")])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert name in one_line(err)


@pytest.mark.parametrize("name", list(HOSTILE))
def test_diff_with_a_deeply_nested_file_is_one_line_exit_2(name, store_dir, capsys):
    for args in (["good-one", name], [name, "good-one"]):
        code = main(["diff", *args, "--snapshot-dir", str(store_dir)])
        out, err = capsys.readouterr()
        assert code == 2 and out == "", err
        one_line(err)


def test_snapshots_lists_the_good_and_marks_the_bad(store_dir, capsys):
    assert main(["snapshots", "--snapshot-dir", str(store_dir)]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and "good-one" in out
    assert out.count("unreadable") == len(HOSTILE)
    assert main(["snapshots", "--json", "--snapshot-dir", str(store_dir)]) == 0
    doc = json.loads(capsys.readouterr().out)
    by_name = {s["name"]: s for s in doc["snapshots"]}
    assert by_name["good-one"]["error"] is None
    assert all("nested too deeply" in by_name[n]["error"] for n in HOSTILE)


def test_the_picker_function_lists_and_marks(store_dir):
    """list_snapshots is what the TUI picker uses: good ones first, bad ones marked by `error`, never raising."""
    infos = list_snapshots(store_dir)
    assert infos[0].name == "good-one" and infos[0].error is None
    assert {i.name for i in infos[1:]} == set(HOSTILE) and all(i.error for i in infos[1:])
