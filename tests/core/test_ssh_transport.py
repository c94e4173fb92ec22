"""SshTransport against a real OpenSSH sshd on 127.0.0.1."""

from __future__ import annotations

import asyncio
import resource
import shutil
import tempfile
from pathlib import Path

import pytest
from gpuaudit.probes.core.collect.ssh_transport import SshTransport
from gpuaudit.probes.core.collect.targets import SshAddress, build_command_line
from gpuaudit.probes.core.errors import TransportError
from sshd_server import leftover_processes

pytestmark = pytest.mark.sshd


def transport(server, **kw) -> SshTransport:
    return SshTransport(SshAddress(server.host, server.user, server.port), server.options(**kw))


async def test_runs_command_and_keeps_exit_status_and_stderr(sshd):
    t = transport(sshd)
    await t.connect()
    try:
        raw = await t.run(
            build_command_line("echo out; echo err >&2; exit 3"),
            command_id="x",
            timeout_s=10,
            max_bytes=1024,
        )
        assert raw.exit_status == 3
        assert raw.stdout == b"out\n" and raw.stderr == b"err\n"
        assert not raw.timed_out and not raw.truncated
    finally:
        await t.aclose()


async def test_thirty_concurrent_commands_without_channel_failures(sshd):
    t = transport(sshd)
    await t.connect()
    try:
        results = await asyncio.gather(
            *(
                t.run(f"sleep 0.2; echo {i}", command_id=f"c{i}", timeout_s=20, max_bytes=1024)
                for i in range(30)
            )
        )
        assert [r.error for r in results] == [None] * 30
        assert sorted(int(r.stdout) for r in results) == list(range(30))
    finally:
        await t.aclose()


async def test_timeout_kills_remote_command(sshd):
    t = transport(sshd)
    await t.connect()
    try:
        raw = await t.run(
            build_command_line("echo started; sleep 37.5", remote_timeout_s=30),
            command_id="hang",
            timeout_s=1,
            max_bytes=1024,
        )
        assert raw.timed_out and raw.exit_status is None
        assert raw.stdout == b"started\n"
        await asyncio.sleep(0.5)
        assert not [p for p in leftover_processes(sshd.user) if "sleep 37.5" in p]
    finally:
        await t.aclose()


async def test_large_output_is_capped_and_memory_stays_small(sshd):
    t = transport(sshd)
    await t.connect()
    try:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        cap = 1024 * 1024
        raw = await t.run(
            "head -c 52428800 /dev/zero", command_id="flood", timeout_s=30, max_bytes=cap
        )
        grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        assert raw.truncated and len(raw.stdout) == cap
        assert grown_kib < 20 * 1024, f"peak RSS grew {grown_kib} KiB for a 1 MiB cap"
    finally:
        await t.aclose()


async def test_non_utf8_bytes_do_not_break_the_connection(sshd):
    t = transport(sshd)
    await t.connect()
    try:
        raw = await t.run(
            r"printf '\377\376\000abc'", command_id="bin", timeout_s=10, max_bytes=1024
        )
        assert raw.stdout == b"\xff\xfe\x00abc"
        again = await t.run("echo still-alive", command_id="next", timeout_s=10, max_bytes=1024)
        assert again.stdout == b"still-alive\n"
    finally:
        await t.aclose()


async def test_closed_port_is_a_clear_transport_error(sshd):
    from sshd_server import free_port

    t = SshTransport(SshAddress("127.0.0.1", sshd.user, free_port()), sshd.options())
    with pytest.raises(TransportError, match="connection refused"):
        await t.connect()


