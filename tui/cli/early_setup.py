"""A headless live audit begins connecting its SSH targets while tui/cli/headless.py loads (collect/early.py).

Imported by tui/cli/commands.py for that path only: the dashboard paints without the SSH transports' modules.
"""

from __future__ import annotations

from gpuaudit.probes.core.collect.early import EarlyStart, early_start
from gpuaudit.probes.core.collect.targets import parse_container_spec, parse_host_spec
from gpuaudit.probes.core.run.request import AuditRequest
from gpuaudit.tui.cli.ssh_setup import ssh_options


def begin(request: AuditRequest) -> EarlyStart | None:
    """The early start of a live audit's SSH targets, or None (a replay, the demo, --resume, --hosts, no SSH
    target, or specs the audit itself will report on: nothing begins before the usual path says why)."""
    if request.replay or request.demo or request.resume or request.hosts:
        return None
    try:
        host = parse_host_spec(request.host)
        container = (
            parse_container_spec(request.container, host=host) if request.container else None
        )
        return early_start(host, container, ssh_options(request), request.timeout)
    except Exception:  # noqa: BLE001 - the audit's own setup reports a bad spec, once, as always
        return None
