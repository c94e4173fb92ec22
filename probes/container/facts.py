"""Typed facts of the container probe: LXC configs, device nodes, GPUs, limits."""

from __future__ import annotations

from pydantic import BaseModel


class Rule(BaseModel, frozen=True):
    type: str
    major: int | None = None
    minor: int | None = None
    v1: bool = False

    def covers(self, major: int) -> bool:
        return self.type == "a" or (self.type == "c" and (self.major is None or self.major == major))

    def label(self) -> str:
        if self.type == "a":
            return "a"
        return f"{self.type} {'*' if self.major is None else self.major}:{'*' if self.minor is None else self.minor}"


class CtConfig(BaseModel, frozen=True):
    vmid: str
    hostname: str | None = None
    unprivileged: bool = False
    cores: int | None = None
    cpulimit: float | None = None
    memory_mb: int | None = None
    rules: list[Rule] = []
    mount_sources: list[str] = []
    optional_mounts: list[str] = []
    dev_paths: list[str] = []
    prlimit_memlock: str | None = None

    @property
    def nvidia_paths(self) -> list[str]:
        return [p for p in self.mount_sources + self.dev_paths if p.startswith("/dev/nvidia")]

    @property
    def has_nvidia(self) -> bool:
        return bool(self.nvidia_paths) or any(r.major == 195 for r in self.rules)


class Node(BaseModel, frozen=True):
    path: str
    kind: str
    major: int | None = None
    minor: int | None = None
    mode: str = ""


class Gpu(BaseModel, frozen=True):
    index: int | None = None
    uuid: str | None = None
    bus_id: str = ""


class ContainerFacts(BaseModel, frozen=True):
    virt: str | None = None
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
