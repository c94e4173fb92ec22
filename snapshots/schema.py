"""The snapshot envelope: what --json prints and what --save writes (raw records, facts, findings)."""

from __future__ import annotations

import operator
from datetime import UTC, datetime
from typing import Any, Literal

from gpuaudit.probes.core.models import (
    AuditRun,
    Finding,
    ProbeResult,
    Target,
    TargetState,
    empty_list,
)
from gpuaudit.probes.core.record import Record, field
from gpuaudit.probes.core.roofline.report import roofline_for_run
from gpuaudit.probes.core.version import __version__
from gpuaudit.snapshots.compact import pack, refs_in_order, unpack

SCHEMA_VERSION = 3
"""1: 0.1.0-0.2.x. 2: "not applicable" is its own severity `n/a` (schema 1 wrote ok + "not applicable: ").
3: stored packed (snapshots/compact.py): each record once per target, probes name theirs by position
(`record_refs`), findings once (`finding_refs`). In memory a Snapshot keeps each probe's own lists."""


def roofline_dict(run: AuditRun) -> dict[str, Any] | None:
    """The run's roofline as plain data; None when computing it failed (it never stops a snapshot)."""
    try:
        return roofline_for_run(run).model_dump(mode="json")
    except Exception:  # noqa: BLE001 - a derived figure must not cost the audit its snapshot
        return None


def _finding_refs(snapshot: Snapshot) -> list[list[int]] | None:
    """Each probe's finding_refs when its findings are the objects at the next places of the flat list (by
    identity: the same object serialises to the same dict); None otherwise (compact.pack compares the dicts)."""
    return refs_in_order((p.findings for p in snapshot.probes), snapshot.findings, operator.is_)


class Snapshot(Record):
    """One audit, complete: enough to re-judge it later with newer parsers and rules."""

    schema_version: int = SCHEMA_VERSION
    tool_version: str = __version__
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    name: str | None = None
    mode: Literal["live", "replay", "demo", "resume"] = "live"
    note: str | None = None
    """Shown wherever the snapshot is shown, e.g. "illustrative example, not a capture"."""
    targets: list[Target] = field(default_factory=empty_list)
    target_states: dict[str, TargetState] = field(default_factory=dict)
    probes: list[ProbeResult] = field(default_factory=empty_list)
    findings: list[Finding] = field(default_factory=empty_list)
    """Flat list of every probe's findings, in probe order."""
    roofline: dict[str, Any] | None = None
    """The decode roofline (probes.core.roofline.report.Roofline as a dict): derived from the records, so a replay
    recomputes it; absent in snapshots written before 0.2.0."""

    @classmethod
    def _before_validate(cls, data: Any) -> Any:
        """A stored (packed) document -> each probe with its own records and findings (pydantic runs this
        before it validates the fields: probes/core/record.py)."""
        return unpack(data) if isinstance(data, dict) else data

    def _plain(self, json: bool) -> dict[str, Any]:
        """Written out packed: each record once, each finding once (snapshots/compact.py).

        When every probe's findings are the very objects of the flat list, in its order (a snapshot made by
        `from_run`: every --json, --save and fleet host), their places are known without turning them into
        plain data a second time and comparing the dicts (issue 30); the document is the same."""
        refs = _finding_refs(self)
        if refs is None:
            return pack(super()._plain(json))
        light = self.model_copy(
            update={"probes": [p.model_copy(update={"findings": []}) for p in self.probes]}
        )
        return pack(Record._plain(light, json), finding_refs=refs)

    @classmethod
    def from_run(
        cls, run: AuditRun, *, name: str | None = None, created_at: datetime | None = None
    ) -> Snapshot:
        return cls(
            created_at=created_at or run.finished_at or datetime.now(UTC),
            name=name,
            mode=run.mode,
            note=run.note,
            targets=run.targets,
            target_states=run.target_states,
            probes=run.probes,
            findings=run.findings,
            roofline=roofline_dict(run),
        )

    def to_run(self) -> AuditRun:
        return AuditRun(
            targets=self.targets,
            target_states=self.target_states,
            probes=self.probes,
            mode=self.mode,
            note=self.note,
            finished_at=self.created_at,
        )

    @property
    def records(self) -> list[Any]:
        return [r for p in self.probes for r in p.records]
