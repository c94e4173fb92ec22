"""The action plan: every finding at warning or worse, grouped where one fix resolves several, ranked.

Pure: an AuditRun in, a list of PlanStep out (and a Markdown rendering for `--plan`). No I/O.
Grouping has two sources: RELATIONS (known "one fix resolves these" links between check ids, from
PROBES.md) and identical fix texts. Ranking: worst severity, then expected impact, then size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuaudit.probes.core.models import (
    AuditRun,
    CommandRecord,
    EvidenceRef,
    Finding,
    Severity,
    empty_list,
)
from gpuaudit.probes.core.record import Record, field
from gpuaudit.probes.core.roofline.bounds import BOUND_LABELS
from gpuaudit.probes.core.roofline.report import roofline_for_run
from gpuaudit.probes.core.text import neutralise

PLAN_SEVERITIES = (Severity.CRITICAL, Severity.WARNING)


@dataclass(frozen=True, slots=True)
class Relation:
    """Check ids that one change resolves together (only those present in the plan are grouped)."""

    key: str
    title: str
    ids: tuple[str, ...]
    note: str


RELATIONS: tuple[Relation, ...] = (
    Relation(
        "kernel-upgrade",
        "Upgrade the kernel (and rebuild the NVIDIA module for it)",
        ("kernel.version", "power.cpu_scaling_driver", "firmware.cppc", "driver.dkms_kernel_match"),
        "amd_pstate loads by default on Zen 5 servers only from kernel 6.13: the upgrade also fixes the CPU frequency driver",
    ),
    Relation(
        "cstates",
        "Limit deep CPU C-states",
        ("power.cpu_cstates", "firmware.cstate_exposure"),
        "firmware exposure and OS use of the same idle states",
    ),
    Relation(
        "iommu-acs",
        "Fix IOMMU/ACS so GPU peer-to-peer stays off the root complex",
        (
            "firmware.iommu_mode",
            "pcie.acs",
            "nccl.iommu_acs_gate",
            "nccl.p2p_matrix",
            "nccl.transport_observed",
        ),
        "IOMMU translation and ACS redirect both force P2P traffic through the root complex",
    ),
    Relation(
        "persistence",
        "Enable the persistence daemon on the host",
        ("driver.persistence", "driver.persistence_host_vs_container"),
        "the container inherits persistence mode from the host",
    ),
    Relation(
        "shm",
        "Give the container a large /dev/shm (or --ipc=host)",
        ("container.shm", "container.shm_ipc"),
        "NCCL's SHM transport lives in /dev/shm",
    ),
    Relation(
        "fabric-manager",
        "Start nvidia-fabricmanager and check the NVSwitch fabric",
        ("nvlink.fabric_manager_service", "nvlink.fabric_state", "nvlink.fabric_vs_container"),
        "the fabric state follows the fabric manager service",
    ),
)

# Expected impact on inference throughput (0-10), for ranking within one severity. Unlisted: per probe.
IMPACT: dict[str, int] = {
    "driver.gpu_health": 10,
    "python.cuda_graphs": 10,
    "python.measured_throughput": 9,
    "nccl.p2p_matrix": 9,
    "nccl.iommu_acs_gate": 9,
    "pcie.link_capability": 8,
    "pcie.link_current_under_load": 8,
    "python.torch_arch_support": 8,
    "python.flashinfer_sm120": 8,
    "driver.min_for_arch": 8,
    "nvlink.link_state": 8,
    "nvlink.fabric_state": 8,
    "power.gpu_clock_events": 7,
    "power.gpu_power_limit": 7,
    "power.cpu_scaling_driver": 6,
    "kernel.version": 5,
    "pcie.max_read_req": 4,
    "kernel.numa_balancing": 4,
    "power.cpu_cstates": 4,
    "driver.xid_history": 7,
}
PROBE_IMPACT: dict[str, int] = {
    "python": 6,
    "nccl": 6,
    "nvlink": 6,
    "pcie": 5,
    "driver": 5,
    "power": 5,
    "numa": 4,
    "container": 4,
    "kernel": 3,
    "firmware": 3,
}


class PlanStep(Record):
    """One thing to change, with every finding it resolves and the evidence behind them."""

    rank: int
    severity: Severity
    title: str
    fix: str
    impact: int
    findings: list[Finding] = field(default_factory=empty_list)
    evidence: list[EvidenceRef] = field(default_factory=empty_list)
    relation: str | None = None
    """Why these findings share a step (a RELATIONS note, or "same fix")."""

    @property
    def ids(self) -> list[str]:
        return [f.id for f in self.findings]

    @property
    def owners(self) -> list[str]:
        """Who can apply this step (bios, host, container, engine, hardware), from the findings' check rows."""
        return list(dict.fromkeys(f.owner for f in self.findings if f.owner))


def impact(finding: Finding) -> int:
    return IMPACT.get(finding.id, PROBE_IMPACT.get(finding.probe, 3))


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower().rstrip(".")


