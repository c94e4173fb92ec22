"""The driver probe's rows of the check catalogue (PROBES.md §3 and §11) and one pure verdict per check.

The framework turns missing/failed sources into `unknown` before a verdict runs. Checks whose answer lives in a
failure (a module that is not loaded, a mismatch banner, a lost GPU) declare no required source and read the
facts extract made of those failures.
"""

from __future__ import annotations

import re
from collections import Counter

from gpuaudit.probes.core.judge.checks import (
    BOTH,
    HOST,
    NO_GPU,
    Check,
    Ctx,
    Message,
    Verdict,
    critical,
    info,
    not_applicable,
    ok,
    unknown,
    warning,
)
from gpuaudit.probes.core.judge.combiners import PRESENCE_SOURCES, nvidia_presence
from gpuaudit.probes.core.models import Role
from gpuaudit.probes.core.parsers.nvidia_smi import SMI_ERR_MISMATCH, SMI_ERR_NO_DRIVER
from gpuaudit.probes.core.parsing import version_tuple
from gpuaudit.probes.driver.extract import SMI_SOURCES
from gpuaudit.probes.driver.facts import DriverFacts
from gpuaudit.probes.driver.health import HEALTH_FIX, gpu_health
from gpuaudit.probes.driver.knowledge import (
    DATACENTER,
    MAX_BRANCH,
    MIN_BRANCH,
    TURING_PLUS,
    XID_APP,
    XID_CRIT,
    XID_RECURRING,
    XID_WARN,
    archs,
    enabled,
    gpu_list,
    host_version,
    is_compat,
    no_gpu_reason,
)

Ev = tuple[tuple[Role, str], ...]


def _smi_ev(f: DriverFacts, role: Role = "host") -> Ev:
    return ((role, f.gpu_source or "smi_query_driver"),)


# --------------------------------------------------------------------------------------------------
# Branch, flavour, architecture


def version_flavor(ctx: Ctx) -> Verdict:
    h: DriverFacts = ctx.f
    ev: Ev = (
        ("host", "proc_driver_version"),
        ("host", "modinfo_nvidia"),
        ("host", h.gpu_source or "smi_query_driver"),
    )
    present, why_absent = nvidia_presence(ctx.outputs.get("host", {}))
    if present is False:
        return not_applicable(
            f"{NO_GPU} ({why_absent}): the GPU checks do not apply",
            variant="no_nvidia_gpu_driver",
            evidence=(("host", "pci_nvidia_sysfs"), ("host", "proc_driver_version")),
        )
    version = host_version(h)
    is_open = (
        h.module_open
        if h.module_open is not None
        else (
            None
            if not h.modinfo_license
            else ("MIT" in h.modinfo_license or "GPL" in h.modinfo_license)
        )
    )
    if version is None or is_open is None:
        why = ctx.problem("proc_driver_version") or (
            "kernel module not loaded"
            if h.module_loaded is False
            else h.smi_error or "not readable"
        )
        return unknown(f"driver version/flavour unknown: {why}", evidence=ev)
    flavour = "open" if is_open else "proprietary"
    versions = {
        v
        for v in [h.module_version, h.smi_driver_version, *(g.driver_version for g in h.gpus)]
        if v
    }
    found = archs(h)
    obs = f"{version} {flavour} kernel module" + (
        f" on {', '.join(sorted(found))}" if found else ""
    )
    if len(versions) > 1:
        return critical(
            f"versions seen: {', '.join(sorted(versions))}",
            "one driver version everywhere",
            variant="more_one_nvidia_driver_version",
            evidence=ev,
        )
    if not is_open and "Blackwell" in found:
        return warning(
            obs,
            "open kernel module (NVIDIA's required flavour for Blackwell)",
            variant="proprietary_kernel_module_on_blackwell",
            evidence=ev,
        )
    if not is_open and (found & TURING_PLUS or not found):
        return info(
            obs,
            "open kernel module (recommended for Turing and newer since R560)",
            variant="proprietary_kernel_module",
            evidence=ev,
        )
    return ok(
        obs,
        "one driver version; open module on Turing+",
        variant="driver_branch_flavour_fit_gpus",
        evidence=ev,
    )


def min_for_arch(ctx: Ctx) -> Verdict:
    h: DriverFacts = ctx.f
    ev: Ev = (("host", "proc_driver_version"),)
    version = host_version(h)
    found = archs(h)
    if not version or not found:
        return unknown(
            "driver version unknown"
            if not version
            else "GPU architecture unknown: " + no_gpu_reason(ctx),
            evidence=ev,
        )
    caps = sorted({g.compute_cap for g in h.gpus if g.compute_cap})
    obs = (
        f"driver {version}"
        + (f" (newest CUDA it serves: {h.cuda_version})" if h.cuda_version else "")
        + f" on {', '.join(sorted(found))}"
        + (f" (compute capability {', '.join(caps)})" if caps else "")
    )
    branch = version_tuple(version)[0]
    for arch in sorted(found):
        if (last := MAX_BRANCH.get(arch)) and branch > last:
            return critical(
                obs,
                f"R{last} or older for {arch} (the last branch that supports it)",
                variant="driver_too_new",
                arch=arch,
                last=last,
                evidence=ev,
            )
        need = MIN_BRANCH.get(arch)
        if need and branch < need[0]:
            return critical(
                obs,
                f"R{need[0]} or newer ({need[1]} is the first toolkit for {arch})",
                variant="driver_too_old",
                arch=arch,
                toolkit=need[1],
                branch=need[0],
                evidence=ev,
            )
    return ok(
        obs,
        ", ".join(f"{a}: R{MIN_BRANCH[a][0]}+" for a in sorted(found) if a in MIN_BRANCH)
        or "a supported branch",
        variant="branch_fits",
        evidence=ev,
    )


