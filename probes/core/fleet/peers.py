"""Peer comparison for fleets: which node differs from the others of its class?

Nodes are grouped by class (GPU model × GPU count × board). Within a class, the facts that must agree
(driver, CUDA, kernel, BIOS, VBIOS, CPU scaling driver and governor, NUMA balancing, IOMMU mode, ACS,
persistence, MIG mode, GPU link generation/width, MaxReadReq, engine version; and inside the container the
engine, torch and NCCL versions) are compared. A node whose value differs from a strict majority of its class
(3+ nodes that read the fact) is an outlier, named with the majority value; a fact on which the class has no
strict majority (two nodes that differ, a 2-vs-2 split) is a split, listed with each side's nodes. A node whose
class cannot be established (GPU model or board not read: e.g. audited without root) is "not comparable",
with the reason, never a class of one. The report says "every class agrees" only when every node was
compared with at least one peer and nothing differs. Volatile facts (counters, temperatures, pids) are never
compared.

The facts come from raw records with stable command ids (the snapshot's recording), through small pure
readers, so the comparison does not depend on a probe's facts model of a given release.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpuaudit.probes.core.parsers.lspci import parse_lspci_vvv
from gpuaudit.probes.core.parsers.nvidia_smi import gpu_names
from gpuaudit.snapshots.plain import records_of

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


_DRIVER = re.compile(r"Kernel Module\s.*?\s(\d+\.\d+(?:\.\d+)?)\s")
_CUDA = re.compile(r"CUDA Version:\s*([\d.]+)")
_BIOS = re.compile(r"BIOS Information\n(?:[ \t].*\n)*?[ \t]+Version: (.+)")
_BOARD = re.compile(r"Base Board Information\n(?:[ \t].*\n)*?[ \t]+Product Name: (.+)")


def _driver(r: Records) -> str | None:
    m = _DRIVER.search(r.get("proc_driver_version", ""))
    return m.group(1) if m else _uniform(_csv_column(r.get("smi_query_driver", ""), 4))


def _cuda(r: Records) -> str | None:
    m = _CUDA.search(r.get("smi_table", ""))
    return m.group(1) if m else None


def _kernel(r: Records) -> str | None:
    lines = r.get("uname_r", "").strip().splitlines()
    return lines[-1].strip() if lines else None


def _bios(r: Records) -> str | None:
    if len(lines := r.get("dmi_bios", "").strip().splitlines()) >= 2:
        return lines[1].strip()
    m = _BIOS.search(r.get("dmidecode_bios", ""))
    return m.group(1).strip() if m else None


def _board(r: Records) -> str | None:
    m = _BOARD.search(r.get("dmidecode_bios", ""))
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
    """How many ports' ACSCtl redirects requests: the pcie probe's reading (the shared lspci parser, parsed once)."""
    text = r.get("lspci_vvv", "")
    if text:
        redirect = sum(1 for d in parse_lspci_vvv(text) if (d.acs_ctl or {}).get("ReqRedir"))
        return f"ReqRedir+ on {redirect} port(s)"
    text = r.get("lspci_acsctl", "")  # snapshots before the merge: the ACSCtl lines alone
    if not text:
        return None
    redirect = sum(1 for ln in text.splitlines() if "ACSCtl:" in ln and "ReqRedir+" in ln)
    return f"ReqRedir+ on {redirect} port(s)"


def _mrrs(r: Records) -> str | None:
    """The NVIDIA GPUs' DevCtl MaxReadReq: the pcie probe's reading (the shared lspci parser, parsed once)."""
    text = r.get("lspci_vvv", "")
    if "MaxReadReq" not in text:
        return None
    return _uniform(str(d.devctl_mrrs) for d in parse_lspci_vvv(text) if d.is_gpu and d.devctl_mrrs)


def _links(r: Records) -> str | None:
    text = r.get("smi_query_pcie", "")
    gens, widths = _csv_column(text, 4), _csv_column(text, 7)
    if not gens:
        return None
    return f"Gen{_uniform(gens)} x{_uniform(widths)}"


def _pyenvs(r: Records) -> list[dict[str, Any]]:
    """Every interpreter's JSON line of the `pyenv` record (one per python found)."""
    out = []
    for ln in r.get("pyenv", "").splitlines():
        if ln.startswith("{"):
            try:
                doc = json.loads(ln)
            except ValueError:
                continue
            if isinstance(doc, dict):
                out.append(doc)
    return out


