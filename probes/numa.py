"""NUMA probe: topology, which node each GPU hangs off, node pressure, and the container's CPUs/memory vs its GPUs."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import BaseModel

from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.models import Finding, Role
from gpuaudit.probes.core.parsers.engine import parse_engine_status
from gpuaudit.probes.core.parsers.nvidia_smi import detect_smi_error, parse_smi_gpu_ids
from gpuaudit.probes.core.parsers.system import (
    parse_cgroup_files,
    parse_node_cpulists,
    parse_numactl_h,
    parse_pci_numa,
    parse_status_allowed,
)
from gpuaudit.probes.core.sources import use
from gpuaudit.probes.core.spec import (
    FactsByTarget,
    Outputs,
    Probe,
    finding,
    partial_grep_ok,
    problem_text,
    usable_stdout,
)

PROBE_ID = "numa"


class NodeInfo(BaseModel, frozen=True):
    id: int
    cpus: list[int] = []
    size_mb: int | None = None
    free_mb: int | None = None


class GpuInfo(BaseModel, frozen=True):
    index: int | None = None
    uuid: str | None = None
    bus_id: str
    """Normalised "0000:01:00.0"."""
    numa_node: int | None = None
    local_cpus: list[int] = []


class EngineWorker(BaseModel, frozen=True):
    """One engine process from `engine_proc_status`: where it may run and where its memory lives."""

    pid: int
    cmd: str = ""
    rank: int | None = None
    gpu_uuid: str | None = None
    """From nvidia-smi compute apps (host PIDs only)."""
    cpus: list[int] | None = None
    numa_kb: dict[int, int] | None = None


class NumaFacts(BaseModel, frozen=True):
    nodes: list[NodeInfo] | None = None
    distances: dict[int, dict[int, int]] = {}
    gpus: list[GpuInfo] | None = None
    """GPUs this target's nvidia-smi lists (with sysfs NUMA data on the host)."""
    gpu_numa: dict[str, int] | None = None
    """Host only: bus id -> numa_node from sysfs (every device bound to the nvidia driver)."""
    cpuset_cpus: list[int] | None = None
    cpuset_mems: list[int] | None = None
    cpuset_source: str | None = None
    engine_workers: list[EngineWorker] | None = None
    """Engine processes (None = not read; [] = no engine running)."""
    problems: dict[str, str] = {}


ON_BOTH: frozenset[Role] = frozenset({"host", "container"})
COMMANDS = (
    use('numactl_h', 'node_cpulists', 'pci_nvidia_numa') + use('smi_gpu_ids', 'engine_proc_status') +
    use('cgroup_limits', 'status_allowed')
)

GREP_PARTIAL = ("node_cpulists", "pci_nvidia_numa", "cgroup_limits")
"""`grep -H` over several files: exit 2 with output means some files are absent, the rest is good."""


