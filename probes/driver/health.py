"""`driver.gpu_health`: a GPU the driver lost is one critical naming the bus id, the evidence and the fix path.

Each class of failure is a small detector (facts -> Verdict or None), tried in order of how much it explains:
a GPU nvidia-smi cannot open, a recovery action the driver asks for, a GPU that fell off the bus and is gone from
nvidia-smi, a hung nvidia-smi, no device with the module loaded. Then what keeps the state unreadable, then the
softer signs (reset required, ERR! sensor cells), then ok.
"""

from __future__ import annotations

from collections.abc import Callable

from gpuaudit.probes.core.judge.checks import Ctx, Verdict, critical, ok, unknown, warning
from gpuaudit.probes.core.models import Role
from gpuaudit.probes.core.parsers.nvidia_smi import (
    SMI_ERR_MISMATCH,
    SMI_ERR_NO_DEVICES,
    SMI_ERR_NO_DRIVER,
)
from gpuaudit.probes.core.parsers.system import normalize_bdf
from gpuaudit.probes.driver.facts import DriverFacts, HandleFailure
from gpuaudit.probes.driver.knowledge import gpu_list, no_gpu_reason

Ev = tuple[tuple[Role, str], ...]
SMI = ("smi_q_xml", "smi_query_driver", "smi_table")

HEALTH_FIX = (
    "Reboot the host (a lost GPU rarely comes back with nvidia-smi -r); then read `dmesg | grep -E 'Xid|fallen off'`"
    " for Xid 79 (fallen off the bus) or 119/120 (GSP timeout/error); check the PCIe power cables, the PSU"
    " capacity and the card's seating (riser), and update the system BIOS; RMA the board if it repeats."
)
_LOST_WHY = (
    "The driver has lost contact with the GPU (fallen off the bus, GSP hang or a failed read): it serves nothing"
    " until the host is rebooted, and the audit's other GPU checks cannot read it."
)


def _kernel(h: DriverFacts) -> tuple[str, Ev]:
    """What the kernel log adds to a health finding ("; kernel log: Xid 79 on 0000:03:00"), and its evidence."""
    seen = [f"Xid {c} on {pci}" for pci, c in h.xids if c in (79, 119, 120)] + [
        p for p in h.nvrm_problems if "fallen off" in p
    ]
    if not seen:
        return "", ()
    return f"; kernel log: {', '.join(dict.fromkeys(seen))}", (("host", "dmesg_nvrm"),)


def _smi_ev(h: DriverFacts) -> Ev:
    return (("host", h.gpu_source or "smi_query_driver"),)


def unopenable(h: DriverFacts, why: str = "") -> Verdict | None:
    cells = [
        HandleFailure(
            bus_id=g.bus_id or f"GPU{g.index}",
            reason="[GPU is lost]",
            lost=True,
            command_id=h.gpu_source or "smi_query_driver",
        )
        for g in h.gpus
        if g.lost
    ]
    failures = [*h.handle_failures, *cells]
    if not failures:
        return None
    klog, log_ev = _kernel(h)
    buses = ", ".join(x.bus_id for x in failures)
    return critical(
        f"nvidia-smi cannot open GPU {', '.join(f'{x.bus_id} ({x.reason})' for x in failures)}{klog}",
        "every GPU answers nvidia-smi",
        variant="unopenable",
        state="lost" if any(x.lost for x in failures) else "not responding",
        buses=buses,
        evidence=tuple(dict.fromkeys(("host", x.command_id) for x in failures)) + log_ev,
    )


def recovery_action(h: DriverFacts, why: str = "") -> Verdict | None:
    recover = [g for g in h.gpus if g.recovery_action and g.recovery_action.lower() != "none"]
    if not recover:
        return None
    klog, log_ev = _kernel(h)
    what = ", ".join(
        " ".join(x for x in (f"GPU{g.index}", g.bus_id, g.recovery_action) if x) for g in recover
    )
    return critical(
        f"driver asks for recovery: {what}{klog}",
        "GPU Recovery Action None on every GPU",
        variant="gpu_needs_recovery_driver_recovery",
        evidence=_smi_ev(h) + log_ev,
    )


def fell_off_the_bus(h: DriverFacts, why: str = "") -> Verdict | None:
    answering = {normalize_bdf(g.bus_id or "").rsplit(".", 1)[0] for g in h.gpus}
    gone = [b for b in h.fallen_off_bus if normalize_bdf(b).rsplit(".", 1)[0] not in answering]
    if not gone:
        return None  # fell off and came back, or never: the history is driver.xid_history's
    klog, _ = _kernel(h)
    listed = (
        f"nvidia-smi lists {len(h.gpus)} GPU(s), not {', '.join(gone)}"
        if h.gpus
        else f"nvidia-smi: {h.smi_error or why}"
    )
    return critical(
        f"kernel log: GPU {', '.join(gone)} fell off the bus; {listed}{klog}",
        "every GPU on the bus and answering",
        variant="gpu_fell_off_bus",
        buses=", ".join(gone),
        evidence=(("host", "dmesg_nvrm"), *_smi_ev(h)),
    )


