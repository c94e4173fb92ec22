"""The container probe's id and the read-only commands it declares."""

from __future__ import annotations

from gpuaudit.probes.core.models import Role
from gpuaudit.probes.core.parsers.nvidia_smi import SMI_GPU_IDS  # noqa: F401  (re-exported)
from gpuaudit.probes.core.parsers.system import CGROUP_FILES  # noqa: F401  (re-exported)
from gpuaudit.probes.core.sources import use

PROBE_ID = "container"

ON_BOTH: frozenset[Role] = frozenset({"host", "container"})
ON_CTR: frozenset[Role] = frozenset({"container"})
COMMANDS = (
    use('virt', 'dev_nvidia', 'smi_gpu_ids', 'df_shm') + use('pve_lxc_confs', 'proc_devices') +
    use('uname_n', 'proc_self_cgroup', 'uid_map', 'ulimit_a', 'cgroup_limits', 'dev_infiniband', 'libcuda_files')
)