def extract(outputs: Outputs, role: Role) -> NumaFacts:
    problems: dict[str, str] = {}

    def text(cid: str) -> str | None:
        if cid in GREP_PARTIAL and partial_grep_ok(outputs, cid):
            return outputs[cid].stdout
        return usable_stdout(outputs, cid, problems)

    data: dict[str, object] = {}
    cpulists = text("node_cpulists")
    nodes: list[NodeInfo] | None = None
    if (t := text("numactl_h")) is not None:
        topo = parse_numactl_h(t)
        if topo.nodes:
            nodes = [NodeInfo(id=n.id, cpus=list(n.cpus), size_mb=n.size_mb, free_mb=n.free_mb) for n in topo.nodes.values()]
            data["distances"] = topo.distances
    if nodes is None and cpulists is not None:
        cl = parse_node_cpulists(cpulists)
        if cl:
            nodes = [NodeInfo(id=i, cpus=c) for i, c in sorted(cl.items())]
    data["nodes"] = nodes
    pci = None
    if (t := text("pci_nvidia_numa")) is not None:
        pci = parse_pci_numa(t)
        data["gpu_numa"] = {b: p.numa_node for b, p in pci.items() if p.numa_node is not None}
    rec = outputs.get("smi_gpu_ids")
    if (t := text("smi_gpu_ids")) is not None:
        try:
            gpus = [GpuInfo(index=g.index, uuid=g.uuid, bus_id=g.bus_id) for g in parse_smi_gpu_ids(t)]
            if pci:
                gpus = [g.model_copy(update={"numa_node": pci[g.bus_id].numa_node, "local_cpus": list(pci[g.bus_id].local_cpus)})
                        if g.bus_id in pci else g for g in gpus]
            data["gpus"] = gpus
        except ParseError as exc:
            problems["smi_gpu_ids"] = str(exc)
    elif rec is not None and (err := detect_smi_error(rec.stdout + rec.stderr)):
        problems["smi_gpu_ids"] = f"nvidia-smi error: {err}"
    if (t := text("cgroup_limits")) is not None:
        lim = parse_cgroup_files(t)
        if lim.cpuset_cpus is not None:
            data.update(cpuset_cpus=list(lim.cpuset_cpus), cpuset_source="cgroup cpuset.cpus.effective")
        if lim.cpuset_mems is not None:
            data["cpuset_mems"] = list(lim.cpuset_mems)
    if (t := text("status_allowed")) is not None:
        cpus, mems = parse_status_allowed(t)
        if "cpuset_cpus" not in data and cpus is not None:
            data.update(cpuset_cpus=list(cpus), cpuset_source="/proc/self/status Cpus_allowed_list")
        if "cpuset_mems" not in data and mems is not None:
            data["cpuset_mems"] = list(mems)
    if (t := text("engine_proc_status")) is not None:
        try:
            rep = parse_engine_status(t)
            data["engine_workers"] = [EngineWorker(pid=p.pid, cmd=p.cmd, rank=p.rank, gpu_uuid=rep.apps.get(p.pid),
                                                   cpus=list(p.cpus) if p.cpus is not None else None, numa_kb=p.numa_kb)
                                      for p in rep.procs]
        except ParseError as exc:
            problems["engine_proc_status"] = str(exc)
    return NumaFacts(problems=problems, **data)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- helpers


def ranges(nums: list[int] | tuple[int, ...]) -> str:
    """[0,1,2,3,8] -> "0-3,8" (the kernel's cpulist notation)."""
    s = sorted(set(nums))
    if not s:
        return "(none)"
    out, start, prev = [], s[0], s[0]
    for n in s[1:] + [None]:  # type: ignore[list-item]
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(f"{start}-{prev}" if prev != start else str(start))
        if n is not None:
            start = prev = n
    return ",".join(out)


def _why(f: NumaFacts, *cids: str) -> str:
    return problem_text(f.problems, *cids)


def _mk(slug: str, severity: str, title: str, *, targets: tuple[Role, ...] = ("host",), observed: str = "",
        expected: str = "", why: str = "", fix: str = "", evidence: list[tuple[Role, str]] | None = None) -> Finding:
    return finding(PROBE_ID, slug, severity, title, targets=targets, observed=observed, expected=expected, why=why,
                   fix=fix, evidence=evidence or [])


def gpu_nodes(host: NumaFacts) -> dict[str, int | None]:
    """bus id -> NUMA node of every host GPU (nvidia-smi list, else every nvidia-bound device)."""
    if host.gpus:
        return {g.bus_id: (g.numa_node if g.numa_node is not None else (host.gpu_numa or {}).get(g.bus_id)) for g in host.gpus}
    return dict((host.gpu_numa or {}).items())


def _gpu_label(host: NumaFacts, bdf: str) -> str:
    for g in host.gpus or []:
        if g.bus_id == bdf and g.index is not None:
            return f"GPU{g.index} ({bdf})"
    return bdf


# --------------------------------------------------------------------------- rules


