"""The audit in the Prometheus text exposition format, for node_exporter's textfile collector.

Series. A single audit's file carries no node label (Prometheus adds `instance` from the scrape); a fleet file
(`--hosts FILE --prom FILE`, one file for every node) labels each series `gpuaudit_node="<inventory name>"` —
never `node`, `instance`, `job` or another label a scrape config commonly sets (`SCRAPE_LABELS`), so no label is
renamed to `exported_*` and queries keep matching.

* `gpuaudit_check_severity{check,probe,target,owner}` — -1 n/a, 0 ok, 1 info, 2 unknown, 3 warning, 4 critical
  (`Severity.rank`). A single audit: one series per check and target whatever its verdict. A fleet file (the
  compact layout, so 1,000 nodes scrape in under 2 s): only checks at unknown or worse. Alert rules compare
  numbers (`>= 4`) either way.
* `gpuaudit_findings{target,severity}` — how many checks are at each severity (single audits; in a fleet file
  count the check series: `count by (gpuaudit_node) (gpuaudit_check_severity >= 3)`).
* `gpuaudit_target_up{target}` — 1 audited, 0 could not be reached. **A target that could not be reached keeps
  the verdicts of the last audit that reached it** (read back from the file being replaced), so an unreachable
  node never "resolves" a firing critical; `gpuaudit_target_audited_timestamp_seconds{target}` says when those
  verdicts were judged (the stale marker).
* `gpuaudit_last_run_timestamp_seconds` — when the evidence was captured (the last command's end: a
  `--replay old.json --prom` carries the old capture time, so the staleness alert sees old evidence),
  `gpuaudit_run_duration_seconds`, `gpuaudit_probe_duration_seconds{probe}` (single audits only); the decode
  roofline bounds (single audits only) and the measured single-stream speed.
* `gpuaudit_node_info{driver,cuda,kernel,bios,gpu_model,gpu_count,class}` 1 — what fleets group by.
* `gpuaudit_fact_info{fact,value}` 1 — every fact `gpuaudit-tui fleet` compares within a class (driver,
  CUDA, kernel, BIOS, VBIOS, scaling driver, governor, NUMA balancing, IOMMU mode, ACS, MaxReadReq, persistence,
  MIG mode, GPU link, engine, the container's engine/torch/NCCL), one series per fact that was read; BIOS
  settings read over Redfish are one fact, `bios_settings`, valued by a digest of them all (no series per
  setting); the class is on `gpuaudit_node_info` (one long label per node, not per fact: half the scrape time),
  and the shipped rules join it on and name the peer outlier.
* `gpuaudit_decode_roofline_tokens_per_second{bound}` / `gpuaudit_decode_tokens_per_second` when known.
* `gpuaudit_decode_baseline_tokens_per_second` — the single-stream speed of the host's pinned last-known-good
  snapshot (`gpuaudit-tui baseline set`), when one is pinned and measured; the drop is judged by
  `gpuaudit_check_severity{check="regression.decode_speed"}` (4 = slower than the baseline by more than 5 %).

Pure rendering (`render`) plus one atomic writer (`write_textfile`: temp file in the same directory + rename,
as the textfile collector requires so it never reads half a file); `write_prom_file` renders with the file's
previous content (the carried-over verdicts) and writes it.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from gpuaudit.probes.core.fleet.peers import FACTS, node_from_records
from gpuaudit.probes.core.models import SEVERITY_ORDER, CommandRecord, Finding, Severity
from gpuaudit.probes.core.parsers.nvidia_smi import gpu_model

SEVERITY_HELP = "-1 n/a, 0 ok, 1 info, 2 unknown, 3 warning, 4 critical"
NODE_LABEL = "gpuaudit_node"
"""The node's name in a fleet file (one file for every node)."""
SCRAPE_LABELS = frozenset(
    {"job", "instance", "node", "pod", "namespace", "container", "service", "endpoint", "host"}
    | {"hostname", "cluster", "region", "zone", "env", "environment", "exported_instance"}
)
"""Labels scrape configs and service discovery commonly set: none of our series may carry one (a collision
renames ours to exported_*, and the documented queries would match nothing)."""
COMPACT_MIN_RANK = Severity.UNKNOWN.rank
"""A fleet file's check series: only verdicts at unknown or worse."""
MAX_PREVIOUS_BYTES = 64 * 1024 * 1024

