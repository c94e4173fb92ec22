"""Connect while the front end still loads: the SSH handshakes and logins of an audit's targets run on an event
loop in a background thread while the main thread imports the catalogue, the runner and the outputs; the loop
is then handed to the main thread, which runs the audit on it with the same transports.

Only the network waits overlap (the server's key exchange, its login shell and rc files, the worker's start):
the client's own work still takes the one interpreter lock. A front end without modules left to load gains
nothing from it. The transports are the ones collect/links.py builds for the audit; `begin()` starts each
(collect/transport.py), and the runner's first `connect()` takes that attempt's outcome, failures included, so a
target that cannot be reached fails once, in the audit, the way it always does.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from gpuaudit.probes.core.collect.links import transport_for
from gpuaudit.probes.core.collect.ssh_transport import SshOptions, import_asyncssh
from gpuaudit.probes.core.collect.targets import TargetSpec
from gpuaudit.probes.core.collect.transport import Transport

if TYPE_CHECKING:
    from gpuaudit.probes.core.models import Role

PREFLIGHT_TIMEOUT_S = 15.0
"""The preflight's own timeout (run/runner.py PREFLIGHT): a target's login and worker start share it."""


def login_budget(timeout_s: float) -> float:
    """How long a target's login may take before it is called hung: the preflight's 15 s, at most --timeout + 10 s
    (the runner's preflight and an early start use this one figure)."""
    return min(PREFLIGHT_TIMEOUT_S, timeout_s + 10)


class EarlyStart:
    """Transports by role, connecting on a loop that runs in a daemon thread until `hand_over()`."""

    def __init__(self, transports: Mapping[Role, Transport], login_budget_s: float) -> None:
        self.transports = dict(transports)
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="gpuaudit-early-connect", daemon=True
        )
        for transport in self.transports.values():
            self.loop.call_soon(transport.begin, login_budget_s)
        self._thread.start()

    def hand_over(self) -> asyncio.AbstractEventLoop:
        """Stop the background loop (what it started stays pending on it) and return it for the main thread."""
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join()
        return self.loop


def early_start(
    host: TargetSpec, container: TargetSpec | None, ssh: SshOptions, timeout_s: float
) -> EarlyStart | None:
    """Begin connecting the SSH targets of a live audit (None when there is none to begin: a local host, a
    container entered through its host only, `--no-sessions`)."""
    made: dict[Role, Transport] = {}
    wrapped = container is not None and container.wrap_prefix is not None
    # one transport per role, as live_bindings makes them (a container on the same SSH spec as its host has
    # its own connection); a container entered through its host has none of its own
    roles: tuple[tuple[Role, TargetSpec | None], ...] = (
        ("host", host),
        ("container", None if wrapped else container),
    )
    for role, spec in roles:
        if spec is not None and spec.kind == "ssh" and ssh.sessions:
            made[role] = transport_for(spec, ssh)
    if not made:
        return None
    import_asyncssh()  # here, before the thread starts: never two threads importing it at once
    return EarlyStart(made, login_budget(timeout_s))
