"""The NUMA probe's rows of the check catalogue and one small pure verdict per check."""

from __future__ import annotations

from gpuaudit.probes.core.judge.checks import (
    BOTH,
    Check,
    Ctx,
    Message,
    Verdict,
    info,
    not_applicable,
    ok,
    unknown,
    warning,
)
from gpuaudit.probes.core.models import Role
from gpuaudit.probes.numa.facts import NumaFacts
from gpuaudit.probes.numa.locality import Worker, gpu_label, gpu_nodes, ranges, used_gpus, workers

REMOTE_LIMIT = 0.25
"""A worker with more than this share of its resident memory off its GPU's node is flagged."""


def more(items: list[str], n: int = 4) -> str:
    return "; ".join(items[:n]) + (f" (+{len(items) - n} more)" if len(items) > n else "")


def host_of(ctx: Ctx) -> NumaFacts:
    facts: NumaFacts = ctx.of("host")
    return facts


def single_node(ctx: Ctx) -> str | None:
    host = host_of(ctx)
    return (
        "single NUMA node host"
        if host is not None and host.nodes is not None and len(host.nodes) <= 1
        else None
    )


# --------------------------------------------------------------------------- host checks


def topology(ctx: Ctx) -> Verdict:
    f: NumaFacts = ctx.f
    nodes = f.nodes or []
    parts = []
    for n in nodes:
        mem = (
            f", {n.size_mb // 1024} GiB" if n.size_mb else (", no memory" if n.size_mb == 0 else "")
        )
        parts.append(f"node {n.id}: CPUs {ranges(n.cpus)}{mem}")
    far = max((d for row in f.distances.values() for d in row.values()), default=None)
    obs = f"{len(nodes)} node(s); " + "; ".join(parts) + (f"; max distance {far}" if far else "")
    memless = [n.id for n in nodes if n.size_mb == 0]
    if memless:
        obs += f"; memoryless node(s) {ranges(memless)} (see firmware.numa_mode)"
    return info(obs, variant="numa_node", n_nodes=len(nodes))


def gpu_locality(ctx: Ctx) -> Verdict:
    f: NumaFacts = ctx.f
    nodes = gpu_nodes(f)
    if not nodes:
        if f.gpu_numa == {} and f.gpus == []:
            return not_applicable("no NVIDIA GPU bound to the driver")
        return unknown(ctx.why("pci_nvidia_numa", "smi_gpu_ids"))
    multi = f.nodes is not None and len(f.nodes) > 1
    by_node: dict[str, list[str]] = {}
    for bdf, node in sorted(nodes.items()):
        by_node.setdefault("unknown" if node is None else str(node), []).append(gpu_label(f, bdf))
    obs = "; ".join(f"node {n}: {', '.join(g)}" for n, g in sorted(by_node.items()))
    if (by_node.get("-1") or by_node.get("unknown")) and multi:
        return warning(
            obs,
            "every GPU reports its NUMA node (0..N-1)",
            variant="gpus_without_numa_proximity_information",
        )
    if f.nodes is None:
        return info(obs, variant="gpu_numa_locality_node_count")
    return ok(
        obs if multi else f"{obs} (single node: no proximity information needed)",
        variant="gpu_numa_locality",
    )


def node_pressure_applies(ctx: Ctx) -> str | None:
    f: NumaFacts = ctx.f
    with_mem = [n for n in f.nodes or [] if n.size_mb]
    return (
        f"{len(with_mem)} node(s) with memory"
        if f.nodes is not None and len(with_mem) < 2
        else None
    )


def node_pressure(ctx: Ctx) -> Verdict:
    f: NumaFacts = ctx.f
    free = f.node_free_mb or {}
    with_mem = [n for n in f.nodes or [] if n.size_mb]
    if any(n.id not in free for n in with_mem):
        return unknown("free memory per node not in numactl -H")
    frac = {n.id: free[n.id] / n.size_mb for n in with_mem if n.size_mb}
    gpu_n = {n for n in gpu_nodes(f).values() if n is not None and n >= 0}
    obs = "; ".join(f"node {i}: {100 * v:.0f}% free" for i, v in sorted(frac.items()))
    tight = [i for i, v in frac.items() if v < 0.05 and (not gpu_n or i in gpu_n)]
    if tight and any(v >= 0.20 for v in frac.values()):
        return warning(
            obs,
            ">= 5% free on the nodes local to the GPUs",
            variant="numa_node_nearly_full_others",
            ranges=ranges(tight),
        )
    return ok(obs, variant="no_numa_node_under_memory")


