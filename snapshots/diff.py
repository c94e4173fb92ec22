"""What changed between two snapshots (pure): facts, findings and raw outputs, keyed by stable ids.

Targets are matched by ROLE (a container taken as `pct:101` compares with one taken over SSH);
probes by probe id; findings by finding id (and target set when an id repeats); facts by field
path; raw outputs by (role, command id).

A command one side never recorded is not a change: a replay of an older recording answers each command
newer than the recording "not recorded" (`is_not_recorded`), which says the same thing as the recording's
absence of it. Such a record on one side and nothing on the other is skipped (and not counted as hidden);
"not recorded" against a real answer is a change like any other.

`diff A replay(A)`: the replay keeps every record of A as recorded (the ones no probe asks for today
included), so the raw outputs never differ. Facts and findings are re-derived by today's extract and checks:
for a snapshot of this release they are identical; for an older release they differ where the catalogue
changed since (tests/snapshots/test_replay_identity.py lists, per fixture, the changes that are expected).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Literal

from gpuaudit.probes import catalogue
from gpuaudit.probes.core.collect.replay_transport import is_not_recorded
from gpuaudit.probes.core.models import CommandRecord, Finding, ProbeResult, Severity, empty_list
from gpuaudit.snapshots.schema import Snapshot
from pydantic import BaseModel, Field

PROBLEM = (Severity.WARNING, Severity.CRITICAL)
RAW_DIFF_MAX_LINES = 4000
"""Beyond this many lines per side the unified diff is skipped: difflib is quadratic on big inputs."""
TIMING_KEYS = frozenset({"duration_s", "started_at", "finished_at", "elapsed_s"})
"""Fact keys (at any depth) that time a run rather than describe the machine: never a change by default."""
VolatileFacts = Mapping[str, Iterable[str]]
"""probe id -> fact names that change on an unchanged machine (`Probe.volatile_facts`)."""


def registry_volatile_facts() -> dict[str, frozenset[str]]:
    """Every registered probe's declared volatile facts (read at call time: tests extend the registry)."""
    return {p.id: frozenset(p.volatile_facts) for p in catalogue.REGISTRY if p.volatile_facts}


class FactChange(BaseModel):
    role: str
    path: str
    """`<probe>.<field path>`, e.g. "kernel.release" or "pcie.devices[0].max_read_req"."""
    old: Any = None
    new: Any = None
    old_present: bool = True
    new_present: bool = True


FindingChangeKind = Literal["resolved", "new", "severity", "observed", "added", "removed"]


class FindingChange(BaseModel):
    """resolved/new: a warning-or-worse finding went away/appeared (or dropped to/rose from ok/info);
    severity: any other severity change; observed: same severity, different observation;
    added/removed: a non-problem finding appeared/disappeared."""

    id: str
    kind: FindingChangeKind
    title: str
    targets: list[str] = Field(default_factory=empty_list)
    old_severity: Severity | None = None
    new_severity: Severity | None = None
    old_observed: str = ""
    new_observed: str = ""


class RawChange(BaseModel):
    role: str
    command_id: str
    kind: Literal["changed", "added", "removed"]
    fields: list[str] = Field(default_factory=empty_list)
    """Which parts differ: stdout, stderr, exit_status, timed_out, truncated, error."""
    old_status: str = ""
    new_status: str = ""
    unified: str | None = None
    """The unified diff of stdout (and stderr), only when asked for."""


class ProbeDiff(BaseModel):
    probe_id: str
    title: str
    old_status: str | None = None
    new_status: str | None = None
    facts: list[FactChange] = Field(default_factory=empty_list)
    findings: list[FindingChange] = Field(default_factory=empty_list)
    raw: list[RawChange] = Field(default_factory=empty_list)

    @property
    def changed(self) -> bool:
        return bool(self.facts or self.findings or self.raw or self.old_status != self.new_status)


class TargetChange(BaseModel):
    role: str
    old: str | None = None
    """"<spec> (<kind>)" or None when the role is absent from the old snapshot."""
    new: str | None = None

    @property
    def structural(self) -> bool:
        """A role present on one side only is a difference; a new address for the same role is not."""
        return self.old is None or self.new is None


class SideInfo(BaseModel):
    name: str | None = None
    created_at: str
    mode: str
    note: str | None = None
    tool_version: str | None = None
    """The release whose checks judged this side (a replay: today's, whatever release recorded it)."""


