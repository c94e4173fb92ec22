"""Driver rules on the host's GPU state: branch, architecture support, persistence, Xids, ECC, MIG, compute mode."""

from __future__ import annotations

from collections import Counter

from gpuaudit.probes.core.models import Finding, Role
from gpuaudit.probes.core.parsing import version_tuple
from gpuaudit.probes.core.spec import finding
from gpuaudit.probes.driver.commands import PROBE_ID
from gpuaudit.probes.driver.facts import DriverFacts
from gpuaudit.probes.driver.knowledge import (
    DATACENTER,
    MIN_BRANCH,
    TURING_PLUS,
    XID_APP,
    XID_CRIT,
    XID_RECURRING,
    XID_WARN,
    _enabled,
    _gpu_list,
    _host_version,
    _no_gpu_reason,
    gpu_arch,
)


def _version_flavor(h: DriverFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "proc_driver_version"), ("host", "modinfo_nvidia"), ("host", "smi_query_driver")]
    t = "Driver branch and kernel-module flavour"
    version = _host_version(h)
    is_open = h.module_open if h.module_open is not None else (
        None if not h.modinfo_license else ("MIT" in h.modinfo_license or "GPL" in h.modinfo_license))
    if version is None or is_open is None:
        why = h.problems.get("proc_driver_version") or ("kernel module not loaded" if h.module_loaded is False else
                                                        h.smi_error or "not readable")
        return finding(PROBE_ID, "version_flavor", "unknown", t, observed=f"driver version/flavour unknown: {why}", evidence=ev)
    flavour = "open" if is_open else "proprietary"
    versions = {v for v in [h.module_version, h.smi_driver_version, *(g.driver_version for g in h.gpus)] if v}
    archs = {a for g in h.gpus if (a := gpu_arch(g.compute_cap, g.name))}
    obs = f"{version} {flavour} kernel module" + (f" on {', '.join(sorted(archs))}" if archs else "")
    if len(versions) > 1:
        return finding(PROBE_ID, "version_flavor", "critical", "More than one NVIDIA driver version loaded",
                       observed=f"versions seen: {', '.join(sorted(versions))}", expected="one driver version everywhere",
                       why="The kernel module and the user-space libraries talk through a private ABI: two versions at once means a half-upgraded driver that fails NVML/CUDA calls.",
                       fix="Finish the driver upgrade (reboot or reload the module) so every component runs the same version.",
                       evidence=ev)
    if not is_open and "Blackwell" in archs:
        return finding(PROBE_ID, "version_flavor", "warning", "Proprietary kernel module on Blackwell GPUs", observed=obs,
                       expected="open kernel module (NVIDIA's required flavour for Blackwell)",
                       why="Since R560 the open modules are NVIDIA's default for Turing+; Grace Hopper and Blackwell are supported only with the open flavour, so the proprietary one may not initialise the GPUs.",
                       fix="Install the -open driver flavour of the same branch (e.g. nvidia-driver-<branch>-open or the .run installer with -m=kernel-open).",
                       evidence=ev)
    if not is_open and (archs & TURING_PLUS or not archs):
        return finding(PROBE_ID, "version_flavor", "info", "Proprietary kernel module", observed=obs,
                       expected="open kernel module (recommended for Turing and newer since R560)",
                       why="NVIDIA recommends the open kernel modules for Turing+; the proprietary flavour still works on pre-Blackwell GPUs.",
                       fix="Consider the -open flavour at the next driver upgrade.", evidence=ev)
    return finding(PROBE_ID, "version_flavor", "ok", "Driver branch and flavour fit the GPUs", observed=obs,
                   expected="one driver version; open module on Turing+", evidence=ev)


