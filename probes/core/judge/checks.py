"""Checks as declared rows, judged by one framework.

A `Check` is data (id, title, owner, why, fix, the sources it reads, the roles it judges) plus two pure
functions over typed facts: `applies` (why it does not apply, or None) and `verdict` (severity + observed).
The framework, not each rule, decides what happens when data is missing:

* a target that was never reached            -> unknown "target unreachable: <why>"
* a required source missing/failed/refused/…  -> unknown "<command id>: <why>" (a missing tool names its package)
* a GPU check on a target with no NVIDIA GPU  -> n/a "no NVIDIA GPU or driver on this host"
* `applies` returns a reason                 -> n/a "<reason>"
* otherwise                                  -> the verdict, with the declared sources as evidence

So a verdict function never sees missing data, and exactly one finding comes out per check and target set.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from gpuaudit.probes.core.judge.combiners import PRESENCE_SOURCES, nvidia_presence
from gpuaudit.probes.core.models import (
    CommandRecord,
    EvidenceRef,
    Finding,
    Role,
    Severity,
)
from gpuaudit.probes.core.sources import SOURCES
from gpuaudit.probes.core.spec import record_absent, record_problem

Owner = Literal["bios", "host", "container", "engine", "hardware"]
OWNERS: tuple[str, ...] = ("bios", "host", "container", "engine", "hardware")
HOST: frozenset[Role] = frozenset({"host"})
CONTAINER: frozenset[Role] = frozenset({"container"})
BOTH: frozenset[Role] = frozenset({"host", "container"})

NO_GPU = "no NVIDIA GPU or driver on this host"


@dataclass(frozen=True, slots=True)
class Message:
    """One variant of a check's text: what a verdict can say instead of the row's own title/why/fix.

    Each field is a template: `{name}` placeholders are filled from the verdict's params (`str.format`
    rules, so `{n:.1f}` works and a literal brace is doubled); an empty field keeps the row's own text.
    """

    title: str = ""
    why: str = ""
    fix: str = ""

    def fields(self) -> tuple[str, ...]:
        """The placeholder names its templates use."""
        return tuple(
            dict.fromkeys(
                name.split(".", 1)[0].split("[", 1)[0]
                for text in (self.title, self.why, self.fix)
                for _lit, name, _spec, _conv in _FORMATTER.parse(text)
                if name
            )
        )


_FORMATTER = string.Formatter()


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a verdict function returns. The text a finding carries beyond observed/expected is data: the
    row's own title/why/fix, or the declared variant `variant` names (rendered with `params`)."""

    severity: Severity | str
    observed: str
    expected: str = ""
    variant: str = ""
    """A key of the check's `variants` ("" = the row's own title/why/fix)."""
    params: Mapping[str, Any] = field(default_factory=dict)
    """Values for the variant's `{placeholders}`."""
    evidence: tuple[tuple[Role, str] | tuple[Role, str, int], ...] = ()
    """Evidence beyond the check's declared sources (e.g. the optional source that was actually read);
    (role, command id, line) names the 0-based stdout line the value was read from (the evidence jump)."""


# The helpers' `evidence` is Verdict.evidence: (role, command id) or (role, command id, stdout line) pairs (typed
# Any, as the callers' literal tuples infer plain str roles).


def ok(
    observed: str, expected: str = "", *, variant: str = "", evidence: Any = (), **params: Any
) -> Verdict:
    return Verdict(Severity.OK, observed, expected, variant, params, evidence)


def info(
    observed: str, expected: str = "", *, variant: str = "", evidence: Any = (), **params: Any
) -> Verdict:
    return Verdict(Severity.INFO, observed, expected, variant, params, evidence)


def warning(
    observed: str, expected: str = "", *, variant: str = "", evidence: Any = (), **params: Any
) -> Verdict:
    return Verdict(Severity.WARNING, observed, expected, variant, params, evidence)


def critical(
    observed: str, expected: str = "", *, variant: str = "", evidence: Any = (), **params: Any
) -> Verdict:
    return Verdict(Severity.CRITICAL, observed, expected, variant, params, evidence)


def unknown(
    reason: str, expected: str = "", *, variant: str = "", evidence: Any = (), **params: Any
) -> Verdict:
    """For data that was read but does not answer the question (a field reported as [N/A], say)."""
    return Verdict(Severity.UNKNOWN, reason, expected, variant, params, evidence)


