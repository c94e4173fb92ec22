"""`--container lxc:NAME` against a real (offline, busybox) LXC container entered with lxc-attach."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gpuaudit.snapshots.compact import unpack
from lxc_kit import REQUIRED, busybox_container, lxc_missing

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(  # in CI (REQUIRED) the tests run and fail on a missing lxc
    not REQUIRED and lxc_missing() is not None, reason=str(lxc_missing())
)


@pytest.fixture
def lxc_container():
    yield from busybox_container("gatest")


def test_audit_reaches_the_container_through_lxc_attach(lxc_container, tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpuaudit.tui",
            "--json",
            "--fail-on",
            "never",
            "--container",
            f"lxc:{lxc_container}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stderr
    doc = unpack(json.loads(proc.stdout))
    assert doc["target_states"]["container"]["state"] == "connected"
    assert doc["target_states"]["container"]["hostname"] == lxc_container
    container_records = [
        r for p in doc["probes"] for r in p["records"] if r["target"] == "container"
    ]
    assert container_records
    # the command's deadline under the guard that owns its group (remote_line.GUARD_INNER)
    assert all(
        f"lxc-attach -n {lxc_container} -- sh -c " in r["executed"]
        and "gpuaudit-guard 'exec timeout -s KILL" in r["executed"]
        for r in container_records
    )


def test_missing_container_is_a_failed_target_not_a_crash(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpuaudit.tui",
            "--json",
            "--fail-on",
            "never",
            "--container",
            "lxc:no-such-ct-xyz",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert proc.returncode in (0, 3), proc.stderr  # 3: a target failed (tui/cli/entry.py EXIT_RULE)
    doc = json.loads(proc.stdout)
    assert doc["target_states"]["host"]["state"] == "connected"
    state = doc["target_states"]["container"]
    assert state["state"] == "failed" and "lxc:no-such-ct-xyz" in state["reason"]


async def test_container_command_leaves_nothing_after_timeout_or_cancel(lxc_container):
    """Killing lxc-attach on the host does not kill what it started inside: the timeout inside the container does."""
    import asyncio
    import time

    sys.path.insert(0, str(ROOT / "tests"))
    from gpuaudit.probes.core.run.runner import AuditOptions
    from gpuaudit.probes.core.spec import Command
    from reliability.faultkit import fake_probe, run_audit

    def left() -> list[str]:
        out = subprocess.run(
            ["pgrep", "-af", "sleep 486|lxc-attach"], capture_output=True, text=True
        ).stdout
        return [
            ln
            for ln in out.splitlines()
            if "pgrep" not in ln and lxc_container in ln or "sleep 486" in ln
        ]

    probe = fake_probe(
        "cthang",
        Command("c_ct_hang", "sleep 4861", on=frozenset({"container"})),
        Command("c_ct_hang2", "sleep 4862; echo never", on=frozenset({"container"})),
    )
    t0 = time.monotonic()
    run = await run_audit("local", f"lxc:{lxc_container}", None, [probe], AuditOptions(timeout_s=2))
    wall = time.monotonic() - t0
    await asyncio.sleep(1.5)
    assert left() == [] and wall < 8, (left(), wall)
    recs = {r.command_id: r for r in run.probe("cthang").records}
    assert recs["c_ct_hang"].timed_out and recs["c_ct_hang2"].timed_out
    assert "gpuaudit-guard 'exec timeout -s KILL 3 sh -c" in recs["c_ct_hang"].executed
