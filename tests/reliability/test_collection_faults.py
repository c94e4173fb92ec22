"""Collection that holds on real servers (issue 13): a real OpenSSH sshd on 127.0.0.1 for every fault.

Root commands die with their timeout and with a cancelled audit; the timeout measures the command, not the
wait for a channel; login banners never reach outputs; a dead connection fails over at once; a hung tool
costs one timeout; restricted sudo works; output budget; MaxStartups; encrypted keys.
"""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from gpuaudit.probes.core.collect.pool import PooledTransport
from gpuaudit.probes.core.collect.ssh_transport import SshTransport
from gpuaudit.probes.core.collect.targets import parse_host_spec
from gpuaudit.probes.core.models import Target
from gpuaudit.probes.core.run.events import (
    CommandFinished,
    CommandStarted,
    fold_events,
    initial_run,
)
from gpuaudit.probes.core.run.runner import Audit, AuditOptions, TargetBinding
from gpuaudit.probes.core.spec import Command
from reliability.faultkit import fake_probe, kill_sshd_tree, run_audit
from sshd_server import ensure_user, keygen

pytestmark = pytest.mark.sshd
COLL_USER = "gpuaudit-coll"
"""Its own login: other suites' cleanup (pkill -u gpuaudit-test) must not cut these connections mid-test."""


@pytest.fixture
def sshd(sshd_factory):  # shadows the session server on purpose
    return sshd_factory(user=COLL_USER)


SUDOERS = Path("/etc/sudoers.d/gpuaudit-test-collection")
needs_sudo = pytest.mark.skipif(shutil.which("sudo") is None, reason="sudo not installed")


def processes(tag: str) -> list[str]:
    """Every process on this machine whose command line holds `tag` (any user: root commands included)."""
    res = subprocess.run(["pgrep", "-af", tag], capture_output=True, text=True, check=False)
    return [ln for ln in res.stdout.splitlines() if "pgrep" not in ln and "pytest" not in ln]


def kill_all(tag: str) -> None:
    for ln in processes(tag):
        try:
            os.kill(int(ln.split()[0]), 9)
        except (ProcessLookupError, ValueError):
            pass


@pytest.fixture
def sudoers():
    """Write a sudoers entry for the test user; always removed."""

    def write(rule: str) -> None:
        SUDOERS.write_text(rule + "\n")
        SUDOERS.chmod(0o440)

    yield write
    SUDOERS.unlink(missing_ok=True)


def records_of(run, probe_id: str) -> dict:
    return {(r.target, r.command_id): r for r in run.probe(probe_id).records}


# 1. root commands die with their timeout, and with a cancelled audit ------------------------------------


@needs_sudo
@pytest.mark.parametrize(
    "shell", ["sleep 4811", "sleep 4812; echo never"], ids=["sudo-tool", "sudo-sh"]
)
async def test_sudo_root_command_leaves_nothing_after_its_timeout(sshd, sudoers, shell):
    sudoers(f"{sshd.user} ALL=(root) NOPASSWD: ALL")
    tag = shell.split(";")[0]
    probe = fake_probe("rootto", Command("c_root_hang", shell, needs_root=True))
    t0 = time.monotonic()
    try:
        run = await run_audit(
            sshd.spec, None, sshd.options(), [probe], AuditOptions(sudo=True, timeout_s=2)
        )
        wall = time.monotonic() - t0
        await asyncio.sleep(1.5)
        left = processes(tag)
    finally:
        kill_all(tag)
    rec = records_of(run, "rootto")[("host", "c_root_hang")]
    assert rec.timed_out and rec.exit_status is None, rec
    assert 1.9 <= rec.duration_s < 3.5 and wall < 6
    assert left == [], f"root processes outlived the timeout: {left}"