NA_PREFIX = "not applicable: "
"""How schema 1 spelled "not applicable" (severity ok + this prefix); snapshots/migrate.py converts it."""


def not_applicable(
    reason: str, /, *, variant: str = "", evidence: Any = (), **params: Any
) -> Verdict:
    """Proven not to apply: its own answer (severity n/a), never ok; the observed text is the reason."""
    return Verdict(Severity.NA, reason.removeprefix(NA_PREFIX), "", variant, params, evidence)


@dataclass(frozen=True, slots=True)
class Ctx:
    """What `applies` and `verdict` see: this probe's facts (and records) per target role."""

    role: Role | None
    """The target judged; None for a cross-target check."""
    facts: Mapping[Role, Any]
    outputs: Mapping[Role, Mapping[str, CommandRecord]]

    @property
    def f(self) -> Any:
        """The judged target's facts (for a cross-target check: the host's)."""
        return self.facts[self.role or "host"]

    def of(self, role: Role) -> Any:
        """Another target's facts, or None when the probe did not run there."""
        return self.facts.get(role)

    def absent(self, command_id: str, role: Role | None = None) -> bool:
        """Whether the source answered with an absence its row declares an answer ("No such file" for a
        module parameter, a daemon's tool not installed): the verdict's answer, never a problem text match."""
        rec = self.outputs.get(role or self.role or "host", {}).get(command_id)
        return bool(record_absent(rec, SOURCES.get(command_id)))

    def problem(self, command_id: str, role: Role | None = None) -> str | None:
        """Why a declared source is unusable on this (or the given) target, for an unknown's text; None when
        it answered. The framework's reading (record + extract problems), so a verdict never reads `problems`."""
        r = role or self.role or "host"
        return source_problem(self.outputs.get(r, {}).get(command_id), self.facts.get(r))

    def why(self, *command_ids: str, role: Role | None = None) -> str:
        """ "cid: why; ..." for the given sources that are unusable, or "not collected": an unknown's text."""
        parts = [f"{c}: {p}" for c in command_ids if (p := self.problem(c, role))]
        return "; ".join(parts) or "not collected"

    def usable(self, command_id: str, role: Role | None = None) -> bool:
        """Whether an optional source gave a normal answer on this (or the given) target."""
        rec = self.outputs.get(role or self.role or "host", {}).get(command_id)
        return (
            rec is not None
            and source_problem(rec, self.facts.get(role or self.role or "host")) is None
        )


VerdictFn = Callable[[Ctx], Verdict]
AppliesFn = Callable[[Ctx], str | None]
Input = str | tuple[Role, str]
"""A declared input: a command id (on every role the check judges) or (role, command id) (that role only)."""


@dataclass(frozen=True, slots=True)
class Check:
    """One row of the catalogue: everything about a check except the facts it reads."""

    id: str
    """`<probe>.<slug>`, exactly as PROBES.md spells it; never changes once released."""
    title: str
    owner: Owner
    """Who can fix it: the firmware setup, the host's admin, the container's admin, the engine's config, the hardware."""
    why: str
    fix: str
    verdict: VerdictFn
    sources: tuple[str, ...] = ()
    """Command ids whose usable output the verdict needs: any missing/failed one makes the finding unknown."""
    any_of: tuple[str, ...] = ()
    """Alternatives (machine-readable first): at least one must be usable, else unknown naming each."""
    roles: frozenset[Role] = HOST
    """The targets judged: one finding per role the probe ran on (or one over all of them with `cross`)."""
    cross: bool = False
    """One finding over host and container together (needs both reached)."""
    applies: AppliesFn | None = None
    """Why the check does not apply (-> n/a "<why>"), or None. Must not guess from missing data."""
    needs_gpu: bool = False
    """On a target with no NVIDIA GPU or driver the check is not applicable."""
    expected: str = ""
    aliases: tuple[str, ...] = ()
    """Other ids PROBES.md cross-references for the same check (e.g. numa.balancing -> kernel.numa_balancing)."""
    first_of: tuple[Role, ...] = ()
    """Judged once, on the first of these roles the probe ran on (the engine's container before the host), not per role."""
    optional: tuple[Input, ...] = ()
    """Sources the verdict (or `applies`) reads when usable and copes without (it says so, e.g. unknown): not
    gated. Role-qualified for another target's data: ("host", "pve_lxc_confs")."""
    fails_as_answer: tuple[Input, ...] = ()
    """Sources whose failure *is* the answer (a hung nvidia-smi for driver.gpu_health): read by the verdict,
    never gated."""
    no_input: str = ""
    """Why the check declares no source at all (it judges other checks' facts only), for the catalogue test."""
    variants: Mapping[str, Message] = field(default_factory=dict)
    """Every other text the verdict can pick (`variant="name"`), by name: the row's own title/why/fix is the
    default. `--list-checks --json` lists them; a test holds every verdict to its row's variants."""
    applies_first: bool = False
    """`applies` runs before the required sources are gated, for applicability that needs none of them (a VM
    is n/a without dmidecode): its own inputs are declared `optional`, and it must cope with them missing."""

    @property
    def probe(self) -> str:
        return self.id.split(".", 1)[0]


