"""A hang-prone tool (nvidia-smi, dcgmi) never takes more than half of a target's channels.

With one connection of 8 channels (a fleet host) a wedged driver may hold 4 of them, not all 8: the quick reads
of that host keep running instead of each waiting out the timeout behind hung nvidia-smi calls.
"""

from __future__ import annotations

from gpuaudit.probes.core.collect.pool import PooledTransport
from gpuaudit.probes.core.collect.ssh_transport import SshOptions, SshTransport
from gpuaudit.probes.core.collect.targets import parse_host_spec
from gpuaudit.probes.core.collect.transport import LocalTransport
from gpuaudit.probes.core.collect.worker_transport import SessionTransport
from gpuaudit.probes.core.run.runner import HANG_PRONE_PARALLEL, hang_prone_slots


def _ssh(channels: int) -> SshTransport:
    spec = parse_host_spec("audit@127.0.0.1:1")
    return SshTransport(
        spec.ssh, SshOptions(max_channels=channels, use_ssh_config=False, use_agent=False)
    )


def test_one_connection_of_eight_channels_gives_four_slots() -> None:
    assert hang_prone_slots(_ssh(8)) == 4
    assert hang_prone_slots(SessionTransport(_ssh(8), parallel=8)) == 4


def test_two_connections_give_the_cap() -> None:
    pool = PooledTransport([_ssh(8), _ssh(8)])
    assert pool.channels == 16
    assert hang_prone_slots(pool) == HANG_PRONE_PARALLEL == 8
    assert hang_prone_slots(SessionTransport(pool, parallel=16)) == 8


def test_a_single_channel_still_runs_the_tool() -> None:
    assert hang_prone_slots(_ssh(1)) == 1


def test_a_transport_without_a_limit_gets_the_cap() -> None:
    assert hang_prone_slots(LocalTransport()) == HANG_PRONE_PARALLEL
    assert PooledTransport([LocalTransport()]).channels is None
