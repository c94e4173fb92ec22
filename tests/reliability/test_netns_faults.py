"""Faults that need a second host address: a host in its own network namespace, a dead and a blackholed peer."""

from __future__ import annotations

import time

import pytest
from gpuaudit.probes.core.run.runner import AuditOptions
from gpuaudit.probes.core.spec import Command
from netns import Netns
from reliability.faultkit import fake_probe, home, run_audit, run_cli  # noqa: F401

pytestmark = [pytest.mark.netns, pytest.mark.sshd]

PROBE = fake_probe(
    "reach", Command("rel_uname", "uname -n; echo reached", on=frozenset({"host", "container"}))
)


async def test_host_in_namespace_completes_while_silent_container_times_out(sshd_factory):
    with Netns(41) as ns:
        server = sshd_factory(listen=ns.address, netns=ns.name)
        t0 = time.monotonic()
        run = await run_audit(
            server.spec,
            f"{server.user}@{ns.unused}:{server.port}",
            server.options(connect_timeout_s=1),
            [PROBE],
            AuditOptions(timeout_s=5),
        )
        elapsed = time.monotonic() - t0
        server.stop()
    assert run.target_states["host"].state == "connected"
    assert run.target_states["container"].state == "failed"
    assert (
        "no answer" in run.target_states["container"].reason
        or "unreachable" in run.target_states["container"].reason
    )
    recs = {r.target: r for r in run.probe("reach").records}
    assert recs["host"].ok and recs["host"].stdout.endswith("reached\n")
    assert recs["container"].error.startswith("target failed")
    assert elapsed < 4


def test_blackholed_address_fails_fast_with_one_line(sshd, home):
    with Netns(42) as ns:
        t0 = time.monotonic()
        res = run_cli(
            [
                "--json",
                "--host",
                f"{sshd.user}@10.200.250.9:22",
                "--probes",
                "kernel",
                "--timeout",
                "2",
                *sshd.cli_args(),
            ],
            home,
        )
        elapsed = time.monotonic() - t0
        assert ns.name
    assert res.returncode == 3 and "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "10.200.250.9:22: no route to host" in lines[0], res.stderr
    assert elapsed < 12


async def test_network_cut_mid_audit_is_a_lost_target_nonzero_exit_no_traceback(sshd_factory):
    """Packets silently dropped mid-run (the namespace's link goes down): lost within timeout + a few s, not at keepalive."""
    import asyncio
    import subprocess

    from gpuaudit.probes.core.collect.targets import parse_host_spec
    from gpuaudit.probes.core.run.events import CommandFinished, fold_events, initial_run
    from gpuaudit.probes.core.run.runner import Audit
    from gpuaudit.probes.core.run.session import live_bindings
    from gpuaudit.tui.cli.headless import exit_code

    loop_errors: list[dict] = []
    asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: loop_errors.append(ctx))
    probe = fake_probe(
        "netcut",
        Command("rel_quick", "echo quick"),
        *[Command(f"rel_slow{i}", f"sleep 1.{i}; echo s{i}") for i in range(30)],
    )
    with Netns(43) as ns:
        server = sshd_factory(listen=ns.address, netns=ns.name, user="gpuaudit-coll")
        audit = Audit(
            live_bindings(parse_host_spec(server.spec), None, server.options(connections=2)),
            [probe],
            AuditOptions(timeout_s=3),
        )
        events, cut_at = [], None
        t0 = time.monotonic()
        try:
            async for ev in audit.events():
                events.append(ev)
                if cut_at is None and isinstance(ev, CommandFinished):
                    subprocess.run(["ip", "-n", ns.name, "link", "set", "eth0", "down"], check=True)
                    cut_at = time.monotonic()
        finally:
            await audit.aclose()
        wall = time.monotonic() - t0
        server.stop()
    print(
        f"\nnetwork cut: lost {wall - (cut_at - t0):.1f} s after the cut (--timeout 3), wall {wall:.1f} s"
    )
    run = fold_events(initial_run(audit.targets, [("netcut", "netcut")]), events)
    state = run.target_states["host"]
    assert state.state == "failed" and "connection lost" in state.reason, state
    assert exit_code(run, "never") != 0
    assert cut_at is not None and wall - (cut_at - t0) < 3 + 4, wall
    assert not [c for c in loop_errors if "never retrieved" in str(c.get("message"))], loop_errors
