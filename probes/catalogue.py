"""The probe catalogue: REGISTRY holds the ten probes in display order (imported on purpose, never by `gpuaudit.probes`)."""

from __future__ import annotations

from gpuaudit.probes import (
    container,
    driver,
    firmware,
    kernel,
    nccl,
    numa,
    nvlink,
    pcie,
    power,
    python,
)
from gpuaudit.probes.core.judge.checks import Check
from gpuaudit.probes.core.judge.regression import CHECKS as REGRESSION_CHECKS
from gpuaudit.probes.core.sources import with_presence
from gpuaudit.probes.core.spec import Probe

REGISTRY: tuple[Probe, ...] = tuple(
    with_presence(p)
    for p in (
        firmware.PROBE,
        container.PROBE,
        driver.PROBE,
        kernel.PROBE,
        pcie.PROBE,
        power.PROBE,
        nccl.PROBE,
        numa.PROBE,
        python.PROBE,
        nvlink.PROBE,
    )
)
PROBE_IDS: tuple[str, ...] = tuple(p.id for p in REGISTRY)
DERIVED: tuple[Check, ...] = REGRESSION_CHECKS
"""Rows no probe judges from commands: regression.* compares an audit with its host's pinned baseline
(snapshots/baseline.py). Listed by --list-checks and docs/CHECKS.md beside the probes' rows."""


def get(probe_id: str) -> Probe:
    """The probe with this id; KeyError if there is none."""
    for probe in REGISTRY:
        if probe.id == probe_id:
            return probe
    raise KeyError(probe_id)
