"""run_sync: an audit's result never goes through repr() on its way out of asyncio.run.

asyncio.run (3.11+) reads its SIGINT handler back through the signal module, which formats the handler
(`partial(_on_sigint, main_task=task)`) with repr(): the done main task's repr includes its result. With an
audit holding three 50 MB outputs that cost 6.7 s and hundreds of MiB (tests/bench/bench_audit.py, big output).
"""

from __future__ import annotations

import asyncio
import signal

import pytest
from gpuaudit.probes.core.run.session import run_sync


class Loud:
    """A result that counts how often it is formatted."""

    reprs = 0

    def __repr__(self) -> str:
        Loud.reprs += 1
        return "Loud()"


async def _make() -> Loud:
    await asyncio.sleep(0)
    return Loud()


def test_plain_asyncio_run_formats_the_result_the_trap_this_avoids() -> None:
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        pytest.skip("asyncio.run installs its SIGINT handler only over the default one")
    Loud.reprs = 0
    asyncio.run(_make())
    if Loud.reprs == 0:
        pytest.skip("this Python's asyncio.run does not format its main task")
    assert Loud.reprs >= 1


def test_run_sync_returns_the_result_without_formatting_it() -> None:
    Loud.reprs = 0
    result = run_sync(_make())
    assert isinstance(result, Loud)
    assert Loud.reprs == 0


def test_run_sync_passes_exceptions_through() -> None:
    async def boom() -> None:
        raise ValueError("from the audit")

    with pytest.raises(ValueError, match="from the audit"):
        run_sync(boom())