async def test_unknown_host_key_is_refused_by_default(sshd, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    t = transport(sshd, known_hosts=str(empty))
    with pytest.raises(TransportError, match="host key not verifiable"):
        await t.connect()


async def test_accept_new_host_keys_records_the_key(sshd, tmp_path):
    kh = tmp_path / "known_hosts"
    kh.write_text("")
    t = transport(sshd, known_hosts=str(kh), accept_new_host_keys=True)
    await t.connect()
    await t.aclose()
    assert f"[127.0.0.1]:{sshd.port} ssh-ed25519 " in kh.read_text()
    again = transport(sshd, known_hosts=str(kh))
    await again.connect()
    await again.aclose()


async def test_max_sessions_2_shrinks_the_limiter_and_every_command_succeeds(sshd_factory):
    server = sshd_factory(max_sessions=2)
    t = transport(server)
    await t.connect()
    try:
        results = await asyncio.gather(
            *(
                t.run(f"sleep 0.05; echo {i}", command_id=f"c{i}", timeout_s=20, max_bytes=1024)
                for i in range(20)
            )
        )
        assert [r.error for r in results] == [None] * 20
        assert sorted(int(r.stdout) for r in results) == list(range(20))
        assert t._limiter.limit <= 2
    finally:
        await t.aclose()


async def test_exit_with_a_child_holding_stdout_returns_after_a_grace(sshd):
    t = transport(sshd)
    await t.connect()
    try:
        raw = await t.run(
            "echo parent; (while :; do sleep 0.2; echo tick-4107; done) & exit 4",
            command_id="held",
            timeout_s=10,
            max_bytes=1024,
        )
        assert raw.exit_status == 4 and not raw.timed_out and raw.stdout.startswith(b"parent\n")
        assert raw.duration_s < 3
    finally:
        await t.aclose()


async def test_signal_death_is_128_plus_signal(sshd):
    t = transport(sshd)
    await t.connect()
    try:
        raw = await t.run("kill -TERM $$", command_id="sig", timeout_s=10, max_bytes=1024)
        assert raw.exit_status == 143 and raw.error is None
    finally:
        await t.aclose()


def test_no_option_disables_host_key_verification(tmp_path):
    from gpuaudit.probes.core.collect.ssh_transport import SshOptions
    from gpuaudit.tui.cli.entry import build_parser

    flags = {o for a in build_parser()._actions for o in a.option_strings}
    relaxing = {
        f
        for f in flags
        if any(w in f for w in ("insecure", "strict", "verify", "no-host", "ignore", "trust"))
        and not f.startswith("--bmc")  # the BMC's TLS (recorded in the snapshot), not SSH host keys
    }
    assert relaxing == set()
    kw = SshTransport(SshAddress("10.200.0.1"), SshOptions())._connect_kwargs()
    assert "known_hosts" not in kw  # asyncssh's default: ~/.ssh/known_hosts, verified
    kw = SshTransport(
        SshAddress("10.200.0.1"), SshOptions(known_hosts=str(tmp_path / "kh"))
    )._connect_kwargs()
    assert kw["known_hosts"] == str(tmp_path / "kh")


async def test_default_known_hosts_of_an_empty_home_refuses(sshd):
    t = SshTransport(SshAddress(sshd.host, sshd.user, sshd.port), sshd.options(known_hosts=None))
    with pytest.raises(TransportError, match="host key not verifiable"):
        await t.connect()


async def test_pooled_transport_spreads_over_two_connections(sshd):
    from gpuaudit.probes.core.collect.pool import PooledTransport

    pool = PooledTransport([transport(sshd), transport(sshd)])
    await pool.connect()
    try:
        assert len(pool._alive) == 2
        results = await asyncio.gather(
            *(
                pool.run("sleep 0.3; echo $PPID", command_id=f"c{i}", timeout_s=20, max_bytes=1024)
                for i in range(16)
            )
        )
        assert [r.error for r in results] == [None] * 16
        # 16 commands with 8 channels per connection: two connections finish them in one round
        assert max(r.duration_s for r in results) < 2.0
    finally:
        await pool.aclose()


async def test_pooled_transport_surfaces_first_connection_errors(sshd, tmp_path):
    from gpuaudit.probes.core.collect.pool import PooledTransport

    empty = tmp_path / "kh"
    empty.write_text("")
    pool = PooledTransport(
        [transport(sshd, known_hosts=str(empty)), transport(sshd, known_hosts=str(empty))]
    )
    with pytest.raises(TransportError, match="host key not verifiable"):
        await pool.connect()


async def test_pool_routes_around_a_dead_connection():
    """One member's connection died: the pool must not keep sending it commands."""
    from gpuaudit.probes.core.collect.pool import PooledTransport
    from gpuaudit.probes.core.collect.transport import RawResult, TransportBase

    class Member(TransportBase):
        def __init__(self, dead: bool) -> None:
            self.label, self.dead, self.ran = "m", dead, 0

        @property
        def lost(self) -> bool:
            return self.dead

        async def connect(self) -> None:
            return None

        async def run(self, line, **kw) -> RawResult:
            if self.dead:
                return RawResult(exit_status=None, error="connection lost: EOF")
            self.ran += 1
            await asyncio.sleep(0.01)
            return RawResult(exit_status=0, stdout=b"ok\n")

        async def aclose(self) -> None:
            return None

    dead, live = Member(dead=False), Member(dead=False)
    pool = PooledTransport([dead, live])
    await pool.connect()
    dead.dead = True  # dies after connecting
    results = await asyncio.gather(
        *(pool.run("x", command_id=f"c{i}", timeout_s=5, max_bytes=10) for i in range(20))
    )
    assert [r.error for r in results] == [None] * 20
    assert live.ran == 20


async def test_a_capped_big_output_never_takes_the_connection_down(sshd):
    """--no-sessions (issue 29, item 5): a 60 MB output capped at 1 MB is closed at once; the commands beside it
    on the same connection keep their answers, and the connection is not declared dead."""
    t = transport(sshd)
    await t.connect()
    folder = Path(tempfile.mkdtemp(prefix="gpuaudit-big-"))  # readable by the sshd test user
    try:
        folder.chmod(0o755)
        text = folder / "big.txt"
        line = ("x" * 199 + "\n").encode()
        text.write_bytes(line * 300_000)  # 60 MB, written faster than the client reads it
        text.chmod(0o644)
        bigs = [
            t.run(
                build_command_line(f"cat {text} {text}"),
                command_id=f"big{i}",
                timeout_s=20,
                max_bytes=8 << 20,
            )
            for i in range(3)
        ]
        small = [
            t.run(
                build_command_line(f"sleep 0.5; echo ok{i}"),
                command_id=f"s{i}",
                timeout_s=20,
                max_bytes=1024,
            )
            for i in range(3)
        ]
        results = await asyncio.gather(*bigs, *small)
        assert all(r.truncated and r.error is None for r in results[:3]), results[:3]
        assert [r.stdout for r in results[3:]] == [b"ok0\n", b"ok1\n", b"ok2\n"]
        assert [r.error for r in results[3:]] == [None, None, None]
        assert not t.lost
    finally:
        await t.aclose()
        shutil.rmtree(folder, ignore_errors=True)
