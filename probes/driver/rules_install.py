"""Driver rules on the installation: module build, parameters, compat libraries, user-space match, the container's view."""

from __future__ import annotations

from gpuaudit.probes.core.models import Finding, Role
from gpuaudit.probes.core.parsers.nvidia_smi import SMI_ERR_MISMATCH, SMI_ERR_NO_DRIVER
from gpuaudit.probes.core.parsing import version_tuple
from gpuaudit.probes.core.spec import finding
from gpuaudit.probes.driver.commands import PROBE_ID
from gpuaudit.probes.driver.facts import DriverFacts
from gpuaudit.probes.driver.knowledge import DATACENTER, _enabled, _host_version, _is_compat, _no_gpu_reason


def _dkms_kernel_match(h: DriverFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "uname_r"), ("host", "modinfo_nvidia"), ("host", "proc_driver_version"), ("host", "dkms_status")]
    t = "NVIDIA module built for the running kernel"
    fix = "Rebuild/install the module for the running kernel (dkms autoinstall, or reinstall the driver) and reboot."
    why = "After a kernel upgrade DKMS must rebuild the module; a stale or missing module means no GPUs."
    if h.module_loaded is False and h.smi_installed is False and not h.modinfo_version:
        return finding(PROBE_ID, "dkms_kernel_match", "unknown", t,
                       observed="no NVIDIA driver installed on this target (no module loaded, no nvidia-smi)", evidence=ev)
    if h.module_loaded is False or h.smi_error_kind == SMI_ERR_NO_DRIVER:
        return finding(PROBE_ID, "dkms_kernel_match", "critical", "NVIDIA kernel module not loaded",
                       observed=f"kernel {h.kernel_release or '?'}: /proc/driver/nvidia/version absent"
                                + (f"; nvidia-smi: {h.smi_error}" if h.smi_error else "")
                                + ("; modinfo finds no nvidia module" if h.modinfo_missing else ""),
                       expected="the nvidia module loaded for the running kernel", why=why, fix=fix, evidence=ev)
    if h.modinfo_missing:
        return finding(PROBE_ID, "dkms_kernel_match", "critical", "No NVIDIA module installed for the running kernel",
                       observed=f"modinfo finds no nvidia module for kernel {h.kernel_release or '?'}"
                                + (f" (a module {h.module_version} is still loaded)" if h.module_version else ""),
                       expected="/lib/modules/<running kernel>/.../nvidia.ko present", why=why, fix=fix, evidence=ev)
    release = h.kernel_release or h.modinfo_dir_kernel  # modinfo looks in /lib/modules/<running kernel>
    if release and h.modinfo_vermagic and h.modinfo_vermagic != release:
        return finding(PROBE_ID, "dkms_kernel_match", "critical", "NVIDIA module built for another kernel",
                       observed=f"running {release}, module vermagic {h.modinfo_vermagic}",
                       expected=f"vermagic {release}", why=why, fix=fix, evidence=ev)
    if not h.module_loaded and not (release and h.modinfo_vermagic):
        reason = h.problems.get("proc_driver_version") or h.problems.get("modinfo_nvidia") or h.problems.get("uname_r") or "not readable"
        return finding(PROBE_ID, "dkms_kernel_match", "unknown", t, observed=f"not readable: {reason}", evidence=ev)
    bad_dkms = [d for d in h.dkms if d[1] == release and "installed" not in d[2]]
    if h.module_version and h.modinfo_version and h.module_version != h.modinfo_version:
        return finding(PROBE_ID, "dkms_kernel_match", "warning", "Loaded driver differs from the installed one (reboot pending)",
                       observed=f"loaded {h.module_version}, on disk {h.modinfo_version} for {release}",
                       expected="loaded module = installed module",
                       why="The driver was upgraded on disk but the old module still runs: new user-space libraries will not talk to it (version mismatch).",
                       fix="Reboot (or unload/reload the nvidia modules) to load the installed version.", evidence=ev)
    if bad_dkms:
        return finding(PROBE_ID, "dkms_kernel_match", "warning", "DKMS build not installed for the running kernel",
                       observed="; ".join(f"nvidia/{v} {k}: {s}" for v, k, s in bad_dkms), expected="installed",
                       why=why, fix=fix, evidence=ev)
    obs = f"running {release or '?'}" + (f", module vermagic {h.modinfo_vermagic}" if h.modinfo_vermagic else "") + (
        f", loaded {h.module_version}" if h.module_version else "") + (
        "" if h.modinfo_vermagic else " (modinfo not available: a loaded module implies a matching build)")
    return finding(PROBE_ID, "dkms_kernel_match", "ok", t, observed=obs, expected="module built for the running kernel",
                   evidence=ev)


