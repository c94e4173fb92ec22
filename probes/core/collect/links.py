"""Which transport reaches one target: local, one SSH connection or a pool, behind worker sessions or not.

Its own module (collect only) so a front end can build a target's transport, and `begin()` connecting it, before
the runner and the catalogue are loaded (collect/early.py); run/session.py builds the audit's bindings with it.
"""

from __future__ import annotations

from gpuaudit.probes.core.collect.pool import PooledTransport
from gpuaudit.probes.core.collect.ssh_transport import SshOptions, SshTransport
from gpuaudit.probes.core.collect.targets import TargetSpec
from gpuaudit.probes.core.collect.transport import LocalTransport, Transport
from gpuaudit.probes.core.collect.worker_transport import SessionTransport


def transport_for(spec: TargetSpec, ssh: SshOptions, *, wraps_container: bool = False) -> Transport:
    """The transport of one target; with sessions on, SSH commands go through long-lived workers (one login,
    one rc), and a local host hosts workers only for the container it enters (one `pct exec` per session)."""
    if spec.kind == "local":
        return (
            SessionTransport(LocalTransport(), host_sessions=False)
            if (ssh is None or ssh.sessions) and wraps_container
            else LocalTransport()
        )
    assert spec.ssh is not None
    inner: Transport
    if ssh.connections > 1:
        inner = PooledTransport(
            [SshTransport(spec.ssh, ssh, label=spec.raw) for _ in range(ssh.connections)],
            background=ssh.sessions,  # the host's one session needs the first connection only
        )
    else:
        inner = SshTransport(spec.ssh, ssh, label=spec.raw)
    return (
        SessionTransport(inner, parallel=ssh.max_channels * ssh.connections)
        if ssh.sessions
        else inner
    )