@needs_sudo
async def test_cancelled_audit_kills_root_commands_within_a_second(sshd, sudoers):
    sudoers(f"{sshd.user} ALL=(root) NOPASSWD: ALL")
    probe = fake_probe(
        "rootcancel",
        Command("c_root_a", "sleep 4821", needs_root=True),
        Command("c_root_b", "sleep 4822; echo never", needs_root=True),
        Command("c_user", "sleep 4823"),
    )
    audit = Audit(
        [
            TargetBinding(
                parse_host_spec(sshd.spec).to_target(),
                SshTransport(parse_host_spec(sshd.spec).ssh, sshd.options()),
            )
        ],
        [probe],
        AuditOptions(sudo=True, timeout_s=60),
    )

    async def consume() -> None:
        async for _ in audit.events():
            pass

    task = asyncio.create_task(consume())
    try:
        deadline = time.monotonic() + 10
        while len(processes("sleep 482")) < 3 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert len(processes("sleep 482")) >= 3
        t0 = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await audit.aclose()
        cancel_s = time.monotonic() - t0
        await asyncio.sleep(1.0)
        left = processes("sleep 482")
    finally:
        kill_all("sleep 482")
    assert cancel_s < 2.5 and left == [], (cancel_s, left)


@needs_sudo
async def test_restricted_sudo_runs_simple_root_commands_without_a_shell(sshd, sudoers):
    sudoers(
        f"{sshd.user} ALL=(root) NOPASSWD: /usr/bin/id"
    )  # like .../journalctl, /usr/bin/dmesg, ...
    probe = fake_probe(
        "rsudo",
        Command("c_id", "id -u", needs_root=True),
        Command("c_id_pipe", "id -u 2>/dev/null | tr 0 Z", needs_root=True),
        Command("c_complex", "id -u; id -u", needs_root=True),
    )
    run = await run_audit(
        sshd.spec, None, sshd.options(), [probe], AuditOptions(sudo=True, timeout_s=5)
    )
    recs = records_of(run, "rsudo")
    assert recs[("host", "c_id")].stdout == "0\n" and recs[("host", "c_id")].error is None
    assert "sudo -n id -u" in recs[("host", "c_id")].executed
    assert recs[("host", "c_id_pipe")].stdout == "Z\n"
    assert recs[("host", "c_complex")].error.startswith("needs root (sudo -n refused")


# 2. the timeout measures the command, not the wait for a channel -----------------------------------------


async def test_queued_commands_never_time_out_and_durations_are_their_own(sshd):
    cmds = [Command(f"c_q{i}", f"sleep 0.6; echo q{i}") for i in range(6)]
    run = await run_audit(
        sshd.spec,
        None,
        sshd.options(max_channels=1, connections=1),
        [fake_probe("queue", *cmds)],
        AuditOptions(timeout_s=1.5),
    )
    recs = run.probe("queue").records
    assert [(r.command_id, r.error, r.duration_s) for r in recs if r.timed_out or r.error] == []
    assert all(r.stdout == f"q{r.command_id[3:]}\n" for r in recs)
    assert (
        max(r.duration_s for r in recs) < 1.3
    )  # each ~0.6 s although the last one waited ~3 s for its channel


# 3. a login banner never changes an output -------------------------------------------------------------

BANNER_USER = "gpuaudit-banner"


@pytest.fixture
def banner_server(sshd_factory):
    """A bash user whose ~/.bashrc prints on stdout and stderr (Debian's bash reads it for ssh commands)."""
    ensure_user(BANNER_USER, shell="/bin/bash")
    subprocess.run(["usermod", "-s", "/bin/bash", BANNER_USER], check=True)
    home = Path(os.path.expanduser(f"~{BANNER_USER}"))
    rc = home / ".bashrc"
    rc.write_text(
        'echo "Welcome to gpu01 (managed by ansible)"\n'
        'echo "bash: warning: setlocale: LC_ALL: cannot change locale (en_US.UTF-8)" >&2\n'
    )
    try:
        yield sshd_factory(user=BANNER_USER)
    finally:
        rc.unlink(missing_ok=True)


