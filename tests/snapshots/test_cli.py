"""The `diff` and `snapshots` subcommands, --replay, and every corrupt-file case through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gpuaudit.snapshots import store
from gpuaudit.snapshots.compact import unpack
from gpuaudit.snapshots.schema import SCHEMA_VERSION
from gpuaudit.tui.cli.entry import main
from snapfactory import REPO, kernel_probe, snap

SAMPLE = REPO / "tests" / "fixtures" / "snapshots" / "v1" / "sample.json"


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuaudit.tui", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )


def _corrupt(tmp_path: Path, case: str) -> Path:
    path = tmp_path / f"{case}.json"
    good = SAMPLE.read_text()
    if case == "newer":
        doc = json.loads(good)
        doc["schema_version"] = SCHEMA_VERSION + 1
        path.write_text(json.dumps(doc))
    elif case == "truncated":
        path.write_text(good[: len(good) // 2])
    elif case == "not-json":
        path.write_text("kernel: 6.8.12-9-pve\n")
    elif case == "other-shape":
        path.write_text('{"name": "a package.json, say", "version": "1.0"}')
    elif case == "no-probes":
        path.write_text(json.dumps({"schema_version": SCHEMA_VERSION, "name": "x"}))
    elif case == "list":
        path.write_text("[1, 2, 3]")
    elif case == "empty":
        path.write_bytes(b"")
    elif case == "huge":  # sparse: the size check must refuse before reading anything
        with open(path, "wb") as fh:
            fh.truncate(store.MAX_SNAPSHOT_BYTES + 1)
    elif case == "binary":
        path.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    elif case == "wrong-field":
        doc = unpack(json.loads(good))
        doc["probes"][0]["records"][0]["exit_status"] = "zero"
        path.write_text(json.dumps(doc))
    return path


CASES = {
    "newer": "newer gpuaudit-tui",
    "truncated": "truncated JSON",
    "not-json": "not valid JSON",
    "other-shape": "not a gpuaudit-tui snapshot",
    "list": "not a gpuaudit-tui snapshot",
    "no-probes": "not a gpuaudit-tui snapshot (no probes)",
    "empty": "empty file",
    "huge": "too large",
    "binary": "not UTF-8",
    "wrong-field": "not a valid snapshot: probes.0.records.0.exit_status",
}


@pytest.mark.parametrize("case", list(CASES))
def test_corrupt_file_one_line_exit_2(tmp_path: Path, case: str) -> None:
    bad = _corrupt(tmp_path, case)
    r = run_cli("diff", str(bad), str(SAMPLE))
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr
    assert str(bad) in lines[0] and CASES[case] in lines[0]


@pytest.mark.parametrize("flag", ["--replay", "--resume"])
def test_corrupt_file_through_replay_and_resume(tmp_path: Path, flag: str) -> None:
    r = run_cli(flag, str(_corrupt(tmp_path, "truncated")), "--json")
    assert (
        r.returncode == 2
        and len(r.stderr.strip().splitlines()) == 1
        and "truncated JSON" in r.stderr
    )


def test_diff_exit_codes_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "store"
    store.save(snap(kernel_probe("6.8.12-9-pve", "1", "warning"), name="before"), "before", d)
    store.save(snap(kernel_probe("6.14.11-1-pve", "0", "ok"), name="after"), "after", d)
    assert main(["diff", "before", "before", "--snapshot-dir", str(d)]) == 0
    assert "identical" in capsys.readouterr().out
    assert main(["diff", "before", "after", "--snapshot-dir", str(d), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["identical"] is False
    (kernel,) = out["probes"]
    assert {(f["path"], f["old"], f["new"]) for f in kernel["facts"]} >= {
        ("kernel.release", "6.8.12-9-pve", "6.14.11-1-pve")
    }
    assert [(f["id"], f["kind"]) for f in kernel["findings"]] == [
        ("kernel.numa_balancing", "resolved")
    ]
    assert main(["diff", "before", "after", "--snapshot-dir", str(d), "--raw"]) == 1
    text = capsys.readouterr().out
    assert (
        "kernel.release (host): 6.8.12-9-pve → 6.14.11-1-pve" in text and "+6.14.11-1-pve" in text
    )
    assert "\x1b[" not in text  # not a terminal: no colour
    assert main(["diff", "before", "missing", "--snapshot-dir", str(d)]) == 2
    assert main(["diff", "before"]) == 2
    assert "error" in capsys.readouterr().err


def test_diff_in_a_subprocess_by_path_and_env_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = tmp_path / "env-store"
    monkeypatch.setenv(store.ENV_DIR, str(d))
    store.save(snap(kernel_probe("6.8.12-9-pve")), "a")
    b = store.save(snap(kernel_probe("6.14.11-1-pve")), "b", tmp_path)
    r = run_cli("diff", "a", str(b))
    assert r.returncode == 1 and "6.8.12-9-pve → 6.14.11-1-pve" in r.stdout


def test_snapshots_listing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # Rich folds long cells in a narrow (80 column) capture
    d = tmp_path / "store"
    assert main(["snapshots", "--snapshot-dir", str(d)]) == 0
    assert "no snapshots" in capsys.readouterr().out
    store.save(snap(kernel_probe(), name="older"), "older", d)
    store.save(
        snap(
            kernel_probe("6.14.11-1-pve", "0", "ok"),
            name="newer",
            created=snap().created_at.replace(day=24),
        ),
        "newer",
        d,
    )
    (d / "broken.json").write_text("{")
    assert main(["snapshots", "--snapshot-dir", str(d), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["snapshots"]
    assert [s["name"] for s in listed] == ["newer", "older", "broken"]
    assert listed[0]["kernel"] == "6.14.11-1-pve" and listed[0]["targets"] == [
        "host=root@127.0.0.1:1",
        "container=pct:101",
    ]
    assert listed[1]["counts"]["warning"] == 1 and listed[1]["created_at"].startswith("2026-01-10")
    assert "truncated JSON" in listed[2]["error"]
    assert main(["snapshots", "--snapshot-dir", str(d), "--examples"]) == 0
    out = capsys.readouterr().out
    assert (
        "newer" in out
        and "6.14.11-1-pve" in out
        and "unreadable" in out
        and "case-study-before" in out
    )
    assert main(["snapshots", "--bogus"]) == 2


def test_snapshots_listing_shows_hostile_text_literally(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    hostile = "6.8[/]\x1b]0;pwned\x07[red]x"  # SYNTHETIC: a target's `uname -r` is untrusted
    store.save(snap(kernel_probe(hostile), name="evil[/]", host="[bold]h"), "evil", tmp_path)
    assert (
        main(["snapshots", "--snapshot-dir", str(tmp_path)]) == 0
    )  # as markup, `[/]` raised MarkupError
    out = capsys.readouterr().out
    assert "6.8[/]\\x1b]0;pwned\\x07[red]x" in out and "\x1b" not in out
    assert "evil[/]" in out and "[bold]h" in out


def test_replay_rejudges_with_todays_rules_and_contacts_nothing(tmp_path: Path) -> None:
    """A stale finding in the file is replaced by what today's kernel probe says about the raw outputs."""
    s = snap(kernel_probe("6.8.12-9-pve", "1", "critical"), container=None, host="root@127.0.0.1:1")
    rec = s.probes[0].records[0]
    node_list = rec.model_copy(
        update={
            "command_id": "node_list",
            "stdout": "/sys/devices/system/node/node0\n/sys/devices/system/node/node1\n",
        }
    )
    s.probes[0].records.append(node_list)
    path = store.save(s, "stale", tmp_path)
    r = run_cli("--replay", str(path), "--json", "--probes", "kernel", "--fail-on", "never")
    assert r.returncode == 0, r.stderr
    out = unpack(json.loads(r.stdout))
    assert out["mode"] == "replay"
    (kernel,) = [p for p in out["probes"] if p["probe_id"] == "kernel"]
    assert kernel["facts"]["host"]["release"] == "6.8.12-9-pve"
    (numa,) = [f for f in kernel["findings"] if f["id"] == "kernel.numa_balancing"]
    assert numa["severity"] == "warning"  # today's rule, not the recorded "critical"
    assert {r["stdout"] for r in kernel["records"]} >= {"6.8.12-9-pve\n", "1\n"}
    assert (
        out["targets"][0]["spec"] == "root@127.0.0.1:1"
    )  # nothing listens on port 1: a contact would fail
    assert out["target_states"]["host"]["state"] == "connected"
    assert out["target_states"]["host"]["hostname"] == "pve1"  # the recorded identity, not "replay"


def test_replay_saves_under_snapshot_dir_with_private_modes(tmp_path: Path) -> None:
    d = tmp_path / "s"
    r = run_cli(
        "--replay", str(SAMPLE), "--json", "--save", "--snapshot-dir", str(d), "--fail-on", "never"
    )
    assert r.returncode == 0, r.stderr
    (saved,) = d.glob("*.json")
    assert "saved snapshot:" in r.stderr and str(saved) in r.stderr
    assert oct(saved.stat().st_mode & 0o777) == "0o600" and oct(d.stat().st_mode & 0o777) == "0o700"
    assert saved.name.startswith("pve1_6.8.12-9-pve_")
    assert os.path.getsize(saved) > 0
