"""Facts several probes need, derived in one place from shared sources (pure functions over records): GPU presence,
virtual machine, CPU identity, IOMMU translation, ACS redirect, the kernel command line, the serving engine, the GPU
list.

A combiner answers tri-state: True / False only from data that proves it, None ("unknown") otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.models import CommandRecord
from gpuaudit.probes.core.parsers.cpu import CpuIdentity, cpu_identity, parse_lscpu
from gpuaudit.probes.core.parsers.engine import EngineSummary, serving_engine
from gpuaudit.probes.core.parsers.lspci import (
    bus_tree,
    parse_lspci_tree,
    parse_lspci_vvv,
    tree_path,
)
from gpuaudit.probes.core.parsers.nvidia_smi import parse_smi_gpu_ids, parse_smi_q_xml
from gpuaudit.probes.core.parsers.system import (
    PciNuma,
    cmdline_value,
    normalize_bdf,
    parse_cmdline,
    parse_pci_numa,
)
from gpuaudit.probes.core.parsing import first_line, parse_once
from gpuaudit.probes.core.sources import (
    PRESENCE_SOURCES as PRESENCE_SOURCES,  # declared with the commands
)

Outputs = Mapping[str, CommandRecord]


def _answered(rec: CommandRecord | None, ok_exits: tuple[int, ...] = (0,)) -> bool:
    return (
        rec is not None
        and rec.error is None
        and not rec.timed_out
        and not rec.truncated
        and rec.exit_status in ok_exits
    )


def nvidia_presence(outputs: Outputs) -> tuple[bool | None, str]:
    """Is there an NVIDIA GPU (hardware) or driver on this target? (answer, why).

    True: the kernel module answers (/proc/driver/nvidia/version) or sysfs lists an NVIDIA PCI function.
    False: the module is not loaded (no /proc/driver/nvidia/version) *and* sysfs lists no NVIDIA function.
    None: either source could not be read (missing, failed, refused): the checks then judge as usual.
    """
    drv = outputs.get("proc_driver_version")
    pci = outputs.get("pci_nvidia_sysfs")
    if _answered(drv) and "NVRM version" in (drv.stdout if drv else ""):
        return True, "NVIDIA kernel module loaded"
    functions = [ln for ln in (pci.stdout.splitlines() if pci else []) if ln.strip()]
    if _answered(pci, (0, 1)) and functions:
        return True, f"{len(functions)} NVIDIA PCI function(s) in sysfs"
    module_absent = (
        drv is not None
        and drv.error is None
        and not drv.timed_out
        and drv.exit_status not in (0, None)
        and "no such file" in (drv.stderr + drv.stdout).lower()
    )
    if module_absent and _answered(pci, (0, 1)) and not functions:
        return False, "no NVIDIA PCI device in sysfs and no NVIDIA kernel module"
    return None, "GPU presence not determined"


VM_SOURCES = ("cpu_hypervisor_flag", "lscpu_json")
"""What `virtual_machine` / `vm_reason` read: a check whose `applies` uses them declares these (optional)."""


def virtual_machine(outputs: Outputs) -> tuple[bool | None, str]:
    """Is this target a virtual machine (a KVM/VMware/Hyper-V guest)? From the CPU's `hypervisor` flag.

    Source `cpu_hypervisor_flag` prints "hypervisor" or nothing (grep exit 1); lscpu -J's "Hypervisor vendor"
    is used when that source is absent (older snapshots).
    """
    rec = outputs.get("cpu_hypervisor_flag")
    if _answered(rec, (0, 1)):
        return ("hypervisor" in rec.stdout if rec else False), (
            "CPU flag 'hypervisor' set"
            if rec and "hypervisor" in rec.stdout
            else "no 'hypervisor' CPU flag"
        )
    lscpu = outputs.get("lscpu_json")
    if _answered(lscpu) and lscpu is not None:
        m = re.search(r'"Hypervisor vendor:",\s*"data":\s*"([^"]+)"', lscpu.stdout)
        if m:
            return True, f"hypervisor {m.group(1)}"
        if '"Virtualization type:"' in lscpu.stdout and "full" in lscpu.stdout:
            return True, "full virtualization"
    return None, "virtualisation not determined"


def vm_reason(outputs: Outputs) -> str | None:
    """ "virtual machine (<why>)" when the target is proven a guest, else None: for a check's `applies`,
    so every probe says the same thing about the same VM (kernel.version, firmware.cppc, numa_mode...)."""
    vm, why = virtual_machine(outputs)
    return (
        f"virtual machine ({why}): the hypervisor host's firmware and hardware decide this"
        if vm
        else None
    )


# --- CPU identity (vendor, family, model), one spelling ---------------------------------------------------------

CPU_IDENTITY_SOURCES = ("lscpu_json", "cpuinfo_id")
"""The CPU identity's sources, machine-readable first: a check reading it declares them as any_of."""
VENDORS = {"AuthenticAMD": "AMD", "GenuineIntel": "Intel", "ARM": "ARM"}
"""CPUID vendor strings -> the one spelling every probe uses ("AMD", "Intel")."""


