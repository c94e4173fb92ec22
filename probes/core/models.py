"""Records (probes/core/record.py) shared by the runner, snapshots, --json and the TUI. No I/O here."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any, Literal

from gpuaudit.probes.core.record import Record, field

Role = Literal["host", "container"]


def empty_list() -> list[Any]:
    """A list field's default: `field(default_factory=empty_list)`, not `default_factory=list`. pydantic reads each
    default factory's signature when it builds a model, and a builtin's is parsed from its text signature
    (tokenize's patterns compiled on the first: ~3 ms, then ~0.3 ms a field; issue 30). A Python function's is
    read directly (tests/core/test_audit_path_models.py)."""
    return []


class Severity(str, Enum):
    """How bad a finding is. `unknown` means "could not read", never "fine"; `n/a` means "proven not to
    apply" (no NVIDIA GPU, a VM, a PCIe-only board), with the reason as the observed text, never `ok`."""

    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"
    OK = "ok"
    UNKNOWN = "unknown"
    NA = "n/a"

    @property
    def rank(self) -> int:
        """Higher is worse; `unknown` sits between info and warning for sorting; `n/a` below ok (-1)."""
        return SEVERITY_RANK[self]


SEVERITY_RANK: dict[Severity, int] = {
    Severity.NA: -1,
    Severity.OK: 0,
    Severity.INFO: 1,
    Severity.UNKNOWN: 2,
    Severity.WARNING: 3,
    Severity.CRITICAL: 4,
}
SEVERITY_ORDER: tuple[Severity, ...] = tuple(sorted(Severity, key=lambda s: -s.rank))
"""Worst first: critical, warning, unknown, info, ok, n/a (derived from `rank`)."""


class Target(Record, frozen=True):
    """One machine (or container) the audit runs commands on."""

    role: Role
    spec: str
    """What the user typed: "local", "root@10.0.0.5:22", "pct:101", "docker:sglang"."""
    kind: Literal["local", "ssh", "pct", "lxc", "docker", "replay", "directory"]
    label: str
    """Short human name for headers: "host (local)", "container (pct:101)"."""


class TargetState(Record):
    """Connection state of a target, as the header shows it."""

    role: Role
    state: Literal["pending", "connecting", "connected", "failed"] = "pending"
    reason: str | None = None
    is_root: bool | None = None
    hostname: str | None = None
    executed: list[str] = field(default_factory=empty_list)
    """Lines run on this target outside the probes' records: the preflight and the start line of each
    long-lived session (probes/core/collect/worker.py). Empty in snapshots written before 0.2.0."""


class CommandRecord(Record, frozen=True):
    """The raw truth: one command run on one target, exactly as it happened."""

    target: Role
    probe_id: str
    command_id: str
    command: str
    """The declared read-only command line (what the probe asked for)."""
    executed: str = ""
    """The exact line sent to the target, wrappers (timeout, sudo, pct exec) included."""
    exit_status: int | None = None
    """None when the command never ran to an exit (skipped, connection lost, killed)."""
    stdout: str = ""
    stderr: str = ""
    started_at: datetime | None = None
    duration_s: float = 0.0
    timed_out: bool = False
    truncated: bool = False
    needs_root: bool = False
    error: str | None = None
    """Why there is no normal result: "needs root", "connection lost: ...", "target failed: ..."."""

    @property
    def ok(self) -> bool:
        """Ran and exited 0 without being cut short."""
        return self.exit_status == 0 and not self.timed_out and self.error is None

    @property
    def missing_tool(self) -> bool:
        """Exit 127 from the shell: the program is not installed on the target."""
        return self.exit_status == 127 or "command not found" in self.stderr.lower()


class EvidenceRef(Record, frozen=True):
    """Points at the command record behind a finding, so drill-down can jump to it."""

    target: Role
    command_id: str
    line: int | None = None
    """The 0-based line of the record's stdout the value was read from (the GPU's own DevCtl MaxReadReq line,
    the ACSCtl: line); None: the output as a whole."""


class Finding(Record, frozen=True):
    """A judged check: stable id, severity, what was seen vs expected, why and how to fix."""

    id: str
    """`<probe>.<slug>` exactly as PROBES.md spells it; never changes once released."""
    severity: Severity
    probe: str
    owner: str | None = None
    """Who can fix it: bios, host, container, engine or hardware (None in snapshots older than the catalogue)."""
    targets: list[Role] = field(default_factory=empty_list)
    title: str
    observed: str = ""
    expected: str = ""
    why: str = ""
    fix: str = ""
    evidence: list[EvidenceRef] = field(default_factory=empty_list)


ProbeStatus = Literal["pending", "running", "done", "failed", "cancelled", "skipped"]


class ProbeResult(Record):
    """Everything one probe produced over all targets: records, facts, findings."""

    probe_id: str
    title: str
    status: ProbeStatus = "pending"
    records: list[CommandRecord] = field(default_factory=empty_list)
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Role -> the probe's facts model dumped to a dict."""
    findings: list[Finding] = field(default_factory=empty_list)
    summary: str = ""
    """The pane's key-facts line, e.g. "590.48.01 open · CUDA 13.1 · 8× RTX PRO 6000"."""
    error: str | None = None
    started_at: datetime | None = None
    duration_s: float = 0.0

    @property
    def worst(self) -> Severity | None:
        """Worst severity among the findings, or None when there are none."""
        if not self.findings:
            return None
        return max((f.severity for f in self.findings), key=lambda s: s.rank)


class AuditRun(Record):
    """The folded state of an audit: targets, their states and ten probe results."""

    targets: list[Target] = field(default_factory=empty_list)
    target_states: dict[str, TargetState] = field(default_factory=dict)
    probes: list[ProbeResult] = field(default_factory=empty_list)
    started_at: datetime | None = None
    finished_at: datetime | None = None
    mode: Literal["live", "replay", "demo", "resume"] = "live"
    note: str | None = None
    """Shown plainly in headers, e.g. "illustrative example, not a capture"."""

    def probe(self, probe_id: str) -> ProbeResult | None:
        """The result of one probe, or None."""
        return next((p for p in self.probes if p.probe_id == probe_id), None)

    @property
    def findings(self) -> list[Finding]:
        """All findings of all probes, flat, in probe order."""
        return [f for p in self.probes for f in p.findings]