def init_failed(h: DriverFacts, why: str = "") -> Verdict | None:
    """The kernel log names GPUs the driver could not initialise and nvidia-smi does not list them."""
    answering = {normalize_bdf(g.bus_id or "") for g in h.gpus}
    failed = [b for b in h.init_failed if normalize_bdf(b) not in answering]
    if not failed:
        return None
    listed = (
        f"nvidia-smi lists {len(h.gpus)} GPU(s), not {', '.join(failed)}"
        if h.gpus
        else f"nvidia-smi: {h.smi_error or why}"
    )
    return critical(
        f"kernel log: GPU {', '.join(failed)} failed to initialise (RmInitAdapter failed); {listed}",
        "every GPU initialised by the driver",
        variant="gpu_failed_initialise",
        buses=", ".join(failed),
        evidence=(("host", "dmesg_nvrm"), *_smi_ev(h)),
    )


def hung(h: DriverFacts, why: str = "") -> Verdict | None:
    if not h.smi_hung:
        return None
    klog, log_ev = _kernel(h)
    return critical(
        f"nvidia-smi hung: {', '.join(h.smi_hung)} timed out{klog}",
        "nvidia-smi answers within seconds",
        variant="nvidia_smi_hangs_driver_not",
        evidence=tuple(("host", c) for c in h.smi_hung) + log_ev,
    )


def no_devices(h: DriverFacts, why: str = "") -> Verdict | None:
    if h.smi_error_kind != SMI_ERR_NO_DEVICES or not h.module_loaded:
        return None
    klog, log_ev = _kernel(h)
    funcs = (
        f"; NVIDIA PCI functions in sysfs: {', '.join(h.nvidia_functions)}"
        if h.nvidia_functions
        else ""
    )
    return critical(
        f"nvidia-smi: {h.smi_error} while the nvidia module {h.module_version or ''} is loaded{funcs}{klog}",
        "every installed GPU initialised by the driver",
        variant="driver_loaded_no_gpu_initialised",
        evidence=(
            ("host", h.smi_error_source or "smi_table"),
            ("host", "proc_driver_version"),
            ("host", "pci_nvidia_sysfs"),
        )
        + log_ev,
    )


def unreadable(h: DriverFacts, why: str = "") -> Verdict | None:
    if h.smi_error_kind in (SMI_ERR_NO_DRIVER, SMI_ERR_MISMATCH) or (h.smi_error and not h.gpus):
        return unknown(
            f"GPU state not readable: nvidia-smi: {h.smi_error} (see driver.dkms_kernel_match / driver.userspace_match)",
            evidence=(("host", h.smi_error_source or "smi_table"),),
        )
    if not h.gpus:
        return unknown(f"no GPU state read: {why}", evidence=tuple(("host", c) for c in SMI))
    return None


def reset_required(h: DriverFacts, why: str = "") -> Verdict | None:
    reset = [g for g in h.gpus if g.reset_required == "Yes"]
    if not reset:
        return None
    return warning(
        f"GPU reset required on {gpu_list(h.gpus, lambda g: g in reset)}",
        "no reset pending",
        variant="gpu_reset_required",
        evidence=_smi_ev(h),
    )


def sensor_errors(h: DriverFacts, why: str = "") -> Verdict | None:
    errs = [g for g in h.gpus if g.sensor_errors]
    if not errs:
        return None
    return warning(
        f"nvidia-smi answered for all {len(h.gpus)} GPU(s); sensor reads failed (ERR!): "
        + ", ".join(f"GPU{g.index} {'/'.join(g.sensor_errors)}" for g in errs),
        "every sensor readable",
        variant="gpu_sensor_read_failures_err",
        evidence=(("host", "smi_table"),),
    )


DETECTORS: tuple[Callable[[DriverFacts, str], Verdict | None], ...] = (
    unopenable,
    recovery_action,
    fell_off_the_bus,
    init_failed,
    hung,
    no_devices,
    unreadable,
    reset_required,
    sensor_errors,
)


def gpu_health(ctx: Ctx) -> Verdict:
    h: DriverFacts = ctx.f
    why = no_gpu_reason(ctx)
    for detect in DETECTORS:
        if (v := detect(h, why)) is not None:
            return v
    return ok(
        f"nvidia-smi answered for all {len(h.gpus)} GPU(s)",
        "every GPU answers nvidia-smi",
        evidence=_smi_ev(h),
    )
