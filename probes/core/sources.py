"""Every command the probes can run, declared once: id, read-only shell line, roles, root, parser notes.

A probe names the sources it needs (`use(...)`); the runner runs each line once per target and every probe
that declared it receives the same record. Ids are keys of snapshots and recordings: never rename one
without an alias (ALIASES) so older snapshots replay.
"""

from __future__ import annotations

from typing import TypeAlias

from gpuaudit.probes.core.models import Role
from gpuaudit.probes.core.parsers.engine_lines import (
    ENGINE_LOGS_SHELL,
    ENGINE_PROCS_SHELL,
    ENGINE_STATUS_SHELL,
    MODEL_FILES_SHELL,
)
from gpuaudit.probes.core.parsers.lines import (
    CGROUP_FILES,
    SMI_GPU_IDS,
    SYS_CPPC_CMD,
    SYS_CPUIDLE_CMD,
)
from gpuaudit.probes.core.parsers.reader_lines import (
    DECODE_PROBE_SHELL,
    ENGINE_METRICS_SHELL,
    PYENV_SHELL,
)
from gpuaudit.probes.core.spec import Command, Probe

Source: TypeAlias = Command
HOST: frozenset[Role] = frozenset({"host"})
CONTAINER: frozenset[Role] = frozenset({"container"})
BOTH: frozenset[Role] = frozenset({"host", "container"})
PRESENCE_SOURCES = ("proc_driver_version", "pci_nvidia_sysfs")
"""Carried by every probe on every role it runs on (the runner runs each line once per target)."""

