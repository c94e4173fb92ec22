"""One probe judged from its records: extract (records -> facts), the checks, the summary. Pure: the same code
path for live runs, replay and resume. Also the framework's extract loop (`read_table`): a probe's table of
source -> parser -> fields, run over the usable records, parser errors caught into problems."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.judge.checks import judge_checks, source_problem
from gpuaudit.probes.core.models import CommandRecord, ProbeResult, Role
from gpuaudit.probes.core.record import Record
from gpuaudit.probes.core.spec import Outputs, Probe, partial_grep_ok

Fields = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Reads:
    """One row of a probe's extract table: a source, the parser of its usable stdout (-> fact fields)."""

    source: str
    parse: Callable[[str], Mapping[str, Any]] | None = None
    """Usable stdout -> fields (parsers run once per text: parse_once). ParseError / ValueError = unreadable."""
    when: Callable[[Fields], bool] | None = None
    """A fallback row runs only when this holds over the fields read so far (None: always)."""
    record: Callable[[CommandRecord], Mapping[str, Any]] | None = None
    """Instead of `parse`: a reader that needs the whole usable record (an exit status that is an answer)."""
    partial_ok: bool = False
    """`grep -H` over several files: exit 2 with output still carries the lines of the files that were read."""
    fill: Callable[[str, Fields, dict[str, str]], None] | None = None
    """Instead of `parse`: a reader that fills the fields in place from the usable stdout (it may complete what an
    earlier row read, and note a problem of its source)."""
    fill_record: Callable[[CommandRecord, Fields], None] | None = None
    """Instead of `parse`: a reader that fills the fields in place from the whole usable record (stderr too)."""


@dataclass(slots=True)
class TableRead:
    """What `read_table` read: the fields, why each unusable source is (problems), where each field came from."""

    fields: Fields = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)
    provenance: dict[str, str] = field(default_factory=dict)
    """Field -> the source whose row filled it (the FIELD_SOURCES tables must name that source)."""


def unreadable(exc: Exception) -> str:
    """The problem a parser's ParseError / ValueError leaves on its source."""
    return f"unreadable: {exc}"


def read_table(
    outputs: Outputs,
    table: Sequence[Reads],
    *,
    note_unusable: bool = True,
    why: Callable[[Exception], str] = unreadable,
    usability: Callable[[CommandRecord], str | None] = source_problem,
) -> TableRead:
    """The framework's extract loop: each row's source, when recorded and usable (`usability`: by default the
    gate's `source_problem`, with ok_exits, missing tools, refusals, timeouts, cut output; a probe whose facts keep
    the record's own problem texts passes `record_problem`), goes through the row's reader and fills its fields.

    An unusable source is a problem (`note_unusable`); a parser's ParseError / ValueError is one too (`why`), and
    any other exception from a parser (a bug on odd output) as well: it never crashes the probe, the other
    sources are still read and judged."""
    out = TableRead()
    for row in table:
        rec = outputs.get(row.source)
        if rec is None or (row.when is not None and not row.when(out.fields)):
            continue
        problem = usability(rec)
        if (
            problem is not None
            and row.partial_ok
            and partial_grep_ok({row.source: rec}, row.source)
        ):
            problem = None
        if problem is not None:
            if note_unusable:
                out.problems[row.source] = problem
            continue
        before = dict(out.fields) if row.fill is not None or row.fill_record is not None else {}
        got: Mapping[str, Any]
        try:
            if row.fill is not None:
                row.fill(rec.stdout, out.fields, out.problems)
                got = {k: v for k, v in out.fields.items() if k not in before or before[k] is not v}
            elif row.fill_record is not None:
                row.fill_record(rec, out.fields)
                got = {k: v for k, v in out.fields.items() if k not in before or before[k] is not v}
            elif row.record is not None:
                got = row.record(rec)
            elif row.parse is not None:
                got = row.parse(rec.stdout)
            else:
                raise TypeError(f"the row of {row.source} has no reader")
        except Exception as exc:  # noqa: BLE001 - a parser bug: that source is unusable, never the probe
            if (
                row.fill is not None or row.fill_record is not None
            ):  # nothing half-read from it stays
                out.fields.clear()
                out.fields.update(before)
            if isinstance(exc, ParseError | ValueError):
                out.problems[row.source] = why(exc)
            else:
                out.problems[row.source] = f"unparsable output: {exc.__class__.__name__}: {exc}"
            continue
        out.fields.update(got)
        out.provenance.update(dict.fromkeys(got, row.source))
    return out


def judge_probe(
    probe: Probe, records_by_role: dict[Role, list[CommandRecord]], started: datetime | None = None
) -> ProbeResult:
    """Interpret and judge one probe from its records (pure): the same code path for live runs and replay."""
    result = ProbeResult(probe_id=probe.id, title=probe.title, started_at=started)
    try:
        outputs = {role: {r.command_id: r for r in recs} for role, recs in records_by_role.items()}
        facts = {role: extract_facts(probe, outputs[role], role) for role in outputs}
        findings = list(judge_checks(probe.checks, facts, outputs))
        summary = probe.summarize(facts)
    except Exception as exc:  # a parser/rule bug fails this probe only, visibly
        return result.model_copy(
            update={
                "status": "failed",
                "error": f"{exc.__class__.__name__}: {exc}",
                "duration_s": _elapsed(started),
            }
        )
    all_failed = bool(records_by_role) and all(
        r.error and r.error.startswith("target failed")
        for recs in records_by_role.values()
        for r in recs
    )
    return result.model_copy(
        update={
            "status": "failed" if all_failed else "done",
            "error": "every target failed" if all_failed else None,
            "facts": {role: f.model_dump(mode="json") for role, f in facts.items()},
            "findings": findings,
            "summary": summary,
            "duration_s": _elapsed(started),
        }
    )


def extract_facts(probe: Probe, outputs: Outputs, role: Role) -> Record:
    """The probe's extract over one target's records; when a parser raises on one source's output (a bug on odd
    output), that source becomes a problem of the facts ("unparsable output: ..."), judged unknown by the gate like
    any unusable source, and the rest is extracted without it: a parser error never fails the whole probe.

    The culprit is found by leaving one recorded source out at a time (parsers run once per text, so the retries
    cost little). An error no single source explains is raised as before (the probe fails, visibly)."""
    try:
        return probe.extract(outputs, role)
    except Exception as exc:  # noqa: BLE001 - narrowed to one source below, or raised again
        error = exc
    for cid in outputs:
        try:
            facts = probe.extract({k: v for k, v in outputs.items() if k != cid}, role)
        except Exception:  # noqa: BLE001, S112 - not this source
            continue
        problems = dict(getattr(facts, "problems", None) or {})
        if "problems" not in type(facts).model_fields:
            break
        problems[cid] = f"unparsable output: {error.__class__.__name__}: {error}"
        return facts.model_copy(update={"problems": problems})
    raise error


def _elapsed(started: datetime | None) -> float:
    if started is None:
        return 0.0
    return round((datetime.now(UTC) - started).total_seconds(), 4)
