"""Peer comparison for fleets: which node differs from the others of its class?

Nodes are grouped by class (GPU model × GPU count × board). Within a class, the facts that must agree
(driver, CUDA, kernel, BIOS, VBIOS, CPU scaling driver and governor, NUMA balancing, IOMMU mode, ACS,
persistence, MIG mode, GPU link generation/width, MaxReadReq, engine version) are compared, and every node
whose value differs from the class majority is an outlier, named with the majority value. Volatile facts
(counters, temperatures, pids) are never compared.

The facts come from raw records with stable command ids (the snapshot's recording), through small pure
readers, so the comparison does not depend on a probe's facts model of a given release.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.parsers.nvidia_smi import parse_query_gpu_csv

Records = Mapping[str, str]
"""command id -> stdout of a usable host record."""


def _csv_column(text: str, index: int) -> list[str]:
    rows = [
        [c.strip() for c in ln.split(",")] for ln in text.splitlines() if ln.count(",") >= index
    ]
    return [r[index] for r in rows if len(r) > index]


def _uniform(values: Iterable[str]) -> str | None:
    vals = sorted(set(v for v in values if v))
    return " / ".join(vals) if vals else None


def _driver(r: Records) -> str | None:
    m = re.search(r"Kernel Module\s.*?\s(\d+\.\d+(?:\.\d+)?)\s", r.get("proc_driver_version", ""))
    return m.group(1) if m else _uniform(_csv_column(r.get("smi_query_driver", ""), 4))


def _cuda(r: Records) -> str | None:
    m = re.search(r"CUDA Version:\s*([\d.]+)", r.get("smi_table", ""))
    return m.group(1) if m else None


def _kernel(r: Records) -> str | None:
    lines = r.get("uname_r", "").strip().splitlines()
    return lines[-1].strip() if lines else None


def _bios(r: Records) -> str | None:
    if len(lines := r.get("dmi_bios", "").strip().splitlines()) >= 2:
        return lines[1].strip()
    m = re.search(
        r"BIOS Information\n(?:[ \t].*\n)*?[ \t]+Version: (.+)", r.get("dmidecode_bios", "")
    )
    return m.group(1).strip() if m else None


def _board(r: Records) -> str | None:
    m = re.search(
        r"Base Board Information\n(?:[ \t].*\n)*?[ \t]+Product Name: (.+)",
        r.get("dmidecode_bios", ""),
    )
    return m.group(1).strip() if m else None


def _sysfs_value(text: str, suffix: str) -> str | None:
    for ln in text.splitlines():
        path, _, value = ln.partition(":")
        if path.endswith(suffix):
            return value.strip()
    return None


def _governor(r: Records) -> str | None:
    return _uniform(ln.split()[-1] for ln in r.get("sys_governors", "").splitlines() if ln.split())


def _iommu(r: Records) -> str | None:
    types = [
        ln.split()[-1]
        for ln in r.get("iommu_state", "").splitlines()
        if ln.startswith("gpu ") and len(ln.split()) >= 3
    ]
    return _uniform(types)


def _acs(r: Records) -> str | None:
    text = r.get("lspci_vvv", "") or r.get(
        "lspci_acsctl", ""
    )  # lspci_acsctl: snapshots before the merge
    if not text:
        return None
    redirect = sum(1 for ln in text.splitlines() if "ACSCtl:" in ln and "ReqRedir+" in ln)
    return f"ReqRedir+ on {redirect} port(s)"


def _mrrs(r: Records) -> str | None:
    values, in_nvidia = [], False
    for ln in r.get("lspci_vvv", "").splitlines():
        if ln and not ln[0].isspace():
            in_nvidia = "NVIDIA" in ln and ("VGA" in ln or "3D controller" in ln)
        elif in_nvidia and (m := re.search(r"MaxReadReq (\d+) bytes", ln)):
            values.append(m.group(1))
    return _uniform(values)


def _links(r: Records) -> str | None:
    text = r.get("smi_query_pcie", "")
    gens, widths = _csv_column(text, 4), _csv_column(text, 7)
    if not gens:
        return None
    return f"Gen{_uniform(gens)} x{_uniform(widths)}"


def _engine(r: Records) -> str | None:
    for ln in r.get("pyenv", "").splitlines():
        if ln.startswith("{"):
            try:
                pk = json.loads(ln).get("packages") or {}
            except ValueError:
                return None
            found = [f"{k} {pk[k]}" for k in ("sglang", "vllm", "tensorrt_llm", "torch") if k in pk]
            return ", ".join(found) or None
    return None


FACTS: dict[str, Callable[[Records], str | None]] = {
    "driver": _driver,
    "cuda": _cuda,
    "kernel": _kernel,
    "bios": _bios,
    "vbios": lambda r: _uniform(_csv_column(r.get("smi_query_fw", ""), 2)),
    "scaling_driver": lambda r: _sysfs_value(r.get("sys_cpufreq", ""), "scaling_driver"),
    "governor": _governor,
    "numa_balancing": lambda r: r.get("numa_balancing", "").strip() or None,
    "iommu_mode": _iommu,
    "acs": _acs,
    "max_read_req": _mrrs,
    "persistence": lambda r: _uniform(_csv_column(r.get("smi_query_driver", ""), 5)),
    "mig_mode": lambda r: _uniform(_csv_column(r.get("smi_query_driver", ""), 7)),
    "gpu_link": _links,
    "engine": _engine,
}
"""The facts that must agree within a class. None = not read on that node (never an outlier by itself)."""


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    source: str
    klass: str
    facts: dict[str, str | None]


@dataclass(frozen=True, slots=True)
class Outlier:
    node: str
    fact: str
    value: str | None
    majority: str
    agree: int
    of: int


@dataclass(slots=True)
class ClassReport:
    klass: str
    nodes: list[str] = field(default_factory=list)
    outliers: list[Outlier] = field(default_factory=list)


def gpu_names(smi_gpu_ids: str) -> list[str]:
    """Product name of every GPU from the `smi_gpu_ids` query (empty on an error banner or no GPU)."""
    try:
        rows = parse_query_gpu_csv(smi_gpu_ids, ["index", "uuid", "pci.bus_id", "name"])
    except (ParseError, ValueError):
        return []
    return [r["name"] for r in rows if r.get("name")]


def gpu_model(smi_gpu_ids: str) -> tuple[str | None, int]:
    """(the most common GPU name, how many GPUs) — (None, 0) when not read."""
    names = gpu_names(smi_gpu_ids)
    return (Counter(names).most_common(1)[0][0], len(names)) if names else (None, 0)


def node_from_records(name: str, source: str, records: Records) -> Node:
    """A node's class and agreement facts from its host records."""
    names = gpu_names(records.get("smi_gpu_ids", ""))
    model = Counter(names).most_common(1)[0][0] if names else "unknown GPU"
    board = _board(records) or "unknown board"
    klass = f"{len(names)}× {model} · {board}"
    facts = {}
    for key, read in FACTS.items():
        try:
            facts[key] = read(records)
        except Exception:  # an odd recording makes one fact unread, never the comparison fail
            facts[key] = None
    return Node(name=name, source=source, klass=klass, facts=facts)


def compare(nodes: Iterable[Node]) -> list[ClassReport]:
    """Group by class; in each class with 3+ nodes, name the nodes whose facts differ from a strict majority."""
    by_class: dict[str, list[Node]] = {}
    for n in nodes:
        by_class.setdefault(n.klass, []).append(n)
    reports = []
    for klass, members in sorted(by_class.items()):
        rep = ClassReport(klass=klass, nodes=[m.name for m in members])
        for key in FACTS:
            read = [(m, v) for m in members if (v := m.facts.get(key)) is not None]
            if len(read) < 3:
                continue  # two nodes that disagree have no majority to name
            (value, count), *_ = Counter(v for _, v in read).most_common(1)
            if count * 2 <= len(read):
                continue
            rep.outliers += [
                Outlier(m.name, key, v, value, count, len(read)) for m, v in read if v != value
            ]
        reports.append(rep)
    return reports
