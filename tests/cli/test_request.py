"""The Namespace is parsed once at the edge into a frozen AuditRequest (probes/core/run/request.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from gpuaudit.probes.core.run.request import AuditRequest
from gpuaudit.tui.cli.args import CliError
from gpuaudit.tui.cli.commands import audit_request
from gpuaudit.tui.cli.entry import build_parser


def test_defaults_of_the_parser_and_of_the_request_agree() -> None:
    assert audit_request(build_parser().parse_args([])) == AuditRequest()


def test_options_cross_as_typed_fields_and_the_request_is_frozen() -> None:
    req = audit_request(
        build_parser().parse_args(
            [
                "--host",
                "root@gpu1",
                "--container",
                "pct:101",
                "--probes",
                "pcie,power",
                "--timeout",
                "5",
                "--sudo",
                "--save",
                "x",
                "--snapshot-dir",
                "/tmp/snaps",
                "--fail-on",
                "warning",
                "--json",
                "--connections",
                "3",
            ]
        )
    )
    assert (req.host, req.container, req.probe_ids, req.timeout, req.sudo) == (
        "root@gpu1",
        "pct:101",
        ("pcie", "power"),
        5.0,
        True,
    )
    assert (req.save, req.snapshot_dir, req.fail_on, req.json, req.connections) == (
        "x",
        Path("/tmp/snaps"),
        "warning",
        True,
        3,
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        req.host = "other"  # type: ignore[misc]


def test_bad_probe_ids_are_a_usage_error_when_the_request_is_built() -> None:
    with pytest.raises(CliError, match="unknown probe"):
        audit_request(build_parser().parse_args(["--probes", "nope"]))