ENGINES = ("sglang", "vllm", "tensorrt_llm", "tensorrt-llm")


def _engine(r: Records) -> str | None:
    for doc in _pyenvs(r)[:1]:
        pk = doc.get("packages") or {}
        found = [f"{k} {pk[k]}" for k in ("sglang", "vllm", "tensorrt_llm", "torch") if k in pk]
        return ", ".join(found) or None
    return None


def _package(names: tuple[str, ...], key: str | None = None) -> Callable[[Records], str | None]:
    """The version of the first package of `names` any interpreter has (`key`: a top-level field first)."""

    def read(r: Records) -> str | None:
        found = []
        for doc in _pyenvs(r):
            pk = doc.get("packages") or {}
            if key and isinstance(doc.get(key), str):
                found.append(doc[key])
                continue
            for name in names:
                if isinstance(pk.get(name), str):
                    found.append(f"{name} {pk[name]}" if len(names) > 1 else pk[name])
                    break
        return _uniform(found)

    return read


def _nccl_pkg(r: Records) -> str | None:
    for doc in _pyenvs(r):
        if isinstance(nccl := doc.get("nccl"), str):
            return nccl
        for name, version in (doc.get("packages") or {}).items():
            if name.startswith("nvidia-nccl") and isinstance(version, str):
                return version
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

CONTAINER_FACTS: dict[str, Callable[[Records], str | None]] = {
    "container.engine": _package(ENGINES),
    "container.torch": _package(("torch",), key="torch"),
    "container.nccl": _nccl_pkg,
}
"""Facts read inside the container (its Python environment): a node whose host agrees can still serve with
another engine, torch or NCCL."""

IDENTITY = {
    "smi_gpu_ids": "GPU model and count",
    "dmidecode_bios": "board model",
}
"""The records a node's class is made of, and what each tells."""


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    source: str
    klass: str
    facts: dict[str, str | None]
    not_comparable: str | None = None
    """Why this node's class could not be established (it is then compared with nobody), else None."""


@dataclass(frozen=True, slots=True)
class Outlier:
    node: str
    fact: str
    value: str | None
    majority: str
    agree: int
    of: int


@dataclass(frozen=True, slots=True)
class Split:
    """A fact on which a class has no strict majority: each side's value and its nodes, largest first."""

    fact: str
    sides: tuple[tuple[str, tuple[str, ...]], ...]

    def text(self) -> str:
        return " | ".join(f"{v} ({', '.join(ns)})" for v, ns in self.sides)


@dataclass(slots=True)
class ClassReport:
    klass: str
    nodes: list[str] = field(default_factory=list)
    outliers: list[Outlier] = field(default_factory=list)
    splits: list[Split] = field(default_factory=list)
    compared: list[str] = field(default_factory=list)
    """The facts read by 2+ nodes of the class (what was actually compared)."""

    @property
    def agrees(self) -> bool:
        return len(self.nodes) >= 2 and not self.outliers and not self.splits


