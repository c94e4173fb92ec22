"""NVIDIA driver & CUDA probe: kernel module version/flavour, per-GPU driver state, Xids, user-space match.

The host's kernel module is the reference; the container only brings user-space libraries
(libcuda, libnvidia-ml), so the cross-target check compares those with the host module.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator

from pydantic import BaseModel

from probes.core.errors import ParseError
from probes.core.models import CommandRecord, Finding, Role
from probes.core.parsers.nvidia_misc import (
    parse_dkms_status,
    parse_lib_versions,
    parse_modinfo,
    parse_modprobe_options,
    parse_nvcc_version,
    parse_nvrm_problems,
    parse_proc_driver_version,
    parse_xid_events,
)
from probes.core.parsers.nvidia_smi import (
    SMI_ERR_MISMATCH,
    SMI_ERR_NO_DRIVER,
    detect_smi_error,
    nvml_library_version,
    parse_query_gpu_csv,
    parse_smi_table,
    smi_error_kind,
)
from probes.core.parsing import first_line, version_tuple
from probes.core.spec import Command, FactsByTarget, Outputs, Probe, finding, record_problem

PROBE_ID = "driver"
BOTH = frozenset({"host", "container"})
HOST = frozenset({"host"})

QUERY_FIELDS = ("index", "name", "pci.bus_id", "compute_cap", "driver_version", "persistence_mode", "compute_mode",
                "mig.mode.current", "ecc.mode.current", "ecc.errors.uncorrected.volatile.total",
                "remapped_rows.pending", "remapped_rows.failure")

COMMANDS = (
    Command("proc_driver_version", "cat /proc/driver/nvidia/version", on=BOTH,
            description="loaded kernel module version and flavour (the host's, even inside a container)"),
    Command("smi_table", "nvidia-smi", on=BOTH, description="header versions (max CUDA) and error banners"),
    Command("smi_query_driver", f"nvidia-smi --query-gpu={','.join(QUERY_FIELDS)} --format=csv,noheader,nounits",
            on=BOTH, description="per-GPU driver state"),
    Command("modinfo_nvidia", "modinfo nvidia", on=HOST, description="on-disk module for the running kernel"),
    Command("uname_r", "uname -r", on=BOTH),
    Command("dkms_status", "dkms status", on=HOST),
    Command("dmesg_nvrm", "dmesg | grep -E 'NVRM|nvidia' || test $? -eq 1", on=HOST, needs_root=True,
            description="Xid events and driver failures since boot (grep exit 1 = no match)"),
    Command("persistenced_active", "systemctl is-active nvidia-persistenced", on=HOST),
    Command("nvidia_modprobe_opts",
            "grep -rhE '^[[:space:]]*options[[:space:]]+nvidia' /etc/mod*.d/ || test $? -eq 1", on=HOST),
    Command("nvidia_lib_files",
            "find /usr/lib /usr/lib64 /usr/local -maxdepth 4 \\( -name 'libcuda.so.*' -o -name 'libnvidia-ml.so.*' \\) "
            "2>/dev/null; true", on=BOTH, description="versioned user-space driver libraries (incl. cuda compat)"),
    Command("nvcc_version", "nvcc --version", on=frozenset({"container"})),
)


class GpuState(BaseModel, frozen=True):
    index: int
    name: str
    bus_id: str | None = None
    compute_cap: str | None = None
    driver_version: str | None = None
    persistence: str | None = None
    """"Enabled"/"Disabled" (csv) or "On"/"Off" (table)."""
    compute_mode: str | None = None
    mig_mode: str | None = None
    ecc_mode: str | None = None
    ecc_uncorrected: int | None = None
    remap_pending: str | None = None
    remap_failure: str | None = None


class DriverFacts(BaseModel, frozen=True):
    module_version: str | None = None
    """From /proc/driver/nvidia/version: the LOADED kernel module (the host's, also inside a container)."""
    module_open: bool | None = None
    module_loaded: bool | None = None
    smi_installed: bool | None = None
    smi_error: str | None = None
    smi_error_kind: str | None = None
    nvml_lib_version: str | None = None
    smi_driver_version: str | None = None
    cuda_version: str | None = None
    gpus: list[GpuState] = []
    gpu_source: str | None = None
    """Command id the GPU states came from (csv preferred, table as fallback)."""
    modinfo_version: str | None = None
    modinfo_license: str | None = None
    modinfo_vermagic: str | None = None
    modinfo_dir_kernel: str | None = None
    """Kernel release in modinfo's filename: modinfo searches /lib/modules/<running kernel>."""
    modinfo_missing: bool = False
    """modinfo ran but found no nvidia module for the running kernel."""
    kernel_release: str | None = None
    dkms: list[tuple[str, str | None, str]] = []
    """(version, kernel, state) for the nvidia DKMS module."""
    kernel_log_read: bool = False
    xids: list[tuple[str, int]] = []
    nvrm_problems: list[str] = []
    persistenced: str | None = None
    modprobe_read: bool = False
    modprobe_options: dict[str, str] = {}
    libs_read: bool = False
    libcuda: list[tuple[str, str]] = []
    libnvml: list[tuple[str, str]] = []
    nvcc: str | None = None
    problems: dict[str, str] = {}


# --------------------------------------------------------------------------- interpret

def _usable(outputs: Outputs, cid: str, problems: dict[str, str]) -> CommandRecord | None:
    rec = outputs.get(cid)
    if rec is None or cid in problems:
        return None
    return rec


def _int(v: str | None) -> int | None:
    return int(v) if v is not None and v.strip().isdigit() else None


def _gpus_from_csv(text: str) -> list[GpuState]:
    rows = parse_query_gpu_csv(text, QUERY_FIELDS)
    return [GpuState(index=_int(r["index"]) or i, name=r["name"] or "?", bus_id=r["pci.bus_id"], compute_cap=r["compute_cap"],
                     driver_version=r["driver_version"], persistence=r["persistence_mode"], compute_mode=r["compute_mode"],
                     mig_mode=r["mig.mode.current"], ecc_mode=r["ecc.mode.current"],
                     ecc_uncorrected=_int(r["ecc.errors.uncorrected.volatile.total"]),
                     remap_pending=r["remapped_rows.pending"], remap_failure=r["remapped_rows.failure"])
            for i, r in enumerate(rows)]


def extract(outputs: Outputs, role: Role) -> DriverFacts:
    problems = {cid: p for cid, rec in outputs.items() if (p := record_problem(rec))}
    f: dict = {}
    # A banner can come with any exit status: look at every nvidia-smi output first.
    for cid in ("smi_table", "smi_query_driver"):
        rec = outputs.get(cid)
        if rec is not None and not rec.missing_tool:
            text = rec.stdout + "\n" + rec.stderr
            if (err := detect_smi_error(text)) and "smi_error" not in f:
                f.update(smi_error=err, smi_error_kind=smi_error_kind(text), nvml_lib_version=nvml_library_version(text))
    if (rec := outputs.get("smi_table")) is not None and rec.error is None:
        f["smi_installed"] = not rec.missing_tool
    if (rec := outputs.get("proc_driver_version")) is not None:
        parsed = parse_proc_driver_version(rec.stdout) if rec.ok else None
        if parsed:
            f.update(module_version=parsed.version, module_open=parsed.open_module, module_loaded=True)
        elif rec.exit_status not in (None, 0) and "no such file" in rec.stderr.lower():
            f["module_loaded"] = False  # the file exists exactly while the module is loaded
        elif rec.ok:
            problems["proc_driver_version"] = f"unrecognised content: {first_line(rec.stdout)[:80]!r}"
    if (rec := _usable(outputs, "smi_table", problems)) and not f.get("smi_error"):
        table = parse_smi_table(rec.stdout)
        f.update(smi_driver_version=table.driver_version, cuda_version=table.cuda_version)
        table_gpus = [GpuState(index=g.index, name=g.name, bus_id=g.bus_id, persistence=g.persistence,
                               compute_mode=g.compute_mode, mig_mode=g.mig_mode,
                               ecc_mode=("Disabled" if g.ecc_uncorrected == "Off" else
                                         "Enabled" if (g.ecc_uncorrected or "").isdigit() else None),
                               ecc_uncorrected=_int(g.ecc_uncorrected)) for g in table.gpus]
        if table_gpus:
            f.update(gpus=table_gpus, gpu_source="smi_table")
    if (rec := _usable(outputs, "smi_query_driver", problems)) and not f.get("smi_error"):
        try:
            gpus = _gpus_from_csv(rec.stdout)
            if gpus:
                f.update(gpus=gpus, gpu_source="smi_query_driver")
        except ParseError as exc:
            problems["smi_query_driver"] = str(exc)
    if (rec := outputs.get("modinfo_nvidia")) is not None:
        if rec.ok:
            mi = parse_modinfo(rec.stdout)
            kdir = re.search(r"/lib/modules/([^/]+)/", mi.filename or "")
            f.update(modinfo_version=mi.version, modinfo_license=mi.license, modinfo_vermagic=mi.vermagic_kernel,
                     modinfo_dir_kernel=kdir.group(1) if kdir else None)
        elif "not found" in (rec.stderr + rec.stdout).lower() and not rec.missing_tool:
            f["modinfo_missing"] = True  # "modinfo: ERROR: Module nvidia not found."
            problems.pop("modinfo_nvidia", None)
    if rec := _usable(outputs, "uname_r", problems):
        f["kernel_release"] = first_line(rec.stdout) or None
    if rec := _usable(outputs, "dkms_status", problems):
        f["dkms"] = [(e.version, e.kernel, e.state) for e in parse_dkms_status(rec.stdout) if e.module.startswith("nvidia")]
    if rec := _usable(outputs, "dmesg_nvrm", problems):
        low = rec.stderr.lower()
        if "not permitted" in low or "permission denied" in low:
            problems["dmesg_nvrm"] = "needs root (dmesg: operation not permitted)"
        else:
            f["kernel_log_read"] = True
            f["xids"] = [(x.pci, x.code) for x in parse_xid_events(rec.stdout)]
            f["nvrm_problems"] = parse_nvrm_problems(rec.stdout)
    if (rec := outputs.get("persistenced_active")) is not None and not rec.missing_tool and rec.error is None:
        word = first_line(rec.stdout)  # `is-active` exits 3 for inactive: the word is the answer
        if word in ("active", "inactive", "failed", "activating", "deactivating", "unknown"):
            f["persistenced"] = word
            problems.pop("persistenced_active", None)
    if rec := _usable(outputs, "nvidia_modprobe_opts", problems):
        f["modprobe_read"] = True
        f["modprobe_options"] = parse_modprobe_options(rec.stdout).get("nvidia", {})
    if rec := _usable(outputs, "nvidia_lib_files", problems):
        libs = parse_lib_versions(rec.stdout)
        f.update(libcuda=libs["libcuda"], libnvml=libs["libnvidia-ml"], libs_read=True)
    if rec := _usable(outputs, "nvcc_version", problems):
        f["nvcc"] = parse_nvcc_version(rec.stdout)
    return DriverFacts(**f, problems=problems)


# --------------------------------------------------------------------------- knowledge

def gpu_arch(compute_cap: str | None, name: str | None) -> str | None:
    """Architecture from compute capability (preferred) or, failing that, the product name."""
    cc = version_tuple(compute_cap or "")
    if cc:
        major, minor = cc[0], (cc[1] if len(cc) > 1 else 0)
        if major in (10, 11, 12):
            return "Blackwell"
        return {9: "Hopper", 7: "Turing" if minor >= 5 else "Volta", 6: "Pascal"}.get(major) or (
            ("Ada" if minor >= 9 else "Ampere") if major == 8 else None)
    n = (name or "").upper()
    if re.search(r"BLAC|RTX 50\d0|\bB[12]00\b|GB[23]00|RTX PRO \d+", n):
        return "Blackwell"
    if re.search(r"H100|H200|H20\b|H800|GH200", n):
        return "Hopper"
    if re.search(r"RTX 40\d0|L40|\bL4\b|L20|RTX \d000 ADA", n):
        return "Ada"
    if re.search(r"A100|A30|A40|A10\b|A16|A2\b|RTX 30\d0|RTX A\d000", n):
        return "Ampere"
    if re.search(r"RTX 20\d0|T4\b|QUADRO RTX|TITAN RTX", n):
        return "Turing"
    if re.search(r"V100|TITAN V", n):
        return "Volta"
    return None


# First driver branch that supports the architecture: CUDA 12.8 / R570 for Blackwell [PT-27, LLMD-5],
# CUDA 11.8 / R520 for Hopper and Ada.
MIN_BRANCH = {"Blackwell": (570, "CUDA 12.8"), "Hopper": (520, "CUDA 11.8"), "Ada": (520, "CUDA 11.8")}
TURING_PLUS = {"Turing", "Ampere", "Ada", "Hopper", "Blackwell"}
DATACENTER = re.compile(r"A100|A30\b|A40\b|A10\b|A16|A2\b|H100|H200|H20\b|H800|GH200|B200|B100|GB200|L40|L4\b|L20|"
                        r"V100|P100|T4\b|TESLA", re.I)
XID_CRIT = {79: "GPU fallen off the bus", 48: "double-bit ECC error", 95: "uncontained ECC error",
            64: "row-remap/page-retirement failure", 119: "GSP RPC timeout", 120: "GSP error", 74: "NVLink error",
            154: "recovery action changed (reset/reboot required)"}
XID_WARN = {63: "row remap / page retirement recorded", 92: "high single-bit ECC rate", 94: "contained ECC error",
            61: "internal micro-controller warning", 62: "internal micro-controller halt"}
XID_APP = {13: "graphics engine exception", 31: "MMU fault", 43: "channel reset (app fault)",
           45: "preemptive clean-up after another error or app kill"}
XID_RECURRING = 5


def short_name(name: str) -> str:
    """"NVIDIA RTX PRO 6000 Blackwell Server Edition" / "NVIDIA RTX PRO 6000 Blac..." -> "RTX PRO 6000"."""
    n = re.sub(r"^NVIDIA\s+", "", name.strip())
    n = re.sub(r"\s+\S*\.\.\.$", "", n)
    n = re.sub(r"\s+Blackwell\b.*$", "", n)
    return n


def _enabled(v: str | None) -> bool | None:
    if v is None:
        return None
    low = v.strip().lower()
    return True if low in ("enabled", "on", "yes") else False if low in ("disabled", "off", "no") else None


def _gpu_list(gpus: list[GpuState], pred) -> str:
    return ", ".join(f"GPU{g.index}" for g in gpus if pred(g))


def _fleet(gpus: list[GpuState]) -> str:
    names = Counter(short_name(g.name) for g in gpus)
    return ", ".join(f"{n}× {name}" for name, n in names.items())


# --------------------------------------------------------------------------- judge

def _no_gpu_reason(f: DriverFacts) -> str:
    if f.smi_error:
        return f"nvidia-smi: {f.smi_error}"
    return f.problems.get("smi_query_driver") or f.problems.get("smi_table") or "no GPU rows in nvidia-smi output"


def judge(facts: FactsByTarget) -> Iterator[Finding]:
    host: DriverFacts | None = facts.get("host")
    ctr: DriverFacts | None = facts.get("container")
    if host is not None:
        yield from _judge_host(host)
    yield _userspace_match(host, ctr)
    yield _persistence_host_vs_container(host, ctr)
    if ctr is not None:
        yield _compat_libs(ctr, host, "container")
    elif host is not None:
        yield _compat_libs(host, host, "host")


def _host_version(h: DriverFacts) -> str | None:
    return h.module_version or h.smi_driver_version or (h.gpus[0].driver_version if h.gpus else None)


def _judge_host(h: DriverFacts) -> Iterator[Finding]:
    yield _version_flavor(h)
    yield _min_for_arch(h)
    yield _persistence(h)
    yield _xid_history(h)
    yield _ecc_rowremap(h)
    yield _mig_mode(h)
    yield _compute_mode(h)
    yield _dkms_kernel_match(h)
    yield _module_params(h)


def _version_flavor(h: DriverFacts) -> Finding:
    ev = [("host", "proc_driver_version"), ("host", "modinfo_nvidia"), ("host", "smi_query_driver")]
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
    ev = [("host", "smi_table"), ("host", "smi_query_driver"), ("host", "proc_driver_version")]
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
    ev = [("host", h.gpu_source or "smi_query_driver"), ("host", "persistenced_active")]
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
    ev = [("host", "dmesg_nvrm")]
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


def _ecc_rowremap(h: DriverFacts) -> Finding:
    ev = [("host", h.gpu_source or "smi_query_driver")]
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
    return finding(PROBE_ID, "ecc_rowremap", "ok", t, observed=obs, expected="no uncorrected errors, no pending remaps",
                   evidence=ev)


def _mig_mode(h: DriverFacts) -> Finding:
    ev = [("host", h.gpu_source or "smi_query_driver")]
    t = "MIG mode"
    if not h.gpus:
        return finding(PROBE_ID, "mig_mode", "unknown", t, observed=_no_gpu_reason(h), evidence=ev)
    on = [g for g in h.gpus if _enabled(g.mig_mode)]
    if on:
        return finding(PROBE_ID, "mig_mode", "critical", "MIG enabled", observed=f"MIG Enabled on {_gpu_list(h.gpus, lambda g: g in on)}",
                       expected="MIG Disabled on GPUs a serving engine uses whole",
                       why="A MIG-enabled GPU exposes instances, not the full device: tensor-parallel engines fail or run on a slice.",
                       fix="nvidia-smi -i <gpu> -mig 0 and reset the GPU, unless the slicing is intended.", evidence=ev)
    if all(_enabled(g.mig_mode) is None for g in h.gpus):
        return finding(PROBE_ID, "mig_mode", "ok", t, observed="not applicable: MIG not supported on these GPUs", evidence=ev)
    return finding(PROBE_ID, "mig_mode", "ok", t, observed=f"MIG Disabled on all {len(h.gpus)} GPUs", evidence=ev)


def _compute_mode(h: DriverFacts) -> Finding:
    ev = [("host", h.gpu_source or "smi_query_driver")]
    t = "Compute mode"
    if not h.gpus or any(g.compute_mode is None for g in h.gpus):
        return finding(PROBE_ID, "compute_mode", "unknown", t, observed=_no_gpu_reason(h) if not h.gpus else "compute mode not reported",
                       evidence=ev)
    modes = Counter(g.compute_mode for g in h.gpus)
    obs = ", ".join(f"{m} on {n} GPU(s)" for m, n in modes.items())
    if any(m.lower().startswith("prohibited") for m in modes):
        return finding(PROBE_ID, "compute_mode", "critical", "Compute mode Prohibited", observed=obs, expected="Default",
                       why="A Prohibited GPU accepts no CUDA context at all.", fix="nvidia-smi -i <gpu> -c DEFAULT.", evidence=ev)
    if any(m.lower().startswith("exclusive") for m in modes):
        return finding(PROBE_ID, "compute_mode", "info", "Exclusive compute mode", observed=obs, expected="Default",
                       why="Exclusive_Process allows one process per GPU: sidecars or a second engine process cannot attach.",
                       fix="nvidia-smi -i <gpu> -c DEFAULT if other processes must share the GPU.", evidence=ev)
    return finding(PROBE_ID, "compute_mode", "ok", t, observed=obs, expected="Default", evidence=ev)


def _dkms_kernel_match(h: DriverFacts) -> Finding:
    ev = [("host", "uname_r"), ("host", "modinfo_nvidia"), ("host", "proc_driver_version"), ("host", "dkms_status")]
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
    ev = [("host", "nvidia_modprobe_opts")]
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


def _is_compat(path: str) -> bool:
    return "/compat/" in path


def _compat_libs(f: DriverFacts, host: DriverFacts | None, role: Role) -> Finding:
    ev = [(role, "nvidia_lib_files")]
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
    side, role = (ctr, "container") if ctr is not None else (host, "host")
    targets = ["host", "container"] if ctr is not None else ["host"]
    ev = [("host", "proc_driver_version"), (role, "nvidia_lib_files"), (role, "smi_table")]
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
    ev = [("container", ctr.gpu_source or "smi_query_driver"), ("host", "persistenced_active")]
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


# --------------------------------------------------------------------------- summary

def summarize(facts: FactsByTarget) -> str:
    h: DriverFacts | None = facts.get("host") or facts.get("container")
    if h is None:
        return ""
    if h.smi_error and not h.module_version:
        return f"nvidia-smi: {h.smi_error[:60]}"
    parts = []
    version = _host_version(h)
    if version:
        flavour = {True: " open", False: " proprietary"}.get(h.module_open if h.module_open is not None else None, "")
        parts.append(f"{version}{flavour}")
    if h.cuda_version:
        parts.append(f"CUDA {h.cuda_version}")
    if h.gpus:
        parts.append(_fleet(h.gpus))
    elif h.smi_error:
        parts.append(f"nvidia-smi: {h.smi_error[:50]}")
    return " · ".join(parts)


PROBE = Probe(id=PROBE_ID, title="NVIDIA driver & CUDA", commands=COMMANDS, extract=extract, judge=judge, summarize=summarize)