class RooflineChange(BaseModel):
    """The decode roofline before and after (bounds change with the model, GPUs or layout; the speed with fixes)."""

    old_strip: str = ""
    new_strip: str = ""
    old_bounds: dict[str, float] = Field(default_factory=dict)
    new_bounds: dict[str, float] = Field(default_factory=dict)
    old_measured: float | None = None
    new_measured: float | None = None

    @property
    def bounds_changed(self) -> bool:
        return self.old_bounds != self.new_bounds


class SnapshotDiff(BaseModel):
    old: SideInfo
    new: SideInfo
    targets: list[TargetChange] = Field(default_factory=empty_list)
    probes: list[ProbeDiff] = Field(default_factory=empty_list)
    """Only the probes with a change, in the new snapshot's order."""
    hidden: int = 0
    """Changes left out as noise: volatile facts, timings, raw text whose status did not change (`all_facts` shows them)."""
    roofline: RooflineChange | None = None
    """Set when the roofline's line differs; only changed bounds make two snapshots differ (a measured speed moves
    between two audits of an unchanged machine)."""

    @property
    def identical(self) -> bool:
        return (
            not self.probes
            and not any(t.structural for t in self.targets)
            and not (self.roofline is not None and self.roofline.bounds_changed)
        )

    @property
    def releases_differ(self) -> bool:
        """A and B were judged by different releases: findings of checks added or changed between them can differ
        with no change on the machine (`diff A replay(A)` of an older snapshot); the report says so."""
        a, b = self.old.tool_version, self.new.tool_version
        return bool(a and b and a != b)

    def counts(self) -> dict[str, int]:
        kinds: dict[str, int] = {}
        for p in self.probes:
            for f in p.findings:
                kinds[f.kind] = kinds.get(f.kind, 0) + 1
        kinds["facts"] = sum(len(p.facts) for p in self.probes)
        kinds["raw"] = sum(len(p.raw) for p in self.probes)
        return kinds


def diff_snapshots(
    old: Snapshot,
    new: Snapshot,
    *,
    raw_diff: bool = False,
    all_facts: bool = False,
    volatile: VolatileFacts | None = None,
) -> SnapshotDiff:
    """Everything that changed from `old` to `new`; `raw_diff` adds unified diffs of changed outputs.

    Two audits of an unchanged machine differ in counters, pids, temperatures: by default the facts a probe
    declares volatile (`volatile`, default: the registry's `Probe.volatile_facts`), timing keys and raw
    outputs whose text alone changed (same exit status, no timeout/truncation/error) are counted in
    `hidden`, not listed. `all_facts` lists them; `raw_diff` lists the raw text changes (the user asked for them).
    """
    if volatile is None:
        volatile = {} if all_facts else registry_volatile_facts()
    quiet = {pid: frozenset(names) for pid, names in volatile.items()} if not all_facts else {}
    old_probes = {p.probe_id: p for p in old.probes}
    new_probes = {p.probe_id: p for p in new.probes}
    order = [p.probe_id for p in new.probes] + [pid for pid in old_probes if pid not in new_probes]
    raw_by_probe, hidden = _raw_changes(
        old, new, order, raw_diff, text_changes=raw_diff or all_facts
    )
    probes = []
    for pid in order:
        a, b = old_probes.get(pid), new_probes.get(pid)
        facts = list(_fact_changes(a, b))
        kept = (
            facts
            if all_facts
            else [f for f in facts if not is_noise(f.path, quiet.get(pid, frozenset()))]
        )
        hidden += len(facts) - len(kept)
        changes = list(_finding_changes(a, b))
        # an ok check whose observed text moved (a counter, a count of processes) is not a change worth listing
        shown = changes if all_facts else [c for c in changes if not _ok_to_ok(c)]
        hidden += len(changes) - len(shown)
        pd = ProbeDiff(
            probe_id=pid,
            title=(b or a).title,  # type: ignore[union-attr]
            old_status=a.status if a else None,
            new_status=b.status if b else None,
            facts=kept,
            findings=shown,
            raw=raw_by_probe.get(pid, []),
        )
        if pd.changed:
            probes.append(pd)
    return SnapshotDiff(
        old=_side(old),
        new=_side(new),
        targets=_target_changes(old, new),
        probes=probes,
        hidden=hidden,
        roofline=_roofline_change(old, new),
    )


def _ok_to_ok(change: FindingChange) -> bool:
    return change.kind == "observed" and change.old_severity == change.new_severity == Severity.OK


def _roofline_change(old: Snapshot, new: Snapshot) -> RooflineChange | None:
    a, b = old.roofline or {}, new.roofline or {}
    if not a and not b:
        return None
    change = RooflineChange(
        old_strip=str(a.get("strip", "")),
        new_strip=str(b.get("strip", "")),
        old_bounds=dict(a.get("bounds") or {}),
        new_bounds=dict(b.get("bounds") or {}),
        old_measured=a.get("measured_tok_s"),
        new_measured=b.get("measured_tok_s"),
    )
    return change if change.old_strip != change.new_strip or change.bounds_changed else None


