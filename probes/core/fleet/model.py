"""The fleet screen's data, without Textual: one row per node, its progress, sort orders and the text filter.

Rows come from two places: a live `--hosts` audit (`FleetModel.live`, then `host_started` / `host_finished`
as each host's audit starts and ends) or saved snapshots (`row_from_document`). Outlier marks are
`probes/core/peers.compare` over the finished nodes, recomputed when a node finishes.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from gpuaudit.probes.core.fleet.documents import node_name
from gpuaudit.probes.core.fleet.peers import (
    FleetReport,
    Node,
    Outlier,
    fleet_report,
    node_from_document,
)
from gpuaudit.probes.core.models import Severity
from gpuaudit.probes.ids import PROBE_IDS

PROBES = PROBE_IDS
"""The ten probe columns, in the dashboard's order."""
PROBE_ABBR = dict(zip(PROBES, ("fw", "ct", "dr", "kn", "pc", "pw", "nc", "nu", "py", "nv")))
STATES = ("pending", "auditing", "done", "unreachable")
MIN_PEERS = 3
"""probes/core/peers.compare names outliers only in a class of 3+ nodes that read the fact."""
STATE_ORDER = {"unreachable": 0, "done": 1, "auditing": 2, "pending": 3}
"""Sorting by state puts what needs attention first, then what is known, then what is still to come."""


@dataclass(frozen=True, slots=True)
class NodeRow:
    key: str
    """Unique in a fleet: the inventory spec, or the snapshot's node name (made unique)."""
    name: str
    spec: str
    index: int
    """Position in the inventory or the file list: the tie-break of every sort."""
    state: str = "pending"
    worst: Mapping[str, Severity] = field(default_factory=dict)
    """probe id -> worst finding severity (absent: the probe has no finding or did not run)."""
    counts: Mapping[Severity, int] = field(default_factory=dict)
    outliers: tuple[Outlier, ...] = ()
    klass: str = ""
    class_size: int = 0
    """Finished nodes of its class, itself included: peers are compared from 3 on."""
    reason: str | None = None
    duration_s: float | None = None
    exit_status: int | None = None
    peer_note: str = ""
    """What the peer comparison says of this node (the text report's words): agrees, differs, no majority,
    not comparable (why), or no peer."""
    snapshot_json: str | bytes | None = None
    """Live mode: the host's Snapshot JSON (text or UTF-8 bytes), validated only when its dashboard opens."""
    path: str | None = None
    """Snapshot mode: the file, read again only when its dashboard opens."""

    @property
    def openable(self) -> bool:
        return self.snapshot_json is not None or self.path is not None

    @property
    def worst_overall(self) -> Severity | None:
        return max(self.worst.values(), key=lambda s: s.rank, default=None)

    def outlier_texts(self) -> list[str]:
        return [outlier_text(o) for o in self.outliers]

    def matches(self, text: str) -> bool:
        """The `/` filter: case-insensitive substring of name, spec, class, state, reason or an outlier fact."""
        needle = text.strip().lower()
        if not needle:
            return True
        hay = [
            self.name,
            self.spec,
            self.klass,
            self.state,
            self.reason or "",
            *self.outlier_texts(),
        ]
        return any(needle in h.lower() for h in hay)


def outlier_text(o: Outlier) -> str:
    return f"{o.fact} = {o.value} (majority {o.majority}, {o.agree} of {o.of})"


def findings_summary(doc: Mapping[str, Any]) -> tuple[dict[str, Severity], dict[Severity, int]]:
    """(worst severity per probe, count per severity) from a snapshot document's findings."""
    worst: dict[str, Severity] = {}
    counts: dict[Severity, int] = {}
    for f in doc.get("findings") or []:
        try:
            sev = Severity(f.get("severity"))
        except (ValueError, AttributeError):
            continue
        counts[sev] = counts.get(sev, 0) + 1
        probe = str(f.get("probe"))
        if probe not in worst or sev.rank > worst[probe].rank:
            worst[probe] = sev
    return worst, counts


def host_state(doc: Mapping[str, Any]) -> tuple[str, str | None]:
    """("done" | "unreachable", reason) from the host target's recorded state."""
    state = (doc.get("target_states") or {}).get("host") or {}
    if state.get("state") == "failed":
        return "unreachable", state.get("reason") or "failed"
    return "done", None


SortKey = Callable[[NodeRow], tuple[Any, ...]]


