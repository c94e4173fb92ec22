"""The container probe's rows of the catalogue: one per PROBES.md `container.*` check.

Host-vs-container checks are `cross` rows (judged once both targets were reached, unknown when either was not);
a source declared on the host only (proc_devices, pve_lxc_confs) is required on the host only.
"""

from __future__ import annotations

from gpuaudit.probes.container import checks_devices as dev
from gpuaudit.probes.container import checks_gpus as gpu
from gpuaudit.probes.container import checks_limits as lim
from gpuaudit.probes.core.judge.checks import BOTH, CONTAINER, HOST, Check, Message

_MEMLOCK_WHY = (
    "NCCL pairs shm with memlock=-1: verbs memory registration (GPUDirect RDMA / "
    "InfiniBand) pins host buffers; single-node PCIe traffic barely depends on "
    "it. The engine inherits the limit of whatever starts it (systemd unit, ssh "
    "session)."
)

_MEMLOCK_FIX = (
    "Docker --ulimit memlock=-1; LXC lxc.prlimit.memlock: unlimited; systemd LimitMEMLOCK=infinity."
)


CHECKS: tuple[Check, ...] = (
    Check(
        "container.detect",
        "Container detection",
        "host",
        "Selects which LXC/Docker checks apply.",
        "Nothing to fix; if the kind is unknown, name it in the target (--container pct:ID, lxc:NAME or docker:NAME).",
        dev.detect,
        roles=BOTH,
        cross=True,
        optional=(
            ("container", "uname_n"),
            ("container", "proc_self_cgroup"),
            ("container", "virt"),
            ("host", "pve_lxc_confs"),
        ),
    ),
    Check(
        "container.lxc_privilege",
        "LXC privilege",
        "host",
        "Both work; unprivileged containers see host device nodes as nobody:nogroup, so the nodes must be world "
        "read-write (0666) on the host or gid-mapped.",
        "Nothing to fix by itself; for an unprivileged container make the NVIDIA nodes 0666 on the host or map their group.",
        dev.lxc_privilege,
        sources=("uid_map",),
        roles=BOTH,
        cross=True,
        applies=dev.not_lxc,
        optional=(
            ("container", "uname_n"),
            ("container", "proc_self_cgroup"),
            ("host", "pve_lxc_confs"),
        ),
    ),
    Check(
        "container.device_cgroup",
        "Container's cgroup allow-list covers every NVIDIA device",
        "host",
        "CUDA needs nvidiactl, the GPU's nvidiaN and nvidia-uvm; the uvm and caps majors are dynamic.",
        "Allow every NVIDIA major from the host's /proc/devices, or use PVE 8.1+ devN: entries.",
        dev.device_cgroup,
        sources=("pve_lxc_confs", "proc_devices"),
        roles=HOST,
        applies=dev.device_cgroup_applies,
        needs_gpu=True,
        optional=(("container", "uname_n"), ("container", "proc_self_cgroup")),
        variants={
            "allow_list_blocks_nvidia": Message(
                title="Container's cgroup allow-list blocks NVIDIA devices",
                why=(
                    "CUDA needs nvidiactl (195:255), the GPU's nvidiaN (195:N) and nvidia-uvm; "
                    "the uvm and caps majors are assigned dynamically at module load, so an "
                    "allow-list must match this host's /proc/devices, minor by minor where it "
                    "names minors."
                ),
                fix=(
                    "Allow every NVIDIA major from the host's /proc/devices "
                    "(lxc.cgroup2.devices.allow: c <major>:* rwm), or use PVE 8.1+ devN: "
                    "/dev/nvidia0 ... /dev/nvidia-uvm entries, which create the rule for you."
                ),
            ),
            "allow_list_incomplete_caps": Message(
                title="Container's cgroup allow-list is incomplete",
                why=(
                    "CUDA needs nvidiactl (195:255), the GPU's nvidiaN (195:N) and nvidia-uvm; "
                    "the uvm and caps majors are assigned dynamically at module load, so an "
                    "allow-list must match this host's /proc/devices, minor by minor where it "
                    "names minors. nvidia-caps is only needed for MIG/IMEX/capability-gated "
                    "features."
                ),
                fix=(
                    "Allow every NVIDIA major from the host's /proc/devices "
                    "(lxc.cgroup2.devices.allow: c <major>:* rwm), or use PVE 8.1+ devN: "
                    "/dev/nvidia0 ... /dev/nvidia-uvm entries, which create the rule for you."
                ),
            ),
            "container_allows_all_devices": Message(
                title="Container allows all devices",
                why=(
                    "'a' lets the container open any host device, which is broader than GPU "
                    "passthrough needs."
                ),
                fix="Replace 'a' with the NVIDIA majors (or devN entries) if isolation matters.",
            ),
        },
    ),
    Check(
        "container.device_major_match",
        "Container device majors match the host's",
        "host",
        "A rule or node written for another boot or driver silently stops matching.",
        "Re-derive the majors from the host's /proc/devices (or switch to devN: entries).",
        dev.device_major_match,
        sources=("proc_devices", "dev_nvidia"),
        roles=BOTH,
        cross=True,
        needs_gpu=True,
        optional=(
            ("container", "proc_self_cgroup"),
            ("container", "uname_n"),
            ("host", "pve_lxc_confs"),
        ),
        variants={
            "container_device_majors_match_host": Message(
                title="Container device majors match the host"
            ),
            "container_device_majors_do_not": Message(
                title="Container device majors do not match the host's",
                why=(
                    "nvidia-uvm and nvidia-caps majors are dynamic: a rule or node written for "
                    "another boot or driver (511 vs 510, 236 vs 235) silently stops matching and "
                    "CUDA then fails to initialise in the container."
                ),
                fix=(
                    "Re-derive the majors from the host's /proc/devices (or switch to devN: "
                    "entries) and restart the container."
                ),
            ),
            "stale_device_major_container_allow": Message(
                title="Stale device major in a container allow-list",
                why=(
                    "nvidia-uvm and nvidia-caps majors are dynamic: a rule or node written for "
                    "another boot or driver (511 vs 510, 236 vs 235) silently stops matching and "
                    "CUDA then fails to initialise in the container. Today another rule covers "
                    "it."
                ),
                fix=(
                    "Re-derive the majors from the host's /proc/devices (or switch to devN: "
                    "entries) and restart the container."
                ),
            ),
        },
    ),
    Check(
        "container.device_nodes",
        "Container has every NVIDIA device node",
        "host",
        "CUDA needs nvidiactl, nvidia-uvm and the GPU's nvidiaN as character devices; an 'optional' bind mount silently "
        "skips a node missing on the host at container start (and create=file leaves an empty placeholder file).",
        "Load nvidia_uvm at boot and create its nodes before containers start (nvidia-modprobe -u -c0), then restart "
        "the container; or use devN: entries, which fail loudly.",
        dev.device_nodes,
        sources=("dev_nvidia",),
        roles=BOTH,
        cross=True,
        needs_gpu=True,
        optional=(
            ("container", "uname_n"),
            ("container", "proc_self_cgroup"),
            ("container", "uid_map"),
            ("host", "pve_lxc_confs"),
        ),
        variants={
            "container_has_every_nvidia_device": Message(
                title="Container has every NVIDIA device node"
            ),
            "container_lacks": Message(title="Container lacks {short}"),
            "unprivileged_container_device_nodes_not": Message(
                title="Unprivileged container with device nodes not world read-write",
                why=(
                    "Inside an unprivileged container the nodes belong to nobody:nogroup; "
                    "without o+rw CUDA fails with permission errors."
                ),
                fix=(
                    "chmod 0666 the nodes on the host via a udev rule, or devN: ...,mode=0666, "
                    "or map the group (lxc.idmap)."
                ),
            ),
            "container_lacks_nvidia_uvm_tools": Message(
                title="Container lacks nvidia-uvm-tools (profilers only)",
                why="nvidia-uvm-tools is used by profilers, not by inference.",
            ),
        },
    ),
    Check(
        "container.gpu_visibility",
        "Container GPUs are the host's, same indices",
        "host",
        "The container should see a subset of the host's GPUs, in the same order for index-based pinning.",
        "Check which host and container the audit points at; pin by UUID or set CUDA_DEVICE_ORDER=PCI_BUS_ID.",
        gpu.gpu_visibility,
        sources=("smi_gpu_ids",),
        roles=BOTH,
        cross=True,
        needs_gpu=True,
        variants={
            "container_gpus_host_same_indices": Message(
                title="Container GPUs are the host's, same indices"
            ),
            "container_sees_gpus_host_does": Message(
                title="Container sees GPUs the host does not list",
                why="The container target is probably not on this host (or a VM with its own GPUs).",
                fix="Check which host and container the audit points at.",
            ),
            "gpu_indices_differ_between_host": Message(
                title="GPU indices differ between host and container",
                why=(
                    "Index-based pinning (CUDA_VISIBLE_DEVICES, NUMA binding) then refers to "
                    "different boards."
                ),
                fix="Set CUDA_DEVICE_ORDER=PCI_BUS_ID or pin by UUID.",
            ),
        },
    ),
    Check(
        "container.gpu_inventory_match",
        "Container sees the GPUs it should",
        "host",
        "An engine configured for more GPUs than it can see fails to start or runs with a smaller TP size.",
        "Pass every intended /dev/nvidiaN and restart the container.",
        gpu.gpu_inventory_match,
        roles=BOTH,
        cross=True,
        needs_gpu=True,
        optional=(
            ("container", "uname_n"),
            ("container", "proc_self_cgroup"),
            ("host", "pve_lxc_confs"),
            ("host", "smi_gpu_ids"),
            ("container", "smi_gpu_ids"),
        ),
        variants={
            "container_sees_all_expected_gpu": Message(
                title="Container sees all {want} expected GPU(s)"
            ),
            "nvidia_smi_fails_inside_container": Message(
                title="nvidia-smi fails inside the container",
                why="If NVML cannot open the devices the serving engine cannot either.",
                fix="See container.device_nodes / device_cgroup and driver.userspace_match.",
            ),
            "container_sees_gpus": Message(
                title="Container sees {n_gpus} of {want} GPUs",
                why=(
                    "An engine configured for more GPUs than it can see fails to start or "
                    "silently runs with a smaller tensor-parallel size."
                ),
                fix=(
                    "Pass every intended /dev/nvidiaN (mount entries or devN:) and restart the "
                    "container."
                ),
            ),
        },
    ),
    Check(
        "container.shm",
        "/dev/shm capacity",
        "container",
        "NCCL's SHM transport and PyTorch's cross-process tensors live in /dev/shm.",
        "Docker --ipc=host or --shm-size=16g; Kubernetes memory-backed emptyDir.",
        lim.shm,
        sources=("df_shm",),
        roles=CONTAINER,
        aliases=("nccl.shm_capacity",),
        optional=(
            ("container", "smi_gpu_ids"),
            ("host", "df_shm"),
        ),
        variants={
            "dev_shm": Message(title="/dev/shm {gib}"),
            "dev_shm_single_gpu": Message(
                title="/dev/shm: single GPU", why="Only multi-GPU (TP/PP > 1) needs large /dev/shm."
            ),
            "dev_shm_only": Message(
                title="/dev/shm is only {gib}",
                why=(
                    "NCCL's shared-memory transport and PyTorch's cross-process tensors live in "
                    "/dev/shm; when it cannot grow NCCL fails ('failed to extend "
                    "/dev/shm/nccl-...') or the engine crashes with bus errors."
                ),
                fix=(
                    "Docker: --ipc=host or --shm-size=16g; Kubernetes: memory-backed emptyDir on "
                    "/dev/shm; LXC: tmpfs sized from container RAM."
                ),
            ),
            "dev_shm_is": Message(
                title="/dev/shm is {gib}",
                why=(
                    "NCCL's shared-memory transport and PyTorch's cross-process tensors live in "
                    "/dev/shm; when it cannot grow NCCL fails ('failed to extend "
                    "/dev/shm/nccl-...') or the engine crashes with bus errors."
                ),
                fix=(
                    "Docker: --ipc=host or --shm-size=16g; Kubernetes: memory-backed emptyDir on "
                    "/dev/shm; LXC: tmpfs sized from container RAM."
                ),
            ),
        },
    ),
    Check(
        "container.shm_ipc",
        "Docker IPC mode",
        "container",
        "With --ipc=host the container's /dev/shm is the host's and its size is not a limit.",
        "docker run --ipc=host (or --shm-size=16g, see container.shm).",
        lim.shm_ipc,
        sources=("df_shm",),
        roles=BOTH,
        cross=True,
        applies=gpu.docker_only,
        variants={
            "container_has_own_dev_shm": Message(
                title="Container has its own /dev/shm (private IPC)"
            ),
            "container_shares_host_dev_shm": Message(
                title="Container shares the host's /dev/shm (IPC host)",
                why=(
                    "With --ipc=host df shows the host's /dev/shm: that is the intended "
                    "configuration."
                ),
            ),
        },
    ),
    Check(
        "container.memlock",
        "Locked-memory limit",
        "container",
        "Verbs memory registration (GPUDirect RDMA / InfiniBand) pins host buffers.",
        "Docker --ulimit memlock=-1; LXC lxc.prlimit.memlock: unlimited.",
        lim.memlock,
        sources=("ulimit_a",),
        roles=CONTAINER,
        variants={
            "limited_no_rdma": Message(
                title="Locked memory limited to {memlock_kb} kB (no RDMA)",
                why=_MEMLOCK_WHY,
                fix=_MEMLOCK_FIX,
            ),
            "locked_memory_unlimited": Message(title="Locked memory unlimited"),
            "limited_with_rdma": Message(
                title="Locked memory limited to {memlock_kb} kB with RDMA devices present",
                why=_MEMLOCK_WHY,
                fix=_MEMLOCK_FIX,
            ),
        },
    ),
    Check(
        "container.cpu_quota",
        "CPU quota",
        "host",
        "A throttled cgroup stalls the engine's kernel-launching threads.",
        "Remove cpulimit / the quota.",
        lim.cpu_quota,
        roles=BOTH,
        cross=True,
        optional=(
            ("container", "cgroup_limits"),
            ("container", "proc_self_cgroup"),
            ("container", "uname_n"),
            ("host", "pve_lxc_confs"),
        ),
        variants={
            "cpu_quota_set_little_throttling": Message(
                title="CPU quota set, little throttling so far",
                why=(
                    "The engine's scheduler and per-GPU workers launch kernels every few ms; a "
                    "throttled cgroup stalls them for the rest of the CFS period, which shows as "
                    "token-latency jitter while the GPUs wait."
                ),
                fix=(
                    "Sample cpu.stat nr_throttled twice while serving; remove the quota if it "
                    "grows."
                ),
            ),
            "no_quota_proxmox_checked": Message(
                title="No CPU quota",
                why=(
                    "Proxmox sets cpulimit on the parent /lxc/<id> cgroup, invisible from "
                    "inside; the config was checked too."
                ),
            ),
            "no_quota": Message(title="No CPU quota"),
            "cpu_quota_throttled_container_periods": Message(
                title="CPU quota throttled the container in {throttled_pct:.1f}% of periods",
                why=(
                    "The engine's scheduler and per-GPU workers launch kernels every few ms; a "
                    "throttled cgroup stalls them for the rest of the CFS period, which shows as "
                    "token-latency jitter while the GPUs wait."
                ),
                fix=(
                    "Remove cpulimit / the quota, give enough cores, or pin with "
                    "lxc.cgroup2.cpuset.cpus."
                ),
            ),
        },
    ),
    Check(
        "container.memory_limit",
        "Container memory limit",
        "host",
        "Weight loading streams the checkpoint through the page cache charged to the container.",
        "Raise the container's memory (PVE memory:, docker --memory) above the model's load footprint.",
        lim.memory_limit,
        roles=BOTH,
        cross=True,
        optional=(
            ("container", "cgroup_limits"),
            ("container", "proc_self_cgroup"),
            ("container", "uname_n"),
            ("host", "pve_lxc_confs"),
        ),
        variants={
            "container_memory_limit": Message(
                title="Container memory limit",
                why=(
                    "Model loading through the page cache is throttled by a tight limit (slow "
                    "restarts)."
                ),
            ),
            "oom_kill_container_cgroup": Message(
                title="{oom_kills} OOM kill(s) in the container's cgroup",
                why=(
                    "Weight loading streams the checkpoint through the page cache charged to the "
                    "container; at the limit processes get killed."
                ),
                fix="Raise the container's memory (PVE memory:) or reduce CPU-side caches/offload.",
            ),
        },
    ),
    Check(
        "container.limits_vs_model",
        "Container CPUs vs GPU ranks",
        "host",
        "1-2 dedicated cores per GPU rank plus the API/scheduler process.",
        "Give the container more cores.",
        lim.limits_vs_model,
        roles=BOTH,
        cross=True,
        optional=(
            ("container", "cgroup_limits"),
            ("container", "proc_self_cgroup"),
            ("container", "smi_gpu_ids"),
            ("container", "uname_n"),
            ("host", "pve_lxc_confs"),
        ),
        variants={
            "enough_cpus_gpu_ranks": Message(title="Enough CPUs for the GPU ranks"),
            "cpus_gpu_ranks": Message(
                title="{cpus:g} CPUs for {ranks} GPU ranks",
                why=(
                    "Each rank's CPU thread launches kernels and runs NCCL proxies; too few "
                    "cores serialise them and the GPUs wait."
                ),
                fix="Give the container more cores (PVE cores:/cpulimit:, cpuset).",
            ),
        },
    ),
    Check(
        "container.userspace_driver",
        "Container user-space driver",
        "container",
        "LXC does not inject libcuda; Docker's NVIDIA toolkit does.",
        "Install the host's driver version with --no-kernel-module, or bind-mount the host libraries.",
        gpu.userspace_driver,
        sources=("libcuda_files",),
        roles=CONTAINER,
        needs_gpu=True,
        variants={
            "container_libcuda": Message(title="Container libcuda {versions}"),
            "no_libcuda_so_container_library": Message(
                title="No libcuda.so in the container's library paths",
                why=(
                    "LXC does not inject the user-space driver; without libcuda the CUDA runtime "
                    "cannot start (unless installed elsewhere)."
                ),
                fix=(
                    "Install the same driver version in the container with --no-kernel-module, "
                    "or bind-mount the host libraries."
                ),
            ),
        },
    ),
    Check(
        "container.docker_gpu_runtime",
        "Docker GPU runtime",
        "container",
        "Without a device request and the NVIDIA runtime no GPU nodes or driver libraries are injected.",
        "docker run --gpus all (or runtime: nvidia, NVIDIA_DRIVER_CAPABILITIES=compute,utility).",
        gpu.docker_gpu_runtime,
        sources=("dev_nvidia",),
        roles=CONTAINER,
        applies=gpu.docker_only,
        needs_gpu=True,
        variants={
            "docker_container_has_gpus": Message(title="Docker container has GPUs"),
            "docker_container_has_no_gpu": Message(
                title="Docker container has no GPU devices",
                why=(
                    "Without a device request and the NVIDIA runtime no GPU nodes or driver "
                    "libraries are injected."
                ),
                fix=(
                    "docker run --gpus all (or runtime: nvidia, "
                    "NVIDIA_DRIVER_CAPABILITIES=compute,utility)."
                ),
            ),
            "docker_container_sees_no_gpu": Message(
                title="Docker container sees no GPU",
                fix="Check NVIDIA_VISIBLE_DEVICES / --gpus and the toolkit's runtime configuration.",
            ),
            "docker_gpu_capabilities_lack_utility": Message(
                title="Docker GPU capabilities lack 'utility'",
                fix="NVIDIA_DRIVER_CAPABILITIES=compute,utility (or all).",
            ),
        },
    ),
    Check(
        "container.nofile",
        "Open-file limit",
        "container",
        "Many concurrent HTTP/SSE streams plus model shards need file descriptors.",
        "LimitNOFILE= or lxc.prlimit.nofile.",
        lim.nofile,
        sources=("ulimit_a",),
        roles=CONTAINER,
        variants={
            "nofile_enough": Message(title="Open-file limit"),
            "nofile_low": Message(
                title="Open-file limit {nofile}",
                why="Many concurrent HTTP/SSE streams plus model shards need file descriptors.",
                fix="LimitNOFILE= in the engine's unit, or lxc.prlimit.nofile.",
            ),
        },
    ),
)
