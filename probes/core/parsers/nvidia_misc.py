"""Parsers for NVIDIA-related outputs other than nvidia-smi (owner: the driver/nvlink probes).

Stable public API:

* `parse_proc_driver_version(text) -> ProcDriverVersion | None`   /proc/driver/nvidia/version
* `parse_modinfo(text) -> ModInfo`                                `modinfo nvidia`
* `parse_xid_events(text) -> list[XidEvent]`                      dmesg / journalctl -k lines
* `parse_nvrm_problems(text) -> list[str]`                        non-Xid NVRM failures (fallen off bus, API mismatch...)
* `parse_nvcc_version(text) -> str | None`                        `nvcc --version` -> "12.8"
* `parse_systemctl_status(text) -> UnitStatus`                    `systemctl status <unit>` (+ journal lines)
* `parse_lib_versions(text) -> dict[str, list[tuple[str, str]]]`  paths of libcuda.so.<ver> / libnvidia-ml.so.<ver>
* `parse_dkms_status(text) -> list[DkmsEntry]`                    `dkms status`
* `parse_modprobe_options(text) -> dict[str, dict[str, str]]`     `options <module> k=v` lines
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpuaudit.probes.core.parsing import parse_once


@dataclass
class ProcDriverVersion:
    """/proc/driver/nvidia/version: the loaded kernel module's version and flavour."""

    version: str
    open_module: bool
    """True for "NVIDIA UNIX Open Kernel Module", False for the proprietary "NVIDIA UNIX x86_64 Kernel Module"."""
    arch: str | None = None
    gcc: str | None = None


_NVRM = re.compile(
    r"NVRM version:\s*NVIDIA UNIX (?P<open>Open Kernel Module for (?P<arch1>\S+)|(?P<arch2>\S+) Kernel Module)"
    r"\s+(?P<ver>\d+(?:\.\d+)+)"
)


@parse_once
def parse_proc_driver_version(text: str) -> ProcDriverVersion | None:
    """`/proc/driver/nvidia/version` -> version and flavour; None when the line is not there.

    NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build  (dvs-builder@U16-A24-9-2)  ...
    GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)
    """
    m = _NVRM.search(text or "")
    if not m:
        return None
    gcc = re.search(r"^GCC version:\s*(.*?)\s*$", text, re.M)
    return ProcDriverVersion(
        version=m["ver"],
        open_module=m["arch1"] is not None,
        arch=m["arch1"] or m["arch2"],
        gcc=gcc.group(1) if gcc else None,
    )


@dataclass
class ModInfo:
    """`modinfo nvidia`: the module file on disk, its version, license, vermagic and parameters."""

    filename: str | None = None
    version: str | None = None
    license: str | None = None
    vermagic: str | None = None
    params: list[str] = field(default_factory=list)

    @property
    def open_module(self) -> bool | None:
        """ "Dual MIT/GPL" is the open flavour, "NVIDIA" the proprietary one; None if unknown."""
        if not self.license:
            return None
        return "MIT" in self.license or "GPL" in self.license

    @property
    def vermagic_kernel(self) -> str | None:
        """ "6.8.0-90-generic SMP preempt mod_unload modversions" -> "6.8.0-90-generic"."""
        return self.vermagic.split()[0] if self.vermagic else None

    @property
    def dkms(self) -> bool:
        return bool(self.filename and "/dkms/" in self.filename)


@parse_once
def parse_modinfo(text: str) -> ModInfo:
    """`modinfo nvidia` -> filename, version, license, vermagic, parm names.

    filename:       /lib/modules/6.8.0-90-generic/updates/dkms/nvidia.ko
    version:        590.44.01
    license:        Dual MIT/GPL
    vermagic:       6.8.0-90-generic SMP preempt mod_unload modversions
    """
    out = ModInfo()
    for line in (text or "").splitlines():
        m = re.match(r"^(\w+):\s*(.*?)\s*$", line)
        if not m:
            continue
        key, value = m.groups()
        if key == "parm":
            out.params.append(value.split(":", 1)[0])
        elif key in ("filename", "version", "license", "vermagic") and getattr(out, key) is None:
            setattr(out, key, value)
    return out


@dataclass
class XidEvent:
    """One NVRM Xid line of the kernel log: the GPU's PCI address and the Xid code."""

    pci: str
    code: int
    detail: str = ""


