"""Typed facts of the firmware probe (JSON-serialisable; no I/O)."""

from __future__ import annotations

from pydantic import BaseModel


class Dimm(BaseModel, frozen=True):
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


class FirmwareFacts(BaseModel, frozen=True):
    bios: dict[str, str] = {}
    microcode: str | None = None
    cpu_vendor: str | None = None
    cpu_family: int | None = None
    sockets: int | None = None
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
    dimms: list[Dimm] = []
    gpu_fw: dict[str, tuple[str, str]] = {}
    problems: dict[str, str] = {}
    """command_id -> why its output could not be used (the framework makes dependent checks unknown)."""