# --------------------------------------------------------------------------------------------------
# Per-GPU state


def persistence(ctx: Ctx) -> Verdict:
    h: DriverFacts = ctx.f
    ev: Ev = (("host", "persistenced_active"),)
    daemon = f"; nvidia-persistenced {h.persistenced}" if h.persistenced else ""
    states = [(g, enabled(g.persistence)) for g in h.gpus]
    if not h.gpus or any(s is None for _, s in states):
        return unknown(f"persistence mode not readable: {no_gpu_reason(ctx)}{daemon}", evidence=ev)
    off = [g for g, s in states if not s]
    if off:
        return warning(
            f"persistence Disabled on {gpu_list(h.gpus, lambda g: g in off)}{daemon}",
            "Enabled on every GPU (nvidia-persistenced running on the host)",
            variant="persistence_mode_off",
            evidence=ev,
        )
    return ok(
        f"persistence Enabled on all {len(h.gpus)} GPUs{daemon}",
        "Enabled on every GPU",
        variant="persistence_mode_on",
        evidence=ev,
    )


_ECC_FIELDS = {
    "ecc.mode.current",
    "ecc.errors.uncorrected.volatile.total",
    "remapped_rows.pending",
    "remapped_rows.failure",
}


ROW_REMAP = re.compile(
    r"A100|A800|A30\b|H100|H200|H800|H20\b|GH200|B100|B200|B300|GB200|GB300", re.I
)
"""HBM GPUs of Ampere and newer: they remap rows (older ones retire pages)."""


def ecc_rowremap(ctx: Ctx) -> Verdict:
    h: DriverFacts = ctx.f
    if not h.gpus:
        return unknown(no_gpu_reason(ctx))
    failed = [g for g in h.gpus if enabled(g.remap_failure)]
    uncorr = [g for g in h.gpus if (g.ecc_uncorrected or 0) > 0]
    pending = [g for g in h.gpus if enabled(g.remap_pending) or enabled(g.retired_pending)]
    ecc_off = [g for g in h.gpus if enabled(g.ecc_mode) is False]
    no_ecc = all(g.ecc_mode is None for g in h.gpus)
    remap_read = any(g.remap_pending is not None or g.remap_failure is not None for g in h.gpus)
    ecc_desc = (
        "ECC not supported/not reported"
        if no_ecc
        else (
            f"ECC {'disabled on ' + gpu_list(h.gpus, lambda g: g in ecc_off) if ecc_off else 'enabled'}"
        )
    )
    retired_read = any(g.retired_pending is not None for g in h.gpus)
    obs = (
        f"{ecc_desc}; uncorrected volatile errors on {gpu_list(h.gpus, lambda g: g in uncorr) or 'none'}; "
        + (
            f"remap pending on {gpu_list(h.gpus, lambda g: g in pending) or 'none'}; "
            f"remap failure on {gpu_list(h.gpus, lambda g: g in failed) or 'none'}"
            if remap_read
            else "row remapping not reported"
            + (
                f"; retired pages pending on {gpu_list(h.gpus, lambda g: g in pending) or 'none'}"
                if retired_read
                else ""
            )
        )
    )  # never "pending on none" from a field that was not read (issue 24)
    if failed or uncorr:
        return critical(
            obs,
            "no uncorrected errors, no remapping failure",
            variant="gpu_memory_errors",
        )
    if pending:
        return warning(
            obs,
            "no pending remaps",
            variant="row_remap_pending_gpu_reset",
        )
    unread = [g for g in h.gpus if set(g.unreadable) & _ECC_FIELDS]
    if unread:
        return unknown(
            obs
            + "; not readable (nvidia-smi error token) on "
            + gpu_list(h.gpus, lambda g: g in unread)
            + ": "
            + ", ".join(sorted({f for g in unread for f in g.unreadable if f in _ECC_FIELDS}))
        )
    if ecc_off:
        if [g for g in ecc_off if DATACENTER.search(g.name)]:
            return warning(
                obs,
                "ECC enabled on datacenter HBM/GDDR GPUs",
                variant="ecc_disabled_on_datacenter_gpus",
            )
        return info(
            obs,
            "a deliberate choice",
            variant="ecc_off_on_workstation_class",
        )
    remappers = [g for g in h.gpus if ROW_REMAP.search(g.name)]
    if remappers and not remap_read:  # these GPUs remap rows: "no pending remap" needs the field
        return unknown(
            obs + f" on {gpu_list(h.gpus, lambda g: g in remappers)}, which remap rows: pending "
            "remaps and remapping failures unknown (nvidia-smi -q -d ROW_REMAPPER)"
        )
    if no_ecc and not remap_read and h.gpu_source == "smi_table":
        # the table shows no row-remap state: "not supported" needs the query's positive [N/A]
        return unknown(obs + "; neither ECC mode nor row remapping read")
    return ok(obs, "no uncorrected errors, no pending remaps")