def _groups(findings: list[Finding]) -> list[tuple[list[Finding], Relation | None]]:
    """Partition findings: first by RELATIONS, then by identical fix text; the rest stand alone."""
    left = list(findings)
    out: list[tuple[list[Finding], Relation | None]] = []
    for rel in RELATIONS:
        members = [f for f in left if f.id in rel.ids]
        if len({f.id for f in members}) >= 2:
            out.append((members, rel))
            left = [f for f in left if f not in members]
    by_fix: dict[str, list[Finding]] = {}
    for f in left:
        by_fix.setdefault(_norm(f.fix) or f"\0{f.id}:{id(f)}", []).append(f)
    out.extend((members, None) for members in by_fix.values())
    return out


def build_plan(run: AuditRun) -> list[PlanStep]:
    """Findings at warning or worse over all probes and targets, grouped and ranked (1 = do first)."""
    findings = [f for f in run.findings if f.severity in PLAN_SEVERITIES]
    steps: list[PlanStep] = []
    for members, rel in _groups(findings):
        members = sorted(members, key=lambda f: (-f.severity.rank, -impact(f)))
        head = members[0]
        evidence: list[EvidenceRef] = []
        for f in members:
            evidence.extend(e for e in f.evidence if e not in evidence)
        note: str | None
        if rel is not None:
            fix = "\n".join(dict.fromkeys(f.fix for f in members if f.fix)) or rel.title
            title, note = rel.title, rel.note
        else:
            fix, title = head.fix, head.title
            note = "same fix" if len(members) > 1 else None
        steps.append(
            PlanStep(
                rank=0,
                severity=head.severity,
                title=title,
                fix=fix,
                impact=max(impact(f) for f in members) + len(members) - 1,
                findings=members,
                evidence=evidence,
                relation=note,
            )
        )
    steps.sort(key=lambda s: (-s.severity.rank, -s.impact, -len(s.findings), s.findings[0].id))
    return [s.model_copy(update={"rank": n}) for n, s in enumerate(steps, 1)]


COMMAND_WORDS = (
    "systemctl",
    "sysctl",
    "nvidia-smi",
    "modprobe",
    "setpci",
    "cpupower",
    "numactl",
    "taskset",
    "tuned-adm",
    "update-grub",
    "update-initramfs",
    "pct set",
    "docker run",
    "lxc-",
    "echo ",
    "ulimit",
    "nvidia-persistenced",
    "proxmox-boot-tool",
    "apt ",
    "apt-get ",
    "pip install",
)
_COMMAND = re.compile(
    r"(?<![\w/-])(?:" + "|".join(re.escape(w) for w in COMMAND_WORDS) + r")[^;()]*"
)
_PROSE_AFTER = re.compile(
    r"\s(?:and|or|on|in|if|unless|then|to|for|per|when|with(?= the))\s.*$|[.,]\s*$|[.,]\s.*$"
)


def fix_commands(fix: str) -> list[str]:
    """The shell commands quoted in a fix text ("... systemctl enable --now nvidia-persistenced on the host"),
    cut where the prose resumes, so they can go into code blocks and the clipboard on their own."""
    out: list[str] = []
    for m in _COMMAND.finditer(fix):
        words = _PROSE_AFTER.sub("", m.group(0)).split()
        while len(words) > 2 and all(w.isalpha() and w.islower() for w in words[-2:]):
            words.pop()  # trailing prose
        args = words[1:]
        if not any(
            a[0] in "-<"
            or "=" in a
            or "/" in a
            or ":" in a
            or a in ("enable", "disable", "restart", "start", "install")
            for a in args
        ):
            continue  # a command named in prose ("setpci changes are ..."), not a command line
        cmd = " ".join(words)
        if cmd not in out:
            out.append(cmd)
    return out


_MD_ACTIVE = re.compile(r"[\\*\[\]<>|~]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|^[#+=-]|!(?=\[)")
"""What Markdown would act on in a target's text: emphasis, links and images, raw HTML and autolinks, tables,
strikethrough, a heading or list at the start; intraword `_` (NCCL_P2P_LEVEL) stays as it is."""


def _clean(text: str) -> str:
    """Target text made inert for terminals: control characters as visible escapes, one line."""
    return neutralise(text).replace("\n", " ⏎ ").replace("`", "'")


def _md(text: str) -> str:
    """Target text made inert for Markdown too: every Markdown-active character backslash-escaped, so a target's
    stderr cannot put an image, raw HTML or a `javascript:` link into a ticket (issue 29)."""
    return _MD_ACTIVE.sub(lambda m: "\\" + m[0], _clean(text))


def _record(run: AuditRun, ref: EvidenceRef) -> CommandRecord | None:
    for p in run.probes:
        for r in p.records:
            if r.target == ref.target and r.command_id == ref.command_id:
                return r
    return None


def evidence_line(run: AuditRun, ref: EvidenceRef) -> str:
    """`host: nvidia-smi -q (exit 0, 0.12 s)`: where a finding's proof is."""
    rec = _record(run, ref)
    if rec is None:
        return f"{ref.target}: {ref.command_id} (no record)"
    status = rec.error or ("timed out" if rec.timed_out else f"exit {rec.exit_status}")
    command = _clean(rec.command)
    if (
        len(command) > 100
    ):  # long scripts (process scans) would drown the plan: the drill-down has them whole
        command = command[:97] + "..."
    return f"{ref.target}: {ref.command_id} `{command}` ({status}, {rec.duration_s:.2f} s)"