def _sev_rank(s: Severity | None) -> int:
    return -1 if s is None else s.rank


def _by_probe(probe: str) -> SortKey:
    return lambda r: (-_sev_rank(r.worst.get(probe)), r.index)


SORTS: dict[str, SortKey] = {
    "inventory": lambda r: (r.index,),
    "worst": lambda r: (
        r.state != "unreachable",
        -_sev_rank(r.worst_overall),
        -r.counts.get(Severity.CRITICAL, 0),
        -r.counts.get(Severity.WARNING, 0),
        -len(r.outliers),
        STATE_ORDER[r.state],
        r.index,
    ),
    "name": lambda r: (r.name.lower(), r.index),
    "state": lambda r: (STATE_ORDER[r.state], r.index),
    "critical": lambda r: (-r.counts.get(Severity.CRITICAL, 0), r.index),
    "warning": lambda r: (-r.counts.get(Severity.WARNING, 0), r.index),
    "unknown": lambda r: (-r.counts.get(Severity.UNKNOWN, 0), r.index),
    "outliers": lambda r: (-len(r.outliers), r.index),
    **{p: _by_probe(p) for p in PROBES},
}
"""Sort orders, in the order the sort key cycles through them; worst first wherever 'worse' means something
(an unreachable node is the worst: nothing about it is known)."""
SORT_ORDER = tuple(SORTS)


def next_sort(current: str, step: int = 1) -> str:
    return SORT_ORDER[(SORT_ORDER.index(current) + step) % len(SORT_ORDER)]