async def test_login_banner_on_stdout_and_stderr_changes_no_output(banner_server):
    probe = fake_probe(
        "banner",
        Command("c_uname", "uname -n"),
        Command("c_both", "printf 'x\\ny'; printf 'e1' >&2; exit 3"),
        Command("c_root", "id -u", needs_root=True),
    )
    run = await run_audit(
        banner_server.spec, None, banner_server.options(), [probe], AuditOptions(timeout_s=5)
    )
    state = run.target_states["host"]
    assert (
        state.state == "connected"
        and state.hostname == socket.gethostname()
        and state.is_root is False
    )
    recs = records_of(run, "banner")
    assert (
        recs[("host", "c_uname")].stdout == socket.gethostname() + "\n"
        and recs[("host", "c_uname")].stderr == ""
    )
    both = recs[("host", "c_both")]
    assert (both.stdout, both.stderr, both.exit_status) == ("x\ny", "e1", 3)
    assert recs[("host", "c_root")].error.startswith("needs root")


# 4. a dead connection: fail over at once; all dead = target lost ------------------------------------------


async def test_one_of_two_pooled_connections_killed_fails_over_at_once(sshd_factory):
    a, b = sshd_factory(user=COLL_USER), sshd_factory(user=COLL_USER)
    spec = parse_host_spec(a.spec)
    members = [
        SshTransport(parse_host_spec(a.spec).ssh, a.options()),
        SshTransport(parse_host_spec(b.spec).ssh, b.options()),
    ]
    target = Target(role="host", spec=a.spec, kind="ssh", label="host")
    cmds = [Command(f"c_p{i}", f"sleep 0.25; echo p{i}") for i in range(40)]
    probe = fake_probe("pool", *cmds)
    audit = Audit(
        [TargetBinding(target, PooledTransport(members))], [probe], AuditOptions(timeout_s=10)
    )
    events, killed = [], 0
    t0 = time.monotonic()
    try:
        async for ev in audit.events():
            events.append(ev)
            if isinstance(ev, CommandFinished) and not killed:
                killed = kill_sshd_tree(a)
    finally:
        await audit.aclose()
    wall = time.monotonic() - t0
    assert spec and killed
    run = fold_events(initial_run(audit.targets, [("pool", "pool")]), events)
    recs = run.probe("pool").records
    refused = [r.error for r in recs if r.error and "refused" in r.error]
    lost = [r for r in recs if r.error]
    assert refused == [] and wall < 5, (refused[:3], wall)
    assert len(lost) <= 8  # only what was running on the killed connection
    assert all(r.error.startswith("connection lost") for r in lost)
    assert run.target_states["host"].state == "connected"


async def test_all_connections_killed_is_a_lost_target_without_tracebacks(sshd):
    from gpuaudit.tui.cli.headless import exit_code

    server = sshd
    loop_errors: list[dict] = []
    asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: loop_errors.append(ctx))
    spec = parse_host_spec(server.spec)
    transport = PooledTransport([SshTransport(spec.ssh, server.options()) for _ in range(2)])
    probe = fake_probe("cut", *[Command(f"c_c{i}", f"sleep 0.4; echo c{i}") for i in range(30)])
    audit = Audit([TargetBinding(spec.to_target(), transport)], [probe], AuditOptions(timeout_s=10))
    events = []
    t0 = time.monotonic()
    try:
        async for ev in audit.events():
            events.append(ev)
            if isinstance(ev, CommandStarted) and len(events) == 10:
                for m in (
                    transport.members
                ):  # both connections die (as on a network cut noticed by keepalive)
                    m._conn._transport.abort()  # the socket, not the protocol: a real loss
    finally:
        await audit.aclose()
    wall = time.monotonic() - t0
    gc.collect()
    await asyncio.sleep(0)
    run = fold_events(initial_run(audit.targets, [("cut", "cut")]), events)
    state = run.target_states["host"]
    assert state.state == "failed" and "connection lost" in state.reason, state
    assert exit_code(run, "never") != 0
    assert wall < 3
    assert not [c for c in loop_errors if "never retrieved" in str(c.get("message"))], loop_errors


# 5. a hung tool costs one timeout ------------------------------------------------------------------------