def judge_topology(f: NumaFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "numactl_h"), ("host", "node_cpulists")]
    if not f.nodes:
        return _mk("topology", "unknown", "NUMA topology could not be read", observed=_why(f, "numactl_h", "node_cpulists"), evidence=ev)
    parts = []
    for n in f.nodes:
        mem = f", {n.size_mb // 1024} GiB" if n.size_mb else (", no memory" if n.size_mb == 0 else "")
        parts.append(f"node {n.id}: CPUs {ranges(n.cpus)}{mem}")
    far = max((d for row in f.distances.values() for d in row.values()), default=None)
    obs = f"{len(f.nodes)} node(s); " + "; ".join(parts) + (f"; max distance {far}" if far else "")
    memless = [n.id for n in f.nodes if n.size_mb == 0]
    if memless:
        obs += f"; memoryless node(s) {ranges(memless)} (see firmware.numa_mode)"
    return _mk("topology", "info", f"{len(f.nodes)} NUMA node(s)", observed=obs,
               why="Feeds the GPU-locality and cpuset checks.", evidence=ev)


def judge_gpu_locality(f: NumaFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "pci_nvidia_numa"), ("host", "smi_gpu_ids"), ("host", "numactl_h")]
    nodes = gpu_nodes(f)
    if not nodes:
        if f.gpu_numa == {} and f.gpus == []:
            return _mk("gpu_locality", "ok", "GPU locality: not applicable", observed="not applicable: no NVIDIA GPU bound to the driver", evidence=ev)
        return _mk("gpu_locality", "unknown", "GPU NUMA locality could not be read", observed=_why(f, "pci_nvidia_numa", "smi_gpu_ids"), evidence=ev)
    multi = f.nodes is not None and len(f.nodes) > 1
    by_node: dict[str, list[str]] = {}
    for bdf, node in sorted(nodes.items()):
        by_node.setdefault("unknown" if node is None else str(node), []).append(_gpu_label(f, bdf))
    obs = "; ".join(f"node {n}: {', '.join(g)}" for n, g in sorted(by_node.items()))
    missing = by_node.get("-1", []) + by_node.get("unknown", [])
    if missing and multi:
        return _mk("gpu_locality", "warning", "GPUs without NUMA proximity information on a multi-node host",
                   observed=obs, expected="every GPU reports its NUMA node (0..N-1)",
                   why="Without proximity data (numa_node -1) NCCL and the serving engine cannot pick CPUs and memory local to each GPU.",
                   fix="Update the BIOS / enable ACPI SRAT/SLIT proximity reporting; check the NUMA-per-socket setting.", evidence=ev)
    if f.nodes is None:
        return _mk("gpu_locality", "info", "GPU NUMA locality (node count unknown)", observed=obs, evidence=ev)
    return _mk("gpu_locality", "ok", "GPU NUMA locality",
               observed=obs if multi else f"{obs} (single node: no proximity information needed)", evidence=ev)


def judge_node_pressure(f: NumaFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "numactl_h")]
    if not f.nodes or any(n.size_mb is None or n.free_mb is None for n in f.nodes):
        return _mk("node_pressure", "unknown", "Per-node free memory could not be read", observed=_why(f, "numactl_h"), evidence=ev)
    with_mem = [n for n in f.nodes if n.size_mb]
    if len(with_mem) < 2:
        return _mk("node_pressure", "ok", "Node pressure: not applicable",
                   observed=f"not applicable: {len(with_mem)} node(s) with memory", evidence=ev)
    frac = {n.id: (n.free_mb or 0) / n.size_mb for n in with_mem if n.size_mb}
    gpu_n = {n for n in gpu_nodes(f).values() if n is not None and n >= 0}
    obs = "; ".join(f"node {i}: {100 * v:.0f}% free" for i, v in sorted(frac.items()))
    tight = [i for i, v in frac.items() if v < 0.05 and (not gpu_n or i in gpu_n)]
    if tight and any(v >= 0.20 for v in frac.values()):
        return _mk("node_pressure", "warning", f"NUMA node {ranges(tight)} nearly full while others have room", observed=obs,
                   expected=">= 5% free on the nodes local to the GPUs",
                   why="Allocations on a full node spill to a remote node; page cache from model files usually fills the node that read them.",
                   fix="Drop caches after model load in a maintenance window, bind memory (--membind) or interleave the page cache.",
                   evidence=ev)
    return _mk("node_pressure", "ok", "No NUMA node under memory pressure", observed=obs, evidence=ev)


