"""A reader that fills the fields in place and then fails on its output leaves nothing of that source behind: the
source is a problem (judged unknown), and no field half-read from it reaches a check (a `fill`/`fill_record`
reader that sets a field before its parser raises)."""

from __future__ import annotations

from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.judge.probe import Reads, read_table
from gpuaudit.probes.core.models import CommandRecord


def _rec(cid: str, stdout: str) -> CommandRecord:
    return CommandRecord(
        target="host", probe_id="t", command_id=cid, command="x", exit_status=0, stdout=stdout
    )


def _half(rec: CommandRecord, f: dict) -> None:
    f["early"] = True
    f["kept"] = "overwritten"
    raise ParseError("no table")


def _half_text(text: str, f: dict, problems: dict) -> None:
    f["early_text"] = 1
    raise RuntimeError("a parser bug")


def test_a_failed_fill_leaves_no_field_of_its_source() -> None:
    outputs = {c: _rec(c, "x") for c in ("a", "b", "c")}
    table = (
        Reads("a", parse=lambda t: {"kept": "from a"}),
        Reads("b", fill_record=_half),
        Reads("c", fill=_half_text),
    )
    read = read_table(outputs, table)
    assert read.fields == {"kept": "from a"}
    assert read.provenance == {"kept": "a"}
    assert read.problems["b"] == "unreadable: no table"
    assert read.problems["c"].startswith("unparsable output: RuntimeError")
