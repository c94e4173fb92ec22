"""The container probe's id and the read-only commands it declares."""

from __future__ import annotations

from probes.core.models import Role
from probes.core.parsers.nvidia_smi import SMI_GPU_IDS
from probes.core.parsers.system import CGROUP_FILES
from probes.core.spec import Command

PROBE_ID = "container"

ON_BOTH: frozenset[Role] = frozenset({"host", "container"})
ON_CTR: frozenset[Role] = frozenset({"container"})
COMMANDS = (
    Command("virt", "systemd-detect-virt -c", on=ON_BOTH),
    Command("pve_lxc_confs", "grep -H . /etc/pve/lxc/*.conf", needs_root=True,
            description="every container config on a Proxmox host (the container's own id is matched in judge)"),
    Command("proc_devices", "cat /proc/devices"),
    Command("dev_nvidia", "ls -l /dev/nvidia*", on=ON_BOTH),
    Command("smi_gpu_ids", SMI_GPU_IDS, on=ON_BOTH),
    Command("df_shm", "df -h /dev/shm", on=ON_BOTH),
    Command("uname_n", "uname -n", on=ON_CTR),
    Command("proc_self_cgroup", "cat /proc/self/cgroup", on=ON_CTR),
    Command("uid_map", "cat /proc/self/uid_map", on=ON_CTR),
    Command("ulimit_a", "ulimit -a", on=ON_CTR),
    Command("cgroup_limits", CGROUP_FILES, on=ON_CTR),
    Command("dev_infiniband", "ls /dev/infiniband", on=ON_CTR),
    Command("libcuda_files", "ls /usr/lib/x86_64-linux-gnu/libcuda.so.* /usr/lib64/libcuda.so.* /usr/lib/aarch64-linux-gnu/libcuda.so.*",
            on=ON_CTR),
)
