"""Typed facts of the driver probe: kernel module, per-GPU state, GPU health, logs, libraries."""

from __future__ import annotations

from gpuaudit.probes.core.record import Record


class GpuState(Record, frozen=True):
    """One GPU as the best available source printed it (`nvidia-smi -q -x`, else the csv query, else the table)."""

    index: int
    name: str
    bus_id: str | None = None
    compute_cap: str | None = None
    architecture: str | None = None
    """`product_architecture` of the XML ("Blackwell", "Ada Lovelace"); compute capability is csv-only."""
    driver_version: str | None = None
    persistence: str | None = None
    """"Enabled"/"Disabled" (xml, csv) or "On"/"Off" (table)."""
    compute_mode: str | None = None
    mig_mode: str | None = None
    mig_pending: str | None = None
    ecc_mode: str | None = None
    ecc_uncorrected: int | None = None
    """Volatile uncorrectable DRAM errors since the driver loaded."""
    retired_pending: str | None = None
    retired_dbe: int | None = None
    remap_pending: str | None = None
    remap_failure: str | None = None
    unreadable: list[str] = []
    """Fields nvidia-smi answered with an error token ("[Unknown Error]", ...): not read, not "not supported"."""
    recovery_action: str | None = None
    """XML `gpu_recovery_action` (R550+): "None", or what the driver says the GPU needs ("Reset", "Reboot", ...)."""
    reset_required: str | None = None
    lost: bool = False
    """A query cell read "[GPU is lost]": the driver lost this GPU."""
    sensor_errors: list[str] = []
    """Table cells printed as "ERR!" (fan, temperature, power, ...): a sensor the driver could not read."""


class HandleFailure(Record, frozen=True):
    """A GPU nvidia-smi could not open: bus id, the reason it printed, and which command said so."""

    bus_id: str
    reason: str
    lost: bool
    command_id: str


class DriverFacts(Record, frozen=True):
    module_version: str | None = None
    """From /proc/driver/nvidia/version: the LOADED kernel module (the host's, also inside a container)."""
    module_open: bool | None = None
    module_loaded: bool | None = None
    smi_installed: bool | None = None
    smi_error: str | None = None
    smi_error_kind: str | None = None
    smi_error_source: str | None = None
    """Command id whose output carried the banner."""
    nvml_lib_version: str | None = None
    smi_driver_version: str | None = None
    cuda_version: str | None = None
    gpus: list[GpuState] = []
    gpu_source: str | None = None
    """Command id the GPU states came from (xml preferred, then csv, then the table)."""
    handle_failures: list[HandleFailure] = []
    smi_hung: list[str] = []
    """nvidia-smi commands that timed out (a hung driver answers no query)."""
    nvidia_present: bool | None = None
    """The GPU-presence combiner: False only when sysfs lists no NVIDIA function and no module is loaded."""
    nvidia_functions: list[str] = []
    """NVIDIA PCI functions listed in sysfs (bus ids), whatever nvidia-smi says."""
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
    fallen_off_bus: list[str] = []
    """Bus ids ("0000:b3:00") the kernel log says fell off the bus since boot (NVRM message or Xid 79)."""
    init_failed: list[str] = []
    """Bus ids ("0000:01:00.0") the kernel log says failed initialisation (NVRM RmInitAdapter failed)."""
    persistenced: str | None = None
    modprobe_read: bool = False
    modprobe_options: dict[str, str] = {}
    libs_read: bool = False
    libcuda: list[tuple[str, str]] = []
    libnvml: list[tuple[str, str]] = []
    nvcc: str | None = None
    problems: dict[str, str] = {}


VOLATILE_FACTS: frozenset[str] = frozenset()
"""None: the facts kept are states and versions (no utilisation, temperatures, pids); a new Xid is a real change."""
