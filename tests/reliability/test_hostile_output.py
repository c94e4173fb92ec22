"""Hostile command output over a real sshd: hangs, held stdout, floods, huge lines, binary and escapes.

All commands here are synthetic fault injections (fake probes), not real recorded outputs.
"""

from __future__ import annotations

import json
import time

import pytest
from gpuaudit.probes.core.run.runner import AuditOptions
from gpuaudit.probes.core.spec import Command
from gpuaudit.snapshots.compact import unpack
from gpuaudit.snapshots.schema import Snapshot
from reliability.faultkit import fake_probe, run_audit
from sshd_server import leftover_processes

pytestmark = pytest.mark.sshd

# Unique sleep lengths mark our own remote processes (other suites share the test user).
HANG = "sleep 4101.5"

HOSTILE = (
    Command("rel_hang", f"echo before-hang; {HANG}"),
    # a background child that keeps stdout open (and writes to it): dies of SIGPIPE once we close the channel
    Command(
        "rel_held_stdout",
        "echo parent-done; (while :; do sleep 0.2; echo tick-4102; done) & exit 0",
    ),
    Command("rel_flood", "head -c 104857600 /dev/zero | tr '\\0' 'A'"),
    Command("rel_long_line", "head -c 10485760 /dev/zero | tr '\\0' 'B'; echo"),
    Command("rel_non_utf8", "printf 'ok \\377\\376 end\\n'"),
    Command("rel_nul", "printf 'a\\000b\\000c\\n'"),
    Command("rel_escapes", "printf '\\033]0;pwned\\007title \\033[2Jcleared \\033[31mred\\n'"),
    Command("rel_stderr_binary", "printf '\\377err\\n' 1>&2; exit 5"),
    Command("rel_ok", "echo fine"),
)


async def test_hostile_outputs_are_recorded_faithfully_and_nothing_is_left_running(sshd):
    probe = fake_probe("hostile", *HOSTILE)
    t0 = time.monotonic()
    run = await run_audit(
        sshd.spec, None, sshd.options(), [probe], AuditOptions(timeout_s=2, max_bytes=1024 * 1024)
    )
    elapsed = time.monotonic() - t0
    recs = {r.command_id: r for r in run.probe("hostile").records}
    assert run.probe("hostile").status == "done"
    # hang: killed at the deadline, partial output kept
    assert recs["rel_hang"].timed_out and recs["rel_hang"].exit_status is None
    assert recs["rel_hang"].stdout == "before-hang\n"
    # a child holding stdout open: the parent's output is kept, the audit does not hang
    held = recs["rel_held_stdout"]
    assert held.stdout.startswith("parent-done\n") and held.exit_status == 0 and not held.timed_out
    # flood and single huge line: capped at max_bytes, marked truncated, command killed
    for cid, ch in (("rel_flood", "A"), ("rel_long_line", "B")):
        r = recs[cid]
        assert r.truncated and len(r.stdout) == 1024 * 1024 and set(r.stdout) == {ch}, cid
    # bytes: undecodable escaped, NUL and ESC kept as data (escaped again by JSON)
    assert recs["rel_non_utf8"].stdout == "ok \\xff\\xfe end\n"
    assert recs["rel_nul"].stdout == "a\x00b\x00c\n"
    assert recs["rel_escapes"].stdout == "\x1b]0;pwned\x07title \x1b[2Jcleared \x1b[31mred\n"
    assert (
        recs["rel_stderr_binary"].stderr == "\\xfferr\n"
        and recs["rel_stderr_binary"].exit_status == 5
    )
    assert recs["rel_ok"].ok and recs["rel_ok"].stdout == "fine\n"
    assert elapsed < 10, f"audit took {elapsed:.1f}s with a 2 s timeout"
    # --json form: valid JSON, control characters escaped, round-trips to the same text
    text = Snapshot.from_run(run).model_dump_json()
    assert "\x1b" not in text and "\x00" not in text and "\x07" not in text
    back = {r["command_id"]: r for p in unpack(json.loads(text))["probes"] for r in p["records"]}
    assert back["rel_escapes"]["stdout"] == recs["rel_escapes"].stdout
    assert back["rel_nul"]["stdout"] == recs["rel_nul"].stdout
    # nothing of ours left running on the target
    assert ours_left_running() == []


def ours_left_running() -> list[str]:
    """Our injected commands still alive on the target, polled briefly (a SIGPIPE death takes one tick)."""
    deadline = time.monotonic() + 3
    while True:
        left = [
            p
            for p in leftover_processes(sshd_user())
            if "defunct" not in p and any(m in p for m in ("4101.5", "tick-4102", "/dev/zero"))
        ]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def sshd_user() -> str:
    from sshd_server import TEST_USER

    return TEST_USER