def mig_mode(ctx: Ctx) -> Verdict:
    h: DriverFacts = ctx.f
    if not h.gpus:
        return unknown(no_gpu_reason(ctx))
    on = [g for g in h.gpus if enabled(g.mig_mode)]
    if on:
        return critical(
            f"MIG Enabled on {gpu_list(h.gpus, lambda g: g in on)}",
            "MIG Disabled on GPUs a serving engine uses whole",
            variant="mig_enabled",
        )
    unread = [g for g in h.gpus if "mig.mode.current" in g.unreadable]
    if unread:
        return unknown(
            "MIG mode not readable (nvidia-smi error token) on "
            + gpu_list(h.gpus, lambda g: g in unread)
        )
    if all(enabled(g.mig_mode) is None for g in h.gpus):
        return not_applicable("MIG not supported on these GPUs")
    coming = [g for g in h.gpus if enabled(g.mig_pending)]
    if coming:
        return warning(
            f"MIG Disabled now, Enabled after the next GPU reset on {gpu_list(h.gpus, lambda g: g in coming)}",
            "MIG pending Disabled",
            variant="mig_enabled_next_gpu_reset",
        )
    return ok(f"MIG Disabled on all {len(h.gpus)} GPUs")


def compute_mode(ctx: Ctx) -> Verdict:
    h: DriverFacts = ctx.f
    if not h.gpus or any(g.compute_mode is None for g in h.gpus):
        return unknown(no_gpu_reason(ctx) if not h.gpus else "compute mode not reported")
    modes = Counter(g.compute_mode for g in h.gpus if g.compute_mode is not None)
    obs = ", ".join(f"{m} on {n} GPU(s)" for m, n in modes.items())
    if any(m.lower().startswith("prohibited") for m in modes):
        return critical(
            obs,
            "Default",
            variant="compute_mode_prohibited",
        )
    if any(m.lower().startswith("exclusive") for m in modes):
        return info(
            obs,
            "Default",
            variant="exclusive_compute_mode",
        )
    return ok(obs, "Default")


def xid_history(ctx: Ctx) -> Verdict:
    h: DriverFacts = ctx.f
    if not h.kernel_log_read:
        return unknown(
            f"kernel log not read: {ctx.problem('dmesg_nvrm') or 'not collected'}",
            variant="log_unread",
        )
    counts = Counter(code for _, code in h.xids)
    gpus = {code: sorted({pci for pci, c in h.xids if c == code}) for code in counts}
    parts = [
        f"Xid {c}×{n} ({', '.join(gpus[c])})" for c, n in sorted(counts.items())
    ] + h.nvrm_problems
    obs = "; ".join(parts) if parts else "no Xid events or NVRM failures in the kernel log"
    crit = [c for c in counts if c in XID_CRIT]
    warn = [c for c in counts if c in XID_WARN] + [
        c for c in counts if c in (13, 31, 43) and counts[c] >= XID_RECURRING
    ]
    if crit or h.nvrm_problems:
        what = ", ".join([f"{c} ({XID_CRIT[c]})" for c in sorted(crit)] + h.nvrm_problems)
        return critical(
            obs,
            "no Xid 79/48/95/64/119/120/74/154 and no NVRM init failures",
            variant="serious_driver_errors_since_boot",
            what=what,
        )
    if warn:
        what = ", ".join(f"{c} ({XID_WARN.get(c) or XID_APP.get(c)})" for c in sorted(set(warn)))
        return warning(
            obs,
            "no hardware-related Xids; application Xids not recurring",
            variant="xid_warnings_since_boot",
            what=what,
        )
    if counts:
        return info(
            obs,
            "no hardware-related Xids",
            variant="application_level_xids_since_boot",
        )
    return ok(obs, "no Xid events")


# --------------------------------------------------------------------------------------------------
# Installation: module build, parameters, libraries