@pytest.fixture
def hung_smi_server(sshd_factory):
    """An sshd whose PATH starts with an `nvidia-smi` that hangs (a wedged driver)."""
    bin_dir = Path(
        tempfile.mkdtemp(prefix="gpuaudit-hung-smi-")
    )  # pytest's tmp dirs are 0700: the test user needs this one
    os.chmod(bin_dir, 0o755)
    (bin_dir / "nvidia-smi").write_text("#!/bin/sh\nexec sleep 4831\n")
    (bin_dir / "nvidia-smi").chmod(0o755)
    yield sshd_factory(
        user=COLL_USER, extra_config=f"SetEnv PATH={bin_dir}:/usr/local/bin:/usr/bin:/bin"
    )
    shutil.rmtree(bin_dir, ignore_errors=True)


async def test_hung_nvidia_smi_costs_one_timeout_and_the_other_calls_are_not_run(hung_smi_server):
    server = hung_smi_server
    cmds = [
        Command("c_smi_q", "nvidia-smi -q"),
        Command("c_smi_l", "nvidia-smi -L"),
        Command("c_smi_own_timeout", "nvidia-smi --query-gpu=name --format=csv", timeout_s=60),
        Command("c_cat", "cat /proc/loadavg"),
    ]
    t0 = time.monotonic()
    try:
        run = await run_audit(
            server.spec,
            None,
            server.options(max_channels=1, connections=1),
            [fake_probe("hang", *cmds)],
            AuditOptions(timeout_s=2),
        )
        wall = time.monotonic() - t0
        await asyncio.sleep(1.0)
        left = processes("sleep 4831")
    finally:
        kill_all("sleep 4831")
    recs = records_of(run, "hang")
    timed = [cid for (_, cid), r in recs.items() if r.timed_out]
    not_run = {
        cid: r.error
        for (_, cid), r in recs.items()
        if r.error and r.error.startswith("not run: nvidia-smi hung in")
    }
    assert len(timed) == 1 and len(not_run) == 2, (timed, not_run, recs)
    assert all(timed[0] in e for e in not_run.values())
    assert recs[("host", "c_cat")].ok
    assert wall < 2 + 3 and left == []


# 10. output budget ---------------------------------------------------------------------------------------


async def test_audit_output_budget_truncates_and_marks(sshd):
    cmds = [Command(f"c_big{i}", f"head -c 60000 /dev/zero | tr '\\\\0' {i}") for i in range(4)]
    run = await run_audit(
        sshd.spec,
        None,
        sshd.options(max_channels=1, connections=1),
        [fake_probe("budget", *cmds)],
        AuditOptions(timeout_s=5, output_budget=100_000),
    )
    recs = run.probe("budget").records
    kept = sum(len(r.stdout) for r in recs)
    assert kept <= 100_000
    marked = [r for r in recs if r.truncated]
    assert marked and all("budget" in (r.error or "") for r in marked)


# 8. MaxStartups ------------------------------------------------------------------------------------------


async def test_thirty_concurrent_logins_through_maxstartups_10_30_100(sshd_factory):
    # a login that takes 0.3 s (LDAP, a loaded host) keeps startups pending long enough for sshd to drop some
    keys_dir = Path(tempfile.mkdtemp(prefix="gpuaudit-slowkeys-"))
    os.chmod(keys_dir, 0o755)
    server = sshd_factory(
        user=COLL_USER,
        extra_config=f"MaxStartups 10:30:100\n"
        f'AuthorizedKeysCommand /bin/sh -c "sleep 0.3; exec /bin/cat {keys_dir}/authorized_keys"',
    )
    shutil.copy(Path(server.directory) / "authorized_keys", keys_dir / "authorized_keys")
    os.chmod(keys_dir / "authorized_keys", 0o644)
    spec = parse_host_spec(server.spec)
    transports = [SshTransport(spec.ssh, server.options()) for _ in range(30)]
    results = await asyncio.gather(*(t.connect() for t in transports), return_exceptions=True)
    try:
        failed = [str(r) for r in results if isinstance(r, BaseException)]
        assert failed == [], failed[:3]
    finally:
        await asyncio.gather(*(t.aclose() for t in transports))
        shutil.rmtree(keys_dir, ignore_errors=True)


# 9. keys -------------------------------------------------------------------------------------------------


