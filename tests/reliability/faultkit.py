"""Helpers of the fault-injection suite (imported as reliability.faultkit): fake probes, audit runs, the CLI in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gpuaudit.probes.core.collect.targets import parse_container_spec, parse_host_spec
from gpuaudit.probes.core.judge.checks import BOTH, Check, info
from gpuaudit.probes.core.models import AuditRun, Role
from gpuaudit.probes.core.run.events import fold_events, initial_run
from gpuaudit.probes.core.run.runner import Audit, AuditOptions
from gpuaudit.probes.core.run.session import live_bindings
from gpuaudit.probes.core.spec import Command, Outputs, Probe
from pydantic import BaseModel

REPO = Path(__file__).resolve().parents[2]


class EchoFacts(BaseModel):
    """Synthetic facts: every command's stdout, as the record holds it."""

    outs: dict[str, str] = {}


def fake_probe(pid: str, *commands: Command) -> Probe:
    """A probe made of injected commands; facts copy the outputs so redaction/escaping shows in facts too."""

    def extract(outputs: Outputs, role: Role) -> EchoFacts:
        return EchoFacts(outs={k: v.stdout[:4096] for k, v in outputs.items()})

    seen = Check(
        id=f"{pid}.seen",
        title="seen",
        owner="host",
        why="",
        fix="",
        verdict=lambda ctx: info(" ".join(ctx.f.outs.values())[:4096]),
        roles=BOTH,
        no_input="a test probe: echoes every output it was given",
    )
    return Probe(id=pid, title=pid, commands=commands, extract=extract, checks=(seen,))


def both(*ids: str) -> frozenset:
    return frozenset(ids or ("host",))


async def run_audit(
    host: str,
    container: str | None,
    options,
    probes,
    audit_options: AuditOptions | None = None,
) -> AuditRun:
    """A live audit through the real session builder, folded to its final state."""
    hs = parse_host_spec(host)
    cs = parse_container_spec(container, host=hs) if container else None
    audit = Audit(
        live_bindings(hs, cs, options), probes, audit_options or AuditOptions(timeout_s=5)
    )
    try:
        events = [e async for e in audit.events()]
    finally:
        await audit.aclose()
    return fold_events(initial_run(audit.targets, [(p.id, p.title) for p in probes]), events)


def cli_env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SSH_AUTH_SOCK", "NO_COLOR", "GPUAUDIT_SNAPSHOT_DIR")
    }
    env.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / "data"),
        XDG_CONFIG_HOME=str(home / "config"),
        PYTHONPATH=str(REPO),
        COLUMNS="120",
    )
    return env


def run_cli(args: list[str], home: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`python -m tui ARGS` with HOME isolated; stdin closed."""
    return subprocess.run(
        [sys.executable, "-m", "gpuaudit.tui", *args],
        cwd=REPO,
        env=cli_env(home),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def assert_one_line_error(res: subprocess.CompletedProcess[str], code: int = 2) -> str:
    """Exit `code`, stderr one line without a traceback, nothing on stdout; returns the line."""
    assert res.returncode == code, (res.returncode, res.stderr[-2000:])
    assert "Traceback" not in res.stderr, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert res.stdout == ""
    return lines[0]


def load_json(text: str) -> dict:
    return json.loads(text)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (by /proc ppid), deepest last."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read().decode(errors="replace")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for c in children.get(p, []):
            out.append(c)
            todo.append(c)
    return out


def kill_sshd_tree(server) -> int:
    """SIGKILL a test sshd, its per-connection children and the commands they run (all started by this test).

    The tree is frozen first (SIGSTOP until no new descendant appears) so a fork in flight cannot escape.
    """
    import signal

    root = server.process.pid
    frozen: set[int] = set()
    while True:
        new = {root, *descendants(root)} - frozen
        if not new:
            break
        for p in new:
            try:
                os.kill(p, signal.SIGSTOP)
            except ProcessLookupError:
                pass
        frozen |= new
    for p in frozen:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    server.process.wait(5)
    return len(frozen)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class SilentServer:
    """Accepts TCP on 127.0.0.1 and never sends an SSH banner (a hung or tarpitted sshd)."""

    def __init__(self) -> None:
        import socket
        import threading

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.conns: list = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)

    def close(self) -> None:
        self.sock.close()
        for c in self.conns:
            c.close()
