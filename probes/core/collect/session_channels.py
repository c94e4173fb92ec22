"""Session channels: the byte pipes a worker session (probes/core/collect/worker.py) runs over.

A local subprocess (a container entered from this machine) or an asyncssh process (one SSH channel). They
know nothing of transports, so both the transports that open them and the session layer import them.
"""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Any


class LocalSessionChannel:
    """A local subprocess as a session channel (a container entered from this machine: `pct exec` once)."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def open(cls, line: str) -> LocalSessionChannel:
        proc = await asyncio.create_subprocess_exec(
            "/bin/sh",
            "-c",
            line,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        return cls(proc)

    async def read_out(self, n: int) -> bytes:
        assert self.proc.stdout is not None
        return await self.proc.stdout.read(n)

    async def read_err(self, n: int) -> bytes:
        assert self.proc.stderr is not None
        return await self.proc.stderr.read(n)

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)

    def abort(self, reason: str) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass

    async def aclose(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 2)
        except TimeoutError:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except OSError:
                pass
            try:
                await asyncio.wait_for(self.proc.wait(), 1)
            except TimeoutError:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except OSError:
                    pass


class SshSessionChannel:
    """An asyncssh process (one SSH channel) as a session channel; it holds one channel slot while open."""

    def __init__(self, proc: Any, release: Any, on_abort: Any = None) -> None:
        self.proc = proc
        self._release = release
        self._on_abort = on_abort

    def abort(self, reason: str) -> None:
        if self._on_abort is not None:
            self._on_abort(reason)

    def kill(self) -> None:
        """KILL over the channel: sshd signals the session's process group (a hung rc file or python3)."""
        try:
            self.proc.send_signal("KILL")
        except Exception:  # noqa: BLE001 - the channel is already gone
            pass

    async def read_out(self, n: int) -> bytes:
        return bytes(await self.proc.stdout.read(n))

    async def read_err(self, n: int) -> bytes:
        return bytes(await self.proc.stderr.read(n))

    def write(self, data: bytes) -> None:
        self.proc.stdin.write(data)

    async def aclose(self) -> None:
        try:
            try:
                self.proc.stdin.write_eof()
            except Exception:  # noqa: BLE001
                pass
            try:
                await asyncio.wait_for(self.proc.wait_closed(), 2)
            except (TimeoutError, Exception):  # noqa: BLE001
                self.kill()  # it did not end with its stdin: nothing it runs outlives the session
                try:
                    self.proc.close()
                except Exception:  # noqa: BLE001
                    pass
        finally:
            release, self._release = self._release, None
            if release is not None:
                await release()
