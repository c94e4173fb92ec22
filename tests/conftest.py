"""Shared fixtures: isolation from the developer's HOME/ssh/snapshots, a real sshd, recorded outputs."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))  # tests/sshd_server.py etc. importable as plain modules

from gpuaudit.probes.core.record import check_records  # noqa: E402
from sshd_server import SshdServer, sshd_available, start_sshd  # noqa: E402

check_records(
    True
)  # every record a test builds is checked against its declared types (probes/core/record.py)

FIXTURES = TESTS / "fixtures"


@pytest.fixture(autouse=True)
def _isolate(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never read the developer's ~/.ssh, config or saved snapshots."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        monkeypatch.setenv(var, str(home / var.lower()))
    monkeypatch.delenv("GPUAUDIT_SNAPSHOT_DIR", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)


def _require_sshd() -> None:
    reason = sshd_available()
    if reason:
        if os.environ.get("GPUAUDIT_REQUIRE_SSHD") == "1":
            pytest.fail(f"sshd required in CI but unavailable: {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> SshdServer:
    """One real OpenSSH sshd on 127.0.0.1 for the session (MaxSessions 10)."""
    _require_sshd()
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


@pytest.fixture
def sshd_factory(tmp_path: Path):
    """Start extra sshd servers with their own config (MaxSessions, ForceCommand, ...); stopped after the test."""
    _require_sshd()
    servers: list[SshdServer] = []

    def make(**kw) -> SshdServer:
        server = start_sshd(tmp_path / f"sshd{len(servers)}", **kw)
        servers.append(server)
        return server

    yield make
    for s in servers:
        s.stop()


FAST_FOLDERS = ("probes", "core", "snapshots", "roofline")
"""The fast lane (`pytest -m fast`, docs in AGENTS.md): parsers, checks, the framework, snapshots, the roofline."""
NOT_FAST = {
    # real processes, real sessions, subprocess CLI runs or static analysis over the whole tree
    "test_worker_sessions.py",
    "test_lxc_container.py",
    "test_container_live_lxc.py",
    "test_import_contracts.py",
    "test_typing.py",
    "test_sudo.py",
    "test_ssh_transport.py",
    "test_cli.py",
    "test_case_study.py",
    "test_replay_identity.py",
    "test_previous_release.py",
    "test_engine_scan_races.py",
    "test_engine_scan_skips_the_audit.py",
}
SLOW_FIXTURES = {"sshd", "sshd_factory"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the fast lane: a developer's edit-test loop in well under a minute (no sshd, Pilot, subprocess)."""
    for item in items:
        path = Path(str(item.fspath))
        try:
            folder = path.relative_to(TESTS).parts[0]
        except ValueError:
            continue
        fixtures = set(getattr(item, "fixturenames", ()))
        if (
            folder in FAST_FOLDERS
            and path.name not in NOT_FAST
            and not fixtures & SLOW_FIXTURES
            and not item.get_closest_marker("slow")
            and not item.get_closest_marker("netns")
        ):
            item.add_marker(pytest.mark.fast)
