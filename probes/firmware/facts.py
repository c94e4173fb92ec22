"""Typed facts of the firmware probe (JSON-serialisable; no I/O)."""

from __future__ import annotations

from gpuaudit.probes.core.record import Record
from gpuaudit.probes.firmware.bios import BiosSetting


class Dimm(Record, frozen=True):
    locator: str
    size_mb: int | None = None
    """None: an empty slot ("No Module Installed")."""
    speed_mts: int | None = None
    configured_mts: int | None = None
    bank: str | None = None
    socket: str | None = None
    """Socket label the locator strings give ("1" of "P1-DIMMA1"); None when they don't say."""
    channel: str | None = None
    """Channel label within the socket ("A"); None when the strings don't say."""


class FirmwareFacts(Record, frozen=True):
    bios: dict[str, str] = {}
    microcode: str | None = None
    cpu_vendor: str | None = None
    cpu_family: int | None = None
    sockets: int | None = None
    cpus: int | None = None
    """lscpu CPU(s): hardware threads the kernel knows of (x2APIC is needed past 255)."""
    online_cpus: int | None = None
    """How many of them are online (lscpu On-line CPU(s) list)."""
    hypervisor: str | None = None
    numa_nodes: dict[str, dict[str, str]] = {}
    """node name -> {"cpulist": ..., "memtotal_kb": ...}."""
    iommu_units: list[str] | None = None
    gpu_iommu_types: dict[str, str] = {}
    cmdline: str | None = None
    cppc: dict[str, str] | None = None
    idle_state_names: list[str] = []
    """"name:latency_us" of cpu0's idle states."""
    bar1_mib: dict[str, int] = {}
    fb_mib: dict[str, int] = {}
    bar1_mib_lspci: dict[str, int] = {}
    """Bus id -> the GPU's largest 64-bit prefetchable region in lspci (BAR1), MiB: the fallback for bar1_mib."""
    dimms: list[Dimm] = []
    gpu_fw: dict[str, tuple[str, str]] = {}
    bmc_system: dict[str, str] = {}
    """--bmc: the ComputerSystem as the BMC states it (manufacturer, model, bios_version, cpu_model, cpu_count)."""
    bios_settings: dict[str, BiosSetting] = {}
    """--bmc: normalised setting id (bios_map.SETTINGS) -> value beside its raw attribute name and value."""
    bios_unmapped: list[str] = []
    """--bmc: raw attribute names the map does not know (kept raw, never guessed; values in the redfish_bios record)."""
    bios_vendor_map: str | None = None
    """The vendor family whose map rows were used ("any" when the manufacturer is not one the map knows)."""
    bios_registry: str | None = None
    link_aspm: dict[str, int] = {}
    """LnkCtl ASPM state (lspci -vvv) -> number of PCIe functions in it: the OS's side of the BIOS ASPM setting."""
    bios_pending: dict[str, list[str]] = {}
    """--bmc: pending attribute -> [current, pending] where they differ (a reboot applies them)."""
    problems: dict[str, str] = {}
    """command_id -> why its output could not be used (the framework makes dependent checks unknown)."""