def tp_group_span(ctx: Ctx) -> Verdict:
    f: NumaFacts = ctx.f
    all_nodes = gpu_nodes(f)
    nodes = {n for n in all_nodes.values() if n is not None and n >= 0}
    if not all_nodes:
        return unknown("GPU nodes not known: " + ctx.why("pci_nvidia_numa", "smi_gpu_ids"))
    if not nodes:
        if f.nodes is not None and len(f.nodes) <= 1:
            return not_applicable(
                "single NUMA node host (GPUs report no node)",
                variant="all_gpus_on_one_numa",
            )
        return unknown(
            f"{len(all_nodes)} GPU(s) without a NUMA node (-1 or unread); "
            + ctx.why("pci_nvidia_numa", "smi_gpu_ids")
        )
    if len(nodes) == 1:
        return ok(f"GPUs on node(s) {ranges(sorted(nodes))}", variant="all_gpus_on_one_numa")
    return info(
        f"GPUs on nodes {ranges(sorted(nodes))}; a tensor-parallel group over all of them crosses the socket link",
        variant="gpus_span_several_numa_nodes",
    )


# --------------------------------------------------------------------------- host vs container


def cpuset_vs_gpu(ctx: Ctx) -> Verdict:
    host, ctr = host_of(ctx), ctx.of("container")
    if host.nodes is None:
        return unknown(
            "host NUMA layout not read: " + ctx.why("numactl_h", "node_cpulists", role="host")
        )
    if ctr.cpuset_cpus is None:
        return unknown(
            "container cpuset not read: "
            + ctx.why("cgroup_limits", "status_allowed", role="container")
        )
    used, which = used_gpus(host, ctr)
    if not used or all(n is None or n < 0 for n in used.values()):
        unread = (
            ctx.why("pci_nvidia_numa", "smi_gpu_ids", role="host")
            + "; "
            + ctx.why("smi_gpu_ids", role="container")
        )
        minus1 = sum(1 for n in used.values() if n is not None)
        return unknown(
            f"{minus1} GPU(s) report NUMA node -1 (no proximity information); {unread}"
            if minus1
            else unread,
            variant="gpu_numa_nodes_not_known",
        )
    node_cpus = {n.id: set(n.cpus) for n in host.nodes}
    cpuset = set(ctr.cpuset_cpus)
    remote: list[str] = []
    per_node: dict[int, list[str]] = {}
    for bdf, node in sorted(used.items()):
        if node is None or node < 0:
            continue
        per_node.setdefault(node, []).append(gpu_label(host, bdf))
        local = set(
            next((g.local_cpus for g in host.gpus or [] if g.bus_id == bdf and g.local_cpus), [])
        ) or node_cpus.get(node, set())
        if local and not (cpuset & local):
            remote.append(f"{gpu_label(host, bdf)} on node {node} (CPUs {ranges(sorted(local))})")
    head = f"container cpuset {ranges(sorted(cpuset))} ({ctr.cpuset_source})"
    if remote:
        return warning(
            f"{head}; host: {'; '.join(remote)} has no CPU in it",
            "the container's cpuset includes CPUs of every node its GPUs hang off",
            variant="container_cpus_remote_some_gpus",
        )
    cover = "; ".join(
        f"node {n} ({', '.join(g)}): {len(cpuset & node_cpus.get(n, set()))}/{len(node_cpus.get(n, set()))} CPUs in cpuset"
        for n, g in sorted(per_node.items())
    )
    return ok(f"{head}; {which}: {cover}", variant="container_cpus_cover_numa_nodes")


def mems_vs_gpu(ctx: Ctx) -> Verdict:
    host, ctr = host_of(ctx), ctx.of("container")
    if ctr.cpuset_mems is None:
        return unknown(
            "container memory nodes not read: "
            + ctx.why("cgroup_limits", "status_allowed", role="container")
        )
    used, which = used_gpus(host, ctr)
    gnodes = sorted({n for n in used.values() if n is not None and n >= 0})
    if not gnodes:
        return unknown("GPU NUMA nodes not known: " + ctx.why("pci_nvidia_numa", role="host"))
    mems = set(ctr.cpuset_mems)
    obs = f"container memory nodes {ranges(sorted(mems))}; {which} on node(s) {ranges(gnodes)}"
    if not mems & set(gnodes):
        return warning(
            obs,
            "cpuset.mems includes the GPUs' nodes",
            variant="container_memory_confined_nodes_remote",
        )
    if not set(gnodes) <= mems:
        return info(obs, variant="container_memory_covers_only_some")
    return ok(obs, variant="container_memory_nodes_include_gpus")