def judge_tp_group_span(f: NumaFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "pci_nvidia_numa"), ("host", "smi_gpu_ids")]
    nodes = {n for n in gpu_nodes(f).values() if n is not None and n >= 0}
    if not gpu_nodes(f):
        return _mk("tp_group_span", "unknown", "GPU nodes not known", observed=_why(f, "pci_nvidia_numa", "smi_gpu_ids"), evidence=ev)
    if not nodes:
        if f.nodes is not None and len(f.nodes) <= 1:
            return _mk("tp_group_span", "ok", "All GPUs on one NUMA node",
                       observed="not applicable: single NUMA node host (GPUs report no node)", evidence=ev)
        return _mk("tp_group_span", "unknown", "GPU NUMA nodes not known",
                   observed=f"{len(gpu_nodes(f))} GPU(s) without a NUMA node (-1 or unread); "
                            + _why(f, "pci_nvidia_numa", "smi_gpu_ids"), evidence=ev)
    if len(nodes) == 1:
        return _mk("tp_group_span", "ok", "All GPUs on one NUMA node", observed=f"GPUs on node(s) {ranges(sorted(nodes))}", evidence=ev)
    return _mk("tp_group_span", "info", "GPUs span several NUMA nodes",
               observed=f"GPUs on nodes {ranges(sorted(nodes))}; a tensor-parallel group over all of them crosses the socket link",
               why="Cross-socket GPU pairs go through the inter-socket link (community: dual Turin ~51 vs ~56 GB/s same-node; "
                   "dual Genoa ~39 vs ~54 GB/s).",
               fix="Prefer TP groups within one node when the model fits; otherwise tune NCCL for the cross-socket path.", evidence=ev)


def _used_gpus(host: NumaFacts, ctr: NumaFacts) -> tuple[dict[str, int | None], str]:
    hn = gpu_nodes(host)
    if ctr.gpus:
        used = {g.bus_id: hn.get(g.bus_id) for g in ctr.gpus}
        return used, "the container's GPUs"
    return hn, "all host GPUs (the container's GPU list was not read)"