@dataclass(slots=True)
class FleetReport:
    """Every class's comparison plus the nodes that could not be compared, and what that allows to say."""

    classes: list[ClassReport] = field(default_factory=list)
    not_comparable: list[tuple[str, str]] = field(default_factory=list)
    """(node, why)."""

    @property
    def nodes(self) -> int:
        return sum(len(c.nodes) for c in self.classes) + len(self.not_comparable)

    @property
    def alone(self) -> list[str]:
        """Nodes alone in their class: nothing to compare them with."""
        return [c.nodes[0] for c in self.classes if len(c.nodes) == 1]

    @property
    def agrees(self) -> bool:
        """True only when every node was compared with a peer and nothing differs."""
        return (
            bool(self.classes) and not self.not_comparable and all(c.agrees for c in self.classes)
        )

    def exit_status(self) -> int:
        """0: every class agrees; 1: an outlier, a split without majority, a node alone or not comparable."""
        return 0 if self.agrees else 1

    def problems(self) -> list[str]:
        """The short parts that keep the fleet from 'agrees' ("2 outlier fact(s)", ...), zero counts left out."""
        outliers = sum(len(c.outliers) for c in self.classes)
        splits = sum(len(c.splits) for c in self.classes)
        parts = []
        if outliers:
            parts.append(f"{outliers} outlier fact(s)")
        if splits:
            parts.append(f"{splits} fact(s) with no majority")
        if self.not_comparable:
            parts.append(f"{len(self.not_comparable)} node(s) not comparable")
        if self.alone:
            parts.append(f"{len(self.alone)} node(s) with no peer to compare with")
        return parts

    def verdict(self) -> str:
        """The last line of the text report (the fleet screen shows the same words)."""
        head = f"{self.nodes} node(s) in {len(self.classes)} class(es)"
        if self.agrees:
            facts = sorted({f for c in self.classes for f in c.compared})
            return f"{head}: every class agrees ({len(facts)} fact(s) compared)"
        return f"{head}; " + "; ".join(self.problems() or ["nothing compared"])

    def note(self, node: str) -> str:
        """One node's line for the fleet screen: why it was not compared, how it differs, or that it agrees."""
        for name, why in self.not_comparable:
            if name == node:
                return f"not comparable: {why}"
        for c in self.classes:
            if node not in c.nodes:
                continue
            if len(c.nodes) == 1:
                return "no peer of its class: nothing to compare with"
            mine = [o for o in c.outliers if o.node == node]
            parts = [
                f"{o.fact} = {o.value} (majority {o.majority}, {o.agree} of {o.of})" for o in mine
            ]
            parts += [f"no majority on {s.fact}: {s.text()}" for s in c.splits]
            if parts:
                return "; ".join(parts)
            peers = len(c.nodes) - 1
            return f"agrees with its {peers} peer" + ("s" if peers != 1 else "")
        return ""


def _bios_attributes(r: Records) -> dict[str, str | None]:
    """redfish_bios (--bmc): every raw BIOS attribute as a fact `bios.<Name>`, compared like the others (a BIOS
    setting that differs from the class's majority is an outlier under its raw name); password hashes left out."""
    return dict(_bios_settings(r.get("redfish_bios", "") or "{}"))


@functools.lru_cache(maxsize=64)
def _bios_settings(text: str) -> tuple[tuple[str, str], ...]:
    """The `bios.<Name>` facts of one redfish_bios text (a fleet's nodes of one model often share it)."""
    try:
        doc = json.loads(text)
    except ValueError:
        return ()
    attrs = doc.get("Attributes") if isinstance(doc, dict) else None
    if not isinstance(attrs, dict):
        return ()
    return tuple(
        (f"bios.{k}", str(v))
        for k, v in attrs.items()
        if not k.lower().endswith(("password", "passwordsalt", "salt"))
    )


def _read_all(
    table: Mapping[str, Callable[[Records], str | None]], records: Records
) -> dict[str, Any]:
    facts: dict[str, str | None] = {}
    for key, read in table.items():
        try:
            facts[key] = read(records)
        except Exception:  # an odd recording makes one fact unread, never the comparison fail
            facts[key] = None
    return facts


def node_from_records(
    name: str,
    source: str,
    records: Records,
    container: Records | None = None,
    why: Mapping[str, str] | None = None,
) -> Node:
    """A node's class and agreement facts from its host records (and its container's, when given).

    `why`: command id -> why that record is not usable (from the snapshot), to explain a missing identity.
    """
    names = gpu_names(records.get("smi_gpu_ids", ""))
    board = _board(records)
    missing = []
    if not names:
        missing.append("smi_gpu_ids")
    if board is None:
        missing.append("dmidecode_bios")
    model = Counter(names).most_common(1)[0][0] if names else "unknown GPU"
    klass = f"{len(names)}× {model} · {board or 'unknown board'}"
    facts = _read_all(FACTS, records)
    facts.update(_bios_attributes(records))  # --bmc: the BIOS settings (issue 27)
    if container is not None:
        facts.update(_read_all(CONTAINER_FACTS, container))
    reason = None
    if not records:
        reason = (why or {}).get("*") or "no usable host record"
    elif missing:
        reason = "; ".join(
            f"{IDENTITY[c]} not read ({(why or {}).get(c) or 'no usable ' + c + ' record'})"
            for c in missing
        )
    return Node(name=name, source=source, klass=klass, facts=facts, not_comparable=reason)


