"""--bmc and its options: the argparse flags, their checks (exit 2 before any target is contacted), the request
fields, and the reader the audit uses. The credentials never enter argv, the request or a snapshot."""

from __future__ import annotations

import argparse
from typing import Any

try:
    from gpuaudit.tui.cli.args import CliError
except ImportError:  # before the CLI split into args/commands
    from gpuaudit.tui.cli.entry import CliError  # type: ignore[no-redef]


def add_bmc_arguments(p: argparse.ArgumentParser) -> None:
    bmc = p.add_argument_group("bmc (BIOS settings over Redfish, read-only)")
    bmc.add_argument(
        "--bmc",
        metavar="ADDRESS",
        help="the host's BMC (host[:port] or https://host[:port]): read its BIOS settings and pending "
        "changes over HTTPS, GET only; credentials from GPUAUDIT_BMC_USER/GPUAUDIT_BMC_PASSWORD or "
        "--bmc-credentials",
    )
    bmc.add_argument(
        "--bmc-credentials",
        metavar="FILE",
        help="a 0600 file with the BMC user and password (two lines, or user:password); never on the "
        "command line",
    )
    bmc.add_argument("--bmc-ca", metavar="FILE", help="PEM CA that signed the BMC's certificate")
    bmc.add_argument(
        "--bmc-insecure",
        action="store_true",
        help="do not verify the BMC's TLS certificate (the snapshot's executed lines say so)",
    )


def check_bmc_args(args: argparse.Namespace) -> None:
    """Combinations and the credentials/CA files, before any target is contacted (CliError: exit 2)."""
    given = [
        name
        for name, value in (
            ("--bmc-credentials", getattr(args, "bmc_credentials", None)),
            ("--bmc-ca", getattr(args, "bmc_ca", None)),
            ("--bmc-insecure", getattr(args, "bmc_insecure", False)),
        )
        if value
    ]
    address = getattr(args, "bmc", None)
    if given and not address:
        raise CliError(f"{given[0]} needs --bmc ADDRESS")
    if not address:
        return
    if args.replay or args.demo or args.hosts or args.resume:
        raise CliError(
            "--bmc reads one live host's BMC; it cannot be combined with --replay/--demo/--hosts/--resume"
        )
    from gpuaudit.probes.core.collect.redfish import BmcConfigError, bmc_config

    try:
        bmc_config(
            address,
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
    }


def bmc_reader(request: Any) -> Any:
    """The reader of the host's BMC (credentials loaded now, in memory only); None without --bmc."""
    if not getattr(request, "bmc", None):
        return None
    from gpuaudit.probes.core.collect.redfish import BmcReader, bmc_config

    return BmcReader(
        bmc_config(
            request.bmc,
            credentials_file=request.bmc_credentials,
            ca_file=request.bmc_ca,
            insecure=request.bmc_insecure,
            timeout_s=request.timeout,
        )
    )
