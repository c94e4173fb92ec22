"""A headless live audit begins connecting while the CLI still loads (probes/core/collect/early.py).

The runner's first connect takes the early attempt's outcome (one attempt, not two: an unreachable host costs one
connect timeout), a later connect tries again, the loop that began is the one the audit runs on, and the login's
session starts with the preflight's budget (a hung login is called hung as soon as without the early start).
"""

from __future__ import annotations

import asyncio
import time

import pytest
from gpuaudit.probes.core.collect.early import EarlyStart, login_budget
from gpuaudit.probes.core.collect.transport import TransportBase
from gpuaudit.probes.core.collect.worker_transport import SessionTransport
from gpuaudit.probes.core.errors import TransportError
from gpuaudit.probes.core.run.request import AuditRequest
from gpuaudit.tui.cli import early_setup

pytestmark = pytest.mark.fast


class _Inner(TransportBase):
    """An SSH connection stand-in: each connect takes 50 ms; the first `fail` of them fail."""

    label = "inner"
    executes_lines = True

    def __init__(self, fail: int = 0) -> None:
        self.connects = 0
        self.fail = fail
        self.opened: list[str] = []

    async def connect(self) -> None:
        self.connects += 1
        await asyncio.sleep(0.05)
        if self.connects <= self.fail:
            raise TransportError("127.0.0.1:1: cannot connect (Connection refused)")

    async def open_session(self, line: str, open_timeout_s: float | None = None):
        self.opened.append(line)
        raise TransportError("no sessions here")


def test_the_first_connect_takes_the_early_attempts_outcome_and_a_later_one_tries_again() -> None:
    inner = _Inner(fail=1)
    transport = SessionTransport(inner)

    async def scenario() -> None:
        transport.begin(login_budget(5))
        with pytest.raises(TransportError, match="refused"):
            await transport.connect()
        assert inner.connects == 1  # the runner's connect did not dial again
        await transport.connect()  # a re-run connects anew
        assert inner.connects == 2
        await transport.aclose()

    asyncio.run(scenario())


def test_the_loop_that_began_in_the_background_runs_the_audit() -> None:
    inner = _Inner()
    transport = SessionTransport(inner)
    early = EarlyStart({"host": transport}, login_budget(5))
    deadline = time.monotonic() + 5
    while not inner.opened and time.monotonic() < deadline:  # the main thread "imports" meanwhile
        time.sleep(0.01)
    assert (
        inner.connects == 1 and len(inner.opened) == 1
    )  # connected and the login's session asked for
    loop = early.hand_over()
    try:
        loop.run_until_complete(transport.connect())  # takes the outcome, no second dial
        assert inner.connects == 1
        loop.run_until_complete(transport.aclose())
    finally:
        loop.close()


def test_only_a_live_ssh_audit_begins_early() -> None:
    assert early_setup.begin(AuditRequest(demo=True, json=True)) is None
    assert early_setup.begin(AuditRequest(json=True)) is None  # this machine: nothing to overlap
    assert early_setup.begin(AuditRequest(host="u@127.0.0.1:1", json=True, sessions=False)) is None
    early = early_setup.begin(AuditRequest(host="u@127.0.0.1:1", json=True, timeout=1))
    assert early is not None and list(early.transports) == ["host"]
    loop = early.hand_over()
    try:
        transport = early.transports["host"]
        with pytest.raises(TransportError):
            loop.run_until_complete(transport.connect())
        loop.run_until_complete(transport.aclose())
    finally:
        loop.close()


def test_the_login_budget_is_the_preflights() -> None:
    assert login_budget(20) == 15 and login_budget(2) == 12


def test_a_container_on_its_hosts_ssh_spec_gets_its_own_transport() -> None:
    """Two roles, one spec (the benchmarks audit a loopback sshd as both): two connections, as without the early
    start; one shared transport was connected twice by the runner."""
    spec = "u@127.0.0.1:1"
    early = early_setup.begin(AuditRequest(host=spec, container=spec, json=True, timeout=1))
    assert early is not None and set(early.transports) == {"host", "container"}
    assert early.transports["host"] is not early.transports["container"]
    loop = early.hand_over()
    try:
        for transport in early.transports.values():
            with pytest.raises(TransportError):
                loop.run_until_complete(transport.connect())
            loop.run_until_complete(transport.aclose())
    finally:
        loop.close()