# --------------------------------------------------------------------------- engine workers (PROBES.md §8)


def engine_workers(ctx: Ctx) -> tuple[Role | None, list[Worker]] | Verdict:
    """The engine workers to judge, or the verdict that ends the check (processes unread / no engine)."""
    facts = {r: f for r, f in ctx.facts.items() if f is not None}
    if not any(f.engine_workers is not None for f in facts.values()):
        return unknown(
            "engine processes could not be listed: "
            + "; ".join(
                f"{r}: {ctx.problem('engine_proc_status', r) or 'not collected'}"
                for r, f in facts.items()
            )
        )
    role, found = workers(facts)
    if not found:
        return not_applicable("no SGLang/vLLM/TGI process found")
    return role, found


def host_layout_applies(ctx: Ctx) -> str | None:
    host = host_of(ctx)
    if host is None or host.nodes is None:
        return None  # judged (unknown) by the verdict
    return single_node(ctx)


def binding_groups(found: list[Worker], node_cpus: dict[int, set[int]]) -> dict[str, list[str]]:
    """Workers by where they may run: "away" (no CPU near their GPU), "unpinned" (several nodes), "near", "unread"."""
    groups: dict[str, list[str]] = {"away": [], "unpinned": [], "near": [], "unread": []}
    for x in found:
        if x.w.cpus is None:
            groups["unread"].append(x.label)
            continue
        allowed = set(x.w.cpus)
        spans = sorted(n for n, c in node_cpus.items() if c & allowed)
        desc = f"{x.label}: CPUs {ranges(x.w.cpus)}"
        if x.local and not allowed & set(x.local):
            groups["away"].append(f"{desc}, GPU-local CPUs {ranges(x.local)}")
        elif len(spans) > 1:
            groups["unpinned"].append(f"{desc} (nodes {ranges(spans)})")
        else:
            groups["near"].append(desc)
    return groups


def worker_binding(ctx: Ctx) -> Verdict:
    host = host_of(ctx)
    if host.nodes is None:
        return unknown(
            "host NUMA layout not read: " + ctx.why("numactl_h", "node_cpulists", role="host")
        )
    got = engine_workers(ctx)
    if isinstance(got, Verdict):
        return got
    g = binding_groups(got[1], {n.id: set(n.cpus) for n in host.nodes})
    away, unpinned, near, unread = g["away"], g["unpinned"], g["near"], g["unread"]
    if away:
        return warning(
            more(away),
            "each rank's allowed CPUs on its GPU's NUMA node",
            variant="engine_worker_pinned_away_their",
            n_away=len(away),
        )
    if unpinned:
        return warning(
            more(unpinned, 3),
            "each rank bound to the CPUs of its GPU's node on a multi-node host",
            variant="engine_worker_not_pinned_their",
            n_unpinned=len(unpinned),
        )
    if not near:
        return unknown(more(unread), variant="engine_worker_affinity_not_readable")
    if unread:  # ok is a claim about every rank: the unread ones may be the ones pinned away
        return unknown(
            f"near: {more(near, 3)}; not read: {more(unread, 3)}",
            variant="engine_worker_affinity_partly_read",
            n_unread=len(unread),
            n_all=len(near) + len(unread),
        )
    return ok(more(near), variant="engine_workers_pinned_near_their")


def memory_placement(ctx: Ctx) -> Verdict:
    host = host_of(ctx)
    if host.nodes is None:
        return unknown(
            "host NUMA layout not read: " + ctx.why("numactl_h", "node_cpulists", role="host")
        )
    got = engine_workers(ctx)
    if isinstance(got, Verdict):
        return got
    mapped = [x for x in got[1] if x.node is not None]
    if not mapped:
        return unknown(
            "no worker could be tied to a GPU (no nvidia-smi PID mapping, no TP rank in the process title)",
            variant="gpu_each_engine_worker_unknown",
        )
    readable = [x for x in mapped if x.w.numa_kb]
    if not readable:
        return unknown(
            "/proc/<pid>/numa_maps unreadable (needs root or the engine's uid)",
            variant="engine_memory_placement_not_readable",
        )
    bad: list[str] = []
    good: list[str] = []
    for x in readable:
        kb = x.w.numa_kb or {}
        total = sum(kb.values())
        remote = sum(v for n, v in kb.items() if n != x.node) / total if total else 0.0
        (bad if remote > REMOTE_LIMIT else good).append(
            f"{x.label}: {100 * remote:.0f}% of {total // 1024} MiB off node {x.node}"
        )
    if bad:
        return warning(
            more(bad),
            "<= 25% of each worker's resident memory on nodes other than its GPU's",
            variant="engine_worker_have_25_their",
            n_bad=len(bad),
        )
    if len(readable) < len(mapped):  # ok is a claim about every worker, not the readable ones
        return unknown(
            f"{more(good, 3)}; numa_maps not read for {len(mapped) - len(readable)} worker(s)",
            variant="engine_memory_placement_partly_read",
            n_unread=len(mapped) - len(readable),
            n_all=len(mapped),
        )
    return ok(more(good), variant="engine_memory_on_gpus_nodes")