SEV_WORD = {Severity.CRITICAL: "CRITICAL", Severity.WARNING: "WARNING"}


def roofline_markdown(run: AuditRun) -> list[str]:
    """The decode roofline strip and its gap, first in the plan (PROBES.md §13)."""
    rf = roofline_for_run(run)
    lines = [f"**{_clean(rf.strip)}**", ""]
    if rf.bounds:
        lines += [
            f"- bound {BOUND_LABELS.get(k, k)}: {v:.0f} tok/s"
            + (f" (measured is {100 * rf.ratios[k]:.0f}%)" if k in rf.ratios else "")
            for k, v in rf.bounds.items()
        ]
        if rf.unexplained_ms_per_token is not None:
            lines.append(f"- unexplained time per token: {rf.unexplained_ms_per_token:.1f} ms")
        if rf.published_eta_source:
            lines.append(f"- published η: {_clean(rf.published_eta_source)}")
        for ref in rf.references or ([rf.reference] if rf.reference else []):
            lines.append(
                f"- published on the same hardware: {ref['tok_s']} tok/s ({_clean(str(ref['setup']))}; {_clean(str(ref['source']))})"
            )
        if rf.near_bound:
            lines.append(
                "- the box is near its bound (measured >= 80% of the comm-aware bound): "
                "no finding is listed as explaining a gap"
            )
        if rf.explanations:
            lines.append(
                "- findings that plausibly explain the gap, in the order to check them: "
                + ", ".join(f"`{e['id']}`" for e in rf.explanations)
            )
        lines.append("")
    for m in rf.missing:
        lines.append(f"- roofline input missing: {_clean(m)}")
    if rf.missing:
        lines.append("")
    return lines


def plan_markdown(plan: list[PlanStep], run: AuditRun) -> str:
    """The plan as Markdown, the same content the TUI's plan screen shows."""
    lines = ["# gpuaudit-tui action plan", "", *roofline_markdown(run)]
    if run.note:
        lines += [f"> {_md(run.note)}", ""]
    for t in run.targets:
        st = run.target_states.get(t.role)
        state = st.state if st else "pending"
        reason = f": {_md(st.reason)}" if st and st.reason else ""
        lines.append(f"- target {t.role}: {_md(t.label)} ({state}{reason})")
    nfind = sum(len(s.findings) for s in plan)
    lines += ["", f"{len(plan)} step(s) resolving {nfind} finding(s) at warning or worse.", ""]
    if not plan:
        lines += ["Nothing at warning or worse. Check the unknowns below before trusting that.", ""]
    for step in plan:
        lines.append(
            f"## {step.rank}. [{SEV_WORD.get(step.severity, step.severity.value.upper())}] {_md(step.title)}"
        )
        lines.append("")
        if step.relation:
            lines += [f"_Grouped: {_md(step.relation)}._", ""]
        if step.owners:
            lines += [f"**Who:** {', '.join(step.owners)}", ""]
        if step.fix:  # one paragraph per fix line (grouped steps join several), commands fenced to copy cleanly
            fixes = [_md(line) for line in step.fix.splitlines() if line.strip()]
            lines += [f"**Fix:** {fixes[0]}", ""] + [x for line in fixes[1:] for x in (line, "")]
            commands = fix_commands(step.fix)
            if commands:
                lines += ["```sh", *(neutralise(c) for c in commands), "```", ""]
        lines += ["**Findings:**", ""]
        for f in step.findings:
            where = ", ".join(f.targets) or "-"
            owner = f", owner {f.owner}" if f.owner else ""
            lines.append(f"- `{f.id}` ({f.severity.value}, {where}{owner}): {_md(f.title)}")
            if f.observed or f.expected:
                lines.append(
                    f"  - observed: {_md(f.observed) or '-'}; expected: {_md(f.expected) or '-'}"
                )
            if f.why:
                lines.append(f"  - why: {_md(f.why)}")
            for ref in f.evidence:
                lines.append(f"  - evidence: {_md(evidence_line(run, ref))}")
        lines.append("")
    unknown = [f for f in run.findings if f.severity == Severity.UNKNOWN]
    failed = [p for p in run.probes if p.status == "failed"]
    if unknown or failed:
        lines.append("## Not checked")
        lines.append("")
        lines += [
            f"- probe `{p.probe_id}` failed: {_md(p.error or 'unknown error')}" for p in failed
        ]
        lines += [f"- `{f.id}` unknown: {_md(f.observed or f.title)}" for f in unknown]
        lines.append("")
    if na := [f for f in run.findings if f.severity == Severity.NA]:
        reasons: dict[str, int] = {}
        for f in na:
            reasons[f.observed] = reasons.get(f.observed, 0) + 1
        lines += [
            f"## Not applicable ({len(na)} check(s), proven not to apply; not counted as ok)",
            "",
        ]
        lines += [
            f"- {n} × n/a — {_md(why)}" for why, n in sorted(reasons.items(), key=lambda kv: -kv[1])
        ]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"
