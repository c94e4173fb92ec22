"""Bad input is rejected with one line on stderr, exit 2, nothing run and nothing written (synthetic inputs)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from gpuaudit.snapshots.schema import SCHEMA_VERSION, Snapshot
from gpuaudit.snapshots.store import MAX_SNAPSHOT_BYTES
from gpuaudit.tui.cli.entry import main
from reliability.faultkit import assert_one_line_error, home, run_cli  # noqa: F401

MARKER = Path("/tmp/gpuaudit-rel-executed-marker")

BAD_ARGS = {
    "host-empty-user": ["--host", "@10.200.0.1"],
    "host-bad-port": ["--host", "root@10.200.0.1:99999"],
    "host-port-not-number": ["--host", "10.200.0.1:ssh"],
    "host-space": ["--host", "10.200.0.1 -oProxyCommand=x"],
    "host-option-injection": ["--host=-oProxyCommand=touch /tmp/gpuaudit-rel-executed-marker"],
    "host-metachar": ["--host", "root@10.200.0.1;reboot"],
    "host-container-spec": ["--host", "pct:101"],
    "container-pct-semicolon": ["--container", "pct:101;reboot"],
    "container-docker-subst": ["--container", f"docker:$(touch {MARKER})"],
    "container-docker-backtick": ["--container", f"docker:`touch {MARKER}`"],
    "container-lxc-space": ["--container", "lxc:a b"],
    "container-lxc-dash": ["--container", "lxc:-n"],
    "container-pct-empty": ["--container", "pct:"],
    "container-lxc-traversal": ["--container", "lxc:../../etc"],
    "probes-unknown": ["--probes", "kernel,bogus"],
    "probes-empty": ["--probes", ","],
    "timeout-zero": ["--timeout", "0"],
    "timeout-negative": ["--timeout", "-1"],
    "timeout-nan": ["--timeout", "nan"],
    "timeout-inf": ["--timeout", "inf"],
    "timeout-text": ["--timeout", "soon"],
    "python-space": ["--python", "/usr/bin/python 3"],
    "python-quote": ["--python", "/usr/bin/py'thon"],
    "python-dquote": ["--python", '/opt/"x"/python'],
    "python-subst": ["--python", "$(id)"],
    "max-output-zero": ["--max-output", "0"],
}


@pytest.mark.parametrize("args", list(BAD_ARGS.values()), ids=list(BAD_ARGS))
def test_bad_arguments_are_one_line_exit_2(args, capsys, tmp_path):
    snaps = tmp_path / "snaps"
    code = main(["--json", "--save", "x", "--snapshot-dir", str(snaps), *args])
    out, err = capsys.readouterr()
    assert code == 2, err
    assert out == "" and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("gpuaudit-tui: error: ")
    assert not snaps.exists() and not MARKER.exists()


def _snapshot_files(d: Path) -> dict[str, bytes | int]:
    d.mkdir()
    ok = Snapshot().model_dump_json()
    newer = json.loads(ok)
    newer["schema_version"] = SCHEMA_VERSION + 1
    files: dict[str, bytes | int] = {
        "empty": b"",
        "truncated": ok.encode()[: len(ok) // 2],
        "not-json": b"\x89PNG\r\n\x1a\n not a snapshot",
        "json-list": b"[1, 2, 3]",
        "json-other-shape": json.dumps({"schema_version": 1, "probes": "nope"}).encode(),
        "json-no-version": json.dumps({"hello": "world"}).encode(),
        "version-string": json.dumps({"schema_version": "1", "probes": []}).encode(),
        "newer-schema": json.dumps(newer).encode(),
        "huge": MAX_SNAPSHOT_BYTES + 1,  # sparse file: size only
    }
    return files


@pytest.mark.parametrize(
    "kind",
    [
        "empty",
        "truncated",
        "not-json",
        "json-list",
        "json-other-shape",
        "json-no-version",
        "version-string",
        "newer-schema",
        "huge",
    ],
)
def test_bad_snapshot_files_are_rejected_by_replay(kind, capsys, tmp_path):
    content = _snapshot_files(tmp_path / "in")[kind]
    path = tmp_path / "in" / f"{kind}.json"
    if isinstance(content, int):
        with open(path, "wb") as fh:
            fh.truncate(content)
    else:
        path.write_bytes(content)
    before = os.stat(path).st_size
    code = main(["--json", "--replay", str(path)])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and "Traceback" not in err, err
    line = err.strip()
    assert len(line.splitlines()) == 1 and str(path) in line and len(line) < 400, line
    assert os.stat(path).st_size == before


def test_directory_and_missing_file_as_replay(capsys, tmp_path):
    for ref in (str(tmp_path), str(tmp_path / "missing.json")):
        code = main(["--json", "--replay", ref])
        out, err = capsys.readouterr()
        assert (
            code == 2
            and out == ""
            and len(err.strip().splitlines()) == 1
            and "Traceback" not in err
        ), err


def test_bad_input_through_the_real_entry_point(home):
    """The same rejections through `python -m tui` (a subprocess), metacharacters never reaching a shell."""
    for args in (
        ["--container", f"docker:$(touch {MARKER})"],
        ["--container", "pct:101;reboot"],
        ["--timeout", "0"],
        ["--probes", "nope"],
    ):
        res = run_cli(["--json", *args], home)
        assert_one_line_error(res)
    assert not MARKER.exists()