def judge_cpuset_vs_gpu(facts: FactsByTarget) -> Finding:
    host: NumaFacts | None = facts.get("host")
    ctr: NumaFacts | None = facts.get("container")
    ev: list[tuple[Role, str]] = [("container", "cgroup_limits"), ("container", "status_allowed"), ("container", "smi_gpu_ids"),
                                  ("host", "pci_nvidia_numa"), ("host", "numactl_h")]
    if ctr is None or host is None:
        return _mk("cpuset_vs_gpu", "ok", "Container cpuset vs GPU nodes: not applicable",
                   observed="not applicable: no container target", evidence=[("host", "numactl_h")])
    targets: tuple[Role, ...] = ("host", "container")
    if host.nodes is not None and len(host.nodes) <= 1:
        return _mk("cpuset_vs_gpu", "ok", "Container cpuset vs GPU nodes: not applicable", targets=targets,
                   observed="not applicable: single NUMA node host", evidence=ev)
    if host.nodes is None:
        return _mk("cpuset_vs_gpu", "unknown", "Host NUMA layout not read", targets=targets, observed=_why(host, "numactl_h", "node_cpulists"), evidence=ev)
    if ctr.cpuset_cpus is None:
        return _mk("cpuset_vs_gpu", "unknown", "Container cpuset not read", targets=targets, observed=_why(ctr, "cgroup_limits", "status_allowed"), evidence=ev)
    used, which = _used_gpus(host, ctr)
    if not used or all(n is None or n < 0 for n in used.values()):
        unread = _why(host, "pci_nvidia_numa", "smi_gpu_ids") + "; " + _why(ctr, "smi_gpu_ids")
        minus1 = sum(1 for n in used.values() if n is not None)
        return _mk("cpuset_vs_gpu", "unknown", "GPU NUMA nodes not known", targets=targets,
                   observed=f"{minus1} GPU(s) report NUMA node -1 (no proximity information); {unread}" if minus1 else unread,
                   evidence=ev)
    node_cpus = {n.id: set(n.cpus) for n in host.nodes}
    cpuset = set(ctr.cpuset_cpus)
    remote: list[str] = []
    per_node: dict[int, list[str]] = {}
    for bdf, node in sorted(used.items()):
        if node is None or node < 0:
            continue
        per_node.setdefault(node, []).append(_gpu_label(host, bdf))
        local = set(next((g.local_cpus for g in host.gpus or [] if g.bus_id == bdf and g.local_cpus), [])) or node_cpus.get(node, set())
        if local and not (cpuset & local):
            remote.append(f"{_gpu_label(host, bdf)} on node {node} (CPUs {ranges(sorted(local))})")
    cover = "; ".join(f"node {n} ({', '.join(g)}): {len(cpuset & node_cpus.get(n, set()))}/{len(node_cpus.get(n, set()))} CPUs in cpuset"
                      for n, g in sorted(per_node.items()))
    if remote:
        return _mk("cpuset_vs_gpu", "warning", "Container CPUs are remote from some of its GPUs", targets=targets,
                   observed=f"container cpuset {ranges(sorted(cpuset))} ({ctr.cpuset_source}); host: {'; '.join(remote)} has no CPU in it",
                   expected="the container's cpuset includes CPUs of every node its GPUs hang off",
                   why="Ranks whose GPU sits on another node launch kernels and stage copies from remote CPUs and memory, "
                       "crossing the socket link on every host-device transfer.",
                   fix="Widen the container cpuset (PVE: cores / lxc.cgroup2.cpuset.cpus) to include CPUs of every GPU's node, "
                       "or give the container only GPUs local to its CPUs.", evidence=ev)
    return _mk("cpuset_vs_gpu", "ok", "Container CPUs cover the NUMA nodes of its GPUs", targets=targets,
               observed=f"container cpuset {ranges(sorted(cpuset))} ({ctr.cpuset_source}); {which}: {cover}", evidence=ev)


def judge_mems_vs_gpu(facts: FactsByTarget) -> Finding:
    host: NumaFacts | None = facts.get("host")
    ctr: NumaFacts | None = facts.get("container")
    ev: list[tuple[Role, str]] = [("container", "cgroup_limits"), ("container", "status_allowed"), ("host", "pci_nvidia_numa")]
    if ctr is None or host is None:
        return _mk("mems_vs_gpu", "ok", "Container memory nodes vs GPU nodes: not applicable",
                   observed="not applicable: no container target", evidence=[("host", "numactl_h")])
    targets: tuple[Role, ...] = ("host", "container")
    if host.nodes is not None and len(host.nodes) <= 1:
        return _mk("mems_vs_gpu", "ok", "Container memory nodes vs GPU nodes: not applicable", targets=targets,
                   observed="not applicable: single NUMA node host", evidence=ev)
    if ctr.cpuset_mems is None:
        return _mk("mems_vs_gpu", "unknown", "Container memory nodes not read", targets=targets, observed=_why(ctr, "cgroup_limits", "status_allowed"), evidence=ev)
    used, which = _used_gpus(host, ctr)
    gnodes = sorted({n for n in used.values() if n is not None and n >= 0})
    if not gnodes:
        return _mk("mems_vs_gpu", "unknown", "GPU NUMA nodes not known", targets=targets, observed=_why(host, "pci_nvidia_numa"), evidence=ev)
    mems = set(ctr.cpuset_mems)
    obs = f"container memory nodes {ranges(sorted(mems))}; {which} on node(s) {ranges(gnodes)}"
    if not mems & set(gnodes):
        return _mk("mems_vs_gpu", "warning", "Container memory is confined to nodes remote from all its GPUs", targets=targets,
                   observed=obs, expected="cpuset.mems includes the GPUs' nodes",
                   why="Pinned staging buffers and the CPU-side KV/offload pool then live across the socket link from every GPU.",
                   fix="Include the GPUs' nodes in the container's cpuset.mems (lxc.cgroup2.cpuset.mems) or move the container.", evidence=ev)
    if not set(gnodes) <= mems:
        return _mk("mems_vs_gpu", "info", "Container memory covers only some of its GPUs' nodes", targets=targets, observed=obs, evidence=ev)
    return _mk("mems_vs_gpu", "ok", "Container memory nodes include its GPUs' nodes", targets=targets, observed=obs, evidence=ev)