@pytest.fixture
def agent(tmp_path, monkeypatch):
    """A private ssh-agent; yields a function that loads a passphrase key into it."""
    sock = tmp_path / "agent.sock"
    proc = subprocess.Popen(
        ["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    for _ in range(50):
        if sock.exists():
            break
        time.sleep(0.05)
    monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))

    def add(key: Path, passphrase: str) -> None:
        askpass = tmp_path / "askpass.sh"
        askpass.write_text(f"#!/bin/sh\necho {passphrase}\n")
        askpass.chmod(0o700)
        env = dict(
            os.environ,
            SSH_AUTH_SOCK=str(sock),
            SSH_ASKPASS=str(askpass),
            SSH_ASKPASS_REQUIRE="force",
            DISPLAY=":0",
        )
        subprocess.run(
            ["ssh-add", str(key)],
            env=env,
            check=True,
            capture_output=True,
            stdin=subprocess.DEVNULL,
        )

    yield add
    proc.terminate()
    proc.wait(5)


def encrypted_key(tmp_path: Path) -> Path:
    key = tmp_path / "enc_key"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "s3cret-pass", "-f", str(key)], check=True
    )
    return key


async def test_encrypted_identity_held_by_the_agent_works(sshd, agent, tmp_path):
    key = encrypted_key(tmp_path)
    auth = Path(sshd.directory) / "authorized_keys"
    original = auth.read_text()
    auth.write_text(original + key.with_suffix(".pub").read_text())
    try:
        agent(key, "s3cret-pass")
        t = SshTransport(
            parse_host_spec(sshd.spec).ssh, sshd.options(identity=str(key), use_agent=True)
        )
        await t.connect()
        raw = await t.run("echo via-agent", command_id="k", timeout_s=5, max_bytes=1024)
        await t.aclose()
    finally:
        auth.write_text(original)
    assert raw.stdout == b"via-agent\n"


async def test_encrypted_identity_without_agent_says_load_it_with_ssh_add(sshd, tmp_path):
    from gpuaudit.probes.core.errors import TransportError

    key = encrypted_key(tmp_path)
    t = SshTransport(
        parse_host_spec(sshd.spec).ssh, sshd.options(identity=str(key), use_agent=True)
    )
    with pytest.raises(TransportError, match="key is encrypted: load it with ssh-add"):
        await t.connect()


async def test_password_only_server_is_named(sshd_factory, tmp_path):
    from gpuaudit.probes.core.errors import TransportError

    server = sshd_factory(
        user=COLL_USER, extra_config="PubkeyAuthentication no\nPasswordAuthentication yes"
    )
    keygen(tmp_path / "k", "k")
    t = SshTransport(parse_host_spec(server.spec).ssh, server.options())
    with pytest.raises(TransportError, match="accepts only password authentication"):
        await t.connect()


# 6. quitting mid-run (what the TUI's quit does: Audit.aclose() while the dashboard's worker still consumes events)


@needs_sudo
async def test_aclose_mid_run_kills_remote_commands_root_included(sshd, sudoers):
    sudoers(f"{sshd.user} ALL=(root) NOPASSWD: ALL")
    probe = fake_probe(
        "quit",
        Command("c_q_user", "sleep 4871"),
        Command("c_q_root", "sleep 4872", needs_root=True),
        Command("c_q_root_sh", "sleep 4873; echo never", needs_root=True),
    )
    spec = parse_host_spec(sshd.spec)
    audit = Audit(
        [TargetBinding(spec.to_target(), SshTransport(spec.ssh, sshd.options()))],
        [probe],
        AuditOptions(sudo=True, timeout_s=60),
    )

    async def consume() -> None:
        async for _ in audit.events():
            pass

    worker = asyncio.create_task(consume())
    try:
        deadline = time.monotonic() + 10
        while len(processes("sleep 487")) < 3 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        t0 = time.monotonic()
        await audit.aclose()
        quit_s = time.monotonic() - t0
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)
        await asyncio.sleep(1.0)
        left = processes("sleep 487")
    finally:
        kill_all("sleep 487")
    assert quit_s < 2.5 and left == [], (quit_s, left)