def _min_for_arch(h: DriverFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "smi_table"), ("host", "smi_query_driver"), ("host", "proc_driver_version")]
    t = "Driver new enough for the GPU architecture"
    version = _host_version(h)
    archs = {a for g in h.gpus if (a := gpu_arch(g.compute_cap, g.name))}
    if not version or not archs:
        why = "driver version unknown" if not version else ("GPU architecture unknown: " + _no_gpu_reason(h))
        return finding(PROBE_ID, "min_for_arch", "unknown", t, observed=why, evidence=ev)
    caps = sorted({g.compute_cap for g in h.gpus if g.compute_cap})
    obs = (f"driver {version}" + (f" (newest CUDA it serves: {h.cuda_version})" if h.cuda_version else "")
           + f" on {', '.join(sorted(archs))}" + (f" (compute capability {', '.join(caps)})" if caps else ""))
    branch = version_tuple(version)[0]
    for arch in sorted(archs):
        need = MIN_BRANCH.get(arch)
        if need and branch < need[0]:
            return finding(PROBE_ID, "min_for_arch", "critical", f"Driver too old for {arch}", observed=obs,
                           expected=f"R{need[0]} or newer ({need[1]} is the first toolkit for {arch})",
                           why=f"{arch} GPUs need a driver from the {need[1]} era; older branches do not know the architecture, so CUDA initialisation fails or falls back to slow paths.",
                           fix=f"Upgrade the host driver to R{need[0]}+ (the open flavour for Blackwell) and the container user-space driver to match.",
                           evidence=ev)
    return finding(PROBE_ID, "min_for_arch", "ok", t, observed=obs,
                   expected=", ".join(f"{a}: R{MIN_BRANCH[a][0]}+" for a in sorted(archs) if a in MIN_BRANCH) or "a supported branch",
                   why="The 'CUDA Version' in nvidia-smi is the newest CUDA the driver can serve, not an installed toolkit.",
                   evidence=ev)


def _persistence(h: DriverFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", h.gpu_source or "smi_query_driver"), ("host", "persistenced_active")]
    t = "GPU persistence mode"
    daemon = f"; nvidia-persistenced {h.persistenced}" if h.persistenced else ""
    states = [(g, _enabled(g.persistence)) for g in h.gpus]
    if not h.gpus or any(s is None for _, s in states):
        return finding(PROBE_ID, "persistence", "unknown", t, observed=f"persistence mode not readable: {_no_gpu_reason(h)}{daemon}",
                       evidence=ev)
    off = [g for g, s in states if not s]
    if off:
        return finding(PROBE_ID, "persistence", "warning", "Persistence mode off",
                       observed=f"persistence Disabled on {_gpu_list(h.gpus, lambda g: g in off)}{daemon}",
                       expected="Enabled on every GPU (nvidia-persistenced running on the host)",
                       why="Without a client the driver tears the GPU state down and re-initialises it on the next use: slow first requests and monitoring-induced re-inits (not steady-state tok/s).",
                       fix="systemctl enable --now nvidia-persistenced on the host.", evidence=ev)
    return finding(PROBE_ID, "persistence", "ok", "Persistence mode on",
                   observed=f"persistence Enabled on all {len(h.gpus)} GPUs{daemon}", expected="Enabled on every GPU",
                   evidence=ev)


def _xid_history(h: DriverFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "dmesg_nvrm")]
    t = "Xid events and driver failures since boot"
    if not h.kernel_log_read:
        return finding(PROBE_ID, "xid_history", "unknown", t,
                       observed=f"kernel log not read: {h.problems.get('dmesg_nvrm', 'not collected')}",
                       fix="Re-run as root (or with --sudo) to read the kernel log.", evidence=ev)
    counts = Counter(code for _, code in h.xids)
    gpus = {code: sorted({pci for pci, c in h.xids if c == code}) for code in counts}
    parts = [f"Xid {c}×{n} ({', '.join(gpus[c])})" for c, n in sorted(counts.items())] + h.nvrm_problems
    obs = "; ".join(parts) if parts else "no Xid events or NVRM failures in the kernel log"
    crit = [c for c in counts if c in XID_CRIT]
    warn = [c for c in counts if c in XID_WARN] + [c for c in counts if c in (13, 31, 43) and counts[c] >= XID_RECURRING]
    why = "Xids are the driver's own fault log; NVIDIA's Xid catalog maps each code to immediate and investigatory actions."
    if crit or h.nvrm_problems:
        what = ", ".join([f"{c} ({XID_CRIT[c]})" for c in sorted(crit)] + h.nvrm_problems)
        return finding(PROBE_ID, "xid_history", "critical", f"Serious driver errors since boot: {what}", observed=obs,
                       expected="no Xid 79/48/95/64/119/120/74/154 and no NVRM init failures", why=why,
                       fix="Follow NVIDIA's Xid catalog for each code (reset or drain the GPU, check power/PCIe seating, RMA on repeated ECC/fall-off-bus); fix version mismatches before anything else.",
                       evidence=ev)
    if warn:
        what = ", ".join(f"{c} ({XID_WARN.get(c) or XID_APP.get(c)})" for c in sorted(set(warn)))
        return finding(PROBE_ID, "xid_history", "warning", f"Xid warnings since boot: {what}", observed=obs,
                       expected="no hardware-related Xids; application Xids not recurring", why=why,
                       fix="Xid 63: reset the GPU to activate the remap; 92/94: watch ECC counters; recurring 13/31/43: find the faulting process.",
                       evidence=ev)
    if counts:
        return finding(PROBE_ID, "xid_history", "info", "Application-level Xids since boot", observed=obs,
                       expected="no hardware-related Xids",
                       why="Xid 13/31/43/45 usually come from a buggy kernel or a killed process, not a broken GPU; watch for recurrence.",
                       evidence=ev)
    return finding(PROBE_ID, "xid_history", "ok", t, observed=obs, expected="no Xid events", evidence=ev)