# --------------------------------------------------------------------------- the catalogue rows

CHECKS: tuple[Check, ...] = (
    Check(
        "numa.topology",
        "NUMA nodes, CPUs, memory, distances",
        "host",
        "Feeds the GPU-locality and cpuset checks.",
        "See firmware.numa_mode for the NUMA-per-socket setting; bind ranks to their GPU's node (numa.worker_binding).",
        topology,
        any_of=("numactl_h", "node_cpulists"),
        variants={"numa_node": Message(title="{n_nodes} NUMA node(s)")},
    ),
    Check(
        "numa.gpu_locality",
        "Which node each GPU is attached to",
        "bios",
        "Without proximity data (numa_node -1) NCCL and the serving engine cannot pick CPUs and memory local to each GPU.",
        "Update the BIOS / enable ACPI SRAT/SLIT proximity reporting; check the NUMA-per-socket setting.",
        gpu_locality,
        any_of=("pci_nvidia_numa", "smi_gpu_ids"),
        needs_gpu=True,
        optional=(
            "node_cpulists",
            "numactl_h",
        ),
        variants={
            "gpu_numa_locality": Message(title="GPU NUMA locality"),
            "gpus_without_numa_proximity_information": Message(
                title="GPUs without NUMA proximity information on a multi-node host"
            ),
            "gpu_numa_locality_node_count": Message(title="GPU NUMA locality (node count unknown)"),
        },
    ),
    Check(
        "numa.node_pressure",
        "One node full, allocations spilling remote",
        "host",
        "Allocations on a full node spill to a remote node; page cache from model files usually fills the node that read them.",
        "Drop caches after model load in a maintenance window, bind memory (--membind) or interleave the page cache.",
        node_pressure,
        sources=("numactl_h",),
        applies=node_pressure_applies,
        optional=(
            "node_cpulists",
            "pci_nvidia_numa",
            "smi_gpu_ids",
        ),
        variants={
            "no_numa_node_under_memory": Message(title="No NUMA node under memory pressure"),
            "numa_node_nearly_full_others": Message(
                title="NUMA node {ranges} nearly full while others have room"
            ),
        },
    ),
    Check(
        "numa.tp_group_span",
        "TP group crossing sockets",
        "engine",
        "Cross-socket GPU pairs go through the inter-socket link (community: dual Turin ~51 vs ~56 GB/s same-node; "
        "dual Genoa ~39 vs ~54 GB/s).",
        "Prefer TP groups within one node when the model fits; otherwise tune NCCL for the cross-socket path.",
        tp_group_span,
        any_of=("pci_nvidia_numa", "smi_gpu_ids"),
        needs_gpu=True,
        variants={
            "gpus_span_several_numa_nodes": Message(title="GPUs span several NUMA nodes"),
            "all_gpus_on_one_numa": Message(title="All GPUs on one NUMA node"),
        },
    ),
    Check(
        "numa.cpuset_vs_gpu",
        "Container CPUs near its GPUs",
        "container",
        "Ranks whose GPU sits on another node launch kernels and stage copies from remote CPUs and memory, crossing "
        "the socket link on every host-device transfer.",
        "Widen the container cpuset (PVE: cores / lxc.cgroup2.cpuset.cpus) to include CPUs of every GPU's node, or "
        "give the container only GPUs local to its CPUs.",
        cpuset_vs_gpu,
        roles=BOTH,
        cross=True,
        needs_gpu=True,
        applies=host_layout_applies,
        optional=(
            ("container", "cgroup_limits"),
            ("container", "smi_gpu_ids"),
            ("host", "smi_gpu_ids"),
            ("host", "pci_nvidia_numa"),
            ("host", "node_cpulists"),
            ("host", "numactl_h"),
            ("container", "pci_nvidia_numa"),
            ("container", "status_allowed"),
        ),
        variants={
            "container_cpus_cover_numa_nodes": Message(
                title="Container CPUs cover the NUMA nodes of its GPUs"
            ),
            "gpu_numa_nodes_not_known": Message(title="GPU NUMA nodes not known"),
            "container_cpus_remote_some_gpus": Message(
                title="Container CPUs are remote from some of its GPUs"
            ),
        },
    ),
    Check(
        "numa.mems_vs_gpu",
        "Container memory nodes near its GPUs",
        "container",
        "Pinned staging buffers and the CPU-side KV/offload pool then live across the socket link from every GPU.",
        "Include the GPUs' nodes in the container's cpuset.mems (lxc.cgroup2.cpuset.mems) or move the container.",
        mems_vs_gpu,
        roles=BOTH,
        cross=True,
        needs_gpu=True,
        applies=host_layout_applies,
        optional=(
            ("container", "cgroup_limits"),
            ("container", "smi_gpu_ids"),
            ("host", "smi_gpu_ids"),
            ("host", "pci_nvidia_numa"),
            ("container", "pci_nvidia_numa"),
            ("container", "status_allowed"),
            ("host", "node_cpulists"),
            ("host", "numactl_h"),
        ),
        variants={
            "container_memory_nodes_include_gpus": Message(
                title="Container memory nodes include its GPUs' nodes"
            ),
            "container_memory_confined_nodes_remote": Message(
                title="Container memory is confined to nodes remote from all its GPUs"
            ),
            "container_memory_covers_only_some": Message(
                title="Container memory covers only some of its GPUs' nodes"
            ),
        },
    ),
    Check(
        "numa.worker_binding",
        "Engine ranks pinned near their GPU",
        "engine",
        "Ranks that run on another socket than their GPU launch kernels and stage every host-device copy across the "
        "socket link; vLLM added --numa-bind for this and a prototype measured ~1.5x with the right mapping "
        "(GB200, CPU-offload run).",
        "Use the engine's NUMA binding (SGLang --numa-node, vLLM --numa-bind), numactl --cpunodebind=N --membind=N "
        "per rank, or a container cpuset aligned with the GPUs' nodes.",
        worker_binding,
        any_of=("numactl_h", "node_cpulists"),
        needs_gpu=True,
        applies=host_layout_applies,
        optional=(
            "engine_proc_status",
            "pci_nvidia_numa",
            "smi_gpu_ids",
        ),
        variants={
            "engine_workers_pinned_near_their": Message(
                title="Engine workers pinned near their GPUs"
            ),
            "engine_worker_pinned_away_their": Message(
                title="{n_away} engine worker(s) pinned away from their GPU"
            ),
            "engine_worker_not_pinned_their": Message(
                title="{n_unpinned} engine worker(s) not pinned to their GPU's node"
            ),
            "engine_worker_affinity_not_readable": Message(
                title="Engine worker affinity not readable"
            ),
            "engine_worker_affinity_partly_read": Message(
                title="Affinity of {n_unread} of {n_all} engine workers not readable"
            ),
        },
    ),
    Check(
        "numa.memory_placement",
        "Where engine memory actually lives",
        "engine",
        "Pinned staging buffers and the CPU-side KV/offload pool on a remote node make every host-device copy cross "
        "the socket interconnect.",
        "Bind each rank's memory to its GPU's node (numactl --membind, engine NUMA binding) and restart the engine.",
        memory_placement,
        any_of=("numactl_h", "node_cpulists"),
        needs_gpu=True,
        applies=host_layout_applies,
        optional=("engine_proc_status", "pci_nvidia_numa", "smi_gpu_ids"),
        variants={
            "engine_memory_on_gpus_nodes": Message(title="Engine memory on its GPUs' nodes"),
            "gpu_each_engine_worker_unknown": Message(title="GPU of each engine worker unknown"),
            "engine_memory_placement_not_readable": Message(
                title="Engine memory placement not readable",
                fix="Run the audit as root (or --sudo).",
            ),
            "engine_memory_placement_partly_read": Message(
                title="Memory placement of {n_unread} of {n_all} engine workers not readable",
                fix="Run the audit as root (or --sudo).",
            ),
            "engine_worker_have_25_their": Message(
                title="{n_bad} engine worker(s) have > 25% of their memory off their GPU's node"
            ),
        },
    ),
)
