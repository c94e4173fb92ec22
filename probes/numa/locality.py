"""Which NUMA node each GPU and each engine worker sits on (pure helpers shared by the checks and the summary)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpuaudit.probes.core.models import Role
from gpuaudit.probes.numa.facts import EngineWorker, NumaFacts


def ranges(nums: list[int] | tuple[int, ...]) -> str:
    """[0,1,2,3,8] -> "0-3,8" (the kernel's cpulist notation)."""
    s = sorted(set(nums))
    if not s:
        return "(none)"
    out: list[str] = []
    start = prev = s[0]
    for n in s[1:]:
        if n == prev + 1:
            prev = n
            continue
        out.append(f"{start}-{prev}" if prev != start else str(start))
        start = prev = n
    out.append(f"{start}-{prev}" if prev != start else str(start))
    return ",".join(out)


def gpu_nodes(host: NumaFacts) -> dict[str, int | None]:
    """bus id -> NUMA node of every host GPU (nvidia-smi list, else every nvidia-bound device)."""
    if host.gpus:
        return {
            g.bus_id: (
                g.numa_node if g.numa_node is not None else (host.gpu_numa or {}).get(g.bus_id)
            )
            for g in host.gpus
        }
    return dict((host.gpu_numa or {}).items())


def gpu_label(host: NumaFacts, bdf: str) -> str:
    for g in host.gpus or []:
        if g.bus_id == bdf and g.index is not None:
            return f"GPU{g.index} ({bdf})"
    return bdf


def used_gpus(host: NumaFacts, ctr: NumaFacts) -> tuple[dict[str, int | None], str]:
    """The container's GPUs with their host NUMA node (all host GPUs when the container's list was not read)."""
    hn = gpu_nodes(host)
    if ctr.gpus:
        return {g.bus_id: hn.get(g.bus_id) for g in ctr.gpus}, "the container's GPUs"
    return hn, "all host GPUs (the container's GPU list was not read)"


@dataclass(frozen=True)
class Worker:
    """An engine worker with its GPU's NUMA node and the CPUs local to it."""

    w: EngineWorker
    label: str
    node: int | None = None
    local: list[int] = field(default_factory=list)


def workers(facts: Mapping[Role, NumaFacts]) -> tuple[Role | None, list[Worker]]:
    """Engine workers with their GPU's node: host PIDs mapped by nvidia-smi first (exact), else the
    container's ranks (TP<n> -> the container's GPU n, assuming CUDA_VISIBLE_DEVICES keeps the order)."""
    host = facts["host"]
    nodes = gpu_nodes(host)
    node_cpus = {n.id: n.cpus for n in host.nodes or []}

    def resolve(bdf: str | None, w: EngineWorker, role: Role) -> Worker:
        node = nodes.get(bdf) if bdf else None
        g = next((g for g in host.gpus or [] if g.bus_id == bdf), None)
        local = (
            (g.local_cpus if g and g.local_cpus else node_cpus.get(node, []))
            if node is not None and node >= 0
            else []
        )
        name = f"TP{w.rank}" if w.rank is not None else (w.cmd.split()[0] if w.cmd else "process")
        gpu = gpu_label(host, bdf) if bdf else "GPU unknown"
        return Worker(
            w=w,
            label=f"{role} pid {w.pid} {name} ({gpu}{f', node {node}' if node is not None else ''})",
            node=node if node is not None and node >= 0 else None,
            local=local,
        )

    by_uuid = {g.uuid: g.bus_id for g in host.gpus or [] if g.uuid}
    hw = [w for w in host.engine_workers or [] if w.gpu_uuid]
    if hw:
        return "host", [resolve(by_uuid.get(w.gpu_uuid or ""), w, "host") for w in hw]
    for role in ("container", "host"):
        f = facts.get(role)
        if f is None or not f.engine_workers:
            continue
        gpus = f.gpus if f.gpus else host.gpus or []
        ranked = [w for w in f.engine_workers if w.rank is not None]
        if ranked:
            by_idx = {g.index: g.bus_id for g in gpus if g.index is not None}
            return role, [resolve(by_idx.get(w.rank), w, role) for w in ranked]  # type: ignore[arg-type]
        return role, [resolve(None, w, role) for w in f.engine_workers]
    return None, []
