"""Which command line goes first: launch ranks and the ranked slots a transport hands its channels out with.

Longest-processing-time-first: a 0.8 s `nvidia-smi -q` (or a 1 s walk of /proc) that waits behind forty quick
`cat`s adds its whole duration to the audit's wall time, while the `cat`s fit in the gaps. The runner launches
commands in rank order; where commands queue for a limited number of slots (the runner's hang-prone tool slots,
tests/bench/timeline_audit.py --all) the lowest rank goes first whenever a slot frees; the worker session sends
each command's rank with it and its worker queues them the same way (collect/worker.py).
"""

from __future__ import annotations

import asyncio
import functools
import heapq
import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

SLOW_MARKERS = (
    "nvidia-smi",
    "lspci",
    "dmidecode",
    "/proc/[0-9]",
    "ldconfig",
    "systemctl",
    "journalctl",
    "modinfo",
    "python3 -I",  # the engine readers: an interpreter start, then a walk of /proc (0.4-0.6 s)
    "find /usr",  # library searches over /usr (0.1-0.3 s)
)


def is_process_scan(shell: str) -> bool:
    """A line that walks every process in /proc (its nvidia-smi call, if any, is a short prefix)."""
    return "/proc/[0-9]" in shell


CHAINED_TOOLS = ("nvidia-smi", "dcgmi")
"""Tools whose calls the runner lets run only a few at a time per target (its hang-prone tool slots,
run/runner.py HANG_PRONE_TOOLS): each call waits for an earlier one to end, so they form the audit's longest chain
(two 0.8 s `-q` dumps and a dozen 0.3 s queries over 4-8 slots)."""


def queue_rank(shell: str) -> int:
    """The order in a worker's own queue (collect/worker.py): the launch rank, a chained tool's call first within
    it. Such a call reaches the queue late (after its tool slot freed, a round trip later) and, ranked with the
    burst, waited behind every earlier command of its rank: each wait lengthened the chain and the audit's wall
    (issue 30: in a 12-host fleet the last nvidia-smi call started ~0.7 s later than with the client's slots)."""
    rank = launch_rank(shell)
    return 2 * rank - (1 if any(t in shell for t in CHAINED_TOOLS) else 0)


# asked once per probe and command (~600 calls an audit) for ~250 distinct lines
@functools.lru_cache(maxsize=1024)
def launch_rank(shell: str) -> int:
    """0: a full `nvidia-smi -q` dump or a scan of every process in /proc (the slowest, ~1 s: the scans fork
    per process, so they grow with the box's process count); 1: other driver/device queries (tenths of a
    second); 2: quick reads."""
    if "nvidia-smi -q" in shell or is_process_scan(shell):
        return 0
    return 1 if any(m in shell for m in SLOW_MARKERS) else 2


class RankedSlots:
    """A semaphore of `n` slots whose waiters get a freed slot lowest rank first, then first come.

    asyncio.Semaphore wakes waiters in arrival order: short nvidia-smi queries that had waited for the tool's
    own slots then queued behind ~40 quick reads for the worker's 16 channels and started 0.3 s late."""

    def __init__(self, n: int) -> None:
        self._free = n
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    @property
    def free(self) -> int:
        return self._free

    async def acquire(self, rank: int) -> None:
        if self._free > 0 and not self._pending():
            self._free -= 1
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (rank, next(self._order), future))
        try:
            await future
        except asyncio.CancelledError:
            if (
                future.done() and not future.cancelled()
            ):  # handed a slot as it was cancelled: pass it on
                self.release()
            raise

    def release(self) -> None:
        while self._waiting:
            _, _, future = heapq.heappop(self._waiting)
            if not future.done():
                future.set_result(None)
                return
        self._free += 1

    @asynccontextmanager
    async def held(self, rank: int) -> AsyncIterator[None]:
        """One slot for the body of an `async with`: acquired first (lowest rank first), released however it ends."""
        await self.acquire(rank)
        try:
            yield
        finally:
            self.release()

    def _pending(self) -> bool:
        while self._waiting and self._waiting[0][2].done():  # cancelled waiters leave lazily
            heapq.heappop(self._waiting)
        return bool(self._waiting)
