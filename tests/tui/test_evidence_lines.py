"""Issue 23: evidence points at what was parsed. The lspci parser records the line of each value it reads; the
finding names it; the drill-down's `e` lands on that line: the GPU's own DevCtl MaxReadReq line (not a root
port's with the same value) and the ACSCtl: line (what is enabled, not ACSCap: what is possible)."""

from __future__ import annotations

import re

from gpuaudit.probes.catalogue import REGISTRY
from gpuaudit.probes.core.judge.probe import judge_probe
from gpuaudit.probes.core.models import AuditRun
from gpuaudit.tui.app import make_app
from gpuaudit.tui.widgets.command_output import CommandOutput
from tui_support import case_study_run

PROBES = {p.id: p for p in REGISTRY}
BDF = re.compile(r"^(?:[0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7] ")


def rejudged() -> AuditRun:
    """The case study's records judged by today's parsers and rules (what --replay does)."""
    run = case_study_run()
    probes = []
    for p in run.probes:
        by_role: dict = {}
        for r in p.records:
            by_role.setdefault(r.target, []).append(r)
        result = judge_probe(PROBES[p.probe_id], by_role)
        probes.append(p.model_copy(update={"findings": result.findings, "facts": result.facts}))
    return run.model_copy(update={"probes": probes})


def block_header(lines: list[str], row: int) -> str:
    """The lspci block a viewer row belongs to: the nearest line above it that starts with a BDF."""
    return next((ln for ln in reversed(lines[: row + 1]) if BDF.match(ln)), "")


def test_the_findings_name_the_parsed_line() -> None:
    run = rejudged()
    rec = next(r for p in run.probes for r in p.records if r.command_id == "lspci_vvv")
    out = rec.stdout.split("\n")
    mrrs = next(f for f in run.findings if f.id == "pcie.max_read_req")
    line = mrrs.evidence[0].line
    assert line is not None and "MaxReadReq 512 bytes" in out[line]
    assert "NVIDIA" in block_header(out, line) and "controller" in block_header(out, line)
    acs = next(f for f in run.findings if f.id == "pcie.acs")
    line = next(e.line for e in acs.evidence if e.command_id == "lspci_vvv")
    assert line is not None and out[line].strip().startswith("ACSCtl:")


async def _jump(fid: str, clock) -> tuple[list[str], int]:
    app = make_app(rejudged(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        app.open_drilldown("pcie", fid)
        await pilot.pause()
        await pilot.press("e")
        await pilot.pause()
        viewer = app.screen.query_one(CommandOutput)
        assert viewer.match is not None
        row = viewer.match[0]
        assert viewer.scroll_offset.y <= row < viewer.scroll_offset.y + viewer.size.height
        return list(viewer.lines), row


async def test_e_lands_on_the_gpus_own_maxreadreq_line(clock) -> None:
    lines, row = await _jump("pcie.max_read_req", clock)
    assert "MaxReadReq 512 bytes" in lines[row]
    header = block_header(lines, row)
    assert "NVIDIA" in header and "Root Port" not in header and "bridge" not in header.lower()


async def test_e_lands_on_the_acsctl_line(clock) -> None:
    lines, row = await _jump("pcie.acs", clock)
    assert lines[row].strip().startswith("ACSCtl:"), lines[row]
    assert "ReqRedir+" in lines[row] or "CmpltRedir+" in lines[row]


def test_facts_tab_source_column_is_the_facts_provenance() -> None:
    """Every fact of the case study is shown as seen in one of its own sources (FIELD_SOURCES), never a guess
    from where its value happens to appear (the old guess put at least 7 facts under the wrong command)."""
    from gpuaudit.tui.views.render import facts_rows, field_sources

    run = rejudged()
    checked = 0
    for p in run.probes:
        table = field_sources(p.probe_id)
        for role, name, _value, source in facts_rows(p.facts, p.records, p.probe_id):
            if name == "problems":
                continue
            mine = {r.command_id for r in p.records if r.target == role}
            allowed = [s for s in table[name] if s in mine]
            assert source in (allowed or ["derived", "-"]), (p.probe_id, role, name, source)
            checked += 1
    assert checked > 200


def test_a_rate_reads_as_a_rate() -> None:
    from gpuaudit.tui.views.render import fact_value

    assert fact_value("decode_single_stream_tok_s", 10.05) == "10.05 tok/s"
    assert fact_value("duration_s", 2.5) == "2.5 s"
