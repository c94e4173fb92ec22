"""Typed facts of the kernel probe (JSON-serialisable; no I/O)."""

from __future__ import annotations

from gpuaudit.probes.core.record import Record


class KernelFacts(Record, frozen=True):
    release: str | None = None
    """`uname -r`, e.g. "6.8.12-9-pve"."""
    cmdline: list[tuple[str, str | None]] | None = None
    cpu_vendor: str | None = None
    cpu_family: int | None = None
    cpu_model: int | None = None
    cpu_model_name: str | None = None
    numa_balancing: int | None = None
    numa_nodes: int | None = None
    zone_reclaim: int | None = None
    thp_enabled: str | None = None
    thp_defrag: str | None = None
    clocksource: str | None = None
    swap_devices: int | None = None
    """Active swap areas (lines of /proc/swaps after the header)."""
    engine_swap_kb: dict[str, int] | None = None
    """"pid <n> <cmd>" -> VmSwap kB of each engine process; None = not read, {} = no engine running. Volatile."""
    uvm_disable_hmm: str | None = None
    """"Y"/"N"; None when the nvidia_uvm module (or the parameter) is absent."""
    tuned_profile: str | None = None
    vulnerabilities: dict[str, str] | None = None
    grub_cmdline: list[str] | None = None
    """Tokens of GRUB_CMDLINE_LINUX(_DEFAULT) from /etc/default/grub."""
    etc_kernel_cmdline: list[str] | None = None
    """Tokens of /etc/kernel/cmdline (Proxmox systemd-boot / proxmox-boot-tool)."""
    journal_lines: list[str] | None = None
    journal_read: bool = False
    """The journal of this boot was readable ("Linux version" line seen)."""
    problems: dict[str, str] = {}
    """command_id -> why its output could not be used ("needs root", "tool not installed", ...)."""
