"""Raw outputs of one target -> NumaFacts: one small reader per source; never raises."""

from __future__ import annotations

from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.judge.combiners import gpu_entries, with_numa
from gpuaudit.probes.core.judge.probe import Reads, read_table
from gpuaudit.probes.core.models import Role
from gpuaudit.probes.core.parsers.engine import parse_engine_status
from gpuaudit.probes.core.parsers.nvidia_smi import detect_smi_error
from gpuaudit.probes.core.parsers.system import (
    parse_cgroup_files,
    parse_node_cpulists,
    parse_numactl_h,
    parse_pci_numa,
    parse_status_allowed,
)
from gpuaudit.probes.core.spec import Outputs, record_problem
from gpuaudit.probes.numa.facts import EngineWorker, GpuInfo, NodeInfo, NumaFacts

Data = dict[str, object]
Problems = dict[str, str]

GREP_PARTIAL = ("node_cpulists", "pci_nvidia_numa", "cgroup_limits")
"""`grep -H` over several files: exit 2 with output means some files are absent, the rest is good."""


def _numactl(t: str, d: Data, p: Problems) -> None:
    topo = parse_numactl_h(t)
    if not topo.nodes:
        p["numactl_h"] = "no node in numactl -H output"
        return
    d["nodes"] = [
        NodeInfo(id=n.id, cpus=list(n.cpus), size_mb=n.size_mb) for n in topo.nodes.values()
    ]
    d["node_free_mb"] = {n.id: n.free_mb for n in topo.nodes.values() if n.free_mb is not None}
    d["distances"] = topo.distances


def _cpulists(t: str, d: Data, p: Problems) -> None:
    cl = parse_node_cpulists(t)
    if "nodes" not in d and cl:  # the fallback when numactl is missing
        d["nodes"] = [NodeInfo(id=i, cpus=c) for i, c in sorted(cl.items())]


def _pci(t: str, d: Data, p: Problems) -> None:
    d["_pci"] = pci = parse_pci_numa(t)
    d["gpu_numa"] = {b: x.numa_node for b, x in pci.items() if x.numa_node is not None}


def _gpus(t: str, d: Data, p: Problems) -> None:
    """The shared GPU list (combiners): ids from smi_gpu_ids, NUMA placement from sysfs when read."""
    try:
        entries = gpu_entries("smi_gpu_ids", t)
    except ParseError as exc:
        p["smi_gpu_ids"] = str(exc)
        return
    pci = d.get("_pci")
    if isinstance(pci, dict):
        entries = with_numa(entries, pci)
    d["gpus"] = [
        GpuInfo(
            index=g.index,
            uuid=g.uuid,
            bus_id=g.bus_id,
            numa_node=g.numa_node,
            local_cpus=list(g.local_cpus),
        )
        for g in entries
    ]


def _cgroup(t: str, d: Data, p: Problems) -> None:
    lim = parse_cgroup_files(t)
    if lim.cpuset_cpus is not None:
        d.update(cpuset_cpus=list(lim.cpuset_cpus), cpuset_source="cgroup cpuset.cpus.effective")
    if lim.cpuset_mems is not None:
        d["cpuset_mems"] = list(lim.cpuset_mems)


def _status(t: str, d: Data, p: Problems) -> None:
    cpus, mems = parse_status_allowed(t)
    if "cpuset_cpus" not in d and cpus is not None:
        d.update(cpuset_cpus=list(cpus), cpuset_source="/proc/self/status Cpus_allowed_list")
    if "cpuset_mems" not in d and mems is not None:
        d["cpuset_mems"] = list(mems)


def _engine(t: str, d: Data, p: Problems) -> None:
    try:
        rep = parse_engine_status(t)
    except ParseError as exc:
        p["engine_proc_status"] = str(exc)
        return
    d["engine_workers"] = [
        EngineWorker(
            pid=x.pid,
            cmd=x.cmd,
            rank=x.rank,
            gpu_uuid=rep.apps.get(x.pid),
            cpus=list(x.cpus) if x.cpus is not None else None,
            numa_kb=x.numa_kb,
        )
        for x in rep.procs
    ]


TABLE: tuple[Reads, ...] = tuple(
    Reads(cid, fill=read, partial_ok=cid in GREP_PARTIAL)
    for cid, read in (
        ("numactl_h", _numactl),
        ("node_cpulists", _cpulists),
        ("pci_nvidia_numa", _pci),
        ("smi_gpu_ids", _gpus),
        ("cgroup_limits", _cgroup),
        ("status_allowed", _status),
        ("engine_proc_status", _engine),
    )
)
"""Source -> reader, in order (node_cpulists is numactl's fallback, pci_nvidia_numa feeds the GPU list), run by
the framework (`read_table`)."""


def extract(outputs: Outputs, role: Role) -> NumaFacts:
    read = read_table(outputs, TABLE, usability=record_problem)
    data, problems = read.fields, read.problems
    rec = outputs.get("smi_gpu_ids")
    if (
        rec is not None
        and record_problem(rec)
        and (err := detect_smi_error(rec.stdout + rec.stderr))
    ):
        problems["smi_gpu_ids"] = (
            f"nvidia-smi error: {err}"  # the banner says more than the exit status
        )
    data.pop("_pci", None)
    return NumaFacts.of(data, problems=problems)


FIELD_SOURCES: dict[str, tuple[str, ...]] = {
    "nodes": ("node_cpulists", "numactl_h"),
    "node_free_mb": ("numactl_h",),
    "distances": ("numactl_h",),
    "gpus": ("pci_nvidia_numa", "smi_gpu_ids"),
    "gpu_numa": ("pci_nvidia_numa",),
    "cpuset_cpus": ("cgroup_limits", "status_allowed"),
    "cpuset_mems": ("cgroup_limits", "status_allowed"),
    "cpuset_source": ("cgroup_limits",),
    "engine_workers": ("engine_proc_status",),
}
"""Each fact field -> the sources it is read from (provenance; the read-tracking test holds verdicts to
their checks' declarations through it). () = from the records' wrapping, not a source's output."""