def dkms_kernel_match(ctx: Ctx) -> Verdict:
    h: DriverFacts = ctx.f
    ev: Ev = (
        ("host", "uname_r"),
        ("host", "modinfo_nvidia"),
        ("host", "proc_driver_version"),
        ("host", "dkms_status"),
    )
    if h.module_loaded is False and h.smi_installed is False and not h.modinfo_version:
        return unknown(
            "no NVIDIA driver installed on this target (no module loaded, no nvidia-smi)",
            evidence=ev,
        )
    if h.module_loaded is False or h.smi_error_kind == SMI_ERR_NO_DRIVER:
        return critical(
            f"kernel {h.kernel_release or '?'}: /proc/driver/nvidia/version absent"
            + (f"; nvidia-smi: {h.smi_error}" if h.smi_error else "")
            + ("; modinfo finds no nvidia module" if h.modinfo_missing else ""),
            "the nvidia module loaded for the running kernel",
            variant="nvidia_kernel_module_not_loaded",
            evidence=ev,
        )
    if h.modinfo_missing:
        return critical(
            f"modinfo finds no nvidia module for kernel {h.kernel_release or '?'}"
            + (f" (a module {h.module_version} is still loaded)" if h.module_version else ""),
            "/lib/modules/<running kernel>/.../nvidia.ko present",
            variant="no_nvidia_module_installed_running",
            evidence=ev,
        )
    release = (
        h.kernel_release or h.modinfo_dir_kernel
    )  # modinfo looks in /lib/modules/<running kernel>
    if release and h.modinfo_vermagic and h.modinfo_vermagic != release:
        return critical(
            f"running {release}, module vermagic {h.modinfo_vermagic}",
            f"vermagic {release}",
            variant="nvidia_module_built_another_kernel",
            evidence=ev,
        )
    if not h.module_loaded and not (release and h.modinfo_vermagic):
        reason = (
            ctx.problem("proc_driver_version")
            or ctx.problem("modinfo_nvidia")
            or ctx.problem("uname_r")
            or "not readable"
        )
        return unknown(f"not readable: {reason}", evidence=ev)
    bad_dkms = [d for d in h.dkms if d[1] == release and "installed" not in d[2]]
    if h.module_version and h.modinfo_version and h.module_version != h.modinfo_version:
        return warning(
            f"loaded {h.module_version}, on disk {h.modinfo_version} for {release}",
            "loaded module = installed module",
            variant="loaded_driver_differs_installed_one",
            evidence=ev,
        )
    if bad_dkms:
        return warning(
            "; ".join(f"nvidia/{v} {k}: {s}" for v, k, s in bad_dkms),
            "installed",
            variant="dkms_build_not_installed_running",
            evidence=ev,
        )
    obs = (
        f"running {release or '?'}"
        + (f", module vermagic {h.modinfo_vermagic}" if h.modinfo_vermagic else "")
        + (f", loaded {h.module_version}" if h.module_version else "")
        + (
            ""
            if h.modinfo_vermagic
            else " (modinfo not available: a loaded module implies a matching build)"
        )
    )
    return ok(obs, "module built for the running kernel", evidence=ev)


def module_params(ctx: Ctx) -> Verdict:
    h: DriverFacts = ctx.f
    if h.modprobe_options:
        opts = " ".join(f"{k}={v}" if v else k for k, v in sorted(h.modprobe_options.items()))
        return info(
            opts, "defaults unless deliberately set", variant="non_default_nvidia_module_parameters"
        )
    return ok("no nvidia options in /etc/modprobe.d")


def cuda_compat_libs(ctx: Ctx) -> Verdict:
    f: DriverFacts = ctx.f
    host: DriverFacts | None = ctx.of("host")
    compat = [(p, v) for p, v in f.libcuda if is_compat(p)]
    if not compat:
        return ok(
            "no cuda-compat libcuda found"
            + (f"; libcuda {', '.join(sorted({v for _, v in f.libcuda}))}" if f.libcuda else "")
        )
    host_ver = host_version(host) if host else None
    names = [g.name for g in (host.gpus if host else []) or f.gpus]
    obs = "; ".join(f"{p} ({v})" for p, v in compat) + (
        f"; host driver {host_ver}" if host_ver else ""
    )
    if [v for _, v in compat if host_ver and version_tuple(v) < version_tuple(host_ver)]:
        return warning(
            obs,
            "no compat libcuda, or one newer than the host driver",
            variant="cuda_compat_libcuda_older_host",
        )
    if names and not any(DATACENTER.search(n) for n in names):
        return warning(
            obs,
            "no compat libcuda on the library path",
            variant="cuda_compat_present_on_non",
        )
    return info(
        obs,
        variant="cuda_compat_libraries_present",
    )


def userspace_match(ctx: Ctx) -> Verdict:
    role: Role = ctx.role or "host"
    side: DriverFacts = ctx.f
    host: DriverFacts | None = ctx.of("host")
    kver = (
        host.module_version if host else None
    ) or side.module_version  # /proc/driver/nvidia/version: the host's module
    ev: Ev = (("host", "proc_driver_version"), (role, "nvidia_lib_files"), (role, "smi_table"))
    if side.smi_error_kind == SMI_ERR_MISMATCH:
        lib = f" (NVML library {side.nvml_lib_version})" if side.nvml_lib_version else ""
        return critical(
            f"{role} nvidia-smi: {side.smi_error}{lib}; kernel module {kver or '?'}",
            f"user-space driver {kver or '= kernel module'}",
            variant="library_mismatch_container"
            if role == "container"
            else "library_mismatch_host",
            role=role,
            evidence=ev,
        )
    user = {v for p, v in side.libcuda + side.libnvml if not is_compat(p)}
    if kver and user:
        obs = (
            f"kernel module {kver}; {role} libcuda {', '.join(sorted({v for p, v in side.libcuda if not is_compat(p)})) or '-'}"
            f", libnvidia-ml {', '.join(sorted({v for p, v in side.libnvml if not is_compat(p)})) or '-'}"
        )
        if any(v != kver for v in user):
            return critical(
                obs,
                f"exactly {kver}",
                variant="differs_from_module_container"
                if role == "container"
                else "differs_from_module_host",
                role=role,
                evidence=ev,
            )
        return ok(obs, f"exactly {kver}", evidence=ev)
    if kver and side.gpus and not side.smi_error:
        return ok(
            f"kernel module {kver}; {role} nvidia-smi works (NVML loaded without a mismatch); versioned libraries not found",
            f"user-space driver {kver}",
            evidence=ev,
        )
    return unknown(
        "kernel module version unknown"
        if not kver
        else f"{role} nvidia-smi: {side.smi_error}"
        if side.smi_error
        else f"no versioned libcuda/libnvidia-ml in the {role} and nvidia-smi gave no GPUs",
        evidence=ev,
    )