def _module_params(h: DriverFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "nvidia_modprobe_opts")]
    t = "NVIDIA module parameters"
    if not h.modprobe_read:
        return finding(PROBE_ID, "module_params", "unknown", t,
                       observed=h.problems.get("nvidia_modprobe_opts", "not collected"), evidence=ev)
    if h.modprobe_options:
        opts = " ".join(f"{k}={v}" if v else k for k, v in sorted(h.modprobe_options.items()))
        return finding(PROBE_ID, "module_params", "info", "Non-default NVIDIA module parameters", observed=opts,
                       expected="defaults unless deliberately set",
                       why="Module options change driver behaviour (power management, UVM, firmware); listed so they are known, not judged.",
                       fix="Review /etc/modprobe.d/*nvidia* and remove options nobody can justify.", evidence=ev)
    return finding(PROBE_ID, "module_params", "ok", t, observed="no nvidia options in /etc/modprobe.d", evidence=ev)


def _compat_libs(f: DriverFacts, host: DriverFacts | None, role: Role) -> Finding:
    ev: list[tuple[Role, str]] = [(role, "nvidia_lib_files")]
    t = "CUDA forward-compat libraries"
    if not f.libs_read:
        return finding(PROBE_ID, "cuda_compat_libs", "unknown", t, targets=[role],
                       observed=f.problems.get("nvidia_lib_files", "not collected"), evidence=ev)
    compat = [(p, v) for p, v in f.libcuda if _is_compat(p)]
    if not compat:
        return finding(PROBE_ID, "cuda_compat_libs", "ok", t, targets=[role],
                       observed="no cuda-compat libcuda found" + (f"; libcuda {', '.join(sorted({v for _, v in f.libcuda}))}" if f.libcuda else ""),
                       evidence=ev)
    host_ver = _host_version(host) if host else None
    names = [g.name for g in (host.gpus if host else []) or f.gpus]
    obs = "; ".join(f"{p} ({v})" for p, v in compat) + (f"; host driver {host_ver}" if host_ver else "")
    older = [v for _, v in compat if host_ver and version_tuple(v) < version_tuple(host_ver)]
    if older:
        return finding(PROBE_ID, "cuda_compat_libs", "warning", "cuda-compat libcuda older than the host driver", targets=[role],
                       observed=obs, expected="no compat libcuda, or one newer than the host driver",
                       why="A compat libcuda older than the kernel driver shadows the matching one if it is on the library path; CUDA then fails or loses features.",
                       fix="Remove the compat dir from LD_LIBRARY_PATH/ld.so.conf (or mask it with an empty tmpfs).", evidence=ev)
    if names and not any(DATACENTER.search(n) for n in names):
        return finding(PROBE_ID, "cuda_compat_libs", "warning", "cuda-compat present on a non-datacenter GPU", targets=[role],
                       observed=obs, expected="no compat libcuda on the library path",
                       why="Forward compatibility works only on datacenter GPUs and a few NGC-ready RTX SKUs; elsewhere a process that loads it fails with CUDA error 804. Whether the engine maps it needs /proc/<pid>/maps.",
                       fix="Keep the compat dir off the library path, or upgrade the host driver instead.", evidence=ev)
    return finding(PROBE_ID, "cuda_compat_libs", "info", "cuda-compat libraries present", targets=[role], observed=obs,
                   why="Forward compatibility lets a newer CUDA run on an older datacenter driver; fine if intended.", evidence=ev)


