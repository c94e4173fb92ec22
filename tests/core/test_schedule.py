"""Longest first: ranked channel slots (probes/core/collect/schedule.py)."""

from __future__ import annotations

import asyncio

import pytest
from gpuaudit.probes.core.collect.schedule import RankedSlots, launch_rank

pytestmark = pytest.mark.fast


def test_a_freed_slot_goes_to_the_lowest_rank_then_the_first_come() -> None:
    async def scenario() -> list[str]:
        slots = RankedSlots(1)
        started: list[str] = []
        await slots.acquire(2)  # the one slot is busy

        async def job(name: str, rank: int) -> None:
            await slots.acquire(rank)
            try:
                started.append(name)
                await asyncio.sleep(0.01)
            finally:
                slots.release()

        tasks = [
            asyncio.create_task(job(n, r))
            for n, r in [
                ("cat a", 2),
                ("cat b", 2),
                ("smi topo", 1),
                ("smi -q", 0),
                ("smi nvlink", 1),
            ]
        ]
        await asyncio.sleep(0.01)  # all five wait
        slots.release()
        await asyncio.gather(*tasks)
        assert slots.free == 1
        return started

    assert asyncio.run(scenario()) == ["smi -q", "smi topo", "smi nvlink", "cat a", "cat b"]


def test_a_cancelled_waiter_neither_takes_nor_loses_a_slot() -> None:
    async def scenario() -> int:
        slots = RankedSlots(1)
        await slots.acquire(2)
        waiter = asyncio.create_task(slots.acquire(0))
        late = asyncio.create_task(slots.acquire(2))
        await asyncio.sleep(0)
        waiter.cancel()
        await asyncio.sleep(0)
        slots.release()  # goes to `late`, not to the cancelled waiter
        await asyncio.wait_for(late, 1)
        slots.release()
        return slots.free

    assert asyncio.run(scenario()) == 1


def test_a_slot_handed_to_a_waiter_cancelled_at_that_moment_is_passed_on() -> None:
    async def scenario() -> int:
        slots = RankedSlots(1)
        await slots.acquire(2)
        first = asyncio.create_task(slots.acquire(0))
        second = asyncio.create_task(slots.acquire(1))
        await asyncio.sleep(0)
        slots.release()  # handed to `first` ...
        first.cancel()  # ... which is cancelled before it runs
        await asyncio.gather(first, return_exceptions=True)
        await asyncio.wait_for(second, 1)
        slots.release()
        return slots.free

    assert asyncio.run(scenario()) == 1


def test_ranks() -> None:
    assert launch_rank("nvidia-smi -q -x") == launch_rank("for d in /proc/[0-9]*; do :; done") == 0
    assert launch_rank("nvidia-smi topo -m") == launch_rank("lspci -tv") == 1
    assert launch_rank("cat /proc/cmdline") == 2


class _Writes:
    """A session channel that only records what is written to it."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)


def test_requests_of_one_loop_iteration_go_out_in_one_write_kills_at_once() -> None:
    from gpuaudit.probes.core.collect.worker_transport import WorkerSession

    async def scenario() -> list[bytes]:
        channel = _Writes()
        session = WorkerSession(channel, "line", "token")  # type: ignore[arg-type]
        for i in range(5):
            assert session._send(b"req%d\n" % i, batch=True)
        assert channel.writes == []  # not yet: the rest of this iteration may add more
        await asyncio.sleep(0)
        session._send(b"req5\n", batch=True)
        session._send(b"kill5\n")  # at once, after what was queued, in order
        await asyncio.sleep(0)
        return channel.writes

    assert asyncio.run(scenario()) == [b"req0\nreq1\nreq2\nreq3\nreq4\n", b"req5\nkill5\n"]
