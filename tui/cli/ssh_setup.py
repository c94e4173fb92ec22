"""The SSH options of an audit request: its own small module, so the early connect of a headless audit
(tui/cli/early_setup.py) builds them before the catalogue and the runner load (tui/cli/setup_options.py)."""

from __future__ import annotations

from gpuaudit.probes.core.collect.ssh_transport import SshOptions
from gpuaudit.probes.core.run.request import AuditRequest


def ssh_options(request: AuditRequest) -> SshOptions:
    return SshOptions(
        known_hosts=request.known_hosts,
        identity=request.identity,
        accept_new_host_keys=request.accept_new_host_keys,
        max_channels=request.max_channels,
        connections=request.connections,
        sessions=request.sessions,
        connect_timeout_s=min(30.0, max(5.0, request.timeout)),
    )