SOURCES: dict[str, Source] = {
    s.id: s
    for s in (
        Source(
            "dmidecode_bios",
            "dmidecode -t bios -t system -t baseboard",
            on=HOST,
            needs_root=True,
            description="BIOS vendor/version/date, system and board",
        ),
        Source(
            "dmidecode_memory",
            "dmidecode -t memory",
            on=HOST,
            needs_root=True,
            description="DIMM slots, sizes, speeds",
        ),
        Source(
            "dmi_bios",
            "cat /sys/class/dmi/id/bios_vendor /sys/class/dmi/id/bios_version /sys/class/dmi/id/bios_date",
            on=HOST,
            description="BIOS identity without root (fallback)",
        ),
        Source("cpuinfo_microcode", "grep -m1 microcode /proc/cpuinfo", on=HOST),
        # BMC reads (--bmc): HTTPS GETs from the client (probes/core/collect/redfish.py), never a shell line
        Source(
            "redfish_system",
            "redfish GET /redfish/v1/Systems/FIRST-MEMBER",
            on=HOST,
            description="the BMC's ComputerSystem (vendor, model, BIOS version, Bios link); only with --bmc",
        ),
        Source(
            "redfish_bios",
            "redfish GET /redfish/v1/Systems/MEMBER/Bios",
            on=HOST,
            description="the BIOS settings (Attributes) as the BMC reports them; only with --bmc",
        ),
        Source(
            "redfish_bios_pending",
            "redfish GET Bios/@Redfish.Settings/SettingsObject",
            on=HOST,
            description="BIOS settings set but not yet applied (a reboot applies them); only with --bmc",
        ),
        Source(
            "lscpu_json",
            "lscpu -J",
            on=HOST,
            description="CPU vendor, family, model, sockets, NUMA nodes, flags",
        ),
        Source(
            "sys_numa",
            (
                "grep -s -H . /sys/devices/system/node/node*/cpulist; grep -s -H MemTotal "
                "/sys/devices/system/node/node*/meminfo; true"
            ),
            on=HOST,
            description="CPUs and memory per NUMA node",
        ),
        Source(
            "iommu_state",
            (
                "echo units: $(ls /sys/class/iommu 2>/dev/null); for d in $(grep -l 0x10de "
                "/sys/bus/pci/devices/*/vendor); do p=${d%/vendor}; echo gpu ${p##*/} $(cat $p/iommu_group/type "
                "2>/dev/null); done; true"
            ),
            on=HOST,
            description="IOMMU units and the IOMMU domain type of each NVIDIA function",
        ),
        Source(
            "proc_cmdline",
            "cat /proc/cmdline",
            on=HOST,
            description="kernel boot parameters (iommu=, amd_iommu=, intel_iommu=)",
        ),
        Source(
            "sys_cppc",
            (SYS_CPPC_CMD),
            on=HOST,
            description="ACPI CPPC values exposed by the BIOS (prerequisite for amd-pstate)",
        ),
        Source(
            "sys_cpuidle",
            (SYS_CPUIDLE_CMD),
            on=HOST,
            description="cpuidle driver and the idle states of cpu0 and the last CPU of each NUMA node",
        ),
        Source(
            "smi_q_memory",
            "nvidia-smi -q -d MEMORY",
            on=HOST,
            description="BAR1 and framebuffer size per GPU",
        ),
        Source(
            "smi_query_fw",
            "nvidia-smi --query-gpu=index,pci.bus_id,vbios_version,inforom.img --format=csv,noheader",
            on=HOST,
            description="VBIOS and InfoROM versions per GPU",
        ),
        Source(
            "virt",
            "systemd-detect-virt -c",
            on=BOTH,
            ok_exits=frozenset({0, 1}),
            description='container kind (exit 1 with "none": not a container)',
        ),
        Source(
            "pve_lxc_confs",
            "grep -H . /etc/pve/lxc/*.conf",
            on=HOST,
            needs_root=True,
            ok_exits=frozenset({0, 1, 2}),
            description="every container config on a Proxmox host (exit 2 'No such file': not Proxmox; other failures are noted by extract)",
        ),
        Source("proc_devices", "cat /proc/devices", on=HOST),
        Source(
            "dev_nvidia",
            "ls -l /dev/nvidia*",
            on=BOTH,
            ok_exits=frozenset({0, 1, 2}),
            description="NVIDIA device nodes ('No such file', exit 2 GNU / 1 busybox: none; other failures are noted by extract)",
        ),
        Source("smi_gpu_ids", SMI_GPU_IDS, on=BOTH),
        Source("df_shm", "df -h /dev/shm", on=BOTH),
        Source("uname_n", "uname -n", on=CONTAINER),
        Source(
            "machine_id",
            "cat /etc/machine-id",
            on=HOST,
            ok_exits=frozenset({0, 1}),
            description="the machine's identifier (an identifier, not a secret; --share maps it): `--resume A "
            "--host B` compares it with the live machine's (issue 29); exit 1 'No such file': none recorded",
        ),
        Source("proc_self_cgroup", "cat /proc/self/cgroup", on=CONTAINER),
        Source("uid_map", "cat /proc/self/uid_map", on=CONTAINER),
        Source("ulimit_a", "ulimit -a", on=CONTAINER),
        Source("cgroup_limits", (CGROUP_FILES), on=CONTAINER),
        Source(
            "dev_infiniband",
            "ls /dev/infiniband",
            on=CONTAINER,
            ok_exits=frozenset({0, 1, 2}),
            description="RDMA device nodes ('No such file', exit 2 GNU / 1 busybox: none)",
        ),
        Source(
            "libcuda_files",
            "ls /usr/lib/x86_64-linux-gnu/libcuda.so.* /usr/lib64/libcuda.so.* /usr/lib/aarch64-linux-gnu/libcuda.so.*",
            on=CONTAINER,
            ok_exits=frozenset({0, 1, 2}),
            description="user-space driver copies (exit 2 GNU / 1 busybox: some of the three folders hold none)",
        ),
        Source(
            "proc_driver_version",
            "cat /proc/driver/nvidia/version",
            on=BOTH,
            description="loaded kernel module version and flavour (the host's, even inside a container)",
        ),
        Source(
            "smi_table",
            "nvidia-smi",
            on=BOTH,
            description="header versions (max CUDA) and error banners",
        ),
        Source(
            "smi_query_driver",
            (
                "nvidia-smi "
                "--query-gpu=index,name,pci.bus_id,compute_cap,driver_version,persistence_mode,compute_mode,mig.mode.current,ecc.mode.current,ecc.errors.uncorrected.volatile.total,remapped_rows.pending,remapped_rows.failure "
                "--format=csv,noheader,nounits"
            ),
            on=BOTH,
            description="per-GPU driver state",
        ),
        Source(
            "modinfo_nvidia",
            "modinfo nvidia",
            on=HOST,
            description="on-disk module for the running kernel",
        ),
        Source("uname_r", "uname -r", on=BOTH),
        Source("dkms_status", "dkms status", on=HOST),
        Source(
            "dmesg_nvrm",
            "dmesg | grep -E 'NVRM|nvidia' || test $? -eq 1",
            on=HOST,
            needs_root=True,
            description="Xid events and driver failures since boot (grep exit 1 = no match)",
        ),
        Source("persistenced_active", "systemctl is-active nvidia-persistenced", on=HOST),
        Source(
            "nvidia_modprobe_opts",
            "grep -rhE '^[[:space:]]*options[[:space:]]+nvidia' /etc/mod*.d/ || test $? -eq 1",
            on=HOST,
        ),
        Source(
            "nvidia_lib_files",
            (
                "find /usr/lib /usr/lib64 /usr/local -maxdepth 4 \\( -name 'libcuda.so.*' -o -name 'libnvidia-ml.so.*' "
                "\\) 2>/dev/null; true"
            ),
            on=BOTH,
            description="versioned user-space driver libraries (incl. cuda compat)",
        ),
        Source("nvcc_version", "nvcc --version", on=CONTAINER),
        Source(
            "cpuinfo_id",
            "grep -m4 -E '^(vendor_id|cpu family|model|model name)' /proc/cpuinfo",
            on=HOST,
            description="CPU vendor (NCCL's P2P cutoff differs); same line as the kernel probe's",
        ),
        Source("numa_balancing", "cat /proc/sys/kernel/numa_balancing", on=BOTH),
        Source("node_list", "ls -d /sys/devices/system/node/node[0-9]*", on=HOST),
        Source("zone_reclaim", "cat /proc/sys/vm/zone_reclaim_mode", on=HOST),
        Source("thp_enabled", "cat /sys/kernel/mm/transparent_hugepage/enabled", on=HOST),
        Source("thp_defrag", "cat /sys/kernel/mm/transparent_hugepage/defrag", on=HOST),
        Source(
            "clocksource",
            "cat /sys/devices/system/clocksource/clocksource0/current_clocksource",
            on=HOST,
        ),
        Source("proc_swaps", "cat /proc/swaps", on=HOST),
        Source(
            "engine_proc_status",
            (ENGINE_STATUS_SHELL),
            on=BOTH,
            timeout_s=60,
            description="engine processes: allowed CPUs/memory nodes, RSS/swap, resident kB per NUMA node (numa_maps)",
        ),
        Source(
            "uvm_disable_hmm",
            "cat /sys/module/nvidia_uvm/parameters/uvm_disable_hmm",
            on=HOST,
            absent_text=(
                "No such file",
            ),  # nvidia_uvm not loaded, or a driver without the parameter
        ),
        Source("tuned_active", "tuned-adm active", on=HOST, absent_without_tool=True),
        Source(
            "cpu_vulnerabilities", "grep -H . /sys/devices/system/cpu/vulnerabilities/*", on=HOST
        ),
        Source(
            "grub_cmdline", "grep -E '^GRUB_CMDLINE_LINUX(_DEFAULT)?=' /etc/default/grub", on=HOST
        ),
        Source("etc_kernel_cmdline", "cat /etc/kernel/cmdline", on=HOST),
        Source(
            "journal_kernel_faults",
            (
                "journalctl -k -b --no-pager | grep -E 'IO_PAGE_FAULT|DMAR:.*fault|AER|PCIe Bus Error|Surprise Link "
                "Down|soft lockup|hung_task|NVRM|Linux version'"
            ),
            on=HOST,
            needs_root=True,
            ok_exits=frozenset({0, 1}),
            description="this boot's kernel log, fault lines only (grep exit 1 = nothing matched; the extract names a missing journalctl)",
        ),
        Source(
            "lspci_vvv",
            "lspci -D -vvv",
            on=HOST,
            needs_root=True,
            description="config space of every device: DevCap/DevCtl, LnkCap/LnkSta, ASPM, ACS, AER (root)",
        ),
        Source(
            "lspci_tv", "lspci -tv", on=HOST, description="PCI tree: which bridges lead to each GPU"
        ),
        Source(
            "sys_pci_nvidia",
            (
                "for d in $(grep -l 0x10de /sys/bus/pci/devices/*/vendor); do p=${d%/vendor}; u=$(dirname $(readlink -f "
                '$p)); echo "$p/upstream:$u"; grep -s -H . $p/class $p/current_link_speed $p/current_link_width '
                "$p/max_link_speed $p/max_link_width $p/numa_node $p/aer_dev_correctable $p/aer_dev_nonfatal "
                "$p/aer_dev_fatal $u/power/control $u/aer_dev_correctable $u/aer_dev_nonfatal $u/aer_dev_fatal; done; "
                "true"
            ),
            on=HOST,
            description="per NVIDIA function: sysfs link state, NUMA node, AER counters; upstream port PM and AER",
        ),
        Source(
            "smi_query_pcie",
            (
                "nvidia-smi "
                "--query-gpu=index,pci.bus_id,utilization.gpu,pcie.link.gen.gpucurrent,pcie.link.gen.gpumax,pcie.link.gen.hostmax,pcie.link.width.current,pcie.link.width.max "
                "--format=csv,noheader,nounits"
            ),
            on=HOST,
            description="GPU utilisation and PCIe generation/width: current, GPU max, host max",
        ),
        Source("aspm_policy", "cat /sys/module/pcie_aspm/parameters/policy", on=HOST),
        Source(
            "sys_cpufreq",
            (
                "grep -s -H . /sys/devices/system/cpu/cpu0/cpufreq/scaling_driver "
                "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor "
                "/sys/devices/system/cpu/cpu0/cpufreq/energy_performance_preference "
                "/sys/devices/system/cpu/amd_pstate/status /sys/devices/system/cpu/cpufreq/boost "
                "/sys/devices/system/cpu/cpu0/cpufreq/boost /sys/devices/system/cpu/intel_pstate/no_turbo "
                "/sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq "
                "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq; true"
            ),
            on=HOST,
            description="cpufreq driver, governor, EPP, boost of cpu0 (path:value lines)",
        ),
        Source(
            "sys_governors",
            "cat /sys/devices/system/cpu/cpufreq/policy*/scaling_governor 2>/dev/null | sort | uniq -c",
            on=HOST,
            description="scaling governor counts over all cpufreq policies",
        ),
        Source(
            "sys_epp",
            "cat /sys/devices/system/cpu/cpufreq/policy*/energy_performance_preference 2>/dev/null | sort | uniq -c",
            on=HOST,
            description="EPP counts over all cpufreq policies",
        ),
        Source(
            "cpupower_freq",
            "cpupower frequency-info",
            on=HOST,
            description="fallback when cpufreq sysfs is unreadable",
        ),
        Source(
            "cpupower_idle",
            "cpupower idle-info",
            on=HOST,
            description="fallback when cpuidle sysfs is unreadable",
        ),
        Source(
            "smi_query_power",
            (
                "nvidia-smi "
                "--query-gpu=index,pci.bus_id,pstate,utilization.gpu,power.draw,enforced.power.limit,power.default_limit,power.max_limit,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,clocks.applications.graphics,temperature.gpu,clocks_event_reasons.hw_slowdown,clocks_event_reasons.hw_thermal_slowdown,clocks_event_reasons.hw_power_brake_slowdown,clocks_event_reasons.sw_thermal_slowdown,clocks_event_reasons.sw_power_cap "
                "--format=csv,noheader,nounits"
            ),
            on=HOST,
            description="GPU power limits, clocks, temperatures, clock-event reasons",
        ),
        Source(
            "nvidia_rtd3",
            "grep -s -H . /proc/driver/nvidia/gpus/*/power; true",
            on=HOST,
            description="NVIDIA runtime D3 status per GPU",
        ),
        Source(
            "smi_topo_m",
            "nvidia-smi topo -m",
            on=BOTH,
            description="path type per GPU pair, NUMA affinity",
        ),
        Source(
            "smi_topo_p2p_r",
            "nvidia-smi topo -p2p r",
            on=BOTH,
            description="driver-reported P2P read capability",
        ),
        Source(
            "smi_topo_p2p_w",
            "nvidia-smi topo -p2p w",
            on=BOTH,
            description="driver-reported P2P write capability",
        ),
        Source(
            "engine_procs",
            (ENGINE_PROCS_SHELL),
            on=BOTH,
            description="serving engine processes: command line, NCCL/CUDA environment, mapped libnccl",
        ),
        Source(
            "ldconfig_nccl",
            "ldconfig -p 2>/dev/null | grep -i libnccl || echo none",
            on=BOTH,
            description="system libnccl copies",
        ),
        Source(
            "pyenv",
            (PYENV_SHELL),
            on=BOTH,
            timeout_s=60,
            description="the engine's Python: torch build, arch list, bundled NCCL (no CUDA context created)",
        ),
        Source(
            "engine_logs",
            (ENGINE_LOGS_SHELL),
            on=BOTH,
            timeout_s=60,
            description="the engine's log (its stdout file or its systemd unit's journal): NCCL INFO transport lines, throughput lines",
        ),
        Source(
            "nccl_all_reduce_perf",
            (
                "b=$(command -v all_reduce_perf || ls /opt/nccl-tests/build/all_reduce_perf "
                "/opt/nccl_tests/build/all_reduce_perf /usr/local/nccl-tests/build/all_reduce_perf 2>/dev/null | head "
                "-n1); [ -n \"$b\" ] || { echo 'all_reduce_perf: not found' 1>&2; exit 127; }; n=$(nvidia-smi -L "
                "2>/dev/null | grep -c '^GPU'); free=$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits "
                '2>/dev/null | sort -n | head -n1); if [ "${free:-0}" -lt 4096 ]; then echo "gate: least free VRAM '
                '${free:-unknown} MiB is below 4096 MiB, not run"; exit 3; fi; "$b" -b 8 -e 256M -f 4 -g "$n" -w 5 -n '
                "20"
            ),
            on=HOST,
            active=True,
            timeout_s=180,
            description="ACTIVE, load-generating: nccl-tests all_reduce_perf 8 B..256 MiB over all GPUs (skipped when any GPU has under 4 GiB free)",
        ),
        Source("numactl_h", "numactl -H", on=HOST),
        Source("node_cpulists", "grep -H . /sys/devices/system/node/node*/cpulist", on=HOST),
        Source(
            "pci_nvidia_numa",
            "grep -H . /sys/bus/pci/drivers/nvidia/*/numa_node /sys/bus/pci/drivers/nvidia/*/local_cpulist",
            on=HOST,
        ),
        Source(
            "status_allowed", "grep -E '^(Cpus|Mems)_allowed_list' /proc/self/status", on=CONTAINER
        ),
        Source(
            "jit_cache_dirs",
            (
                'for d in "$HOME/.cache/flashinfer" "$HOME/.triton/cache" "$HOME/.cache/vllm" "$HOME/.cache/sglang" '
                '"$HOME/.cache/deep_gemm" "/tmp/torchinductor_$(id -un)"; do [ -d "$d" ] || continue; echo "@@dir $d"; '
                'echo "@@fs $(stat -f -c %T "$d" 2>/dev/null)"; [ -w "$d" ] && echo \'@@writable\'; ls -1 "$d" '
                "2>/dev/null | head -n 12; done; echo '@@done'"
            ),
            on=BOTH,
            description="JIT/compile cache folders: file system, writable, entries",
        ),
        Source("nvlink_s", "nvidia-smi nvlink -s", on=HOST, description="per-link state and speed"),
        Source("nvlink_errors", "nvidia-smi nvlink --errorcounters", on=HOST),
        Source(
            "smi_query_fabric",
            "nvidia-smi --query-gpu=index,name,fabric.state,fabric.status --format=csv,noheader,nounits",
            on=BOTH,
        ),
        Source(
            "smi_q_xml",
            "nvidia-smi -q -x",
            on=HOST,
            description="the primary per-GPU record (modes, MIG, ECC/remap, clock event reasons, power, temperatures, PCIe, firmware; fabric state on drivers without fabric.* fields)",
        ),
        Source(
            "fabricmanager_status",
            "systemctl status nvidia-fabricmanager --no-pager",
            on=HOST,
            ok_exits=frozenset({0, 3, 4}),
            description="Fabric Manager unit state and last log lines (exit 3 = inactive, 4 = no such unit: both answers)",
        ),
        Source("fabricmanager_version", "nv-fabricmanager --version", on=HOST),
        Source(
            "lspci_nvswitch",
            "lspci -d 10de::0680",
            on=HOST,
            description="NVSwitch bridge functions (HGX A100/H100 generation)",
        ),
        Source("ib_umad_loaded", "grep -E '^ib_umad ' /proc/modules || test $? -eq 1", on=HOST),
        Source(
            "engine_model_files",
            MODEL_FILES_SHELL,
            on=BOTH,
            description="the serving engine's config.json, hf_quant_config.json and safetensors index head (roofline)",
        ),
        Source(
            "engine_metrics",
            ENGINE_METRICS_SHELL,
            on=BOTH,
            timeout_s=15,
            description="the serving engine's own Prometheus page (GET 127.0.0.1:<its --port>/metrics, 5 s, <= 4 MB): "
            "time per output token, running requests, speculative acceptance (roofline)",
        ),
        Source(
            "engine_decode_probe",
            DECODE_PROBE_SHELL,
            on=BOTH,
            active=True,
            timeout_s=150,
            description="ACTIVE, load on a production server: when the engine reports 0 running requests, ONE "
            "streamed completion (256 tokens, temperature 0) on its OpenAI endpoint; time per output token "
            "without the time to first token (roofline); refused, nothing sent, when any request runs",
        ),
        # Shared facts (probes/core/judge/combiners.py): GPU presence on every role, virtualisation.
        Source(
            "pci_nvidia_sysfs",
            "grep -s -l -x 0x10de /sys/bus/pci/devices/*/vendor",
            on=BOTH,
            ok_exits=frozenset({0, 1}),
            description="NVIDIA PCI functions from sysfs (no tool needed): is there NVIDIA hardware at all",
        ),
        Source(
            "cpu_hypervisor_flag",
            "grep -m1 -o -w hypervisor /proc/cpuinfo",
            on=HOST,
            ok_exits=frozenset({0, 1}),
            description="the CPU's hypervisor flag: set in a virtual machine",
        ),
    )
}

ALIASES: dict[str, str] = {}
"""Old command id -> current id, for replaying snapshots and recordings made before a rename."""


def use(*ids: str, on: frozenset[Role] | None = None) -> tuple[Source, ...]:
    """The registry's sources with these ids, restricted to the roles `on` (default: each source's own roles)."""
    picked = []
    for cid in ids:
        src = SOURCES[cid]
        roles = src.on if on is None else (src.on & on)
        if not roles:
            raise ValueError(f"source {cid} does not run on {sorted(on or ())}")
        picked.append(src if roles == src.on else src.with_roles(roles))
    return tuple(picked)


def with_presence(probe: Probe) -> Probe:
    """The probe plus the GPU-presence sources on every role it runs on (needed by `needs_gpu` checks)."""
    roles = frozenset(r for c in probe.commands for r in c.on)
    have = {c.id for c in probe.commands}
    extra = tuple(
        SOURCES[cid].with_roles(SOURCES[cid].on & roles)
        for cid in PRESENCE_SOURCES
        if cid not in have and SOURCES[cid].on & roles
    )
    return probe.replace(commands=probe.commands + extra) if extra else probe