# --------------------------------------------------------------------------- engine workers (PROBES.md §8)

REMOTE_LIMIT = 0.25
"""A worker with more than this share of its resident memory off its GPU's node is flagged."""


class _Worker(BaseModel, frozen=True):
    w: EngineWorker
    label: str
    node: int | None = None
    local: list[int] = []


def _workers(facts: FactsByTarget) -> tuple[Role | None, list[_Worker]]:
    """Engine workers with their GPU's node: host PIDs mapped by nvidia-smi first (exact), else the
    container's ranks (TP<n> -> the container's GPU n, assuming CUDA_VISIBLE_DEVICES keeps the order)."""
    host: NumaFacts = facts["host"]
    nodes = gpu_nodes(host)
    node_cpus = {n.id: n.cpus for n in host.nodes or []}

    def resolve(bdf: str | None, w: EngineWorker, role: Role) -> _Worker:
        node = nodes.get(bdf) if bdf else None
        g = next((g for g in host.gpus or [] if g.bus_id == bdf), None)
        local = (g.local_cpus if g and g.local_cpus else node_cpus.get(node, [])) if node is not None and node >= 0 else []
        name = f"TP{w.rank}" if w.rank is not None else (w.cmd.split()[0] if w.cmd else "process")
        gpu = _gpu_label(host, bdf) if bdf else "GPU unknown"
        return _Worker(w=w, label=f"{role} pid {w.pid} {name} ({gpu}{f', node {node}' if node is not None else ''})",
                       node=node if node is not None and node >= 0 else None, local=local)

    by_uuid = {g.uuid: g.bus_id for g in host.gpus or [] if g.uuid}
    hw = [w for w in host.engine_workers or [] if w.gpu_uuid]
    if hw:
        return "host", [resolve(by_uuid.get(w.gpu_uuid or ""), w, "host") for w in hw]
    for role in ("container", "host"):
        f: NumaFacts | None = facts.get(role)
        if f is None or not f.engine_workers:
            continue
        gpus = f.gpus if f.gpus else host.gpus or []
        ranked = [w for w in f.engine_workers if w.rank is not None]
        if ranked:
            by_idx = {g.index: g.bus_id for g in gpus if g.index is not None}
            return role, [resolve(by_idx.get(w.rank), w, role) for w in ranked]  # type: ignore[arg-type]
        return role, [resolve(None, w, role) for w in f.engine_workers]  # type: ignore[arg-type]
    return None, []


def _engine_unread(facts: FactsByTarget) -> str | None:
    """Why no target's engine process list is usable, else None."""
    if any(f.engine_workers is not None for f in facts.values()):
        return None
    return "; ".join(f"{r}: {f.problems.get('engine_proc_status', 'not collected')}" for r, f in facts.items())


