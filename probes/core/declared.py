"""What each of the ten probes runs: its title and commands, by probe id — the data an audit launches from.

Kept apart from the probe packages (gpuaudit.probes.<id>: extract, facts, checks, summary: the judging half), so an
audit's first commands leave before any parser, facts model or check is imported: the catalogue's probes load
their package on first use of extract, checks, summarize or volatile_facts (issue 30: ~0.1 s of CPU that now
overlaps the targets' slowest commands instead of delaying them). Each package builds its own PROBE from these
commands; a test holds the two equal.
"""

from __future__ import annotations

from gpuaudit.probes.core.models import Role
from gpuaudit.probes.core.sources import use
from gpuaudit.probes.core.spec import Command

HOST: frozenset[Role] = frozenset({"host"})

TITLES: dict[str, str] = {
    "firmware": "Firmware / UEFI",
    "container": "Container",
    "driver": "NVIDIA driver & CUDA",
    "kernel": "Kernel",
    "pcie": "PCIe",
    "power": "Power management",
    "nccl": "NCCL / GPU-to-GPU",
    "numa": "NUMA",
    "python": "Python runtime",
    "nvlink": "NVLink / fabric",
}

COMMANDS: dict[str, tuple[Command, ...]] = {
    # firmware: the sources of its extract table (firmware/extract.py TABLE, in order; a test holds them equal)
    "firmware": use(
        "dmidecode_bios",
        "dmi_bios",
        "cpuinfo_microcode",
        "lscpu_json",
        "sys_numa",
        "numactl_h",
        "iommu_state",
        "proc_cmdline",
        "sys_cppc",
        "sys_cpuidle",
        "cpupower_idle",
        "smi_q_memory",
        "dmidecode_memory",
        "smi_query_fw",
        "redfish_system",
        "redfish_bios",
        "redfish_bios_pending",
        "lspci_vvv",
        "cpu_hypervisor_flag",
    ),
    "container": (
        use("virt", "dev_nvidia", "smi_gpu_ids", "df_shm")
        + use("pve_lxc_confs", "proc_devices")
        + use(
            "uname_n",
            "proc_self_cgroup",
            "uid_map",
            "ulimit_a",
            "cgroup_limits",
            "dev_infiniband",
            "libcuda_files",
        )
    ),
    "driver": (
        use(
            "proc_driver_version",
            "smi_table",
            "smi_query_driver",
            "uname_r",
            "nvidia_lib_files",
            "pci_nvidia_sysfs",
        )
        + use(
            "smi_q_xml",
            "modinfo_nvidia",
            "dkms_status",
            "dmesg_nvrm",
            "persistenced_active",
            "nvidia_modprobe_opts",
        )
        + use("nvcc_version")
        + use("sys_pci_nvidia", on=HOST)
    ),
    "kernel": (
        use(
            "uname_r", "numa_balancing", "engine_proc_status"
        )  # host and container (kernel.host_knobs_visible)
        + use(
            "proc_cmdline",
            "cpuinfo_id",
            "node_list",
            "zone_reclaim",
            "thp_enabled",
            "thp_defrag",
            "clocksource",
            "proc_swaps",
            "uvm_disable_hmm",
            "tuned_active",
            "cpu_vulnerabilities",
            "grub_cmdline",
            "etc_kernel_cmdline",
            "journal_kernel_faults",
            "cpu_hypervisor_flag",
            "machine_id",  # not judged: the machine's identity for --resume (issue 29)
        )
    ),
    "pcie": use(
        "lspci_vvv", "lspci_tv", "sys_pci_nvidia", "smi_query_pcie", "aspm_policy", "proc_cmdline"
    ),
    "power": use(
        "lscpu_json",
        "cpuinfo_id",
        "sys_cpufreq",
        "sys_governors",
        "sys_epp",
        "sys_cpuidle",
        "sys_cppc",
        "cpupower_freq",
        "cpupower_idle",
        "proc_cmdline",
        "smi_query_power",
        "smi_q_xml",
        "nvidia_rtd3",
        "cpu_hypervisor_flag",
    ),
    "nccl": use(
        "smi_gpu_ids",
        "smi_topo_m",
        "smi_topo_p2p_r",
        "smi_topo_p2p_w",
        "engine_procs",
        "ldconfig_nccl",
        "pyenv",
        "engine_logs",
    )
    + use(
        "iommu_state", "proc_cmdline", "lspci_vvv", "lspci_tv", "cpuinfo_id", "nccl_all_reduce_perf"
    ),
    "numa": (
        use("numactl_h", "node_cpulists", "pci_nvidia_numa")
        + use("smi_gpu_ids", "engine_proc_status")
        + use("cgroup_limits", "status_allowed")
    ),
    "python": use(
        "smi_query_driver",
        "pyenv",
        "engine_procs",
        "engine_proc_status",
        "engine_logs",
        "jit_cache_dirs",
        "engine_model_files",
        "engine_metrics",
        "engine_decode_probe",
    ),  # engine_model_files, engine_metrics: the roofline (probes/core/roofline)
    "nvlink": use(
        "nvlink_s",
        "nvlink_errors",
        "smi_topo_m",
        "smi_q_xml",
        "smi_query_driver",
        "fabricmanager_status",
        "fabricmanager_version",
        "lspci_nvswitch",
        "ib_umad_loaded",
        "dmesg_nvrm",
        on=HOST,
    )
    + use("smi_query_fabric"),
}