def declared_sources(check: Check, targets: Iterable[Role] = ()) -> frozenset[tuple[Role, str]]:
    """Every (role, command id) the check may read when judging `targets` (default: its roles): required,
    any-of, optional, fails-as-answer, and the GPU-presence sources the framework reads for `needs_gpu`."""
    roles = tuple(targets) or tuple(sorted(check.roles))
    entries: list[Input] = [*check.sources, *check.any_of, *check.optional, *check.fails_as_answer]
    if check.needs_gpu:
        entries += PRESENCE_SOURCES
    out: set[tuple[Role, str]] = set()
    for e in entries:
        if isinstance(e, tuple):
            out.add(e)
        else:
            out.update((r, e) for r in roles)
    return frozenset(out)


# --------------------------------------------------------------------------------------------------
# Why a source cannot be used


# The Debian/Ubuntu package that provides a tool, for "unknown: <tool> not installed (apt install <pkg>)".
TOOL_PACKAGES: dict[str, str] = {
    "lspci": "pciutils",
    "setpci": "pciutils",
    "dmidecode": "dmidecode",
    "numactl": "numactl",
    "numastat": "numactl",
    "cpupower": "linux-cpupower (Debian) / linux-tools-common (Ubuntu)",
    "turbostat": "linux-cpupower (Debian) / linux-tools-common (Ubuntu)",
    "lscpu": "util-linux",
    "lsblk": "util-linux",
    "journalctl": "systemd",
    "systemctl": "systemd",
    "tuned-adm": "tuned",
    "nvidia-smi": "the NVIDIA driver's utilities (nvidia-utils-<branch>)",
    "nv-fabricmanager": "nvidia-fabricmanager-<branch>",
    "modinfo": "kmod",
    "lsmod": "kmod",
    "ethtool": "ethtool",
    "ibstat": "infiniband-diags",
    "ibv_devinfo": "ibverbs-utils",
    "docker": "docker.io",
    "pct": "pve-container (Proxmox VE)",
    "lxc-info": "lxc",
    "lxc-attach": "lxc",
    "dkms": "dkms",
    "python3": "python3",
    "ps": "procps",
    "pgrep": "procps",
    "sysctl": "procps",
    "ldconfig": "libc-bin",
    "nvcc": "nvidia-cuda-toolkit",
    "all_reduce_perf": "nccl-tests (build from github.com/NVIDIA/nccl-tests)",
    "dmesg": "util-linux",
    "ip": "iproute2",
    "awk": "mawk",
    "findmnt": "util-linux",
}

_NOT_FOUND = re.compile(r"(?:^|[\s:])([\w.+-]+): (?:command )?not found", re.M)


def missing_tool_name(record: CommandRecord) -> str | None:
    """The program the shell could not find (from "sh: 1: lspci: not found"), or the command's first word."""
    if m := _NOT_FOUND.search(record.stderr):
        return m.group(1)
    words = [w for w in re.split(r"[\s;|&()]+", record.command) if w and "=" not in w]
    return words[0] if words else None


def tool_hint(tool: str | None) -> str:
    if not tool:
        return "tool not installed"
    pkg = TOOL_PACKAGES.get(tool)
    return f"{tool} not installed" + (f" (package {pkg})" if pkg else "")


