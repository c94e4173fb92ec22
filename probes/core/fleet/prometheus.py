"""The audit in the Prometheus text exposition format, for node_exporter's textfile collector.

Series (every one carries a `node` label in fleet mode, one file for all nodes; none in a single audit,
where Prometheus adds `instance` from the scrape):

* `gpuaudit_check_severity{check,probe,target,owner}` — -1 n/a (proven not to apply), 0 ok, 1 info,
  2 unknown, 3 warning, 4 critical (the `Severity.rank`). One series per check and target whatever its verdict, so a series never vanishes
  when a check changes state and alert rules compare numbers: `gpuaudit_check_severity >= 4`.
* `gpuaudit_findings{target,severity}` — how many checks are at each severity.
* `gpuaudit_target_up{target}` — 1 audited, 0 could not be reached.
* `gpuaudit_last_run_timestamp_seconds`, `gpuaudit_run_duration_seconds`, `gpuaudit_probe_duration_seconds{probe}`.
* `gpuaudit_node_info{driver,cuda,kernel,bios,gpu_model,gpu_count}` 1 — what fleets group by.
* `gpuaudit_decode_roofline_tokens_per_second{bound}` / `gpuaudit_decode_tokens_per_second` when known.

Pure rendering (`render`) plus one atomic writer (`write_textfile`: temp file in the same directory + rename,
as the textfile collector requires so it never reads half a file).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from gpuaudit.probes.core.fleet.peers import FACTS
from gpuaudit.probes.core.models import SEVERITY_ORDER, CommandRecord, Finding, Severity
from gpuaudit.probes.core.parsers.nvidia_smi import gpu_model

SEVERITY_HELP = "-1 n/a, 0 ok, 1 info, 2 unknown, 3 warning, 4 critical"


@dataclass(frozen=True, slots=True)
class NodeAudit:
    """What one node's audit contributes to the exposition (built from a snapshot by `from_snapshot`)."""

    findings: tuple[Finding, ...]
    targets: Mapping[str, bool]
    """role -> reached."""
    created_at: datetime | None
    duration_s: float | None
    probe_durations: Mapping[str, float]
    info: Mapping[str, str]
    roofline: Mapping[str, float] = field(default_factory=dict)
    """bound name -> tokens/s (and "measured" for the engine's own figure)."""


def escape_label(value: str) -> str:
    """Label values escape backslash, double quote and newline (exposition format)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


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


def render(nodes: Mapping[str | None, NodeAudit]) -> str:
    """One exposition for one node (key None: no node label) or many (fleet: key = node name)."""
    fam = {
        "check": _Family(
            "gpuaudit_check_severity", f"Verdict of each check per target ({SEVERITY_HELP})."
        ),
        "count": _Family("gpuaudit_findings", "Checks at each severity, per target."),
        "up": _Family(
            "gpuaudit_target_up", "1 when the target was audited, 0 when it could not be reached."
        ),
        "ts": _Family("gpuaudit_last_run_timestamp_seconds", "When the audit ran (Unix time)."),
        "dur": _Family("gpuaudit_run_duration_seconds", "Wall time of the audit."),
        "probe": _Family("gpuaudit_probe_duration_seconds", "Wall time of each probe."),
        "info": _Family("gpuaudit_node_info", "Facts fleets group nodes by (value always 1)."),
        "roof": _Family(
            "gpuaudit_decode_roofline_tokens_per_second", "Decode roofline bounds for one stream."
        ),
        "meas": _Family(
            "gpuaudit_decode_tokens_per_second", "Measured single-stream decode speed."
        ),
    }
    for node, audit in nodes.items():
        base = {"node": node} if node is not None else {}
        for f in audit.findings:  # a cross-target check is one series, target="host+container"
            fam["check"].add(
                {
                    **base,
                    "check": f.id,
                    "probe": f.probe,
                    "target": "+".join(f.targets or ["host"]),
                    "owner": f.owner or "",
                },
                f.severity.rank,
            )
        for target in audit.targets:
            counts = {s: 0 for s in SEVERITY_ORDER}
            for f in audit.findings:
                if target in (f.targets or ["host"]):
                    counts[f.severity] += 1
            for sev in SEVERITY_ORDER:
                fam["count"].add({**base, "target": target, "severity": sev.value}, counts[sev])
        for target, up in audit.targets.items():
            fam["up"].add({**base, "target": target}, 1 if up else 0)
        if audit.created_at is not None:
            fam["ts"].add(base, round(audit.created_at.timestamp(), 3))
        if audit.duration_s is not None:
            fam["dur"].add(base, round(audit.duration_s, 3))
        for probe, seconds in audit.probe_durations.items():
            fam["probe"].add({**base, "probe": probe}, round(seconds, 4))
        fam["info"].add({**base, **audit.info}, 1)
        for bound, value in audit.roofline.items():
            if bound == "measured":
                fam["meas"].add(base, round(value, 3))
            else:
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


# --------------------------------------------------------------------------------------------------
# From a snapshot: raw records with stable command ids, so the info metric survives facts refactors.


def _host_stdouts(records: Iterable[CommandRecord]) -> dict[str, str]:
    return {
        r.command_id: r.stdout
        for r in records
        if r.target == "host"
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
    return NodeAudit(
        findings=tuple(f for p in snapshot.probes for f in p.findings),
        targets=targets,
        created_at=snapshot.created_at,
        duration_s=duration,
        probe_durations={
            p.probe_id: p.duration_s for p in snapshot.probes if p.status in ("done", "failed")
        },
        info=node_info(records),
        roofline=roofline,
    )


__all__ = [
    "NodeAudit",
    "escape_label",
    "from_snapshot",
    "node_info",
    "render",
    "write_textfile",
    "Severity",
]
