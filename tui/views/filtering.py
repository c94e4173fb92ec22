"""What the dashboard and drill-down show: a severity level plus a free-text filter (pure, no Textual)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace

from gpuaudit.probes.core.models import Finding, ProbeResult, Severity

LEVELS: tuple[str, ...] = ("all", "info", "warning", "critical", "unknown")
"""`f` cycles through these: at-or-above for the first four, "unknown" shows only what couldn't be checked."""

LEVEL_WORDS = {
    "all": "all findings",
    "info": "info, warning and critical",
    "warning": "warning and critical",
    "critical": "critical only",
    "unknown": "unknown only (what couldn't be checked)",
}


@dataclass(frozen=True, slots=True)
class FindingFilter:
    level: str = "all"
    text: str = ""
    """Case-insensitive substring of a finding's title, id or observed value, or of its probe's title, id,
    summary or facts (then every finding of that probe is shown)."""

    @property
    def active(self) -> bool:
        return self.level != "all" or bool(self.text)

    def next_level(self) -> FindingFilter:
        return replace(self, level=LEVELS[(LEVELS.index(self.level) + 1) % len(LEVELS)])

    def with_text(self, text: str) -> FindingFilter:
        return replace(self, text=text.strip())

    def admits_severity(self, sev: Severity) -> bool:
        if self.level == "all":
            return True
        if self.level == "unknown":
            return sev == Severity.UNKNOWN
        return sev != Severity.UNKNOWN and sev.rank >= Severity(self.level).rank

    def admits(self, f: Finding, probe: ProbeResult | None = None) -> bool:
        if not self.admits_severity(f.severity):
            return False
        if not self.text:
            return True
        needle = self.text.lower()
        hay = [f.title, f.id, f.observed] + (
            [probe.title, probe.probe_id] if probe is not None else []
        )
        return any(needle in h.lower() for h in hay) or (
            probe is not None and needle in probe_text(probe)
        )

    def describe(self) -> str:
        """The toast and header words: "showing warning and critical matching 'mrrs'"."""
        text = f" matching {self.text!r}" if self.text else ""
        return f"showing {LEVEL_WORDS[self.level]}{text}"


ALL = FindingFilter()

_probe_text: dict[int, tuple[ProbeResult, str]] = {}


def probe_text(probe: ProbeResult) -> str:
    """A probe's summary and facts as one lower-case text (`/mrrs` finds the pane that says "MRRS 512").

    Cached per result object (a result is replaced, never changed, when the run moves on)."""
    hit = _probe_text.get(id(probe))
    if hit is not None and hit[0] is probe:
        return hit[1]
    text = (probe.summary + "\n" + json.dumps(probe.facts, default=str)).lower()
    if len(_probe_text) > 64:
        _probe_text.clear()
    _probe_text[id(probe)] = (probe, text)
    return text


def match_line(probes: Iterable[ProbeResult], flt: FindingFilter) -> str | None:
    """The dashboard's one filter indicator: what is shown and how many probes match, or "no match"."""
    if not flt.active:
        return None
    probes = list(probes)
    hits = sum(1 for p in probes if any(flt.admits(f, p) for f in p.findings))
    what = LEVEL_WORDS[flt.level].split(" (")[0] + (f" · {flt.text!r}" if flt.text else "")
    if hits == 0:
        return f"filter: {what} · no match in any probe · esc clears"
    return f"filter: {what} · {hits}/{len(probes)} probes · esc clears"


def as_filter(value: FindingFilter | Severity | None) -> FindingFilter:
    """Older callers pass a minimum Severity (or None for all)."""
    if isinstance(value, FindingFilter):
        return value
    return ALL if value is None else FindingFilter(level=value.value)


def visible(
    findings: Iterable[Finding],
    flt: FindingFilter | Severity | None = None,
    probe: ProbeResult | None = None,
) -> list[Finding]:
    """Findings the filter admits, worst first, stable within a severity."""
    f = as_filter(flt)
    keep = [x for x in findings if f.admits(x, probe)]
    return sorted(keep, key=lambda x: -x.severity.rank)