_XID = re.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9A-Fa-f:.]+)\): (?P<code>\d+),\s*(?P<detail>.*)$"
)


@parse_once
def parse_xid_events(text: str) -> list[XidEvent]:
    """Kernel log text (dmesg, `journalctl -k`) -> every `NVRM: Xid` event in order.

    [14370.687545] NVRM: Xid (PCI:0000:0a:00): 62, pid='<unknown>', name=<unknown>, 2023b230 ...
    kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149
    """
    out = []
    for line in (text or "").splitlines():
        m = _XID.search(line)
        if m:
            out.append(
                XidEvent(pci=m["pci"].lower(), code=int(m["code"]), detail=m["detail"].strip())
            )
    return out


_NVRM_PROBLEMS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("GPU has fallen off the bus", re.compile(r"fallen off the bus", re.I)),
    ("NVRM API mismatch (user-space vs kernel module)", re.compile(r"NVRM: API mismatch", re.I)),
    ("RmInitAdapter failed (GPU did not initialise)", re.compile(r"RmInitAdapter failed", re.I)),
    (
        "GSP heartbeat / RPC timeout",
        re.compile(r"GSP Timeout|_kgspIsHeartbeatTimedOut|_kgspLogRpcTimeout", re.I),
    ),
    (
        "NVIDIA probe routine failed or not called (nouveau conflict?)",
        re.compile(
            r"probe routine (?:failed|was not called)|No NVIDIA graphics adapter probed", re.I
        ),
    ),
)


@parse_once
def parse_nvrm_problems(text: str) -> list[str]:
    """Driver failures that are not Xids, as short labels, each once, in catalogue order.

    [ 8957.099615] NVRM: API mismatch: the client has the version 570.148.08, but
    [   49.261458] NVRM: GPU at 0000:01:00.0 has fallen off the bus.
    """
    return [label for label, pat in _NVRM_PROBLEMS if pat.search(text or "")]


_FALLEN = re.compile(
    r"NVRM: (?:The NVIDIA )?GPU (?:at )?(?:PCI:)?(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.\d)?)"
    r"(?P<rest>.{0,400}?)fallen off the bus",
    re.I | re.S,
)


@parse_once
def parse_fallen_off_bus(text: str) -> list[str]:
    """Bus ids ("0000:b3:00") the kernel log says fell off the bus, each once: the NVRM line (one or three lines
    long) and Xid 79.

        [   49.261458] NVRM: GPU at 0000:01:00.0 has fallen off the bus.
        [ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0
                       NVRM: (PCI ID: 10de:26b5) installed in this system has
                       NVRM: fallen off the bus and is not responding to commands.
    """
    found = [
        m["bus"].lower()
        for m in _FALLEN.finditer(text or "")
        if "NVRM: GPU" not in m["rest"] and "NVRM: The" not in m["rest"]
    ]  # the message of this GPU, not a later one
    found += [x.pci for x in parse_xid_events(text) if x.code == 79]
    return list(dict.fromkeys(b.split(".")[0] for b in found))


@parse_once
def parse_nvrm_loaded_version(text: str) -> str | None:
    """The last "NVRM: loading NVIDIA UNIX ... Kernel Module  570.148.06" version in a kernel log."""
    found = re.findall(
        r"NVRM: loading NVIDIA UNIX .*?Kernel Module(?: for \S+)?\s+(\d+(?:\.\d+)+)", text or ""
    )
    return found[-1] if found else None


@parse_once
def parse_nvcc_version(text: str) -> str | None:
    """`nvcc --version` -> the toolkit release "12.8".

    Cuda compilation tools, release 12.8, V12.8.93
    """
    m = re.search(r"release (\d+\.\d+)", text or "")
    return m.group(1) if m else None


@dataclass
class UnitStatus:
    """`systemctl status UNIT`: whether the unit exists, its state, a failed start and its log messages."""

    present: bool = True
    active: str | None = None
    """"active", "inactive", "failed", "activating" (the word after "Active:"), or None."""
    sub: str | None = None
    failed_start: bool = False
    messages: list[str] = field(default_factory=list)
    """Notable journal messages (errors, NV_WARN_NOTHING_TO_DO, "Detected Pre-NVL5 system")."""