def _record_problem(r: Mapping[str, Any]) -> str | None:
    if r.get("error"):
        return str(r["error"])
    if r.get("timed_out"):
        return "timed out"
    if r.get("truncated"):
        return "output cut"
    if r.get("exit_status") not in (0, None):
        first = next(iter(str(r.get("stderr") or "").strip().splitlines()), "")
        status = r.get("exit_status")
        what = "not installed" if status == 127 else f"exit {status}"
        return f"{r.get('command_id')}: {what}" + (f": {first[:120]}" if first else "")
    return None


def usable_records(doc: Mapping[str, Any], target: str) -> dict[str, str]:
    """command id -> stdout of every usable record of `target` in a snapshot document (first one wins)."""
    out: dict[str, str] = {}
    for r in records_of(doc):  # the stored shape (each record once) or an expanded one
        if (
            isinstance(r, dict)
            and r.get("target") == target
            and _record_problem(r) is None
            and r.get("exit_status") == 0
            and isinstance(r.get("stdout"), str)
        ):
            out.setdefault(str(r.get("command_id")), r["stdout"])
    return out


def node_from_document(name: str, source: str, doc: Mapping[str, Any]) -> Node:
    """A node from a snapshot document (a dict): host and container records, and why an identity is missing."""
    why: dict[str, str] = {}
    state = (doc.get("target_states") or {}).get("host") or {}
    if state.get("state") == "failed":
        why["*"] = f"host unreachable: {state.get('reason') or 'failed'}"
    for r in records_of(doc):  # the stored shape (each record once) or an expanded one
        if isinstance(r, dict) and r.get("target") == "host":
            cid = str(r.get("command_id"))
            if cid in IDENTITY and cid not in why and (p := _record_problem(r)):
                why[cid] = p
    if state.get("is_root") is False and "dmidecode_bios" not in why:
        why["dmidecode_bios"] = "audited without root"
    roles = {t.get("role") for t in doc.get("targets") or [] if isinstance(t, dict)}
    container = usable_records(doc, "container") if "container" in roles else None
    return node_from_records(name, source, usable_records(doc, "host"), container, why)


def compare(nodes: Iterable[Node]) -> list[ClassReport]:
    """Group comparable nodes by class; in each class, name the nodes whose facts differ from a strict
    majority (3+ readers), and list the facts on which there is no majority (splits) with each side."""
    return fleet_report(nodes).classes


def fleet_report(nodes: Iterable[Node]) -> FleetReport:
    report = FleetReport()
    by_class: dict[str, list[Node]] = {}
    for n in nodes:
        if n.not_comparable:
            report.not_comparable.append((n.name, n.not_comparable))
        else:
            by_class.setdefault(n.klass, []).append(n)
    keys = list(FACTS) + list(CONTAINER_FACTS)
    for klass, members in sorted(by_class.items()):
        rep = ClassReport(klass=klass, nodes=[m.name for m in members])
        columns: dict[
            str, list[tuple[Node, str]]
        ] = {}  # fact -> (node, value) of its readers, in order
        for m in members:
            for key, v in m.facts.items():
                if v is not None:
                    columns.setdefault(key, []).append((m, v))
        bios = sorted(k for k in columns if k.startswith("bios."))
        for key in keys + bios:
            read = columns.get(key, [])
            if len(read) < 2:
                continue
            rep.compared.append(key)
            values = [v for _, v in read]
            if values.count(values[0]) == len(values):  # the usual case: every reader agrees
                continue
            counts = Counter(values).most_common()
            value, count = counts[0]
            if len(read) >= 3 and count * 2 > len(read):
                rep.outliers += [
                    Outlier(m.name, key, v, value, count, len(read)) for m, v in read if v != value
                ]
                continue
            sides = tuple((v, tuple(m.name for m, mv in read if mv == v)) for v, _ in counts)
            rep.splits.append(Split(key, sides))
        report.classes.append(rep)
    return report