_ECC_FIELDS = {"ecc.mode.current", "ecc.errors.uncorrected.volatile.total", "remapped_rows.pending",
               "remapped_rows.failure"}


def _ecc_rowremap(h: DriverFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", h.gpu_source or "smi_query_driver")]
    t = "GPU memory health (ECC, row remapping)"
    if not h.gpus:
        return finding(PROBE_ID, "ecc_rowremap", "unknown", t, observed=_no_gpu_reason(h), evidence=ev)
    failed = [g for g in h.gpus if _enabled(g.remap_failure)]
    uncorr = [g for g in h.gpus if (g.ecc_uncorrected or 0) > 0]
    pending = [g for g in h.gpus if _enabled(g.remap_pending)]
    ecc_off = [g for g in h.gpus if _enabled(g.ecc_mode) is False]
    no_ecc = all(g.ecc_mode is None for g in h.gpus)
    remap_read = any(g.remap_pending is not None or g.remap_failure is not None for g in h.gpus)
    ecc_desc = "ECC not supported/not reported" if no_ecc else (
        f"ECC {'disabled on ' + _gpu_list(h.gpus, lambda g: g in ecc_off) if ecc_off else 'enabled'}")
    obs = (f"{ecc_desc}; uncorrected volatile errors on {_gpu_list(h.gpus, lambda g: g in uncorr) or 'none'}; "
           f"remap pending on {_gpu_list(h.gpus, lambda g: g in pending) or 'none'}; "
           f"remap failure on {_gpu_list(h.gpus, lambda g: g in failed) or 'none'}"
           + ("" if remap_read else " (row remapping not reported)"))
    if failed or uncorr:
        return finding(PROBE_ID, "ecc_rowremap", "critical", "GPU memory errors", observed=obs,
                       expected="no uncorrected errors, no remapping failure",
                       why="Uncorrectable ECC errors corrupt results and kill contexts; a remapping failure means the GPU ran out of spare rows.",
                       fix="Drain the GPU, reset it, and RMA it if the remapping failure persists.", evidence=ev)
    if pending:
        return finding(PROBE_ID, "ecc_rowremap", "warning", "Row remap pending (GPU reset needed)", observed=obs,
                       expected="no pending remaps",
                       why="A remapped row only takes effect after a GPU reset; until then the bad row stays in use.",
                       fix="Reset the GPU (nvidia-smi -r) or reboot during a maintenance window.", evidence=ev)
    unread = [g for g in h.gpus if set(g.unreadable) & _ECC_FIELDS]
    if unread:
        return finding(PROBE_ID, "ecc_rowremap", "unknown", t,
                       observed=obs + "; not readable (nvidia-smi error token) on "
                       + _gpu_list(h.gpus, lambda g: g in unread) + ": "
                       + ", ".join(sorted({f for g in unread for f in g.unreadable if f in _ECC_FIELDS})), evidence=ev)
    if ecc_off:
        dc = [g for g in ecc_off if DATACENTER.search(g.name)]
        if dc:
            return finding(PROBE_ID, "ecc_rowremap", "warning", "ECC disabled on datacenter GPUs", observed=obs,
                           expected="ECC enabled on datacenter HBM/GDDR GPUs",
                           why="Without ECC a memory bit flip silently corrupts weights or activations.",
                           fix="nvidia-smi -e 1 and reset/reboot (an admin decision; costs a little capacity).", evidence=ev)
        return finding(PROBE_ID, "ecc_rowremap", "info", "ECC off on workstation-class GPUs (policy choice)", observed=obs,
                       expected="a deliberate choice",
                       why="On GDDR workstation cards such as RTX PRO, ECC trades a little capacity and bandwidth for protection: a policy choice, not an error.",
                       evidence=ev)
    if no_ecc and not remap_read and h.gpu_source != "smi_query_driver":
        # the table shows no row-remap state: "not supported" needs the query's positive [N/A]
        return finding(PROBE_ID, "ecc_rowremap", "unknown", t, observed=obs + "; neither ECC mode nor row remapping read",
                       evidence=ev)
    return finding(PROBE_ID, "ecc_rowremap", "ok", t, observed=obs, expected="no uncorrected errors, no pending remaps",
                   evidence=ev)


def _mig_mode(h: DriverFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", h.gpu_source or "smi_query_driver")]
    t = "MIG mode"
    if not h.gpus:
        return finding(PROBE_ID, "mig_mode", "unknown", t, observed=_no_gpu_reason(h), evidence=ev)
    on = [g for g in h.gpus if _enabled(g.mig_mode)]
    if on:
        return finding(PROBE_ID, "mig_mode", "critical", "MIG enabled", observed=f"MIG Enabled on {_gpu_list(h.gpus, lambda g: g in on)}",
                       expected="MIG Disabled on GPUs a serving engine uses whole",
                       why="A MIG-enabled GPU exposes instances, not the full device: tensor-parallel engines fail or run on a slice.",
                       fix="nvidia-smi -i <gpu> -mig 0 and reset the GPU, unless the slicing is intended.", evidence=ev)
    unread = [g for g in h.gpus if "mig.mode.current" in g.unreadable]
    if unread:
        return finding(PROBE_ID, "mig_mode", "unknown", t, observed="MIG mode not readable (nvidia-smi error token) on "
                       + _gpu_list(h.gpus, lambda g: g in unread), evidence=ev)
    if all(_enabled(g.mig_mode) is None for g in h.gpus):
        return finding(PROBE_ID, "mig_mode", "ok", t, observed="not applicable: MIG not supported on these GPUs", evidence=ev)
    return finding(PROBE_ID, "mig_mode", "ok", t, observed=f"MIG Disabled on all {len(h.gpus)} GPUs", evidence=ev)


def _compute_mode(h: DriverFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", h.gpu_source or "smi_query_driver")]
    t = "Compute mode"
    if not h.gpus or any(g.compute_mode is None for g in h.gpus):
        return finding(PROBE_ID, "compute_mode", "unknown", t, observed=_no_gpu_reason(h) if not h.gpus else "compute mode not reported",
                       evidence=ev)
    modes = Counter(g.compute_mode for g in h.gpus if g.compute_mode is not None)  # none is None (checked above)
    obs = ", ".join(f"{m} on {n} GPU(s)" for m, n in modes.items())
    if any(m.lower().startswith("prohibited") for m in modes):
        return finding(PROBE_ID, "compute_mode", "critical", "Compute mode Prohibited", observed=obs, expected="Default",
                       why="A Prohibited GPU accepts no CUDA context at all.", fix="nvidia-smi -i <gpu> -c DEFAULT.", evidence=ev)
    if any(m.lower().startswith("exclusive") for m in modes):
        return finding(PROBE_ID, "compute_mode", "info", "Exclusive compute mode", observed=obs, expected="Default",
                       why="Exclusive_Process allows one process per GPU: sidecars or a second engine process cannot attach.",
                       fix="nvidia-smi -i <gpu> -c DEFAULT if other processes must share the GPU.", evidence=ev)
    return finding(PROBE_ID, "compute_mode", "ok", t, observed=obs, expected="Default", evidence=ev)