@parse_once
def parse_systemctl_status(text: str) -> UnitStatus:
    """`systemctl status nvidia-fabricmanager` (and journal lines around it) -> state and notable messages.

         Active: active (running) since Fri 2025-05-16 15:10:10 UTC; 13min ago
    Job for nvidia-fabricmanager.service failed because the control process exited with error code.
    ... nv-fabricmanager[4177]: request to query NVSwitch device information ... [NV_WARN_NOTHING_TO_DO]
    """
    out = UnitStatus()
    t = text or ""
    if re.search(r"Unit \S+ could not be found|not-found \(", t):
        out.present = False
    m = re.search(r"^\s*Active:\s*(\S+)(?:\s+\(([^)]+)\))?", t, re.M)
    if m:
        out.active, out.sub = m.group(1), m.group(2)
    if re.search(r"^Job for \S+ failed", t, re.M) or re.search(
        r"Failed to start|Control process exited, code=exited, status=[1-9]", t
    ):
        out.failed_start = True
        if out.active is None:
            out.active = "failed"
    for pat, label in (
        (r"NV_WARN_NOTHING_TO_DO", "NVSwitch driver: nothing to do (no NVSwitch in this system)"),
        (r"Detected Pre-NVL5 system", "Detected Pre-NVL5 system"),
        (r"Detected NVL5\+? system", "Detected NVL5+ system"),
        (r"Successfully configured all the available NVSwitches", "NVSwitches configured"),
        (
            r"fabric manager (?:version|compatibility).*mismatch|version mismatch",
            "version mismatch",
        ),
    ):
        if re.search(pat, t, re.I):
            out.messages.append(label)
    return out


_LIB = re.compile(
    r"(?P<path>\S*/(?P<name>libcuda|libnvidia-ml)\.so\.(?P<ver>\d+\.\d+(?:\.\d+)?))\s*$"
)


@parse_once
def parse_lib_versions(text: str) -> dict[str, list[tuple[str, str]]]:
    """Paths (one per line, e.g. `find` output) -> {"libcuda": [(path, "590.48.01")], "libnvidia-ml": [...]}.

        /usr/lib/x86_64-linux-gnu/libcuda.so.590.48.01
        /usr/local/cuda-13.0/compat/libcuda.so.580.65.06
    Only fully versioned names count (libcuda.so.1 is a symlink name, not a version).
    """
    out: dict[str, list[tuple[str, str]]] = {"libcuda": [], "libnvidia-ml": []}
    for line in (text or "").splitlines():
        m = _LIB.search(line.strip())
        if m and m["ver"] != "1":
            out[m["name"]].append((m["path"], m["ver"]))
    return out


@dataclass
class DkmsEntry:
    """One line of `dkms status`: a module version, the kernel and arch it was built for, and its state."""

    module: str
    version: str
    kernel: str | None
    arch: str | None
    state: str


@parse_once
def parse_dkms_status(text: str) -> list[DkmsEntry]:
    """`dkms status` (both the old `nvidia, 590.48.01, ...` and new `nvidia/590.48.01, ...` forms).

    nvidia/590.48.01, 6.8.12-9-pve, x86_64: installed
    nvidia, 525.125.06, 6.1.0-10-amd64, x86_64: installed
    """
    out = []
    for line in (text or "").splitlines():
        if ":" not in line:
            continue
        head, state = line.rsplit(":", 1)
        parts = [p.strip() for p in head.split(",")]
        if "/" in parts[0]:
            mod, ver = parts[0].split("/", 1)
            rest = parts[1:]
        elif len(parts) >= 2:
            mod, ver, rest = parts[0], parts[1], parts[2:]
        else:
            continue
        out.append(
            DkmsEntry(
                module=mod,
                version=ver,
                kernel=rest[0] if rest else None,
                arch=rest[1] if len(rest) > 1 else None,
                state=state.strip(),
            )
        )
    return out


@parse_once
def parse_modprobe_options(text: str) -> dict[str, dict[str, str]]:
    """`options nvidia NVreg_X=1 NVreg_Y=0` lines -> {"nvidia": {"NVreg_X": "1", ...}} (comments skipped)."""
    out: dict[str, dict[str, str]] = {}
    for line in (text or "").splitlines():
        line = line.split("#", 1)[0].strip()
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "options":
            opts = out.setdefault(parts[1], {})
            for kv in parts[2:]:
                k, _, v = kv.partition("=")
                opts[k] = v
    return out