def _cpuinfo_identity(text: str) -> CpuIdentity:
    """`grep -m4 -E '^(vendor_id|cpu family|model|model name)' /proc/cpuinfo` -> CpuIdentity."""
    vals: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            vals.setdefault(key.strip(), value.strip())
    raw = vals.get("vendor_id") or None

    def num(s: str | None) -> int | None:
        return int(s) if s and s.isdigit() else None

    return CpuIdentity(
        vendor=VENDORS.get(raw or "", raw),
        family=num(vals.get("cpu family")),
        model=num(vals.get("model")),
        model_name=vals.get("model name") or None,
    )


def cpu_identity_of(outputs: Outputs) -> tuple[CpuIdentity | None, str]:
    """The CPU's identity from `lscpu -J`, else /proc/cpuinfo (`cpuinfo_id`): (identity, the source id), or
    (None, why). The vendor is spelled "AMD" / "Intel" whichever source answered."""
    why: list[str] = []
    lscpu = outputs.get("lscpu_json")
    if _answered(lscpu) and lscpu is not None:
        ident = cpu_identity(parse_lscpu(lscpu.stdout))
        if ident.vendor:
            return ident, "lscpu_json"
        why.append("lscpu_json: no Vendor ID")
    else:
        why.append("lscpu_json not read")
    info = outputs.get("cpuinfo_id")
    if _answered(info) and info is not None:
        ident = _cpuinfo_identity(info.stdout)
        if ident.vendor:
            return ident, "cpuinfo_id"
        why.append("cpuinfo_id: no vendor_id")
    else:
        why.append("cpuinfo_id not read")
    return None, "; ".join(why)


# --- IOMMU translation of the GPU functions (nccl.iommu_acs_gate; firmware.iommu_mode reads the same source) -------

IOMMU_SOURCES = ("iommu_state", "proc_cmdline")
"""The one reading of the IOMMU state: the live domain type of each NVIDIA function, the boot line as a fallback."""

_IOMMU_OFF_ARGS = re.compile(r"\biommu=(?:pt|off)\b|\b(?:amd_iommu|intel_iommu)=off\b")


@parse_once
def parse_iommu_state(text: str) -> tuple[list[str], dict[str, str]]:
    """`iommu_state` output -> (IOMMU units, {NVIDIA function BDF: IOMMU domain type}).

        units: ivhd0 ivhd1
        gpu 0000:01:00.0 identity
    A function without a readable type (no IOMMU group, or a kernel before 5.11 without `type`) maps to "".
    Raises ValueError when the `units:` line is missing (not this command's output).
    """
    units: list[str] | None = None
    types: dict[str, str] = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if parts[:1] == ["units:"]:
            units = parts[1:]
        elif parts[:1] == ["gpu"] and len(parts) >= 2:
            types[parts[1]] = parts[2] if len(parts) > 2 else ""
    if units is None:
        raise ValueError(f"no 'units:' line: {(text or '').strip()[:80]!r}")
    return units, types


def type_counts(types: Mapping[str, str]) -> str:
    """{"0000:01:00.0": "identity", ...} -> "identity×16" (most common first; "" reads "no type")."""
    counted: dict[str, int] = {}
    for t in types.values():
        counted[t or "no type"] = counted.get(t or "no type", 0) + 1
    return ", ".join(f"{t}×{n}" for t, n in sorted(counted.items(), key=lambda kv: -kv[1]))


def gpu_iommu_translation(outputs: Outputs) -> tuple[bool | None, str]:
    """Does the IOMMU translate the NVIDIA functions' DMA (peer traffic detours through it)? (answer, why).

    From the live state first (`iommu_state`): no IOMMU unit and no typed GPU group -> False; a GPU function in a
    DMA/DMA-FQ domain -> True; every GPU function identity -> False. The boot line (`proc_cmdline`) decides only
    when the live state is unreadable or inconclusive: iommu=pt / iommu=off / amd_iommu=off / intel_iommu=off ->
    False. Anything else -> None (never a guess).
    """
    rec = outputs.get("iommu_state")
    live_why = "iommu_state not read"
    if _answered(rec) and rec is not None:
        try:
            units, types = parse_iommu_state(rec.stdout)
        except ValueError as exc:
            live_why = f"iommu_state unreadable: {exc}"
        else:
            typed = {b: t for b, t in types.items() if t}
            if not units and not typed:
                return False, "no IOMMU unit"
            if any(t.startswith("DMA") for t in typed.values()):
                return (
                    True,
                    f"{len(units)} IOMMU unit(s); GPU functions' domains: {type_counts(types)}",
                )
            if typed and len(typed) == len(types):
                return False, f"GPU functions' domains: {type_counts(types)}"
            live_why = f"{len(units)} IOMMU unit(s); GPU functions' domains: {type_counts(types) or 'no NVIDIA function'}"
    cmd, _ = kernel_cmdline_of(outputs)
    if cmd is not None and (m := _IOMMU_OFF_ARGS.search(cmd.line)):
        return False, f"kernel command line {m.group(0)}"
    return None, live_why


