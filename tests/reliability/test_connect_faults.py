"""Connection faults against a real sshd on 127.0.0.1: refused, silent, wrong/changed key, bad login, sshd killed."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from gpuaudit.probes.core.collect.targets import parse_container_spec, parse_host_spec
from gpuaudit.probes.core.run.events import CommandFinished, fold_events, initial_run
from gpuaudit.probes.core.run.runner import Audit, AuditOptions
from gpuaudit.probes.core.run.session import live_bindings
from gpuaudit.probes.core.spec import Command
from reliability.faultkit import (  # noqa: F401
    SilentServer,
    assert_one_line_error,
    fake_probe,
    free_port,
    home,
    kill_sshd_tree,
    run_audit,
    run_cli,
)
from sshd_server import keygen, leftover_processes

pytestmark = pytest.mark.sshd

QUICK = fake_probe("quick", Command("rel_echo", "echo hello", on=frozenset({"host", "container"})))


def test_refused_connection_is_one_line_exit_2(sshd, home):
    res = run_cli(
        [
            "--json",
            "--host",
            f"{sshd.user}@127.0.0.1:{free_port()}",
            "--probes",
            "kernel",
            *sshd.cli_args(),
        ],
        home,
    )
    assert res.returncode == 3  # a requested target could not be audited (issue 14's exit rule)
    assert "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "connection refused" in lines[0], res.stderr


async def test_port_that_never_sends_a_banner_times_out_instead_of_hanging(sshd):
    silent = SilentServer()
    try:
        t0 = time.monotonic()
        run = await asyncio.wait_for(
            run_audit(
                f"{sshd.user}@127.0.0.1:{silent.port}",
                None,
                sshd.options(connect_timeout_s=1),
                [QUICK],
            ),
            10,
        )
        assert time.monotonic() - t0 < 5
    finally:
        silent.close()
    state = run.target_states["host"]
    assert state.state == "failed" and "no answer (connect timeout)" in state.reason
    rec = run.probe("quick").records[0]
    assert rec.error and rec.error.startswith("target failed") and rec.exit_status is None


def _other_key_line(tmp: Path, port: int) -> str:
    keygen(tmp / "impostor", "impostor")
    return f"[127.0.0.1]:{port} " + " ".join((tmp / "impostor.pub").read_text().split()[:2]) + "\n"


@pytest.mark.parametrize("accept_new", [False, True])
def test_changed_host_key_is_refused_even_with_accept_new(sshd, home, tmp_path, accept_new):
    kh = tmp_path / "known_hosts"
    kh.write_text("# first line\n" + _other_key_line(tmp_path, sshd.port))
    before = kh.read_text()
    args = [
        "--json",
        "--host",
        sshd.spec,
        "--probes",
        "kernel",
        "--known-hosts",
        str(kh),
        "--identity",
        sshd.client_key,
    ]
    res = run_cli(args + (["--accept-new-host-keys"] if accept_new else []), home)
    assert res.returncode == 3 and "Traceback" not in res.stderr
    line = res.stderr.strip()
    assert len(line.splitlines()) == 1
    assert f"127.0.0.1:{sshd.port}" in line and f"{kh}:2" in line and "host key" in line, line
    assert kh.read_text() == before  # never "fixed" silently


def test_unknown_key_accepted_only_with_accept_new(sshd, home, tmp_path):
    kh = tmp_path / "known_hosts"
    kh.write_text("")
    args = [
        "--json",
        "--host",
        sshd.spec,
        "--probes",
        "kernel",
        "--known-hosts",
        str(kh),
        "--identity",
        sshd.client_key,
    ]
    refused = run_cli(args, home)
    assert refused.returncode == 3 and "not verifiable" in refused.stderr and kh.read_text() == ""
    accepted = run_cli(args + ["--accept-new-host-keys"], home)
    assert accepted.returncode in (0, 1), accepted.stderr
    assert f"[127.0.0.1]:{sshd.port} ssh-ed25519" in kh.read_text()


def test_authentication_failure_is_clear(sshd, home, tmp_path):
    keygen(tmp_path / "stranger", "stranger")
    res = run_cli(
        [
            "--json",
            "--host",
            sshd.spec,
            "--probes",
            "kernel",
            "--known-hosts",
            sshd.known_hosts,
            "--identity",
            str(tmp_path / "stranger"),
        ],
        home,
    )
    assert res.returncode == 3 and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "authentication failed" in res.stderr


async def test_sshd_killed_mid_audit_fails_running_commands_keeps_finished_and_other_target(
    sshd_factory,
):
    a, b = sshd_factory(), sshd_factory()
    probe = fake_probe(
        "mid",
        # rel_fast ends 0.2 s in, so rel_slow (sent with it) is surely running when the kill comes: with an
        # instant rel_fast a loaded machine could answer it before the worker started rel_slow ("not run")
        Command("rel_fast", "sleep 0.2; echo fast-done", on=frozenset({"host", "container"})),
        Command("rel_slow", "echo slow-started; sleep 4103.5", on=frozenset({"host"})),
        Command("rel_medium", "sleep 0.3; echo medium-done", on=frozenset({"container"})),
    )
    hs = parse_host_spec(a.spec)
    bindings = live_bindings(hs, parse_container_spec(b.spec, host=hs), a.options())
    container_transport = bindings[1].transport
    getattr(
        container_transport, "inner", container_transport
    ).options = b.options()  # each server trusts its own key
    audit = Audit(bindings, [probe], AuditOptions(timeout_s=20))
    events, killed = [], 0
    t0 = time.monotonic()
    try:
        async for ev in audit.events():
            events.append(ev)
            if (
                isinstance(ev, CommandFinished)
                and ev.record.target == "host"
                and ev.record.command_id == "rel_fast"
            ):
                killed = kill_sshd_tree(a)
    finally:
        await audit.aclose()
    assert killed >= 2 and time.monotonic() - t0 < 10, (
        "lost connection must be noticed, not waited out"
    )
    run = fold_events(initial_run(audit.targets, [("mid", "mid")]), events)
    recs = {(r.target, r.command_id): r for r in run.probe("mid").records}
    assert recs[("host", "rel_fast")].stdout == "fast-done\n" and recs[("host", "rel_fast")].ok
    slow = recs[("host", "rel_slow")]
    assert slow.exit_status is None and slow.error and slow.error.startswith("connection lost"), (
        slow
    )
    assert (
        recs[("container", "rel_fast")].ok
        and recs[("container", "rel_medium")].stdout == "medium-done\n"
    )
    assert not [p for p in leftover_processes(a.user) if "4103.5" in p and "defunct" not in p]
