"""Plain command lines that probes/core/sources.py declares and the parsers beside this module read.

Only text lives here: declaring the commands (sources.py, the catalogue an audit launches from) imports no parser,
so an audit's first commands leave before the parsers, facts and checks load (issue 30). The parsers re-export
the names they read (cpu.py, system.py, nvidia_smi.py), where their docstrings describe the output.
"""

from __future__ import annotations

CPU_DIR = _CPU = "/sys/devices/system/cpu"
# Command lines shared by the power and firmware probes (identical strings run once per target).
SYS_CPUIDLE_CMD = (
    f"grep -s -H . {_CPU}/cpuidle/current_driver {_CPU}/cpuidle/current_governor_ro "
    f"{_CPU}/cpu0/power/pm_qos_resume_latency_us {_CPU}/cpu0/cpuidle/state*/name {_CPU}/cpu0/cpuidle/state*/latency "
    f"{_CPU}/cpu0/cpuidle/state*/disable {_CPU}/cpu0/cpuidle/state*/usage; "
    "for n in /sys/devices/system/node/node[0-9]*; do c=$(ls -d $n/cpu[0-9]* 2>/dev/null | sort -V | tail -n 1); "
    '[ -n "$c" ] && grep -s -H . $c/cpuidle/state*/name $c/cpuidle/state*/latency $c/cpuidle/state*/disable '
    "$c/cpuidle/state*/usage; done; true"
)
SYS_CPPC_CMD = (
    f"grep -s -H . {_CPU}/cpu0/acpi_cppc/highest_perf {_CPU}/cpu0/acpi_cppc/nominal_perf "
    f"{_CPU}/cpu0/acpi_cppc/lowest_nonlinear_perf {_CPU}/cpu0/acpi_cppc/lowest_perf; true"
)

SMI_GPU_IDS = "nvidia-smi --query-gpu=index,uuid,pci.bus_id,name --format=csv,noheader"
"""Index, UUID and bus id of each GPU (numa, container): nvidia_smi.parse_smi_gpu_ids reads it."""

CGROUP_FILES = (
    "grep -H . /sys/fs/cgroup/cpuset.cpus.effective /sys/fs/cgroup/cpuset.mems.effective "
    "/sys/fs/cgroup/cpu.max /sys/fs/cgroup/memory.max /sys/fs/cgroup/cpu.stat /sys/fs/cgroup/memory.events"
)
"""The one command line reading a container's cgroup v2 limits (numa, container); `system.parse_cgroup_files`
reads it. grep exits 2 when a file is absent (no cpuset controller): see `spec.partial_grep_ok`."""