_SAMPLE = re.compile(r"^(?P<name>[a-z_:]+)(?:\{(?P<labels>.*)\})? (?P<value>\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True, slots=True)
class NodeAudit:
    """What one node's audit contributes to the exposition (built from a snapshot by `from_snapshot`)."""

    findings: tuple[Finding, ...]
    targets: Mapping[str, bool]
    """role -> reached."""
    created_at: datetime | None
    """When the evidence was captured."""
    duration_s: float | None
    probe_durations: Mapping[str, float]
    info: Mapping[str, str]
    roofline: Mapping[str, float] = field(default_factory=dict)
    """bound name -> tokens/s (and "measured" for the engine's own figure)."""
    klass: str = ""
    """The peer class (GPU count x model x board), as `gpuaudit-tui fleet` groups nodes."""
    facts: Mapping[str, str] = field(default_factory=dict)
    """fact -> value for every fact `fleet` compares that was read on this node."""


def escape_label(value: str) -> str:
    """Label values escape backslash, double quote and newline (exposition format)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m[1] == "n" else m[1], value)


def _labels(pairs: Mapping[str, str]) -> str:
    if not pairs:
        return ""
    return "{" + ",".join(f'{k}="{escape_label(v)}"' for k, v in pairs.items()) + "}"


def _num(value: float) -> str:
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


class _Family:
    def __init__(self, name: str, help_text: str, kind: str = "gauge") -> None:
        self.name, self.help, self.kind = name, help_text, kind
        self.samples: list[str] = []

    def add(self, labels: Mapping[str, str], value: float) -> None:
        self.samples.append(f"{self.name}{_labels(labels)} {_num(value)}")

    def text(self) -> str:
        return f"# HELP {self.name} {self.help}\n# TYPE {self.name} {self.kind}\n" + "".join(
            s + "\n" for s in self.samples
        )


CARRIED = ("gpuaudit_check_severity", "gpuaudit_target_audited_timestamp_seconds")


@dataclass(slots=True)
class Previous:
    """What the file being replaced said, per node (None = a single audit's file): the carried families."""

    series: dict[str | None, dict[str, list[tuple[dict[str, str], float]]]] = field(
        default_factory=dict
    )

    def of(self, node: str | None, name: str) -> list[tuple[dict[str, str], float]]:
        return self.series.get(node, {}).get(name, [])


def read_previous(text: str) -> Previous:
    """The carried families of a previous exposition of ours (anything unreadable is skipped)."""
    prev = Previous()
    for line in text.splitlines():
        if not line.startswith(CARRIED):
            continue
        m = _SAMPLE.match(line)
        if not m or m["name"] not in CARRIED:
            continue
        try:
            value = float(m["value"])
        except ValueError:
            continue
        labels = {k: _unescape(v) for k, v in _LABEL.findall(m["labels"] or "")}
        node = labels.pop(NODE_LABEL, None)
        prev.series.setdefault(node, {}).setdefault(m["name"], []).append((labels, value))
    return prev


def _roles(target: str) -> set[str]:
    return set(target.split("+"))


def render(
    nodes: Mapping[str | None, NodeAudit],
    previous: Previous | None = None,
    *,
    compact: bool | None = None,
) -> str:
    """One exposition for one node (key None: no node label) or many (fleet: key = node name).

    `previous`: what the replaced file said; a target that was not reached keeps its last verdicts from it.
    `compact` (default: a fleet file): check series only at unknown or worse, no per-probe durations.
    """
    if compact is None:
        compact = any(node is not None for node in nodes)
    previous = previous or Previous()
    fam = {
        "check": _Family(
            "gpuaudit_check_severity",
            f"Verdict of each check per target ({SEVERITY_HELP})"
            + ("; a fleet file lists only unknown or worse." if compact else "."),
        ),
        "count": _Family("gpuaudit_findings", "Checks at each severity, per target."),
        "up": _Family(
            "gpuaudit_target_up", "1 when the target was audited, 0 when it could not be reached."
        ),
        "audited": _Family(
            "gpuaudit_target_audited_timestamp_seconds",
            "When the target's check verdicts were judged (older than the run: it was not reached "
            "and keeps its last verdicts).",
        ),
        "ts": _Family(
            "gpuaudit_last_run_timestamp_seconds",
            "When the audit's evidence was captured (Unix time).",
        ),
        "dur": _Family("gpuaudit_run_duration_seconds", "Wall time of the audit."),
        "probe": _Family("gpuaudit_probe_duration_seconds", "Wall time of each probe."),
        "info": _Family("gpuaudit_node_info", "Facts fleets group nodes by (value always 1)."),
        "fact": _Family(
            "gpuaudit_fact_info",
            "Every fact the peer comparison compares within a class (value always 1).",
        ),
        "roof": _Family(
            "gpuaudit_decode_roofline_tokens_per_second", "Decode roofline bounds for one stream."
        ),
        "meas": _Family(
            "gpuaudit_decode_tokens_per_second", "Measured single-stream decode speed."
        ),
        "base": _Family(
            "gpuaudit_decode_baseline_tokens_per_second",
            "Single-stream decode speed of the host's last-known-good baseline snapshot.",
        ),
    }
    for node, audit in nodes.items():
        base = {NODE_LABEL: node} if node is not None else {}
        down = {role for role, up in audit.targets.items() if not up}
        ts = round(audit.created_at.timestamp(), 3) if audit.created_at is not None else None
        carried = {
            tuple(sorted(labels.items())): value
            for labels, value in previous.of(node, "gpuaudit_check_severity")
            if "host" in down or _roles(labels.get("target", "host")) & down
        }  # the host unreached: its containers were not reached either
        emitted: set[tuple[Any, ...]] = set()
        for f in audit.findings:  # a cross-target check is one series, target="host+container"
            labels = {
                "check": f.id,
                "probe": f.probe,
                "target": "+".join(f.targets or ["host"]),
                "owner": f.owner or "",
            }
            key = tuple(sorted(labels.items()))
            rank: float = f.severity.rank
            if key in carried:  # its target was not reached: the last verdict judged while it was
                rank = carried[key]
            emitted.add(key)
            if not compact or rank >= COMPACT_MIN_RANK:
                fam["check"].add({**base, **labels}, rank)
        for key, rank in carried.items():  # the node (or target) gone entirely this time
            if key not in emitted and (not compact or rank >= COMPACT_MIN_RANK):
                got = dict(key)
                order = [k for k in ("check", "probe", "target", "owner") if k in got]
                fam["check"].add({**base, **{k: got[k] for k in order + sorted(got)}}, rank)
        for target in audit.targets if not compact else ():  # a fleet file: count the series
            counts = {s: 0 for s in SEVERITY_ORDER}
            for f in audit.findings:
                if target in (f.targets or ["host"]):
                    counts[f.severity] += 1
            for sev in SEVERITY_ORDER:
                fam["count"].add({**base, "target": target, "severity": sev.value}, counts[sev])
        prev_audited = {
            labels.get("target"): value
            for labels, value in previous.of(node, "gpuaudit_target_audited_timestamp_seconds")
        }
        for target, up in audit.targets.items():
            fam["up"].add({**base, "target": target}, 1 if up else 0)
            when = ts if up else prev_audited.get(target)
            if when is not None and not (compact and up):  # a fleet file: only the stale ones
                fam["audited"].add({**base, "target": target}, when)
        if ts is not None:
            fam["ts"].add(base, ts)
        if audit.duration_s is not None:
            fam["dur"].add(base, round(audit.duration_s, 3))
        if not compact:
            for probe, seconds in audit.probe_durations.items():
                fam["probe"].add({**base, "probe": probe}, round(seconds, 4))
        if audit.info or audit.klass:
            fam["info"].add({**base, **audit.info, "class": audit.klass}, 1)
        for fact, fact_value in audit.facts.items():
            fam["fact"].add({**base, "fact": fact, "value": fact_value}, 1)  # class: on node_info
        for bound, value in audit.roofline.items():
            if bound == "measured":
                fam["meas"].add(base, round(value, 3))
            elif bound == "baseline":
                fam["base"].add(base, round(value, 3))
            elif not compact:
                fam["roof"].add({**base, "bound": bound}, round(value, 3))
    return "".join(f.text() for f in fam.values() if f.samples)


def write_textfile(path: Path, text: str) -> Path:
    """Atomically replace `path` (temp file in the same directory, fsync, rename; mode 0644 for the collector)."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise FileNotFoundError(f"--prom: directory {directory} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def previous_file(path: Path) -> Previous:
    """The carried verdicts of the file `path` replaces (empty when there is none or it is unreadable)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_PREVIOUS_BYTES)
    except OSError:
        return Previous()
    return read_previous(data.decode("utf-8", errors="replace"))


def write_prom_file(path: Path, nodes: Mapping[str | None, NodeAudit]) -> Path:
    """--prom FILE: render (carrying the last verdicts of unreachable targets over from the file being
    replaced) and write atomically."""
    path = Path(path)
    return write_textfile(path, render(nodes, previous_file(path)))


# --------------------------------------------------------------------------------------------------
# From a snapshot: raw records with stable command ids, so the info metric survives facts refactors.


def _host_stdouts(records: Iterable[CommandRecord], target: str = "host") -> dict[str, str]:
    return {
        r.command_id: r.stdout
        for r in records
        if r.target == target
        and r.exit_status == 0
        and not r.timed_out
        and not r.error
        and not r.truncated
    }


def node_info(records: list[CommandRecord]) -> dict[str, str]:
    """driver, cuda, kernel, bios, gpu_model, gpu_count of the host ("" when not read): the fleet comparison's readers."""
    out = _host_stdouts(records)
    info = {key: FACTS[key](out) or "" for key in ("driver", "cuda", "kernel", "bios")}
    model, count = gpu_model(out.get("smi_gpu_ids", ""))
    return {**info, "gpu_model": model or "", "gpu_count": str(count) if count else ""}


def captured_at(snapshot: Any) -> datetime | None:
    """When the evidence was captured: the last command's end (a replay keeps the recorded times), else the
    snapshot's creation time."""
    ends = [
        r.started_at.timestamp() + (r.duration_s or 0.0)
        for p in snapshot.probes
        for r in p.records
        if getattr(r, "started_at", None) is not None
        and (r.exit_status is not None or r.timed_out)  # ran (a replay's unrecorded source did not)
    ]
    created: datetime | None = snapshot.created_at
    if ends:
        return datetime.fromtimestamp(max(ends), tz=created.tzinfo if created else None)
    return created


def from_snapshot(snapshot: Any) -> NodeAudit:
    """A NodeAudit from a `Snapshot` (duck-typed: the engine does not import snapshots/)."""
    records = [r for p in snapshot.probes for r in p.records]
    states = snapshot.target_states or {}
    targets = {
        t.role: getattr(states.get(t.role), "state", None) != "failed" for t in snapshot.targets
    }
    starts = [p.started_at for p in snapshot.probes if p.started_at]
    ends = [p.started_at.timestamp() + p.duration_s for p in snapshot.probes if p.started_at]
    duration = (max(ends) - min(s.timestamp() for s in starts)) if starts else None
    roofline: dict[str, float] = {}
    roof = getattr(snapshot, "roofline", None)
    if isinstance(roof, Mapping):
        for key, value in (roof.get("bounds") or {}).items():
            if isinstance(value, (int, float)):
                roofline[str(key)] = float(value)
        if isinstance(roof.get("measured_tok_s"), (int, float)):
            roofline["measured"] = float(roof["measured_tok_s"])
    for p in snapshot.probes:  # the host's pinned last-known-good (snapshots/baseline.py)
        if p.probe_id == "baseline":
            speed = (p.facts.get("host") or {}).get("baseline_tok_s")
            if isinstance(speed, (int, float)):
                roofline["baseline"] = float(speed)
    roles = {t.role for t in snapshot.targets}
    container = _host_stdouts(records, "container") if "container" in roles else None
    peer = node_from_records("", "", _host_stdouts(records), container)
    return NodeAudit(
        findings=tuple(f for p in snapshot.probes for f in p.findings),
        targets=targets,
        created_at=captured_at(snapshot),
        duration_s=duration,
        probe_durations={
            p.probe_id: p.duration_s for p in snapshot.probes if p.status in ("done", "failed")
        },
        info=node_info(records),
        roofline=roofline,
        klass=peer.klass,
        facts=_fact_series(peer.facts),
    )


BIOS_PREFIX = "bios."


def _fact_series(facts: Mapping[str, Any]) -> dict[str, str]:
    """The compared facts as fact_info values. BIOS settings read over Redfish (hundreds of `bios.<name>`
    facts) become ONE fact, `bios_settings`, valued by a digest of them all: a node whose settings differ from
    its class's is still named by the peer rule, without a series per setting (`gpuaudit-tui fleet` says which)."""
    out = {k: str(v) for k, v in facts.items() if v is not None and not k.startswith(BIOS_PREFIX)}
    bios = sorted(
        (k, str(v)) for k, v in facts.items() if v is not None and k.startswith(BIOS_PREFIX)
    )
    if bios:
        digest = hashlib.sha256("\n".join(f"{k}={v}" for k, v in bios).encode()).hexdigest()[:12]
        out["bios_settings"] = f"{len(bios)} settings #{digest}"
    return out


__all__ = [
    "NODE_LABEL",
    "SCRAPE_LABELS",
    "NodeAudit",
    "Previous",
    "captured_at",
    "escape_label",
    "from_snapshot",
    "node_info",
    "read_previous",
    "render",
    "write_prom_file",
    "write_textfile",
    "Severity",
]
