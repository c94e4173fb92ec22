"""driver.expected_gpus: every GPU on the PCI bus (and as many as the operator expects, `--expect-gpus N`) is visible
to the driver; the missing ones are named by bus id. The "7 of 8 GPUs" case cluster validators fail on opaquely.

The PCI side is sysfs (`sys_pci_nvidia`: the functions lspci lists, with their class); display-class functions
(0x0300xx VGA, 0x0302xx 3D controller) are GPUs, audio/USB/NVSwitch functions are not.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from gpuaudit.probes.core.judge.checks import Check, Ctx, Message, Verdict, critical, ok, unknown
from gpuaudit.probes.core.models import Role
from gpuaudit.probes.core.parsers.system import normalize_bdf
from gpuaudit.probes.driver.extract import SMI_SOURCES
from gpuaudit.probes.driver.facts import DriverFacts

HOST: frozenset[Role] = frozenset({"host"})
ID = "driver.expected_gpus"
_CLASS = re.compile(
    r"/([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])/class:\s*0x(03[02])", re.M
)


def pci_gpus(sys_pci_nvidia: str) -> list[str]:
    """Bus ids of the NVIDIA display-class functions in the `sys_pci_nvidia` listing, sorted."""
    return sorted({normalize_bdf(m.group(1)) for m in _CLASS.finditer(sys_pci_nvidia)})


def _verdict(expect: int | None) -> Callable[[Ctx], Verdict]:
    def verdict(ctx: Ctx) -> Verdict:
        h: DriverFacts = ctx.f
        rec = ctx.outputs.get("host", {}).get("sys_pci_nvidia")
        on_bus = pci_gpus(rec.stdout if rec is not None else "")
        failed = {x.bus_id for x in h.handle_failures}
        visible = sorted({normalize_bdf(g.bus_id) for g in h.gpus if g.bus_id} - failed)
        missing = [b for b in on_bus if b not in visible]
        obs = f"{len(visible)} GPU(s) visible to the driver, {len(on_bus)} on the PCI bus" + (
            f", {expect} expected" if expect else ""
        )
        want = f"{max(expect or 0, len(on_bus))} GPU(s) visible to the driver"
        if missing:
            why = {x.bus_id: x.reason for x in h.handle_failures}
            named = ", ".join(b + (f" ({why[b]})" if b in why else "") for b in missing)
            return critical(
                f"{obs}; not visible: {named}",
                want,
                variant="not_visible",
            )
        if expect and len(visible) < expect:
            return critical(
                f"{obs}; only {len(on_bus)} enumerated on the PCI bus: the others are not even seen by the "
                "kernel (seating, power, riser, BIOS PCIe settings)",
                want,
                variant="fewer_than_expected",
                visible=len(visible),
                expect=expect,
            )
        if not on_bus:
            return unknown(
                f"{obs}: the PCI listing names no NVIDIA display function, so nothing shows that every "
                "GPU on the bus is visible"
            )
        return ok(
            obs + (f"; bus ids {', '.join(visible)}" if visible and len(visible) <= 16 else "")
        )

    return verdict


def expected_gpus_check(expect: int | None = None) -> Check:
    """The row, with the operator's expectation (`--expect-gpus N`; None: the PCI bus is the expectation)."""
    return Check(
        ID,
        "Every GPU visible to the driver" + (f" ({expect} expected)" if expect else ""),
        "hardware",
        why="A GPU on the bus that the driver cannot open (fallen off, failed init, unpowered) silently shrinks "
        "the job: tensor-parallel layouts then fail to start or run on fewer ranks.",
        fix="Check the missing bus ids' kernel log (Xid 79, RmInitAdapter failed), reseat/power the GPU, or "
        "replace it; a GPU missing from the PCI bus too points at seating, power or BIOS.",
        expected="every NVIDIA display-class PCI function visible to nvidia-smi"
        + (f", and at least {expect}" if expect else ""),
        verdict=_verdict(expect),
        sources=("sys_pci_nvidia",),
        any_of=SMI_SOURCES,
        roles=HOST,
        needs_gpu=True,
        variants={
            "not_visible": Message(title="GPUs on the PCI bus not visible to the driver"),
            "fewer_than_expected": Message(title="{visible} of {expect} expected GPUs"),
        },
    )


CHECKS: tuple[Check, ...] = (expected_gpus_check(None),)
