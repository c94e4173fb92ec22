"""--bmc after argparse: the checks (exit 2 before any target is contacted), the request fields, and the reader the
audit uses (probes/core/collect/redfish.py). The credentials are loaded from the environment or the 0600 file when
the audit starts and stay in memory: never in argv, the request or a snapshot."""

from __future__ import annotations

import argparse
from typing import Any

from gpuaudit.probes.core.collect.redfish import BmcConfigError, BmcReader, bmc_config
from gpuaudit.tui.cli.args import CliError


def check_bmc_args(args: argparse.Namespace) -> None:
    """Combinations and the credentials/CA files, before any target is contacted (CliError: exit 2)."""
    given = [
        name
        for name, value in (
            ("--bmc-credentials", getattr(args, "bmc_credentials", None)),
            ("--bmc-ca", getattr(args, "bmc_ca", None)),
            ("--bmc-insecure", getattr(args, "bmc_insecure", False)),
            ("--bmc-via-host", getattr(args, "bmc_via_host", False)),
        )
        if value
    ]
    if getattr(args, "bmc_via_host", False) and not (args.host or args.hosts):
        raise CliError(
            "--bmc-via-host forwards through the host's SSH connection: it needs --host or --hosts"
        )
    address = getattr(args, "bmc", None)
    if args.hosts and address:
        raise CliError(
            "--hosts: give each host's BMC in the inventory (gpuaudit_bmc=ADDRESS); --bmc-credentials, "
            "--bmc-ca and --bmc-insecure apply to all of them"
        )
    if given and not address and not args.hosts:
        raise CliError(f"{given[0]} needs --bmc ADDRESS")
    if args.replay or args.demo or args.resume:
        if address or given:
            raise CliError(
                "--bmc reads a live host's BMC; it cannot be combined with --replay/--demo/--resume"
            )
        return
    if not address and not given:
        return
    try:
        bmc_config(
            address
            or "127.0.0.1",  # --hosts: the addresses come from the inventory; check the rest now
            credentials_file=args.bmc_credentials,
            ca_file=args.bmc_ca,
            insecure=args.bmc_insecure,
        )
    except BmcConfigError as exc:
        raise CliError(str(exc)) from None


def bmc_request_fields(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "bmc": getattr(args, "bmc", None),
        "bmc_credentials": getattr(args, "bmc_credentials", None),
        "bmc_ca": getattr(args, "bmc_ca", None),
        "bmc_insecure": bool(getattr(args, "bmc_insecure", False)),
        "bmc_via_host": bool(getattr(args, "bmc_via_host", False)),
    }


def bmc_reader(request: Any) -> Any:
    """The reader of the host's BMC (credentials loaded now, in memory only); None without --bmc."""
    if not getattr(request, "bmc", None):
        return None
    return BmcReader(
        bmc_config(
            request.bmc,
            credentials_file=request.bmc_credentials,
            ca_file=request.bmc_ca,
            insecure=request.bmc_insecure,
            timeout_s=request.timeout,  # the audit's caps, as for any source
            max_bytes=request.max_output,
            via_host=request.bmc_via_host,
        )
    )
