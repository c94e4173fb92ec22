"""Facts several probes need, derived in one place from shared sources (pure functions over records).

A combiner answers tri-state: True / False only from data that proves it, None ("unknown") otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from gpuaudit.probes.core.models import CommandRecord

Outputs = Mapping[str, CommandRecord]

PRESENCE_SOURCES = ("proc_driver_version", "pci_nvidia_sysfs")
"""Carried by every probe on every role it runs on (the runner runs each line once per target)."""


def _answered(rec: CommandRecord | None, ok_exits: tuple[int, ...] = (0,)) -> bool:
    return (rec is not None and rec.error is None and not rec.timed_out and not rec.truncated
            and rec.exit_status in ok_exits)


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
    module_absent = (drv is not None and drv.error is None and not drv.timed_out and drv.exit_status not in (0, None)
                     and "no such file" in (drv.stderr + drv.stdout).lower())
    if module_absent and _answered(pci, (0, 1)) and not functions:
        return False, "no NVIDIA PCI device in sysfs and no NVIDIA kernel module"
    return None, "GPU presence not determined"


def virtual_machine(outputs: Outputs) -> tuple[bool | None, str]:
    """Is this target a virtual machine (a KVM/VMware/Hyper-V guest)? From the CPU's `hypervisor` flag.

    Source `cpu_hypervisor_flag` prints "hypervisor" or nothing (grep exit 1); lscpu -J's "Hypervisor vendor"
    is used when that source is absent (older snapshots).
    """
    rec = outputs.get("cpu_hypervisor_flag")
    if _answered(rec, (0, 1)):
        return ("hypervisor" in rec.stdout if rec else False), ("CPU flag 'hypervisor' set" if rec and "hypervisor" in rec.stdout
                                                                  else "no 'hypervisor' CPU flag")
    lscpu = outputs.get("lscpu_json")
    if _answered(lscpu) and lscpu is not None:
        m = re.search(r'"Hypervisor vendor:",\s*"data":\s*"([^"]+)"', lscpu.stdout)
        if m:
            return True, f"hypervisor {m.group(1)}"
        if '"Virtualization type:"' in lscpu.stdout and "full" in lscpu.stdout:
            return True, "full virtualization"
    return None, "virtualisation not determined"


def vm_reason(outputs: Outputs) -> str | None:
    """"virtual machine (<why>)" when the target is proven a guest, else None: for a check's `applies`,
    so every probe says the same thing about the same VM (kernel.version, firmware.cppc, numa_mode...)."""
    vm, why = virtual_machine(outputs)
    return f"virtual machine ({why}): the hypervisor host's firmware and hardware decide this" if vm else None