def _engine_gate(facts: FactsByTarget, slug: str, what: str, ev_host: list[tuple[Role, str]]
                 ) -> Finding | tuple[Role | None, list[_Worker], list[tuple[Role, str]], list[NodeInfo]]:
    """The preconditions both engine checks share: a NUMA layout with several nodes and engine workers.

    Returns the finding that ends the check early, or (role, workers, evidence, host NUMA nodes) to go on with.
    """
    host: NumaFacts = facts["host"]
    roles: tuple[Role, ...] = tuple(r for r in ("host", "container") if r in facts)
    ev: list[tuple[Role, str]] = [(r, "engine_proc_status") for r in roles] + ev_host
    if host.nodes is None:
        return _mk(slug, "unknown", "Host NUMA layout not read", targets=roles, observed=_why(host, "numactl_h", "node_cpulists"), evidence=ev)
    if len(host.nodes) <= 1:
        return _mk(slug, "ok", f"{what}: not applicable", targets=roles,
                   observed="not applicable: single NUMA node host", evidence=ev)
    if (why := _engine_unread(facts)) is not None:
        return _mk(slug, "unknown", "Engine processes could not be listed", targets=roles, observed=why, evidence=ev)
    role, workers = _workers(facts)
    if not workers:
        return _mk(slug, "ok", f"{what}: no serving engine found", targets=roles,
                   observed="not applicable: no SGLang/vLLM/TGI process found", evidence=ev)
    return role, workers, ev, host.nodes


def judge_worker_binding(facts: FactsByTarget) -> Finding:
    gate = _engine_gate(facts, "worker_binding", "Engine worker binding", [("host", "pci_nvidia_numa"), ("host", "numactl_h")])
    if isinstance(gate, Finding):
        return gate
    role, workers, ev, nodes = gate
    node_cpus = {n.id: set(n.cpus) for n in nodes}
    away, unpinned, near, unread = [], [], [], []
    for x in workers:
        if x.w.cpus is None:
            unread.append(x.label)
            continue
        allowed = set(x.w.cpus)
        spans = sorted(n for n, c in node_cpus.items() if c & allowed)
        desc = f"{x.label}: CPUs {ranges(x.w.cpus)}"
        if x.local and not allowed & set(x.local):
            away.append(f"{desc}, GPU-local CPUs {ranges(x.local)}")
        elif len(spans) > 1:
            unpinned.append(f"{desc} (nodes {ranges(spans)})")
        else:
            near.append(desc)
    targets: tuple[Role, ...] = (role, "host") if role == "container" else ("host",)  # type: ignore[assignment]
    why = ("Ranks that run on another socket than their GPU launch kernels and stage every host-device copy across "
           "the socket link; vLLM added --numa-bind for this and a prototype measured ~1.5x with the right mapping "
           "(GB200, CPU-offload run).")
    fix = ("Use the engine's NUMA binding (SGLang --numa-node, vLLM --numa-bind), numactl --cpunodebind=N --membind=N "
           "per rank, or a container cpuset aligned with the GPUs' nodes.")
    if away:
        return _mk("worker_binding", "warning", f"{len(away)} engine worker(s) pinned away from their GPU", targets=targets,
                   observed="; ".join(away[:4]) + (f" (+{len(away) - 4} more)" if len(away) > 4 else ""),
                   expected="each rank's allowed CPUs on its GPU's NUMA node", why=why, fix=fix, evidence=ev)
    if unpinned:
        obs = "; ".join(unpinned[:3]) + (f" (+{len(unpinned) - 3} more)" if len(unpinned) > 3 else "")
        return _mk("worker_binding", "warning", f"{len(unpinned)} engine worker(s) not pinned to their GPU's node", targets=targets,
                   observed=obs,
                   expected="each rank bound to the CPUs of its GPU's node on a multi-node host", why=why, fix=fix, evidence=ev)
    if not near:
        return _mk("worker_binding", "unknown", "Engine worker affinity not readable", targets=targets,
                   observed="; ".join(unread[:4]), evidence=ev)
    return _mk("worker_binding", "ok", "Engine workers pinned near their GPUs", targets=targets,
               observed="; ".join(near[:4]) + (f" (+{len(near) - 4} more)" if len(near) > 4 else "")
               + (f"; unreadable: {len(unread)}" if unread else ""), evidence=ev)


