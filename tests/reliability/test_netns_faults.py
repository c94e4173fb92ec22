"""Faults that need a second host address: a host in its own network namespace, a dead and a blackholed peer."""

from __future__ import annotations

import time

import pytest

from gpuaudit.probes.core.runner import AuditOptions
from gpuaudit.probes.core.spec import Command
from reliability.faultkit import fake_probe, home, run_audit, run_cli  # noqa: F401
from netns import Netns

pytestmark = [pytest.mark.netns, pytest.mark.sshd]

PROBE = fake_probe("reach", Command("rel_uname", "uname -n; echo reached", on=frozenset({"host", "container"})))


async def test_host_in_namespace_completes_while_silent_container_times_out(sshd_factory):
    with Netns(41) as ns:
        server = sshd_factory(listen=ns.address, netns=ns.name)
        t0 = time.monotonic()
        run = await run_audit(server.spec, f"{server.user}@{ns.unused}:{server.port}", server.options(connect_timeout_s=1),
                              [PROBE], AuditOptions(timeout_s=5))
        elapsed = time.monotonic() - t0
        server.stop()
    assert run.target_states["host"].state == "connected"
    assert run.target_states["container"].state == "failed"
    assert "no answer" in run.target_states["container"].reason or "unreachable" in run.target_states["container"].reason
    recs = {r.target: r for r in run.probe("reach").records}
    assert recs["host"].ok and recs["host"].stdout.endswith("reached\n")
    assert recs["container"].error.startswith("target failed")
    assert elapsed < 4


def test_blackholed_address_fails_fast_with_one_line(sshd, home):
    with Netns(42) as ns:
        t0 = time.monotonic()
        res = run_cli(["--json", "--host", f"{sshd.user}@10.200.250.9:22", "--probes", "kernel", "--timeout", "2",
                       *sshd.cli_args()], home)
        elapsed = time.monotonic() - t0
        assert ns.name
    assert res.returncode == 3 and "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "10.200.250.9:22: no route to host" in lines[0], res.stderr
    assert elapsed < 12
