"""The NCCL probe's id and the commands it declares (one ACTIVE, load-generating)."""

from __future__ import annotations

from gpuaudit.probes.core.models import Role
from gpuaudit.probes.core.sources import use

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
    use('smi_gpu_cc', 'smi_topo_m', 'smi_topo_p2p_r', 'smi_topo_p2p_w', 'engine_procs', 'ldconfig_nccl',
    'pyenv', 'engine_logs') + use('proc_cmdline', 'sys_iommu_groups', 'lspci_acsctl', 'cpuinfo_id',
    'nccl_all_reduce_perf')
)
