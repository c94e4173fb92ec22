"""The container probe's rows of the catalogue: one per PROBES.md `container.*` check.

Host-vs-container checks are `cross` rows (judged once both targets were reached, unknown when either was not);
a source declared on the host only (proc_devices, pve_lxc_confs) is required on the host only.
"""

from __future__ import annotations

from gpuaudit.probes.container import checks_devices as dev
from gpuaudit.probes.container import checks_gpus as gpu
from gpuaudit.probes.container import checks_limits as lim
from gpuaudit.probes.core.judge.checks import BOTH, CONTAINER, HOST, Check

CHECKS: tuple[Check, ...] = (
    Check("container.detect", "Container detection", "host",
          "Selects which LXC/Docker checks apply.",
          "Nothing to fix; if the kind is unknown, name it in the target (--container pct:ID, lxc:NAME or docker:NAME).",
          dev.detect, roles=BOTH, cross=True),
    Check("container.lxc_privilege", "LXC privilege", "host",
          "Both work; unprivileged containers see host device nodes as nobody:nogroup, so the nodes must be world "
          "read-write (0666) on the host or gid-mapped.",
          "Nothing to fix by itself; for an unprivileged container make the NVIDIA nodes 0666 on the host or map their group.",
          dev.lxc_privilege,
          sources=("uid_map",), roles=BOTH, cross=True, applies=dev.not_lxc),
    Check("container.device_cgroup", "Container's cgroup allow-list covers every NVIDIA device", "host",
          "CUDA needs nvidiactl, the GPU's nvidiaN and nvidia-uvm; the uvm and caps majors are dynamic.",
          "Allow every NVIDIA major from the host's /proc/devices, or use PVE 8.1+ devN: entries.", dev.device_cgroup,
          sources=("pve_lxc_confs", "proc_devices"), roles=HOST, applies=dev.device_cgroup_applies, needs_gpu=True),
    Check("container.device_major_match", "Container device majors match the host's", "host",
          "A rule or node written for another boot or driver silently stops matching.",
          "Re-derive the majors from the host's /proc/devices (or switch to devN: entries).", dev.device_major_match,
          sources=("proc_devices", "dev_nvidia"), roles=BOTH, cross=True, needs_gpu=True),
    Check("container.device_nodes", "Container has every NVIDIA device node", "host",
          "CUDA needs nvidiactl, nvidia-uvm and the GPU's nvidiaN as character devices; an 'optional' bind mount silently "
          "skips a node missing on the host at container start (and create=file leaves an empty placeholder file).",
          "Load nvidia_uvm at boot and create its nodes before containers start (nvidia-modprobe -u -c0), then restart "
          "the container; or use devN: entries, which fail loudly.", dev.device_nodes,
          sources=("dev_nvidia",), roles=BOTH, cross=True, needs_gpu=True),
    Check("container.gpu_visibility", "Container GPUs are the host's, same indices", "host",
          "The container should see a subset of the host's GPUs, in the same order for index-based pinning.",
          "Check which host and container the audit points at; pin by UUID or set CUDA_DEVICE_ORDER=PCI_BUS_ID.",
          gpu.gpu_visibility, sources=("smi_gpu_ids",), roles=BOTH, cross=True, needs_gpu=True),
    Check("container.gpu_inventory_match", "Container sees the GPUs it should", "host",
          "An engine configured for more GPUs than it can see fails to start or runs with a smaller TP size.",
          "Pass every intended /dev/nvidiaN and restart the container.", gpu.gpu_inventory_match,
          roles=BOTH, cross=True, needs_gpu=True),
    Check("container.shm", "/dev/shm capacity", "container",
          "NCCL's SHM transport and PyTorch's cross-process tensors live in /dev/shm.",
          "Docker --ipc=host or --shm-size=16g; Kubernetes memory-backed emptyDir.", lim.shm,
          sources=("df_shm",), roles=CONTAINER, aliases=("nccl.shm_capacity",)),
    Check("container.shm_ipc", "Docker IPC mode", "container",
          "With --ipc=host the container's /dev/shm is the host's and its size is not a limit.",
          "docker run --ipc=host (or --shm-size=16g, see container.shm).", lim.shm_ipc,
          sources=("df_shm",), roles=BOTH, cross=True, applies=gpu.docker_only),
    Check("container.memlock", "Locked-memory limit", "container",
          "Verbs memory registration (GPUDirect RDMA / InfiniBand) pins host buffers.",
          "Docker --ulimit memlock=-1; LXC lxc.prlimit.memlock: unlimited.", lim.memlock,
          sources=("ulimit_a",), roles=CONTAINER),
    Check("container.cpu_quota", "CPU quota", "host",
          "A throttled cgroup stalls the engine's kernel-launching threads.", "Remove cpulimit / the quota.",
          lim.cpu_quota, roles=BOTH, cross=True),
    Check("container.memory_limit", "Container memory limit", "host",
          "Weight loading streams the checkpoint through the page cache charged to the container.",
          "Raise the container's memory (PVE memory:, docker --memory) above the model's load footprint.",
          lim.memory_limit, roles=BOTH, cross=True),
    Check("container.limits_vs_model", "Container CPUs vs GPU ranks", "host",
          "1-2 dedicated cores per GPU rank plus the API/scheduler process.", "Give the container more cores.",
          lim.limits_vs_model, roles=BOTH, cross=True),
    Check("container.userspace_driver", "Container user-space driver", "container",
          "LXC does not inject libcuda; Docker's NVIDIA toolkit does.",
          "Install the host's driver version with --no-kernel-module, or bind-mount the host libraries.",
          gpu.userspace_driver, sources=("libcuda_files",), roles=CONTAINER, needs_gpu=True),
    Check("container.docker_gpu_runtime", "Docker GPU runtime", "container",
          "Without a device request and the NVIDIA runtime no GPU nodes or driver libraries are injected.",
          "docker run --gpus all (or runtime: nvidia, NVIDIA_DRIVER_CAPABILITIES=compute,utility).", gpu.docker_gpu_runtime,
          sources=("dev_nvidia",), roles=CONTAINER, applies=gpu.docker_only, needs_gpu=True),
    Check("container.nofile", "Open-file limit", "container",
          "Many concurrent HTTP/SSE streams plus model shards need file descriptors.", "LimitNOFILE= or lxc.prlimit.nofile.",
          lim.nofile, sources=("ulimit_a",), roles=CONTAINER),
)
