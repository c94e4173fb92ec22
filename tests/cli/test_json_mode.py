"""Headless --json: the document's contract, exit codes, and full audits locally and over real SSH."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gpuaudit.probes.ids import PROBE_IDS
from gpuaudit.snapshots.compact import unpack

ORDER = list(PROBE_IDS)
ROOT = Path(__file__).resolve().parents[2]


def run_cli(
    *args: str, env_home: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if env_home:
        env["HOME"] = str(env_home)
    return subprocess.run(
        [sys.executable, "-m", "gpuaudit.tui", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=env,
    )


def check_document(doc: dict) -> None:
    for key in ("schema_version", "tool_version", "created_at", "targets", "probes", "findings"):
        assert key in doc, key
    assert [p["probe_id"] for p in doc["probes"]] == ORDER
    for p in doc["probes"]:
        assert p["status"] in ("done", "failed", "skipped", "cancelled")
    ids = {f["id"] for f in doc["findings"]}
    assert all(i.split(".", 1)[0] in ORDER for i in ids)
    flat = [f["id"] for p in unpack(doc)["probes"] for f in p["findings"]]
    assert flat == [f["id"] for f in doc["findings"]]


def test_local_json_audit_is_valid_and_honest(tmp_path):
    proc = run_cli("--json", "--fail-on", "never", env_home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = unpack(json.loads(proc.stdout))
    check_document(doc)
    assert doc["targets"][0]["kind"] == "local"
    # no GPU here: nothing that needs nvidia-smi data may claim ok
    smi_missing = all(
        r["exit_status"] != 0
        for p in doc["probes"]
        for r in p["records"]
        if r["command"].startswith("nvidia-smi")
    )
    if smi_missing:
        driver = next(p for p in doc["probes"] if p["probe_id"] == "driver")
        assert not [
            f
            for f in driver["findings"]
            if f["severity"] == "ok"
            and f["id"] in ("driver.persistence", "driver.ecc_rowremap")
            and not f["observed"].startswith("no NVIDIA GPU")
        ]  # proven absent: n/a, not ok


def test_probe_subset_and_save(tmp_path):
    store = tmp_path / "store"
    proc = run_cli(
        "--json",
        "--probes",
        "kernel,power",
        "--save",
        "mine",
        "--snapshot-dir",
        str(store),
        env_home=tmp_path,
    )
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads(proc.stdout)
    assert [p["probe_id"] for p in doc["probes"]] == ["kernel", "power"]
    saved = store / "mine.json"
    assert saved.exists() and (saved.stat().st_mode & 0o777) == 0o600
    assert f"saved snapshot: {saved}" in proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--probes", "pcie,bogus"],
        ["--timeout", "0"],
        ["--timeout", "-3"],
        ["--host", "root@"],
        ["--container", "pct:101;reboot"],
        ["--fail-on", "maybe"],
        ["--python", "/opt/my venv/bin/python"],
        ["--replay", "/nonexistent.json"],
        ["--json", "--plan"],
        ["--nope"],
    ],
)
def test_usage_errors_are_one_line_exit_2(args, tmp_path):
    proc = (
        run_cli("--json", *args, env_home=tmp_path)
        if "--json" not in args
        else run_cli(*args, env_home=tmp_path)
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpuaudit-tui: error:"), proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.sshd
def test_full_audit_over_ssh_host_and_container(sshd, tmp_path):
    proc = run_cli(
        "--json",
        "--fail-on",
        "never",
        "--host",
        sshd.spec,
        "--container",
        sshd.spec,
        *sshd.cli_args(),
        env_home=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    doc = unpack(json.loads(proc.stdout))
    check_document(doc)
    assert {t["role"] for t in doc["targets"]} == {"host", "container"}
    assert all(s["state"] == "connected" for s in doc["target_states"].values())
    records = [r for p in doc["probes"] for r in p["records"]]
    assert {r["target"] for r in records} == {"host", "container"}
    assert not [r for r in records if r["error"] and "channel" in r["error"]]


@pytest.mark.sshd
def test_unreachable_target_exit_2(sshd, tmp_path):
    from sshd_server import free_port

    proc = run_cli(
        "--json",
        "--host",
        f"{sshd.user}@127.0.0.1:{free_port()}",
        *sshd.cli_args(),
        env_home=tmp_path,
    )
    assert proc.returncode == 3  # a requested target could not be audited
    assert "connection refused" in proc.stderr
    doc = json.loads(proc.stdout)  # the document is still printed: nothing is lost
    assert doc["target_states"]["host"]["state"] == "failed"


def test_snapshot_dir_tilde_is_expanded_once_for_every_command(tmp_path):
    proc = run_cli(
        "--json", "--probes", "kernel", "--save", "t", "--snapshot-dir=~/snaps", env_home=tmp_path
    )
    assert proc.returncode in (0, 1), proc.stderr
    assert (tmp_path / "snaps" / "t.json").exists()
    listed = run_cli("snapshots", "--json", "--snapshot-dir=~/snaps", env_home=tmp_path)
    assert '"t"' in listed.stdout or "t.json" in listed.stdout
