"""Container probe (skeleton: the probe issue brings the full checks)."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import BaseModel

from probes.core.models import Finding, Role
from probes.core.spec import Command, FactsByTarget, Outputs, Probe, record_problem

PROBE_ID = "container"


class Facts(BaseModel, frozen=True):
    raw_first_line: str | None = None
    problems: dict[str, str] = {}


COMMANDS = (Command("virt", "systemd-detect-virt -c", on=frozenset({"host", "container"})),)


def extract(outputs: Outputs, role: Role) -> Facts:
    problems = {cid: p for cid, rec in outputs.items() if (p := record_problem(rec))}
    ok = [r for cid, r in outputs.items() if cid not in problems]
    return Facts(raw_first_line=(ok[0].stdout.strip().splitlines() or [None])[0] if ok else None, problems=problems)


def judge(facts: FactsByTarget) -> Iterator[Finding]:
    return iter(())


PROBE = Probe(id=PROBE_ID, title="Container", commands=COMMANDS, extract=extract, judge=judge)