def persistence_host_vs_container(ctx: Ctx) -> Verdict:
    ctr: DriverFacts = ctx.of("container")
    host: DriverFacts | None = ctx.of("host")
    ev: Ev = (("container", ctr.gpu_source or "smi_query_driver"), ("host", "persistenced_active"))
    states = [enabled(g.persistence) for g in ctr.gpus]
    if not ctr.gpus or None in states:
        return unknown(
            f"container persistence not readable: {no_gpu_reason(ctx, 'container')}", evidence=ev
        )
    if not all(states):
        return warning(
            f"container: persistence Disabled on {sum(1 for s in states if not s)} of {len(states)} GPUs"
            + (
                f"; host nvidia-persistenced {host.persistenced}"
                if host and host.persistenced
                else ""
            ),
            "Enabled (set on the host)",
            variant="container_sees_persistence_mode_off",
            evidence=ev,
        )
    return ok(f"container sees persistence Enabled on all {len(states)} GPUs", evidence=ev)


# --------------------------------------------------------------------------------------------------
# The rows


_LOST_GPU_FIX = (
    "Reboot the host (a lost GPU rarely comes back with nvidia-smi -r); then "
    "read `dmesg | grep -E 'Xid|fallen off'` for Xid 79 (fallen off the bus) or "
    "119/120 (GSP timeout/error); check the PCIe power cables, the PSU capacity "
    "and the card's seating (riser), and update the system BIOS; RMA the board "
    "if it repeats."
)
_LOST_GPU_FIX_NEW_BOARD = (
    _LOST_GPU_FIX + " On new boards also check Above 4G Decoding / Resizable BAR in the BIOS."
)