# --- ACS redirect on the GPUs' upstream bridges (pcie.acs, nccl.iommu_acs_gate) -----------------------------------

ACS_SOURCES = ("lspci_vvv", "lspci_tv")
"""`lspci -D -vvv` (root) is the one reading of ACS; `lspci -tv` (else the bridges' Bus: lines) gives the paths."""


def acs_redirects(acs_ctl: Mapping[str, bool] | None) -> bool:
    """An ACSCtl with request or completion redirect on: peer requests go up to the root complex (and its IOMMU)."""
    return bool(acs_ctl and (acs_ctl.get("ReqRedir") or acs_ctl.get("CmpltRedir")))


def gpu_acs_redirect(outputs: Outputs) -> tuple[list[str] | None, str]:
    """The bridges on the NVIDIA GPUs' upstream paths whose ACS redirects (BDFs, sorted), and why.

    None when it cannot be told: lspci -vvv unread or <access denied> (needs root), no GPU in it, or no bridge
    found above the GPUs. Paths come from `lspci -tv`, else from the bridges' `Bus: secondary=` lines.
    """
    rec = outputs.get("lspci_vvv")
    if not _answered(rec) or rec is None:
        return None, "lspci_vvv not read"
    devices = parse_lspci_vvv(rec.stdout)
    if any(d.access_denied for d in devices):
        return None, "needs root: lspci printed <access denied> for the capabilities"
    gpus = [d.bdf for d in devices if d.is_gpu]
    if not gpus:
        return None, f"no NVIDIA GPU in lspci_vvv ({len(devices)} function(s))"
    tv = outputs.get("lspci_tv")
    trees = ([parse_lspci_tree(tv.stdout)] if _answered(tv) and tv is not None else []) + [
        bus_tree(devices)
    ]
    tree = next((t for t in trees if any(tree_path(t, g) for g in gpus)), None)
    by = {d.bdf: d for d in devices}
    bridges = sorted({p for g in gpus for p in (tree_path(tree, g) if tree else []) if p in by})
    if not bridges:
        return (
            None,
            "no bridge found above the GPUs (no lspci -tv path, no Bus: line leads to them)",
        )
    redirect = [b for b in bridges if acs_redirects(by[b].acs_ctl)]
    return (
        redirect,
        f"{len(redirect)} of {len(bridges)} bridge(s) above {len(gpus)} GPU(s) redirect",
    )


# --- the kernel command line (kernel, firmware, pcie, power; the IOMMU reading above) -----------------------------

KERNEL_CMDLINE_SOURCE = "proc_cmdline"
"""The running kernel's command line (`cat /proc/cmdline`); the persisted ones (grub, /etc/kernel/cmdline) are
the kernel probe's own sources."""


@dataclass(frozen=True, slots=True)
class KernelCmdline:
    """/proc/cmdline read once: the line as booted and its ordered (key, value) pairs (flags: value None)."""

    line: str
    args: tuple[tuple[str, str | None], ...]

    def value(self, key: str) -> str | None:
        """The last value of `key` (the kernel honours the last), "" for a bare flag, None when absent."""
        return cmdline_value(list(self.args), key)


@parse_once
def kernel_cmdline(text: str) -> KernelCmdline:
    """`proc_cmdline` output -> KernelCmdline (the one reading every probe shares)."""
    return KernelCmdline(line=first_line(text), args=tuple(parse_cmdline(text)))


def kernel_cmdline_of(outputs: Outputs) -> tuple[KernelCmdline | None, str]:
    """The kernel command line of this target, or (None, why it was not read)."""
    rec = outputs.get(KERNEL_CMDLINE_SOURCE)
    if not _answered(rec) or rec is None:
        return None, f"{KERNEL_CMDLINE_SOURCE} not read"
    return kernel_cmdline(rec.stdout), KERNEL_CMDLINE_SOURCE


# --- the serving engine (python, nccl; the roofline reads parsers.engine.serving_engine itself) --------------------

ENGINE_SOURCE = "engine_procs"
"""The engine discovery listing: processes, argv, environment, mapped NCCL libraries (ENGINE_PROCS_SHELL)."""


