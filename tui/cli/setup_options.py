"""The options every audit front end derives from an AuditRequest: the runner's, SSH's, the probes. No Textual."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpuaudit.probes.catalogue import REGISTRY
from gpuaudit.probes.core.models import CommandRecord
from gpuaudit.probes.core.run.request import AuditRequest
from gpuaudit.probes.core.run.runner import Audit, AuditOptions
from gpuaudit.tui.cli.bmc_setup import bmc_reader
from gpuaudit.tui.cli.ssh_setup import ssh_options

__all__ = ["AuditSetup", "audit_options", "selected_probes", "ssh_options", "with_expected_gpus"]


@dataclass
class AuditSetup:
    """What a front end needs to run and show an audit."""

    audit: Audit
    mode: str
    note: str | None = None
    source: Path | None = None
    recorded: tuple[CommandRecord, ...] = ()
    """A replay's recorded records: those no probe asked for today are put back as recorded (`stamp`)."""


def audit_options(request: AuditRequest) -> AuditOptions:
    return AuditOptions(
        timeout_s=request.timeout,
        max_bytes=request.max_output,
        sudo=request.sudo,
        active=request.active,
        python=request.python,
        output_budget=request.output_budget,
        bmc=bmc_reader(request),  # --bmc (issue 27)
    )


def selected_probes(request: AuditRequest) -> list:
    ids = request.probe_ids
    probes = [p for p in REGISTRY if ids is None or p.id in ids]
    if request.expect_gpus:  # --expect-gpus N: the driver probe's row carries the expectation
        probes = [with_expected_gpus(p, request.expect_gpus) for p in probes]
    return probes


def with_expected_gpus(probe, expect: int):
    # the expectation is a row of the driver probe's; the others' judging halves stay unloaded (issue 30)
    if probe.id != "driver":
        return probe
    from gpuaudit.probes.driver.expected import ID, expected_gpus_check

    checks = tuple(expected_gpus_check(expect) if c.id == ID else c for c in probe.checks)
    return probe if checks == probe.checks else probe.replace(checks=checks)
