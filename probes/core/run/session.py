"""Builds target bindings (which transport reaches which target) from CLI specs or a snapshot, and runs an
audit to its end (`run_to_end`: the fold every non-interactive front end shares)."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from gpuaudit.probes.core.collect.links import transport_for
from gpuaudit.probes.core.collect.replay_transport import (
    DirectoryTransport,
    ReplayTransport,
    records_by_role,
)
from gpuaudit.probes.core.collect.ssh_transport import SshOptions
from gpuaudit.probes.core.collect.targets import TargetSpec
from gpuaudit.probes.core.collect.transport import Transport
from gpuaudit.probes.core.models import AuditRun, CommandRecord, Role, Target, TargetState
from gpuaudit.probes.core.record import Record
from gpuaudit.probes.core.run.events import CommandFinished, apply_event, initial_run
from gpuaudit.probes.core.run.runner import Audit, TargetBinding

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T], loop: asyncio.AbstractEventLoop | None = None) -> T:
    """`asyncio.run(coro)`, with the result handed back outside the main task.

    asyncio.run's SIGINT bookkeeping (Python 3.11+) reads back its handler, `partial(_on_sigint, main_task=task)`,
    through the signal module, which formats it with repr() on the way: the done task's repr includes its result.
    For an audit holding 50 MB outputs that repr took 6.7 s and hundreds of MiB; the main task here returns None.
    """
    box: list[T] = []

    async def main() -> None:
        box.append(await coro)

    # asyncio.run's handling; on `loop` when one already began connecting (collect/early.py)
    with asyncio.Runner(loop_factory=None if loop is None else lambda: loop) as runner:
        runner.run(main())
    return box[0]


def live_bindings(
    host: TargetSpec,
    container: TargetSpec | None,
    ssh: SshOptions,
    made: Mapping[Role, Transport] | None = None,
) -> list[TargetBinding]:
    """Host over local/SSH; container over its own SSH connection or wrapped through the host's. `made`: the
    transports a front end already built (and began connecting) by role (collect/early.py)."""
    made = made or {}
    host_transport = made.get("host") or transport_for(
        host, ssh, wraps_container=bool(container is not None and container.wrap_prefix)
    )
    bindings = [TargetBinding(target=host.to_target(), transport=host_transport)]
    if container is not None:
        if container.wrap_prefix:
            bindings.append(
                TargetBinding(
                    target=container.to_target(),
                    transport=host_transport,
                    wrap_prefix=container.wrap_prefix,
                    via="host",
                )
            )
        else:
            bindings.append(
                TargetBinding(
                    target=container.to_target(),
                    transport=made.get("container") or transport_for(container, ssh),
                )
            )
    return bindings


def replay_bindings(
    targets: Sequence[Target],
    records: Sequence[CommandRecord],
    delay_s: float = 0.0,
    states: Mapping[str, TargetState] | None = None,
) -> list[TargetBinding]:
    """One ReplayTransport per recorded target role (reporting the recorded hostname when known)."""
    grouped = records_by_role(records)
    states = states or {}
    return [
        TargetBinding(
            target=t,
            transport=ReplayTransport(
                grouped.get(t.role, []),
                label=f"replay:{t.role}",
                delay_s=delay_s,
                hostname=((states[t.role].hostname or "replay") if t.role in states else "replay"),
            ),
        )
        for t in targets
    ]


def directory_bindings(
    root: Path, roles: Sequence[Role] = ("host", "container")
) -> list[TargetBinding]:
    """Bindings answering from `<root>/<role>/` directories that exist."""
    out = []
    for role in roles:
        d = Path(root) / role
        if d.is_dir():
            target = Target(
                role=role, spec=f"dir:{d}", kind="directory", label=f"{role} (recorded)"
            )
            out.append(TargetBinding(target=target, transport=DirectoryTransport(d, label=role)))
    return out


async def run_to_end(
    audit: Audit,
    on_event: Callable[[Record], None] | None = None,
    partial: list[AuditRun] | None = None,
) -> AuditRun:
    """Run `audit` to completion and fold its events into one AuditRun (not yet stamped with a mode or note).

    `on_event(event)` sees every event after it is folded (a front end's progress line). `partial`, when given,
    holds the run so far (for an interrupted --save) and makes SIGTERM cancel the current task like Ctrl-C does,
    so every remote command is killed before the process exits. The audit is closed however the run ends.
    """
    task = (
        asyncio.current_task() if partial is not None else None
    )  # the one-target audit of headless main() only
    if task is not None:
        try:
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        except (
            ValueError,
            RuntimeError,
            NotImplementedError,
        ):  # not the main thread, or no signals here
            pass
    run = initial_run(audit.targets, [(p.id, p.title) for p in audit.probes])
    # Nobody reads the run before its end without `partial`: a probe's records then come whole with its
    # ProbeFinished, so folding each CommandFinished (two model copies and a list copy per command, ~2 % of a
    # fleet host's client CPU, issue 30) would build states no one sees. The final run is the same.
    skip = CommandFinished if partial is None else ()
    if partial is None and on_event is None:
        audit.command_events = False  # and with no reader at all, the runner need not make them
    try:
        async for event in audit.events():
            if not isinstance(event, skip):
                run = apply_event(run, event)
            if partial is not None:
                partial[:] = [run]
            if on_event is not None:
                on_event(event)
    finally:
        await audit.aclose()
    return run