def source_problem(record: CommandRecord | None, facts: Any = None) -> str | None:
    """Why a record cannot be used as a normal answer (None when it can), naming a missing tool's package.

    A problem the probe's extract found while parsing (facts.problems[command_id]) counts too.
    """
    if record is None:
        return "not collected"
    if record.error and record.error.startswith("target failed"):
        return "target unreachable"
    src = SOURCES.get(record.command_id)
    tolerated = src.ok_exits if src is not None else frozenset({0})
    if (
        record.exit_status in tolerated
        and not record.error
        and not record.timed_out
        and not record.truncated
    ):
        problem = None
    elif record.missing_tool and not record.error and not record.timed_out:
        problem = tool_hint(missing_tool_name(record))
    else:
        problem = record_problem(record)
    if problem is None:
        problems = getattr(facts, "problems", None)
        if isinstance(problems, Mapping) and record.command_id in problems:
            problem = str(problems[record.command_id])
    return problem


# --------------------------------------------------------------------------------------------------
# The framework


def unreachable_reason(records: Mapping[str, CommandRecord]) -> str | None:
    """Why a target was never reached (every record says "target failed: ..."), or None."""
    first: str | None = None
    # the gate asks per check: stop at the first reached record (issue 30)
    for r in records.values():
        error = r.error or ""
        if not error.startswith("target failed"):
            return None
        if first is None:
            first = error
    if first is None:
        return None
    return first.removeprefix("target failed").lstrip(": ") or "target failed"


def render(check: Check, v: Verdict) -> tuple[str, str, str]:
    """The title, why and fix a verdict's finding carries: the row's own, or its declared variant's filled
    from the verdict's params (an empty field keeps the row's). An undeclared variant or a missing param
    raises (the framework turns it into this check's "rule error")."""
    if not v.variant:
        return check.title, check.why, check.fix
    msg = check.variants.get(v.variant)
    if msg is None:
        raise KeyError(f"{check.id}: undeclared message variant {v.variant!r}")
    return (
        fill(msg.title, v.params) or check.title,
        fill(msg.why, v.params) or check.why,
        fill(msg.fix, v.params) or check.fix,
    )


def fill(text: str, params: Mapping[str, Any]) -> str:
    """`string.Formatter().vformat(text, (), params)`, by str.format_map (the same parser and field rules, in C:
    ~0.4 us instead of ~2.6 us a text, ~200 texts per host, issue 30); on any error the Formatter runs so the
    error (a check's "rule error" text) is the one it raises."""
    try:
        return text.format_map(params)
    except Exception:  # noqa: BLE001 - raised again, as the Formatter words it
        return _FORMATTER.vformat(text, (), params)


def _finding(
    check: Check,
    targets: Iterable[Role],
    v: Verdict,
    evidence: Iterable[tuple[Role, str] | tuple[Role, str, int]],
    text: tuple[str, str, str] | None = None,
) -> Finding:
    title, why, fix = text or (check.title, check.why, check.fix)
    lines: dict[tuple[Role, str], int] = {}
    for e in evidence:
        if len(e) == 3:
            lines.setdefault((e[0], e[1]), e[2])
    refs = dict.fromkeys(
        (e[0], e[1]) for e in evidence
    )  # first mention keeps its place, with its line
    return Finding(
        id=check.id,
        severity=Severity(v.severity),
        probe=check.probe,
        owner=check.owner,
        targets=list(dict.fromkeys(targets)),
        title=title,
        observed=v.observed,
        expected=v.expected or check.expected,
        why=why,
        fix=fix,
        evidence=[EvidenceRef(target=t, command_id=c, line=lines.get((t, c))) for t, c in refs],
    )