CHECKS: tuple[Check, ...] = (
    Check(
        "driver.version_flavor",
        "Driver branch and kernel-module flavour",
        "host",
        why="The open kernel modules are NVIDIA's default for Turing+ since R560 and the supported flavour for Blackwell; two driver versions at once mean a half-finished upgrade.",
        fix="Run one driver version everywhere, in the -open flavour on Turing and newer.",
        verdict=version_flavor,
        roles=HOST,
        optional=(
            *PRESENCE_SOURCES,
            "modinfo_nvidia",
            "smi_query_driver",
            "smi_q_xml",
            "smi_table",
        ),
        variants={
            "driver_branch_flavour_fit_gpus": Message(
                title="Driver branch and flavour fit the GPUs"
            ),
            "no_nvidia_gpu_driver": Message(
                title="No NVIDIA GPU or driver",
                why=(
                    "Without NVIDIA hardware or a loaded NVIDIA module there is nothing for the "
                    "GPU checks to judge."
                ),
                fix="Nothing to do if this host is not meant to serve on NVIDIA GPUs.",
            ),
            "more_one_nvidia_driver_version": Message(
                title="More than one NVIDIA driver version loaded",
                why=(
                    "The kernel module and the user-space libraries talk through a private ABI: "
                    "two versions at once means a half-upgraded driver that fails NVML/CUDA "
                    "calls."
                ),
                fix=(
                    "Finish the driver upgrade (reboot or reload the module) so every component "
                    "runs the same version."
                ),
            ),
            "proprietary_kernel_module_on_blackwell": Message(
                title="Proprietary kernel module on Blackwell GPUs",
                why=(
                    "Since R560 the open modules are NVIDIA's default for Turing+; Grace Hopper "
                    "and Blackwell are supported only with the open flavour, so the proprietary "
                    "one may not initialise the GPUs."
                ),
                fix=(
                    "Install the -open driver flavour of the same branch (e.g. "
                    "nvidia-driver-<branch>-open or the .run installer with -m=kernel-open)."
                ),
            ),
            "proprietary_kernel_module": Message(
                title="Proprietary kernel module",
                why=(
                    "NVIDIA recommends the open kernel modules for Turing+; the proprietary "
                    "flavour still works on pre-Blackwell GPUs."
                ),
                fix="Consider the -open flavour at the next driver upgrade.",
            ),
        },
    ),
    Check(
        "driver.min_for_arch",
        "Driver new enough for the GPU architecture",
        "host",
        why="Each architecture needs a driver branch that knows it: R570 (CUDA 12.8) for Blackwell, R520 (CUDA 11.8) for Hopper and Ada.",
        fix="Upgrade the host driver (and the container's user-space driver) to a branch that supports the GPUs.",
        verdict=min_for_arch,
        any_of=SMI_SOURCES,
        roles=HOST,
        needs_gpu=True,
        variants={
            "branch_fits": Message(
                why=(
                    "The 'CUDA Version' in nvidia-smi is the newest CUDA the driver can serve, "
                    "not an installed toolkit."
                )
            ),
            "driver_too_new": Message(
                title="Driver too new for {arch}",
                why=(
                    "R{last} is the last driver branch for {arch} GPUs: newer branches do not "
                    "initialise them."
                ),
                fix="Run the R{last} branch on these GPUs (or replace the GPUs).",
            ),
            "driver_too_old": Message(
                title="Driver too old for {arch}",
                why=(
                    "{arch} GPUs need a driver from the {toolkit} era; older branches do not know "
                    "the architecture, so CUDA initialisation fails or falls back to slow paths."
                ),
                fix=(
                    "Upgrade the host driver to R{branch}+ (the open flavour for Blackwell) and "
                    "the container user-space driver to match."
                ),
            ),
        },
    ),
    Check(
        "driver.persistence",
        "GPU persistence mode",
        "host",
        why="Without a client the driver tears the GPU state down and re-initialises it on the next use: slow first requests and monitoring-induced re-inits (not steady-state tok/s).",
        fix="systemctl enable --now nvidia-persistenced on the host.",
        verdict=persistence,
        any_of=SMI_SOURCES,
        roles=HOST,
        needs_gpu=True,
        optional=("persistenced_active",),
        variants={
            "persistence_mode_on": Message(title="Persistence mode on"),
            "persistence_mode_off": Message(title="Persistence mode off"),
        },
    ),
    Check(
        "driver.gpu_health",
        "Every GPU answers the driver",
        "hardware",
        why="A GPU the driver lost (fallen off the bus, GSP hang) serves nothing and makes every other GPU reading unknown.",
        fix=HEALTH_FIX,
        verdict=gpu_health,
        roles=HOST,
        needs_gpu=True,
        expected="every GPU answers nvidia-smi",
        fails_as_answer=(
            "smi_q_xml",
            "smi_query_driver",
            "smi_table",
        ),
        optional=("dmesg_nvrm",),
        variants={
            "unopenable": Message(
                title="GPU {state}: {buses}",
                why=(
                    "The driver has lost contact with the GPU (fallen off the bus, GSP hang or a "
                    "failed read): it serves nothing until the host is rebooted, and the audit's "
                    "other GPU checks cannot read it."
                ),
                fix=_LOST_GPU_FIX,
            ),
            "gpu_needs_recovery_driver_recovery": Message(
                title="GPU needs recovery (driver's recovery action)",
                why=(
                    "NVIDIA's driver sets the recovery action after a fault it cannot contain: "
                    "the GPU must be reset (or the node rebooted / drained) before it is trusted "
                    "again."
                ),
                fix=(
                    "Drain the GPU and do what the action says (nvidia-smi -r -i <gpu> for "
                    "Reset, reboot for Reboot); then reboot the host (a lost GPU rarely comes "
                    "back with nvidia-smi -r); then read `dmesg | grep -E 'Xid|fallen off'` for "
                    "Xid 79 (fallen off the bus) or 119/120 (GSP timeout/error); check the PCIe "
                    "power cables, the PSU capacity and the card's seating (riser), and update "
                    "the system BIOS; RMA the board if it repeats."
                ),
            ),
            "gpu_fell_off_bus": Message(
                title="GPU fell off the bus: {buses}",
                why=(
                    "A GPU that fell off the bus stays gone until the host is rebooted: the "
                    "engine runs on fewer GPUs or fails to start."
                ),
                fix=_LOST_GPU_FIX,
            ),
            "gpu_failed_initialise": Message(
                title="GPU failed to initialise: {buses}",
                why=(
                    "The driver could not bring the GPU up: it serves nothing. Common causes: "
                    "the GPU fell off the bus earlier, Above 4G Decoding / Resizable BAR off for "
                    "a large-BAR GPU, power or seating."
                ),
                fix=_LOST_GPU_FIX_NEW_BOARD,
            ),
            "nvidia_smi_hangs_driver_not": Message(
                title="nvidia-smi hangs (driver not answering)",
                why=(
                    "A query that never returns means the driver is stuck on a GPU (a lost GPU, "
                    "a GSP timeout, a hung reset): CUDA calls hang the same way."
                ),
                fix=_LOST_GPU_FIX,
            ),
            "driver_loaded_no_gpu_initialised": Message(
                title="Driver loaded but no GPU initialised",
                why=(
                    "The module is loaded yet no GPU came up: the GPU failed initialisation "
                    "(RmInitAdapter), fell off the bus, or is hidden by firmware settings."
                ),
                fix=_LOST_GPU_FIX_NEW_BOARD,
            ),
            "gpu_reset_required": Message(
                title="GPU reset required",
                fix="Reset the GPU (nvidia-smi -r -i <gpu>) in a maintenance window.",
            ),
            "gpu_sensor_read_failures_err": Message(
                title="GPU sensor read failures (ERR!)",
                why=(
                    "ERR! means NVML could not read that sensor: a transient failure, or a "
                    "fan/power-sensor fault that precedes a GPU dropping out."
                ),
                fix=(
                    "Re-run nvidia-smi; if ERR! persists, check nvidia-smi -q for the GPU "
                    "Recovery Action and the kernel log for Xids, then reset or service the GPU."
                ),
            ),
        },
    ),
    Check(
        "driver.xid_history",
        "Xid events and driver failures since boot",
        "hardware",
        why="Xids are the driver's own fault log; NVIDIA's Xid catalog maps each code to immediate and investigatory actions.",
        fix="Follow NVIDIA's Xid catalog for each code.",
        verdict=xid_history,
        sources=("dmesg_nvrm",),
        roles=HOST,
        needs_gpu=True,
        variants={
            "log_unread": Message(fix="Re-run as root (or with --sudo) to read the kernel log."),
            "serious_driver_errors_since_boot": Message(
                title="Serious driver errors since boot: {what}",
                fix=(
                    "Follow NVIDIA's Xid catalog for each code (reset or drain the GPU, check "
                    "power/PCIe seating, RMA on repeated ECC/fall-off-bus); fix version "
                    "mismatches before anything else."
                ),
            ),
            "xid_warnings_since_boot": Message(
                title="Xid warnings since boot: {what}",
                fix=(
                    "Xid 63: reset the GPU to activate the remap; 92/94: watch ECC counters; "
                    "recurring 13/31/43: find the faulting process."
                ),
            ),
            "application_level_xids_since_boot": Message(
                title="Application-level Xids since boot",
                why=(
                    "Xid 13/31/43/45 usually come from a buggy kernel or a killed process, not a "
                    "broken GPU; watch for recurrence."
                ),
            ),
        },
    ),
    Check(
        "driver.ecc_rowremap",
        "GPU memory health (ECC, row remapping)",
        "hardware",
        why="Uncorrectable ECC errors corrupt results; pending remaps need a reset; a remapping failure means the GPU ran out of spare rows.",
        fix="Reset GPUs with pending remaps; drain and RMA GPUs with uncorrectable errors or remapping failures.",
        verdict=ecc_rowremap,
        any_of=SMI_SOURCES,
        roles=HOST,
        needs_gpu=True,
        variants={
            "gpu_memory_errors": Message(
                title="GPU memory errors",
                why=(
                    "Uncorrectable ECC errors corrupt results and kill contexts; a remapping "
                    "failure means the GPU ran out of spare rows."
                ),
                fix="Drain the GPU, reset it, and RMA it if the remapping failure persists.",
            ),
            "row_remap_pending_gpu_reset": Message(
                title="Row remap pending (GPU reset needed)",
                why=(
                    "A remapped row (or retired page) only takes effect after a GPU reset; until "
                    "then the bad row stays in use."
                ),
                fix="Reset the GPU (nvidia-smi -r) or reboot during a maintenance window.",
            ),
            "ecc_off_on_workstation_class": Message(
                title="ECC off on workstation-class GPUs (policy choice)",
                why=(
                    "On GDDR workstation cards such as RTX PRO, ECC trades a little capacity and "
                    "bandwidth for protection: a policy choice, not an error."
                ),
            ),
            "ecc_disabled_on_datacenter_gpus": Message(
                title="ECC disabled on datacenter GPUs",
                why="Without ECC a memory bit flip silently corrupts weights or activations.",
                fix="nvidia-smi -e 1 and reset/reboot (an admin decision; costs a little capacity).",
            ),
        },
    ),
    Check(
        "driver.mig_mode",
        "MIG mode",
        "host",
        why="A MIG-enabled GPU exposes instances, not the full device: tensor-parallel engines fail or run on a slice.",
        fix="nvidia-smi -i <gpu> -mig 0 and reset the GPU, unless the slicing is intended.",
        verdict=mig_mode,
        any_of=SMI_SOURCES,
        roles=HOST,
        needs_gpu=True,
        variants={
            "mig_enabled": Message(title="MIG enabled"),
            "mig_enabled_next_gpu_reset": Message(
                title="MIG enabled at the next GPU reset",
                fix=(
                    "nvidia-smi -i <gpu> -mig 0 before the next reset/reboot, unless the slicing "
                    "is intended."
                ),
            ),
        },
    ),
    Check(
        "driver.compute_mode",
        "Compute mode",
        "host",
        why="Exclusive modes allow one process per GPU; Prohibited allows none.",
        fix="nvidia-smi -i <gpu> -c DEFAULT.",
        verdict=compute_mode,
        any_of=SMI_SOURCES,
        roles=HOST,
        needs_gpu=True,
        expected="Default",
        variants={
            "compute_mode_prohibited": Message(
                title="Compute mode Prohibited",
                why="A Prohibited GPU accepts no CUDA context at all.",
                fix="nvidia-smi -i <gpu> -c DEFAULT.",
            ),
            "exclusive_compute_mode": Message(
                title="Exclusive compute mode",
                why=(
                    "Exclusive_Process allows one process per GPU: sidecars or a second engine "
                    "process cannot attach."
                ),
                fix="nvidia-smi -i <gpu> -c DEFAULT if other processes must share the GPU.",
            ),
        },
    ),
    Check(
        "driver.dkms_kernel_match",
        "NVIDIA module built for the running kernel",
        "host",
        why="After a kernel upgrade DKMS must rebuild the module; a stale or missing module means no GPUs.",
        fix="Rebuild/install the module for the running kernel (dkms autoinstall, or reinstall the driver) and reboot.",
        verdict=dkms_kernel_match,
        roles=HOST,
        needs_gpu=True,
        optional=(
            "uname_r",
            "modinfo_nvidia",
            "proc_driver_version",
            "dkms_status",
            "smi_table",
            "smi_q_xml",
            "smi_query_driver",
        ),
        variants={
            "nvidia_kernel_module_not_loaded": Message(title="NVIDIA kernel module not loaded"),
            "no_nvidia_module_installed_running": Message(
                title="No NVIDIA module installed for the running kernel"
            ),
            "nvidia_module_built_another_kernel": Message(
                title="NVIDIA module built for another kernel"
            ),
            "loaded_driver_differs_installed_one": Message(
                title="Loaded driver differs from the installed one (reboot pending)",
                why=(
                    "The driver was upgraded on disk but the old module still runs: new "
                    "user-space libraries will not talk to it (version mismatch)."
                ),
                fix="Reboot (or unload/reload the nvidia modules) to load the installed version.",
            ),
            "dkms_build_not_installed_running": Message(
                title="DKMS build not installed for the running kernel"
            ),
        },
    ),
    Check(
        "driver.module_params",
        "NVIDIA module parameters",
        "host",
        why="Module options change driver behaviour (power management, UVM, firmware); listed so they are known, not judged.",
        fix="Review /etc/modprobe.d/*nvidia* and remove options nobody can justify.",
        verdict=module_params,
        sources=("nvidia_modprobe_opts",),
        roles=HOST,
        needs_gpu=True,
        variants={
            "non_default_nvidia_module_parameters": Message(
                title="Non-default NVIDIA module parameters"
            )
        },
    ),
    Check(
        "driver.cuda_compat_libs",
        "CUDA forward-compat libraries",
        "container",
        why="A cuda-compat libcuda on the library path shadows the driver's own: older than the host driver it breaks CUDA, on non-datacenter GPUs it fails with error 804.",
        fix="Remove the compat dir from LD_LIBRARY_PATH/ld.so.conf (or mask it with an empty tmpfs), or upgrade the host driver instead.",
        verdict=cuda_compat_libs,
        sources=("nvidia_lib_files",),
        roles=BOTH,
        first_of=("container", "host"),
        needs_gpu=True,
        variants={
            "cuda_compat_libraries_present": Message(
                title="cuda-compat libraries present",
                why=(
                    "Forward compatibility lets a newer CUDA run on an older datacenter driver; "
                    "fine if intended."
                ),
            ),
            "cuda_compat_libcuda_older_host": Message(
                title="cuda-compat libcuda older than the host driver",
                why=(
                    "A compat libcuda older than the kernel driver shadows the matching one if "
                    "it is on the library path; CUDA then fails or loses features."
                ),
            ),
            "cuda_compat_present_on_non": Message(
                title="cuda-compat present on a non-datacenter GPU",
                why=(
                    "Forward compatibility works only on datacenter GPUs and a few NGC-ready RTX "
                    "SKUs; elsewhere a process that loads it fails with CUDA error 804. Whether "
                    "the engine maps it needs /proc/<pid>/maps."
                ),
                fix="Keep the compat dir off the library path, or upgrade the host driver instead.",
            ),
        },
    ),
    Check(
        "driver.userspace_match",
        "Kernel module vs user-space driver version",
        "container",
        why="The user-space driver (libcuda, libnvidia-ml) and the kernel module speak a private ABI: any version difference makes NVML fail with 'Driver/library version mismatch' and CUDA with 'API mismatch'.",
        fix="Install the user-space driver of exactly the host module's version (in a container: the .run installer with --no-kernel-module).",
        verdict=userspace_match,
        roles=BOTH,
        first_of=("container", "host"),
        needs_gpu=True,
        optional=(
            ("host", "proc_driver_version"),
            "nvidia_lib_files",
            "smi_table",
            "smi_q_xml",
            "smi_query_driver",
        ),
        variants={
            "library_mismatch_container": Message(
                title="Driver/library version mismatch in the {role}",
                fix=(
                    "Re-install the user-space driver of exactly the host's version in the "
                    "container (NVIDIA .run with --no-kernel-module)"
                ),
            ),
            "library_mismatch_host": Message(
                title="Driver/library version mismatch in the {role}",
                fix=(
                    "Reboot (or reload the module) so the loaded kernel module matches the "
                    "installed libraries."
                ),
            ),
            "differs_from_module_container": Message(
                title="User-space driver differs from the kernel module ({role})",
                fix=(
                    "Re-install the user-space driver of exactly the host's version in the "
                    "container (NVIDIA .run with --no-kernel-module)"
                ),
            ),
            "differs_from_module_host": Message(
                title="User-space driver differs from the kernel module ({role})",
                fix=(
                    "Reboot (or reload the module) so the loaded kernel module matches the "
                    "installed libraries."
                ),
            ),
        },
    ),
    Check(
        "driver.persistence_host_vs_container",
        "Persistence as seen from the container",
        "host",
        why="Persistence is a host setting: the daemon is invisible from the container and cannot be started there.",
        fix="On the HOST: systemctl enable --now nvidia-persistenced (nothing to change in the container).",
        verdict=persistence_host_vs_container,
        roles=BOTH,
        cross=True,
        needs_gpu=True,
        optional=(
            ("container", "smi_query_driver"),
            ("container", "smi_q_xml"),
            ("container", "smi_table"),
            ("host", "persistenced_active"),
        ),
        variants={
            "container_sees_persistence_mode_off": Message(
                title="Container sees persistence mode off"
            )
        },
    ),
)
