"""Several SSH connections to one target behind one Transport: more channels than one sshd session allows."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from gpuaudit.probes.core.collect.transport import (
    Gate,
    RawResult,
    Transport,
    TransportBase,
    not_run,
)
from gpuaudit.probes.core.errors import TransportError


class PooledTransport(TransportBase):
    """Spreads commands over N connections to the same target (each keeps its own channel cap).

    OpenSSH allows 10 sessions per connection; a full audit declares about a hundred commands, so
    with one connection the slowest ones queue behind quick reads. The first connection is opened
    alone (host-key prompts, accept-new recording and auth errors surface once); the extra ones are
    best effort: if they fail the audit runs on the first.

    `background=True` (worker sessions, where one connection carries the host's session and the others
    serve container sessions and fallbacks): `connect` returns once the first connection is up and the
    extra ones join the pool when their handshakes end, so the audit's first command does not wait for a
    second key exchange (one more handshake's round trips on the critical path; issue 30).
    """

    executes_lines = True
    reopens_quickly = True

    def __init__(self, members: Sequence[Transport], background: bool = False) -> None:
        if not members:
            raise ValueError("PooledTransport needs at least one member")
        self.members = list(members)
        self.label = members[0].label
        self.background = background
        self._alive: list[Transport] = []
        self._in_flight: dict[int, int] = {}
        self._joining: set[asyncio.Task[None]] = set()

    @property
    def channels(self) -> int | None:
        """Commands in flight at once over every member; None when a member has no limit of its own."""
        limits = [m.channels for m in self.members]
        return None if any(c is None for c in limits) else sum(c or 0 for c in limits)

    async def connect(self) -> None:
        first = self.members[0]
        await first.connect()
        self._alive = [first]
        self._in_flight = {id(first): 0}
        extra = self.members[1:]
        if self.background:
            for member in extra:
                task = asyncio.ensure_future(self._join(member))
                self._joining.add(task)
                task.add_done_callback(self._joining.discard)
            return
        results = await asyncio.gather(*(m.connect() for m in extra), return_exceptions=True)
        self._alive += [m for m, r in zip(extra, results) if not isinstance(r, BaseException)]
        self._in_flight = {id(m): 0 for m in self._alive}

    async def _join(self, member: Transport) -> None:
        """An extra connection, opened in the background: it serves commands once its handshake ended."""
        try:
            await member.connect()
        except Exception:  # best effort, like the waited-for extras: the audit runs on the others
            return
        self._in_flight.setdefault(id(member), 0)
        self._alive.append(member)

    def _pick(self) -> Transport | None:
        """The live member with the fewest commands in flight; members whose connection died are dropped."""
        self._alive = [m for m in self._alive if not m.lost]
        if not self._alive:
            return None
        return min(self._alive, key=lambda m: self._in_flight[id(m)])

    @property
    def lost(self) -> bool:
        """Every connection of the pool died."""
        return bool(self.members) and all(m.lost for m in (self._alive or self.members))

    @property
    def lost_reason(self) -> str | None:
        reasons = [m.lost_reason for m in self.members]
        return next((r for r in reasons if r), None)

    async def run(
        self,
        line: str,
        *,
        command_id: str,
        timeout_s: float,
        max_bytes: int,
        gate: Gate | None = None,
        marker: str | None = None,
        session: Any = None,
    ) -> RawResult:
        """Run on the least busy live member; a command that never started moves to another live member at once."""
        result = not_run("connection lost: not connected")
        for _ in range(len(self.members)):
            member = self._pick()
            if member is None:
                return result
            self._in_flight[id(member)] += 1
            try:
                result = await member.run(
                    line,
                    command_id=command_id,
                    timeout_s=timeout_s,
                    max_bytes=max_bytes,
                    gate=gate,
                    marker=marker,
                )
            finally:
                self._in_flight[id(member)] -= 1
            if not (result.not_started and member.lost):
                return result  # a command that ran (even partly) is never run twice
        return result

    async def open_session(self, line: str, open_timeout_s: float | None = None) -> Any:
        """A long-lived channel on the live member holding the fewest sessions (a dead member's sessions move)."""
        self._alive = [m for m in self._alive if not m.lost]
        if not self._alive:
            raise TransportError(f"connection lost: {self.lost_reason or 'not connected'}")
        member = min(self._alive, key=lambda m: m.sessions_open)
        return await member.open_session(line, open_timeout_s)

    async def aclose(self) -> None:
        for task in list(self._joining):
            task.cancel()
        if self._joining:
            await asyncio.wait(self._joining, timeout=2)
        await asyncio.gather(*(m.aclose() for m in self.members), return_exceptions=True)