def _userspace_match(host: DriverFacts | None, ctr: DriverFacts | None) -> Finding:
    t = "Kernel module vs user-space driver version"
    kver = host.module_version if host else None
    kver = kver or (ctr.module_version if ctr else None)  # /proc/driver/nvidia/version shows the host module in a container too
    side: DriverFacts | None
    role: Role
    side, role = (ctr, "container") if ctr is not None else (host, "host")
    targets: list[Role] = ["host", "container"] if ctr is not None else ["host"]
    ev: list[tuple[Role, str]] = [("host", "proc_driver_version"), (role, "nvidia_lib_files"), (role, "smi_table")]
    fix = ("Re-install the user-space driver of exactly the host's version in the container (NVIDIA .run with --no-kernel-module)"
           if role == "container" else "Reboot (or reload the module) so the loaded kernel module matches the installed libraries.")
    why = ("The user-space driver (libcuda, libnvidia-ml) and the kernel module speak a private ABI: any version difference makes "
           "NVML fail with 'Driver/library version mismatch' and CUDA with 'API mismatch'.")
    if side is None:
        return finding(PROBE_ID, "userspace_match", "unknown", t, targets=targets, observed="no target facts", evidence=ev)
    if side.smi_error_kind == SMI_ERR_MISMATCH:
        lib = f" (NVML library {side.nvml_lib_version})" if side.nvml_lib_version else ""
        return finding(PROBE_ID, "userspace_match", "critical", f"Driver/library version mismatch in the {role}", targets=targets,
                       observed=f"{role} nvidia-smi: {side.smi_error}{lib}; kernel module {kver or '?'}",
                       expected=f"user-space driver {kver or '= kernel module'}", why=why, fix=fix, evidence=ev)
    user = {v for p, v in side.libcuda + side.libnvml if not _is_compat(p)}
    if kver and user:
        bad = sorted(v for v in user if v != kver)
        obs = (f"kernel module {kver}; {role} libcuda {', '.join(sorted({v for p, v in side.libcuda if not _is_compat(p)})) or '-'}"
               f", libnvidia-ml {', '.join(sorted({v for p, v in side.libnvml if not _is_compat(p)})) or '-'}")
        if bad:
            return finding(PROBE_ID, "userspace_match", "critical", f"User-space driver differs from the kernel module ({role})",
                           targets=targets, observed=obs, expected=f"exactly {kver}", why=why, fix=fix, evidence=ev)
        return finding(PROBE_ID, "userspace_match", "ok", t, targets=targets, observed=obs, expected=f"exactly {kver}", evidence=ev)
    if kver and side.gpus and not side.smi_error:
        return finding(PROBE_ID, "userspace_match", "ok", t, targets=targets,
                       observed=f"kernel module {kver}; {role} nvidia-smi works (NVML loaded without a mismatch); versioned libraries not found",
                       expected=f"user-space driver {kver}", evidence=ev)
    reason = ("kernel module version unknown" if not kver else
              f"{role} nvidia-smi: {side.smi_error}" if side.smi_error else
              f"no versioned libcuda/libnvidia-ml in the {role} and nvidia-smi gave no GPUs")
    return finding(PROBE_ID, "userspace_match", "unknown", t, targets=targets, observed=reason, evidence=ev)


def _persistence_host_vs_container(host: DriverFacts | None, ctr: DriverFacts | None) -> Finding:
    t = "Persistence as seen from the container"
    if ctr is None:
        return finding(PROBE_ID, "persistence_host_vs_container", "ok", t, targets=["host"],
                       observed="not applicable: no container target")
    ev: list[tuple[Role, str]] = [("container", ctr.gpu_source or "smi_query_driver"), ("host", "persistenced_active")]
    states = [_enabled(g.persistence) for g in ctr.gpus]
    if not ctr.gpus or None in states:
        return finding(PROBE_ID, "persistence_host_vs_container", "unknown", t, targets=["host", "container"],
                       observed=f"container persistence not readable: {_no_gpu_reason(ctr)}", evidence=ev)
    if not all(states):
        return finding(PROBE_ID, "persistence_host_vs_container", "warning", "Container sees persistence mode off",
                       targets=["host", "container"],
                       observed=f"container: persistence Disabled on {sum(1 for s in states if not s)} of {len(states)} GPUs"
                                + (f"; host nvidia-persistenced {host.persistenced}" if host and host.persistenced else ""),
                       expected="Enabled (set on the host)",
                       why="Persistence is a host setting: the daemon is invisible from the container and cannot be started there.",
                       fix="On the HOST: systemctl enable --now nvidia-persistenced (nothing to change in the container).",
                       evidence=ev)
    return finding(PROBE_ID, "persistence_host_vs_container", "ok", t, targets=["host", "container"],
                   observed=f"container sees persistence Enabled on all {len(states)} GPUs", evidence=ev)
