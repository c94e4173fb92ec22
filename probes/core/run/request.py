"""What the user asked for, parsed once at the edge (tui/cli/entry.py `audit_request`) and passed down as one typed,
frozen value: the front ends (headless, TUI, fleet, resume) and the setup read it, never argparse's Namespace.

No Textual, no rich, no argparse: the engine side can take a request from any front end.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class AuditRequest:
    """One audit's options, validated (tui/cli/entry.py checks combinations, probe ids and --python before building it)."""

    # targets
    host: str | None = None
    """--host [user@]host[:port] or an ssh_config alias; None: this machine."""
    container: str | None = None
    hosts: str | None = None
    """--hosts FILE: the fleet inventory."""
    max_connections: int = 32
    # audit
    probe_ids: tuple[str, ...] | None = None
    """None: every probe of the registry."""
    timeout: float = 20.0
    max_output: int = 8 * 1024 * 1024
    output_budget: int = 256 * 1024 * 1024
    """--output-budget: output bytes kept over the whole audit (runner.DEFAULT_OUTPUT_BUDGET)."""
    sudo: bool = False
    python: str | None = None
    active: bool = False
    expect_gpus: int | None = None
    """--expect-gpus N: fewer GPUs visible to the driver is a critical (driver.expected_gpus) naming the missing."""
    # ssh
    known_hosts: str | None = None
    identity: str | None = None
    accept_new_host_keys: bool = False
    max_channels: int = 8
    connections: int = 2
    sessions: bool = True
    """False with --no-sessions: one SSH channel per command, no long-lived worker."""
    # recordings (at most one of replay/resume/demo/hosts)
    replay: str | None = None
    resume: str | None = None
    demo: bool = False
    yes: bool = False
    # output
    json: bool = False
    plan: bool = False
    prom: Path | None = None
    health: bool = False
    fail_on: str = "critical"
    save: str | None = None
    """None: not stored; "": stored under the default name."""
    snapshot_dir: Path | None = None
    html: Path | None = None
    """--html FILE: the self-contained HTML report (tui/views/html.py)."""
    share: str | None = None
    """--share [MAPFILE]: identifiers mapped to placeholders in --json/--plan/--html/--save; "" = default map file."""
    # interface
    theme: str | None = None
    # bmc (probes/core/collect/redfish.py): the credentials themselves are never part of the request
    bmc: str | None = None
    """--bmc ADDRESS of the host's BMC; None: no Redfish reads."""
    bmc_credentials: str | None = None
    """--bmc-credentials FILE (0600); None: GPUAUDIT_BMC_USER/GPUAUDIT_BMC_PASSWORD from the environment."""
    bmc_ca: str | None = None
    bmc_insecure: bool = False
    bmc_via_host: bool = False
    """--bmc-via-host: reach the BMC through the audited host's SSH connection (port forwarding)."""
