"""Typed facts of the NUMA probe (JSON-serialisable; no I/O)."""

from __future__ import annotations

from gpuaudit.probes.core.record import Record


class NodeInfo(Record, frozen=True):
    id: int
    cpus: list[int] = []
    size_mb: int | None = None


class GpuInfo(Record, frozen=True):
    index: int | None = None
    uuid: str | None = None
    bus_id: str
    """Normalised "0000:01:00.0"."""
    numa_node: int | None = None
    local_cpus: list[int] = []


class EngineWorker(Record, frozen=True):
    """One engine process from `engine_proc_status`: where it may run and where its memory lives."""

    pid: int
    cmd: str = ""
    rank: int | None = None
    gpu_uuid: str | None = None
    """From nvidia-smi compute apps (host PIDs only)."""
    cpus: list[int] | None = None
    numa_kb: dict[int, int] | None = None


class NumaFacts(Record, frozen=True):
    nodes: list[NodeInfo] | None = None
    node_free_mb: dict[int, int] | None = None
    """node id -> free MB from numactl -H (volatile: changes on an unchanged machine)."""
    distances: dict[int, dict[int, int]] = {}
    gpus: list[GpuInfo] | None = None
    """GPUs this target's nvidia-smi lists (with sysfs NUMA data on the host)."""
    gpu_numa: dict[str, int] | None = None
    """Host only: bus id -> numa_node from sysfs (every device bound to the nvidia driver)."""
    cpuset_cpus: list[int] | None = None
    cpuset_mems: list[int] | None = None
    cpuset_source: str | None = None
    engine_workers: list[EngineWorker] | None = None
    """Engine processes (None = not read; [] = no engine running). Volatile (pids, resident pages)."""
    problems: dict[str, str] = {}
