"""A fleet host's audit does only the work its outputs need (issue 30): nothing reads its command events, so the
runner makes none, and the host's snapshot is the one an audit whose every event was read gives."""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest
from gpuaudit.probes.core.fleet.inventory import FleetHost
from gpuaudit.probes.core.run import events as run_events
from gpuaudit.probes.core.run.request import AuditRequest
from gpuaudit.probes.core.run.session import replay_bindings
from gpuaudit.snapshots import store
from gpuaudit.tui.cli import fleet_hosts
from gpuaudit.tui.cli.session_setup import ssh_options

pytestmark = pytest.mark.fast

CASE = store.EXAMPLES_DIR / "case-study-after.json"
VARYING = ("created_at", "started_at", "finished_at", "duration_s")
"""What differs between two runs of the same recording (clock readings)."""


def _without_clock(value: object) -> object:
    if isinstance(value, dict):
        return {k: _without_clock(v) for k, v in value.items() if k not in VARYING}
    if isinstance(value, list):
        return [_without_clock(v) for v in value]
    return value


def _count_command_started(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A counter ([n]) of the CommandStarted events built from now on."""
    built = [0]
    real_init = run_events.CommandStarted.__init__

    def counting(self, **data):  # type: ignore[no-untyped-def]
        built[0] += 1
        real_init(self, **data)

    monkeypatch.setattr(run_events.CommandStarted, "__init__", counting)
    return built


def _audit(monkeypatch: pytest.MonkeyPatch, *, events_read: bool) -> tuple[dict, int]:
    """One fleet host's snapshot (as its JSON document) over the case study's host records, and how many
    CommandStarted events were built meanwhile. `events_read`: a reader sees every event (the old fleet path)."""
    snap = store.load(CASE)
    records = [r for r in snap.records if r.target == "host"]
    host_target = next(t for t in snap.targets if t.role == "host")

    def bindings(host, container, ssh):  # type: ignore[no-untyped-def]
        return replay_bindings([host_target], records, states=snap.target_states)

    monkeypatch.setattr(fleet_hosts, "live_bindings", bindings)
    built = _count_command_started(monkeypatch)
    if events_read:
        real_collect = fleet_hosts.collect

        async def reading(setup, *args, **kwargs):  # type: ignore[no-untyped-def]
            return await real_collect(setup, *args, modules=("json",), saves_partial=True, **kwargs)

        monkeypatch.setattr(fleet_hosts, "collect", reading)
    request = AuditRequest(hosts="unused")
    ssh = dataclasses.replace(ssh_options(request), connections=1)
    result = asyncio.run(
        fleet_hosts.audit_host(
            FleetHost(spec="root@10.0.0.9", name="gpu9"), request, ssh, asyncio.Semaphore(1)
        )
    )
    assert result.snapshot_json and result.error is None
    return json.loads(result.snapshot_json), built[0]


def test_a_fleet_host_builds_no_command_events_and_its_snapshot_is_unchanged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    quiet, quiet_events = _audit(monkeypatch, events_read=False)
    monkeypatch.undo()
    read, read_events = _audit(monkeypatch, events_read=True)
    assert read_events > 50  # a reader gets one CommandStarted per command
    assert quiet_events == 0  # 132 before issue 30's sixth pass: collect always passed a reader
    assert len(quiet["records"]) > 50 and len(quiet["findings"]) > 50
    assert _without_clock(quiet) == _without_clock(read)


def _headless(monkeypatch: pytest.MonkeyPatch, **kwargs: object) -> tuple[dict, int]:
    """A headless audit of the case study's recording through tui/cli/headless.py `collect`, as main() runs it
    (preloading modules, so a reader is set), and how many CommandStarted events were built."""
    from gpuaudit.tui.cli import headless
    from gpuaudit.tui.cli.session_setup import build_setup

    built = _count_command_started(monkeypatch)
    setup = build_setup(AuditRequest(replay=str(CASE)))
    run = asyncio.run(headless.collect(setup, modules=("json",), **kwargs))  # type: ignore[arg-type]
    return json.loads(run.model_dump_json()), built[0]


def test_a_headless_audit_builds_command_events_only_when_they_are_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No progress line and no --save: nothing reads a command's events; with --save an interrupted run keeps
    each record as it comes. The run is the same either way."""
    quiet, quiet_events = _headless(monkeypatch)
    monkeypatch.undo()
    saving, saving_events = _headless(monkeypatch, partial=[], saves_partial=True)
    assert quiet_events == 0
    assert saving_events > 50
    assert _without_clock(quiet) == _without_clock(saving)