class FleetModel:
    """Every node's row and the run's progress; `version` changes whenever a row does (the screen polls it)."""

    def __init__(
        self,
        rows: Iterable[NodeRow],
        *,
        live: bool,
        title: str = "fleet",
        skipped: Iterable[str] = (),
        max_connections: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rows: dict[str, NodeRow] = {r.key: r for r in rows}
        self.live, self.title, self.skipped = live, title, list(skipped)
        self.max_connections, self.clock = max_connections, clock
        self.started_at = clock()
        self.finished_at: float | None = None if live else self.started_at
        self.version = 0
        self.error: str | None = None
        self._nodes: dict[str, Node] = {}
        self.report = FleetReport()

    @classmethod
    def for_hosts(cls, hosts: Iterable[Any], **kw: Any) -> FleetModel:
        """Live mode: one pending row per inventory host (FleetHost: spec, name)."""
        rows = [NodeRow(key=h.spec, name=h.name, spec=h.spec, index=i) for i, h in enumerate(hosts)]
        return cls(rows, live=True, **kw)

    @classmethod
    def from_documents(cls, docs: Iterable[tuple[str, Mapping[str, Any]]], **kw: Any) -> FleetModel:
        """Snapshot mode from (path, document) pairs; outliers computed once."""
        model = cls([], live=False, **kw)
        for i, (path, doc) in enumerate(docs):
            model.add_document(path, doc, i)
        model.recompute_outliers()
        return model

    # --- changes --------------------------------------------------------------------------------------
    def add_document(self, path: str, doc: Mapping[str, Any], index: int) -> None:
        name = node_name(doc, path)
        key = name
        if key in self.rows:  # two snapshots of one host: keep both, told apart by the file name
            key = f"{name} ({path.rsplit('/', 1)[-1].removesuffix('.json')})"
        worst, counts = findings_summary(doc)
        state, reason = host_state(doc)
        node = node_from_document(key, path, doc)
        spec = str(((doc.get("targets") or [{}])[0] or {}).get("spec") or path)
        self.rows[key] = NodeRow(
            key=key,
            name=key,
            spec=spec,
            index=index,
            state=state,
            worst=worst,
            counts=counts,
            klass=node.klass,
            reason=reason,
            path=path,
        )
        self._nodes[key] = node
        self.version += 1

    def host_started(self, host: Any) -> None:
        row = self.rows.get(host.spec)
        if row is not None and row.state == "pending":
            self.rows[host.spec] = replace(row, state="auditing")
            self.version += 1

    def host_finished(self, result: Any) -> None:
        """A HostResult (tui/cli/fleet_hosts.py) arrived: fill the row and compare it with its peers."""
        key = result.host.spec
        row = self.rows.get(key)
        if row is None:
            return
        doc: Mapping[str, Any] = json.loads(result.snapshot_json) if result.snapshot_json else {}
        worst, counts = findings_summary(doc)
        unreachable = result.exit_status == 3 or not doc
        klass = ""
        if not unreachable:
            node = node_from_document(key, key, doc)
            self._nodes[key], klass = node, node.klass
        self.rows[key] = replace(
            row,
            state="unreachable" if unreachable else "done",
            worst=worst,
            counts=counts,
            reason=result.error,
            duration_s=result.duration_s,
            exit_status=result.exit_status,
            snapshot_json=result.snapshot_json,
            klass=klass,
        )
        self.recompute_outliers()
        self.version += 1

    def finish(self, error: str | None = None) -> None:
        self.finished_at, self.error = self.clock(), error
        self.version += 1

    def recompute_outliers(self) -> None:
        found: dict[str, list[Outlier]] = {}
        self.report = fleet_report(self._nodes.values())
        for rep in self.report.classes:
            for o in rep.outliers:
                found.setdefault(o.node, []).append(o)
        sizes = Counter(n.klass for n in self._nodes.values() if not n.not_comparable)
        for key, row in self.rows.items():
            new, size = (
                tuple(found.get(key, ())),
                sizes.get(row.klass, 0) if key in self._nodes else 0,
            )
            note = self.report.note(key) if key in self._nodes else ""
            if new != row.outliers or size != row.class_size or note != row.peer_note:
                self.rows[key] = replace(row, outliers=new, class_size=size, peer_note=note)

    @property
    def compared(self) -> bool:
        """Whether any finished node was compared with a peer (a class of 2+ comparable nodes)."""
        return any(len(c.nodes) >= 2 for c in self.report.classes)

    # --- reading --------------------------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        return self.finished_at is not None

    def visible(
        self, sort: str = "inventory", text: str = "", reverse: bool = False
    ) -> list[NodeRow]:
        rows = [r for r in self.rows.values() if r.matches(text)]
        return sorted(rows, key=SORTS[sort], reverse=reverse)

    def tally(self) -> dict[str, int]:
        out = dict.fromkeys(STATES, 0)
        for r in self.rows.values():
            out[r.state] += 1
        return out

    def progress_parts(self) -> list[str]:
        """["3/8 done", "2 auditing", "3 pending", "1 unreachable", "4.2s", "2 differ", ...]: zero counts left
        out; the screen shows as many as fit, in this order."""
        t = self.tally()
        n = len(self.rows)
        odd = sum(1 for r in self.rows.values() if r.outliers)
        end = self.finished_at if self.finished_at is not None else self.clock()
        parts = []
        if self.live:
            finished = t["done"] + t["unreachable"]
            parts.append(f"{finished}/{n} done" if not self.finished else f"{n} host(s) audited")
            parts += [f"{t[s]} {s}" for s in ("auditing", "pending") if t[s]]
        else:
            parts.append(f"{n} snapshot(s)")
        if self.error:
            parts.append(f"stopped: {self.error}")
        if t["unreachable"]:
            parts.append(f"{t['unreachable']} unreachable")
        if self.live:
            parts.append(f"{end - self.started_at:.1f}s")
        if odd:
            parts.append(f"{odd} differs" if odd == 1 else f"{odd} differ")
        if self.report.agrees:
            parts.append("peers agree")
        elif (not self.live or self.finished) and (
            self.report.classes or self.report.not_comparable
        ):
            parts += [p for p in self.report.problems() if "outlier" not in p]
        if self.skipped:
            parts.append(f"{len(self.skipped)} file(s) skipped")
        if self.live and self.max_connections and not self.finished:
            parts.append(f"at most {self.max_connections} at once")
        return parts

    def progress_line(self, width: int = 10_000) -> str:
        """ "fleet hosts.ini: 3/8 done · 2 auditing · 3 pending · 1 unreachable · 4.2s · 1 differs", cut at whole
        parts ("differ": nodes with an outlier fact)."""
        line = f"{self.title}:"
        for i, part in enumerate(self.progress_parts()):
            more = (" " if i == 0 else " · ") + part
            if i and len(line) + len(more) > width:
                break
            line += more
        return line

    def exit_status(self) -> int:
        """Live: the worst host's status, 3 when a host never finished. Snapshots: 1 when any outlier."""
        if not self.live:
            return self.report.exit_status() if self._nodes else 2
        if any(r.exit_status is None for r in self.rows.values()):
            return 3
        return max((r.exit_status or 0 for r in self.rows.values()), default=0)