_SEGMENT = re.compile(r"[.\[\]]+")


def is_noise(path: str, volatile: frozenset[str]) -> bool:
    """`<probe>.<path>` of a fact change: is it a declared volatile fact (or below one) or a timing key?"""
    inner = path.split(".", 1)[1] if "." in path else path
    parts = [p for p in _SEGMENT.split(inner) if p and not p.isdigit()]
    if any(p in TIMING_KEYS for p in parts):
        return True
    return any(inner == v or inner.startswith((v + ".", v + "[")) for v in volatile)


def _side(s: Snapshot) -> SideInfo:
    return SideInfo(
        name=s.name,
        created_at=s.created_at.isoformat(),
        mode=s.mode,
        note=s.note,
        tool_version=s.tool_version,
    )


def _target_changes(old: Snapshot, new: Snapshot) -> list[TargetChange]:
    def desc(s: Snapshot) -> dict[str, str]:
        return {t.role: f"{t.spec} ({t.kind})" for t in s.targets}

    a, b = desc(old), desc(new)
    return [
        TargetChange(role=r, old=a.get(r), new=b.get(r))
        for r in dict.fromkeys([*a, *b])
        if a.get(r) != b.get(r)
    ]


# --- facts -------------------------------------------------------------------------------------


def flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Nested dicts and lists of dicts -> (path, leaf); lists of scalars stay one value."""
    if isinstance(value, dict) and value:
        for k, v in value.items():
            yield from flatten(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        for i, v in enumerate(value):
            yield from flatten(v, f"{prefix}[{i}]")
    else:
        yield prefix, value


_MISSING = object()


def _changed_leaves(a: Any, b: Any, prefix: str) -> Iterator[tuple[str, Any, Any]]:
    """Leaf paths whose values differ; equal subtrees are skipped whole (one C-level comparison)."""
    if a == b and type(a) is type(b):
        return
    if isinstance(a, dict) and isinstance(b, dict) and a and b:
        for k in dict.fromkeys([*b, *a]):
            yield from _changed_leaves(
                a.get(k, _MISSING), b.get(k, _MISSING), f"{prefix}.{k}" if prefix else str(k)
            )
        return
    a_leaves = dict(flatten(a, prefix)) if a is not _MISSING else {}
    b_leaves = dict(flatten(b, prefix)) if b is not _MISSING else {}
    for path in dict.fromkeys([*b_leaves, *a_leaves]):
        va, vb = a_leaves.get(path, _MISSING), b_leaves.get(path, _MISSING)
        if va is _MISSING or vb is _MISSING or va != vb:
            yield path, va, vb


def _fact_changes(a: ProbeResult | None, b: ProbeResult | None) -> Iterator[FactChange]:
    pid = (b or a).probe_id  # type: ignore[union-attr]
    fa, fb = (a.facts if a else {}), (b.facts if b else {})
    for role in dict.fromkeys([*fb, *fa]):
        for path, old, new in _changed_leaves(fa.get(role, {}), fb.get(role, {}), ""):
            if path == "":
                continue
            yield FactChange(
                role=role,
                path=f"{pid}.{path}",
                old=None if old is _MISSING else old,
                new=None if new is _MISSING else new,
                old_present=old is not _MISSING,
                new_present=new is not _MISSING,
            )


# --- findings ----------------------------------------------------------------------------------


def _keyed(findings: Iterable[Finding]) -> dict[tuple[str, tuple[str, ...]], Finding]:
    """Key by id alone, or by (id, targets) when an id repeats (one finding per id and target set)."""
    findings = list(findings)
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.id] = counts.get(f.id, 0) + 1
    return {(f.id, tuple(sorted(f.targets)) if counts[f.id] > 1 else ()): f for f in findings}


def _finding_changes(a: ProbeResult | None, b: ProbeResult | None) -> Iterator[FindingChange]:
    ka, kb = _keyed(a.findings if a else []), _keyed(b.findings if b else [])
    for key in dict.fromkeys([*kb, *ka]):
        fa, fb = ka.get(key), kb.get(key)
        kind = _kind(fa, fb)
        if kind is None:
            continue
        ref = fb or fa
        assert ref is not None
        yield FindingChange(
            id=ref.id,
            kind=kind,
            title=ref.title,
            targets=list(ref.targets),
            old_severity=fa.severity if fa else None,
            new_severity=fb.severity if fb else None,
            old_observed=fa.observed if fa else "",
            new_observed=fb.observed if fb else "",
        )


def _kind(fa: Finding | None, fb: Finding | None) -> FindingChangeKind | None:
    was = fa is not None and fa.severity in PROBLEM
    now = fb is not None and fb.severity in PROBLEM
    if fa is None:
        return "new" if now else "added"
    if fb is None:
        return "resolved" if was else "removed"
    if fa.severity != fb.severity:
        if was and not now:
            return "resolved"
        if now and not was:
            return "new"
        return "severity"
    return "observed" if fa.observed != fb.observed else None


# --- raw outputs -------------------------------------------------------------------------------

_RAW_FIELDS = ("stdout", "stderr", "exit_status", "timed_out", "truncated", "error")


def status_of(rec: CommandRecord) -> str:
    """A short outcome: "exit 0", "timed out", "error: needs root"."""
    if rec.error:
        return f"error: {rec.error[:60]}"
    if rec.timed_out:
        return "timed out"
    return f"exit {rec.exit_status}"


def _by_key(s: Snapshot) -> tuple[dict[tuple[str, str], CommandRecord], dict[tuple[str, str], str]]:
    """(role, command_id) -> record, and -> the first probe that ran it (a shared command shows once)."""
    recs: dict[tuple[str, str], CommandRecord] = {}
    owner: dict[tuple[str, str], str] = {}
    for p in s.probes:
        for r in p.records:
            key = (r.target, r.command_id)
            if key not in recs:
                recs[key] = r
                owner[key] = p.probe_id
    return recs, owner


_TEXT_FIELDS = ("stdout", "stderr")


def _raw_changes(
    old: Snapshot, new: Snapshot, order: list[str], raw_diff: bool, *, text_changes: bool = True
) -> tuple[dict[str, list[RawChange]], int]:
    """Raw changes by owning probe, and how many text-only changes were left out (`text_changes=False`)."""
    ra, oa = _by_key(old)
    rb, ob = _by_key(new)
    out: dict[str, list[RawChange]] = {}
    hidden = 0
    for key in dict.fromkeys([*rb, *ra]):
        a, b = ra.get(key), rb.get(key)
        if (a is None and b is not None and is_not_recorded(b)) or (
            b is None and a is not None and is_not_recorded(a)
        ):
            continue  # never recorded on either side: the same answer (see the module docstring)
        if a is not None and b is not None:
            fields = [f for f in _RAW_FIELDS if getattr(a, f) != getattr(b, f)]
            if not fields:
                continue
            if not text_changes and all(f in _TEXT_FIELDS for f in fields):
                hidden += 1
                continue
            change = RawChange(
                role=key[0],
                command_id=key[1],
                kind="changed",
                fields=fields,
                old_status=status_of(a),
                new_status=status_of(b),
                unified=unified(a, b) if raw_diff else None,
            )
        elif b is not None:
            change = RawChange(
                role=key[0],
                command_id=key[1],
                kind="added",
                new_status=status_of(b),
                unified=unified(None, b) if raw_diff else None,
            )
        else:
            assert a is not None
            change = RawChange(
                role=key[0],
                command_id=key[1],
                kind="removed",
                old_status=status_of(a),
                unified=unified(a, None) if raw_diff else None,
            )
        owner = ob.get(key) or oa[key]
        out.setdefault(owner, []).append(change)
    return out, hidden


def unified(a: CommandRecord | None, b: CommandRecord | None) -> str:
    """Unified diff of stdout then stderr, labelled `<role>/<command_id>.out|.err`."""
    ref = b or a
    assert ref is not None
    parts = []
    for stream, ext in (("stdout", "out"), ("stderr", "err")):
        ta = getattr(a, stream) if a else ""
        tb = getattr(b, stream) if b else ""
        if ta == tb:
            continue
        la, lb = ta.splitlines(keepends=True), tb.splitlines(keepends=True)
        name = f"{ref.target}/{ref.command_id}.{ext}"
        if max(len(la), len(lb)) > RAW_DIFF_MAX_LINES:
            parts.append(
                f"--- a/{name}\n+++ b/{name}\n(too long to diff: {len(la)} vs {len(lb)} lines)\n"
            )
            continue
        lines = difflib.unified_diff(la, lb, fromfile=f"a/{name}", tofile=f"b/{name}")
        parts.append(
            "".join(
                ln if ln.endswith("\n") else ln + "\n\\ No newline at end of file\n" for ln in lines
            )
        )
    return "".join(parts)
