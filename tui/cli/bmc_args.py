"""--bmc and its options: the argparse flags only (light: `--help` imports it). Their checks, the request fields
and the reader are in bmc_setup.py. The credentials never enter argv, the request or a snapshot."""

from __future__ import annotations

import argparse


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
        "--bmc-via-host",
        action="store_true",
        help="reach the BMC through the audited host's SSH connection (port forwarding from the client; "
        "nothing runs on the host), for a management network only the host can reach",
    )
    bmc.add_argument(
        "--bmc-insecure",
        action="store_true",
        help="do not verify the BMC's TLS certificate (the snapshot's executed lines say so)",
    )