def _gate(
    check: Check,
    roles: tuple[Role, ...],
    facts: Mapping[Role, Any],
    outputs: Mapping[Role, Mapping[str, CommandRecord]],
) -> tuple[Verdict | None, list[tuple[Role, str]]]:
    """The framework's verdict when the check can't be judged (unknown / not applicable), and the evidence."""
    evidence: list[tuple[Role, str]] = []
    for role in roles:
        recs = outputs.get(role, {})
        if reason := unreachable_reason(recs):
            return unknown(
                f"{role} unreachable: {reason}"
                if len(roles) > 1
                else f"target unreachable: {reason}"
            ), []
    if check.needs_gpu:
        for role in roles:
            present, _why = nvidia_presence(outputs.get(role, {}))
            if present is False:
                where = f" ({role})" if len(roles) > 1 or role == "container" else ""
                return not_applicable(NO_GPU + where), []
    unusable: list[str] = []
    for role in roles:
        recs = outputs.get(role, {})
        for cid in check.sources:
            if (src := SOURCES.get(cid)) is not None and role not in src.on:
                continue  # a host-only source in a cross-target check is required on the host only
            problem = source_problem(recs.get(cid), facts.get(role))
            evidence.append((role, cid))
            if problem:
                unusable.append(f"{cid}{f' ({role})' if len(roles) > 1 else ''}: {problem}")
        if check.any_of:
            tried = [
                (cid, source_problem(recs.get(cid), facts.get(role)))
                for cid in check.any_of
                if cid in recs
            ]
            good = [cid for cid, p in tried if p is None]
            if good:
                evidence.append((role, good[0]))
            else:
                unusable.append(
                    "; ".join(f"{cid}: {p}" for cid, p in tried)
                    or "none of " + ", ".join(check.any_of) + " collected"
                )
                evidence.extend((role, cid) for cid, _ in tried)
    if unusable:
        return unknown("; ".join(unusable)), evidence
    return None, evidence


def not_run_active(
    check: Check, roles: Iterable[Role], outputs: Mapping[Role, Mapping[str, CommandRecord]]
) -> bool:
    """A check over ACTIVE (load-generating) sources when none of them ran: an audit without --active judges nothing."""
    active = [c for c in check.sources if c in SOURCES and SOURCES[c].active]
    return bool(active) and not any(c in outputs.get(r, {}) for r in roles for c in active)


def judge_checks(
    checks: Iterable[Check],
    facts: Mapping[Role, Any],
    outputs: Mapping[Role, Mapping[str, CommandRecord]],
) -> Iterator[Finding]:
    """Every check -> exactly one finding per target set it covers among the roles the probe ran on."""
    ran = [r for r in ("host", "container") if r in outputs]
    for check in checks:
        roles = [r for r in ran if r in check.roles]
        if check.first_of:
            roles = [r for r in check.first_of if r in roles][:1]
        if not roles or not_run_active(check, roles, outputs):
            continue
        groups: list[tuple[Role, ...]] = [tuple(roles)] if check.cross else [(r,) for r in roles]
        for group in groups:
            if check.cross and len(group) < len(check.roles):
                continue  # a cross-target check needs every role it compares
            yield _judge_one(check, group, facts, outputs)


def _judge_one(
    check: Check,
    group: tuple[Role, ...],
    facts: Mapping[Role, Any],
    outputs: Mapping[Role, Mapping[str, CommandRecord]],
) -> Finding:
    gated, evidence = _gate(check, group, facts, outputs)
    ctx = Ctx(role=None if check.cross else group[0], facts=facts, outputs=outputs)
    if (
        check.applies_first
        and check.applies is not None
        and gated is not None
        and Severity(gated.severity) == Severity.UNKNOWN
        and not any(unreachable_reason(outputs.get(r, {})) for r in group)
    ):  # applicability that needs none of the gated sources (a VM is n/a without dmidecode)
        try:
            why = check.applies(ctx)
        except Exception as exc:  # noqa: BLE001 - a rule bug: this check unknown, visibly
            return _finding(check, group, unknown(f"rule error: {exc}"), evidence)
        if why:
            return _finding(check, group, not_applicable(why), evidence)
    if gated is not None:
        return _finding(check, group, gated, evidence)
    try:
        if check.applies is not None and (why := check.applies(ctx)):
            return _finding(check, group, not_applicable(why), evidence)
        v = check.verdict(ctx)
        text = render(check, v)
    except (
        Exception
    ) as exc:  # a rule bug makes this one check unknown, visibly, not the whole probe
        v = unknown(f"rule error: {exc.__class__.__name__}: {exc}")
        text = None
    return _finding(check, group, v, [*evidence, *v.evidence], text)