def serving_engine_of(outputs: Outputs) -> tuple[EngineSummary | None, str]:
    """The serving engine seen on this target (`serving_engine`, derived once per listing), or (None, why).

    A usable listing without an engine is an EngineSummary whose `main` is None (no engine is an answer); a
    listing whose engine is ambiguous (API servers of several owners, `parsers.engine.choose_main`) is (None, why)."""
    rec = outputs.get(ENGINE_SOURCE)
    if not _answered(rec) or rec is None:
        return None, f"{ENGINE_SOURCE} not read"
    try:
        eng = serving_engine(rec.stdout)
    except ParseError as exc:
        return None, f"{ENGINE_SOURCE} unreadable: {exc}"
    if eng.ambiguous is not None:  # engines of several owners (issue 29): none is "the engine"
        return None, f"{ENGINE_SOURCE}: {eng.ambiguous}"
    return eng, ENGINE_SOURCE


def engine_fill(
    fields_of: Callable[[str], dict[str, Any]],
) -> Callable[[str, dict[str, Any], dict[str, str]], None]:
    """A probe's `Reads(ENGINE_SOURCE, fill=...)` reader: `fields_of(listing)` fills the fields; when which process
    is the engine is ambiguous (engines of several owners, issue 29) the listing is no answer: its problem names
    the candidates and the probe's engine checks say unknown (python and nccl read the listing this way)."""

    def fill(text: str, fields: dict[str, Any], problems: dict[str, str]) -> None:
        if (why := serving_engine(text).ambiguous) is not None:
            problems[ENGINE_SOURCE] = why
            return
        fields.update(fields_of(text))

    return fill


# --- the GPU list (index, bus id, UUID, name, NUMA node) -----------------------------------------------------------

GPU_LIST_SOURCES = ("smi_gpu_ids", "smi_q_xml")
"""Where the GPU list comes from, in this order: the id query (index, UUID, bus id, name), then the `-q -x` XML
(enumeration order, bus id, name, UUID). A consumer passes the ones its check declares; the NUMA placement comes
from sysfs (GPU_NUMA_SOURCE), merged by bus id."""
GPU_NUMA_SOURCE = "pci_nvidia_numa"


@dataclass(frozen=True, slots=True)
class GpuEntry:
    """One GPU of the shared list; None / () = not given by the source that answered."""

    bus_id: str
    """Normalised "0000:01:00.0"."""
    index: int | None = None
    uuid: str | None = None
    name: str | None = None
    numa_node: int | None = None
    local_cpus: tuple[int, ...] = ()


def gpu_entries(cid: str, text: str) -> list[GpuEntry]:
    """One source's output -> the GPU list (its parsers run once per text). Raises ParseError / ValueError."""
    if cid == "smi_gpu_ids":
        return [
            GpuEntry(bus_id=g.bus_id, index=g.index, uuid=g.uuid, name=g.name)
            for g in parse_smi_gpu_ids(text)
        ]
    if cid == "smi_q_xml":
        return [
            GpuEntry(
                bus_id=normalize_bdf(g.bus_id or ""),
                index=g.index,
                uuid=g.uuid,
                name=g.product_name,
            )
            for g in parse_smi_q_xml(text).gpus
        ]
    raise ValueError(f"{cid} is not a GPU list source")


def with_numa(gpus: list[GpuEntry], pci: Mapping[str, PciNuma]) -> list[GpuEntry]:
    """The list with each GPU's NUMA node and local CPUs from sysfs (`parse_pci_numa`), matched by bus id."""
    return [
        replace(g, numa_node=pci[g.bus_id].numa_node, local_cpus=tuple(pci[g.bus_id].local_cpus))
        if g.bus_id in pci
        else g
        for g in gpus
    ]


def gpu_list_of(
    outputs: Outputs, sources: tuple[str, ...] = GPU_LIST_SOURCES, numa: bool = True
) -> tuple[list[GpuEntry] | None, str]:
    """This target's GPUs from the first usable source of `sources` (GPU_LIST_SOURCES' order), with NUMA placement
    from sysfs when `numa` and it was read: (list, the source id), or (None, why none answered)."""
    why: list[str] = []
    for cid in sources:
        rec = outputs.get(cid)
        if not _answered(rec) or rec is None:
            why.append(f"{cid} not read")
            continue
        try:
            gpus = gpu_entries(cid, rec.stdout)
        except (ParseError, ValueError) as exc:
            why.append(f"{cid} unreadable: {exc}")
            continue
        pci_rec = outputs.get(GPU_NUMA_SOURCE)
        if numa and pci_rec is not None and _answered(pci_rec, (0, 2)) and pci_rec.stdout.strip():
            gpus = with_numa(gpus, parse_pci_numa(pci_rec.stdout))
        return gpus, cid
    return None, "; ".join(why) or "no GPU list source"