def judge_memory_placement(facts: FactsByTarget) -> Finding:
    gate = _engine_gate(facts, "memory_placement", "Engine memory placement", [("host", "pci_nvidia_numa")])
    if isinstance(gate, Finding):
        return gate
    role, workers, ev, nodes = gate
    targets: tuple[Role, ...] = (role, "host") if role == "container" else ("host",)  # type: ignore[assignment]
    mapped = [x for x in workers if x.node is not None]
    if not mapped:
        return _mk("memory_placement", "unknown", "GPU of each engine worker unknown", targets=targets,
                   observed="no worker could be tied to a GPU (no nvidia-smi PID mapping, no TP rank in the process title)",
                   evidence=ev)
    readable = [x for x in mapped if x.w.numa_kb]
    if not readable:
        return _mk("memory_placement", "unknown", "Engine memory placement not readable", targets=targets,
                   observed="/proc/<pid>/numa_maps unreadable (needs root or the engine's uid)",
                   fix="Run the audit as root (or --sudo).", evidence=ev)
    bad: list[str] = []
    good: list[str] = []
    for x in readable:
        kb = x.w.numa_kb or {}
        total = sum(kb.values())
        remote = sum(v for n, v in kb.items() if n != x.node) / total if total else 0.0
        desc = f"{x.label}: {100 * remote:.0f}% of {total // 1024} MiB off node {x.node}"
        (bad if remote > REMOTE_LIMIT else good).append(desc)
    if bad:
        return _mk("memory_placement", "warning", f"{len(bad)} engine worker(s) have > 25% of their memory off their GPU's node", targets=targets,
                   observed="; ".join(bad[:4]) + (f" (+{len(bad) - 4} more)" if len(bad) > 4 else ""),
                   expected="<= 25% of each worker's resident memory on nodes other than its GPU's",
                   why="Pinned staging buffers and the CPU-side KV/offload pool on a remote node make every host-device "
                       "copy cross the socket interconnect.",
                   fix="Bind each rank's memory to its GPU's node (numactl --membind, engine NUMA binding) and restart the engine.",
                   evidence=ev)
    return _mk("memory_placement", "ok", "Engine memory on its GPUs' nodes", targets=targets,
               observed="; ".join(good[:4]) + (f" (+{len(good) - 4} more)" if len(good) > 4 else ""), evidence=ev)


def judge(facts: FactsByTarget) -> Iterator[Finding]:
    host: NumaFacts | None = facts.get("host")
    if host is None:
        return
    yield judge_topology(host)
    yield judge_gpu_locality(host)
    yield judge_node_pressure(host)
    yield judge_tp_group_span(host)
    yield judge_cpuset_vs_gpu(facts)
    yield judge_mems_vs_gpu(facts)
    yield judge_worker_binding(facts)
    yield judge_memory_placement(facts)


def summarize(facts: FactsByTarget) -> str:
    host: NumaFacts | None = facts.get("host")
    if not host or not host.nodes:
        return ""
    parts = [f"{len(host.nodes)} node(s)"]
    nodes = gpu_nodes(host)
    if nodes:
        counts: dict[int, int] = {}
        for n in nodes.values():
            if n is not None:
                counts[n] = counts.get(n, 0) + 1
        parts.append("GPUs " + " ".join(f"n{n}:{c}" for n, c in sorted(counts.items())))
    ctr: NumaFacts | None = facts.get("container")
    if ctr and ctr.cpuset_cpus is not None:
        parts.append(f"container cpuset {ranges(ctr.cpuset_cpus)}")
    return " · ".join(parts)


PROBE = Probe(id=PROBE_ID, title="NUMA", commands=COMMANDS, extract=extract, judge=judge, summarize=summarize)
