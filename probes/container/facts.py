"""Typed facts of the container probe: LXC configs, device nodes, GPUs, limits, the container's kind."""

from __future__ import annotations

import re

from gpuaudit.probes.core.record import Record


class Rule(Record, frozen=True):
    """One cgroup device allow-list entry: `c 195:* rwm`; None = `*`."""

    type: str
    major: int | None = None
    minor: int | None = None
    v1: bool = False

    def covers(self, major: int, minor: int | None = None) -> bool:
        """Whether the rule lets the container open device major:minor (minor None = any minor of it)."""
        if self.type == "a":
            return True
        if self.type != "c" or (self.major is not None and self.major != major):
            return False
        return self.minor is None or minor is None or self.minor == minor

    def label(self) -> str:
        if self.type == "a":
            return "a"
        return f"{self.type} {'*' if self.major is None else self.major}:{'*' if self.minor is None else self.minor}"


class CtConfig(Record, frozen=True):
    vmid: str
    hostname: str | None = None
    unprivileged: bool = False
    cores: int | None = None
    cpulimit: float | None = None
    memory_mb: int | None = None
    rules: list[Rule] = []
    mount_sources: list[str] = []
    mount_targets: list[str] = []
    """Where each bind mount appears inside the container ("/dev/nvidia0"), whatever host folder it comes from."""
    optional_mounts: list[str] = []
    dev_paths: list[str] = []
    prlimit_memlock: str | None = None

    @property
    def nvidia_paths(self) -> list[str]:
        """Device paths the config passes, as seen inside the container."""
        paths = self.mount_targets + self.dev_paths + self.mount_sources
        return list(dict.fromkeys(p for p in paths if p.startswith("/dev/nvidia")))

    @property
    def gpu_minors(self) -> set[int]:
        return {
            int(m.group(1))
            for p in self.nvidia_paths
            if (m := re.fullmatch(r"/dev/nvidia(\d+)", p))
        }

    @property
    def has_nvidia(self) -> bool:
        return bool(self.nvidia_paths) or any(r.major == 195 for r in self.rules)


class Node(Record, frozen=True):
    path: str
    kind: str
    """First letter of the mode: "c" a character device; "-" a regular file (a placeholder, not a device)."""
    major: int | None = None
    minor: int | None = None
    mode: str = ""


class Gpu(Record, frozen=True):
    index: int | None = None
    uuid: str | None = None
    bus_id: str = ""


class ContainerFacts(Record, frozen=True):
    virt: str | None = None
    """systemd-detect-virt -c: "lxc", "docker", "none", ..."""
    wrapper_kind: str | None = None
    """The kind the target spec implies (pct:/lxc: -> "lxc", docker: -> "docker"), from the executed command line."""
    # host side
    is_pve: bool | None = None
    configs: dict[str, CtConfig] | None = None
    majors: dict[str, int] | None = None
    """NVIDIA char majors from /proc/devices: name -> major."""
    all_majors: list[int] | None = None
    # both
    nodes: list[Node] | None = None
    gpus: list[Gpu] | None = None
    smi_error: str | None = None
    """The error banner nvidia-smi printed instead of a GPU list (an answer: NVML cannot open the GPUs)."""
    shm_bytes: int | None = None
    shm_fs: str | None = None
    # container side
    hostname: str | None = None
    cgroup_version: str | None = None
    cgroup_lxc_id: str | None = None
    uid_map_unprivileged: bool | None = None
    memlock_kb: int | None = None
    """-1 = unlimited."""
    nofile: int | None = None
    cpuset_cpus: int | None = None
    cpu_quota_us: int | None = None
    cpu_period_us: int | None = None
    cpu_max_read: bool = False
    nr_periods: int | None = None
    nr_throttled: int | None = None
    memory_max: int | None = None
    memory_max_read: bool = False
    oom_kills: int | None = None
    infiniband: bool | None = None
    libcuda_versions: list[str] | None = None
    problems: dict[str, str] = {}

    @property
    def kind(self) -> str | None:
        """The container's kind: systemd-detect-virt when it names one, else what the target spec implies."""
        if self.virt and self.virt != "none":
            return self.virt
        return self.wrapper_kind

    def char_nodes(self) -> dict[str, Node]:
        """Device nodes that are character devices (the only ones CUDA can open), by path."""
        return {n.path: n for n in self.nodes or [] if n.kind == "c"}

    def placeholders(self) -> list[str]:
        """Paths that exist as regular files where a device node belongs (left by `create=file` bind mounts)."""
        return [n.path for n in self.nodes or [] if n.kind == "-"]
