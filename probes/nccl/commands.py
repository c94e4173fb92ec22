"""The NCCL probe's id and the commands it declares (one ACTIVE, load-generating)."""

from __future__ import annotations

from probes.core.parsers.engine import ENGINE_LOGS_SHELL, ENGINE_PROCS_SHELL
from probes.core.parsers.pyenv import PYENV_SHELL
from probes.core.models import Role
from probes.core.spec import Command

PROBE_ID = "nccl"
_BOTH: frozenset[Role] = frozenset({"host", "container"})

SMI_GPU_CC = "nvidia-smi --query-gpu=index,name,compute_cap,driver_version --format=csv,noheader"
ALL_REDUCE_SHELL = (
    "b=$(command -v all_reduce_perf || ls /opt/nccl-tests/build/all_reduce_perf /opt/nccl_tests/build/all_reduce_perf "
    "/usr/local/nccl-tests/build/all_reduce_perf 2>/dev/null | head -n1); "
    "[ -n \"$b\" ] || { echo 'all_reduce_perf: not found' 1>&2; exit 127; }; "
    "n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU'); "
    "free=$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits 2>/dev/null | sort -n | head -n1); "
    "if [ \"${free:-0}\" -lt 4096 ]; then echo \"gate: least free VRAM ${free:-unknown} MiB is below 4096 MiB, not run\"; exit 3; fi; "
    "\"$b\" -b 8 -e 256M -f 4 -g \"$n\" -w 5 -n 20"
)

COMMANDS = (
    Command("smi_gpu_cc", SMI_GPU_CC, on=_BOTH, description="GPU names, compute capability, driver version"),
    Command("smi_topo_m", "nvidia-smi topo -m", on=_BOTH, description="path type per GPU pair, NUMA affinity"),
    Command("smi_topo_p2p_r", "nvidia-smi topo -p2p r", on=_BOTH, description="driver-reported P2P read capability"),
    Command("smi_topo_p2p_w", "nvidia-smi topo -p2p w", on=_BOTH, description="driver-reported P2P write capability"),
    Command("proc_cmdline", "cat /proc/cmdline", description="kernel boot parameters (iommu=, amd_iommu=, intel_iommu=)"),
    Command("sys_iommu_groups", "ls /sys/kernel/iommu_groups | wc -l; cat /sys/kernel/iommu_groups/*/type 2>/dev/null | sort | uniq -c",
            description="IOMMU group count and domain types (DMA = translated, identity = passthrough)"),
    Command("lspci_acsctl", "lspci -vvv 2>/dev/null | grep -E '^[0-9a-f]|ACSCtl'", needs_root=True,
            description="ACS control bits of every PCIe function (redirect forces P2P through the root complex)"),
    Command("cpuinfo_id", "grep -m4 -E '^(vendor_id|cpu family|model|model name)' /proc/cpuinfo",
            description="CPU vendor (NCCL's P2P cutoff differs); same line as the kernel probe's"),
    Command("engine_procs", ENGINE_PROCS_SHELL, on=_BOTH,
            description="serving engine processes: command line, NCCL/CUDA environment, mapped libnccl"),
    Command("ldconfig_nccl", "ldconfig -p 2>/dev/null | grep -i libnccl || echo none", on=_BOTH,
            description="system libnccl copies"),
    Command("pyenv", PYENV_SHELL, on=_BOTH, timeout_s=60,
            description="the engine's Python: torch build, arch list, bundled NCCL (no CUDA context created)"),
    Command("engine_logs", ENGINE_LOGS_SHELL, on=_BOTH, timeout_s=60,
            description="the engine's log (its stdout file or its systemd unit's journal): NCCL INFO transport lines, "
                        "throughput lines"),
    Command("nccl_all_reduce_perf", ALL_REDUCE_SHELL, timeout_s=180, active=True,
            description="ACTIVE, load-generating: nccl-tests all_reduce_perf 8 B..256 MiB over all GPUs "
                        "(skipped when any GPU has under 4 GiB free)"),
)
