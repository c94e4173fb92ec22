"""Big raw outputs in the drill-down (issue 30): prepared in a thread with a progress bar, the evidence row found
once per distinct line, and every viewer key (e, search, w, z, copy) working on the prepared text."""

from __future__ import annotations

import random
import threading

import pytest
from gpuaudit.probes.core.models import CommandRecord, EvidenceRef, Finding, Severity
from gpuaudit.tui.app import make_app
from gpuaudit.tui.screens import drilldown
from gpuaudit.tui.views.render import _STOP, _TOKEN, evidence_row, record_output
from gpuaudit.tui.widgets import command_output
from gpuaudit.tui.widgets.command_output import CommandOutput, prepare
from textual.widgets import ProgressBar
from tui_support import FixedClock, case_study_run, synthetic_run


def evidence_row_every_line(text: str, finding: Finding) -> int | None:
    """The oracle: every line scored, the first best kept (what evidence_row did before issue 30)."""
    tokens = {t.lower().rstrip(".") for t in _TOKEN.findall(finding.observed)} - _STOP
    best, best_score = None, 0.0
    for n, line in enumerate(text.lower().split("\n")):
        words = set(_TOKEN.findall(line))
        score = sum(len(t) if t in words else 0.5 * len(t) if t in line else 0 for t in tokens)
        if score > best_score:
            best, best_score = n, score
    return best if tokens else None


def test_evidence_row_is_the_oracles_on_every_case_study_pair() -> None:
    run = case_study_run()
    texts = {(r.target, r.command_id): record_output(r) for p in run.probes for r in p.records}
    pairs = 0
    for f in run.findings:
        for key, text in texts.items():
            assert evidence_row(text, f) == evidence_row_every_line(text, f), (f.id, key)
            pairs += 1
    assert pairs > 10_000


def test_evidence_row_first_of_equals_on_repeated_and_mixed_case_lines() -> None:
    f = Finding(
        id="x.y", probe="x", title="t", severity=Severity.WARNING, observed="MaxReadReq 512 B"
    )
    rng = random.Random(7)
    words = ["MaxReadReq", "maxreadreq", "512", "x512", "bytes", "DevCtl:", "\t", "256"]
    for _ in range(300):
        lines = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 4))) for _ in range(30)]
        text = "\n".join(lines * rng.randint(1, 3))
        assert evidence_row(text, f) == evidence_row_every_line(text, f), text


def test_prepare_in_chunks_is_the_whole_text_prepared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(command_output, "CHUNK", 5)
    rng = random.Random(3)
    seen: list[float] = []
    for _ in range(500):
        text = "".join(rng.choice("ab\t\n x") for _ in range(rng.randint(0, 80)))
        p = prepare(text, seen.append)
        whole = text.expandtabs(8)
        assert (p.text, p.lines, p.width) == (
            whole,
            whole.split("\n"),
            max(map(len, whole.split("\n"))),
        )
    assert seen and all(0 < x <= 1 for x in seen)


def big_run(lines: int = 60_000):
    """The synthetic run with a big kernel record (~4.6 MB, tabs, the evidence near the end) and a finding on it."""
    run = synthetic_run()
    body = "".join(f"line {n}\tfiller " + "x" * 60 + "\n" for n in range(lines))
    body += "\tDevCtl:\tMaxPayload 256 bytes, MaxReadReq 4096 bytes\n" + body[:100_000]
    rec = CommandRecord(
        target="host", probe_id="kernel", command_id="big", command="cat big", stdout=body
    )
    finding = Finding(
        id="kernel.big",
        probe="kernel",
        title="MaxReadReq in a big output",
        severity=Severity.CRITICAL,
        observed="MaxReadReq 4096 B",
        evidence=[EvidenceRef(target="host", command_id="big")],
    )
    kernel = run.probe("kernel")
    assert kernel is not None
    index = next(n for n, p in enumerate(run.probes) if p.probe_id == "kernel")
    run.probes[index] = kernel.model_copy(
        update={"records": [*kernel.records, rec], "findings": [finding, *kernel.findings]}
    )
    return run, rec


async def test_e_into_a_big_output_shows_progress_then_lands_on_the_line(monkeypatch) -> None:
    monkeypatch.setattr(drilldown, "PROGRESS_AFTER_S", 0.01)
    halfway = threading.Event()

    def slow(text: str, progress):  # the worker stops halfway until the test has seen the bar
        progress(0.5)
        halfway.wait(30)
        return prepare(text, progress)

    monkeypatch.setattr(drilldown, "prepare", slow)
    run, rec = big_run()
    app = make_app(run, clock=FixedClock(), theme="gpuaudit-dark")
    async with app.run_test(size=(120, 40)) as pilot:
        app.open_drilldown("kernel", "kernel.big")
        await pilot.pause()
        screen = app.screen
        assert not screen.query("#output-progress")  # mounted only while a big output loads
        await pilot.press("e")
        viewer = screen.query_one(CommandOutput)
        for _ in range(200):
            await pilot.pause(0.02)
            bars = screen.query("#output-progress")
            if bars and bars.first(ProgressBar).progress > 0.5:
                break
        assert viewer.text.startswith("loading big: 4.8 MB of output")
        bar = screen.query_one("#output-progress", ProgressBar)
        assert bar.region.height == 1 and bar.progress == pytest.approx(0.25 + 0.75 * 0.5)
        halfway.set()
        for _ in range(400):
            await pilot.pause(0.02)
            if screen.preparing is None and viewer.match is not None:
                break
        assert not screen.query("#output-progress")
        assert viewer.line_count > 60_000 and "\t" not in viewer.text
        row = viewer.match[0] if viewer.match else None
        assert row is not None and "MaxReadReq 4096 bytes" in viewer.lines[row]
        assert viewer.lines[row] == viewer.lines[row].expandtabs(8)
        # search, wrap, zoom and copy on the prepared text
        await pilot.press("slash")
        await pilot.press(*"maxreadreq 4096")
        await pilot.press("enter")
        await pilot.pause()
        assert viewer.match and "MaxReadReq 4096" in viewer.selected_text.replace("maxreadreq", "")
        assert str(screen.query_one("#search-count").render()) == "1/1"
        await pilot.press("w")
        await pilot.pause()
        assert viewer.wrap and viewer.virtual_size.height >= viewer.line_count
        await pilot.press("z")
        await pilot.pause()
        assert screen.maximized is viewer
        copied: list[str] = []
        monkeypatch.setattr(app, "copy_to_clipboard", copied.append)
        await pilot.press("c")  # the finding, as text for a ticket
        await pilot.pause()
        assert copied and copied[0].startswith("[critical] MaxReadReq in a big output")


async def test_a_small_record_chosen_while_a_big_one_loads_wins() -> None:
    run, rec = big_run()
    app = make_app(run, clock=FixedClock(), theme="gpuaudit-dark")
    async with app.run_test(size=(120, 40)) as pilot:
        app.open_drilldown("kernel")
        await pilot.pause()
        screen = app.screen
        big = screen.records.index(rec)
        small = next(n for n, r in enumerate(screen.records) if r is not rec)
        screen.show_record(big)
        screen.show_record(small)
        # the table's highlight events load and cancel in turn; wait until settled
        for _ in range(200):
            await pilot.pause(0.02)
            if not any(w.group == "output" and not w.is_finished for w in app.workers):
                break
        await pilot.pause()
        viewer = screen.query_one(CommandOutput)
        assert screen.preparing is None and screen.shown is screen.records[small]
        assert viewer.text == record_output(screen.records[small]).expandtabs(8)
        assert not screen.query("#output-progress")


async def test_the_output_side_is_a_class_only_on_a_narrow_screen() -> None:
    """A class change restyles the whole screen: on a wide one (both sides shown) `e` leaves the classes alone; a
    resize to narrow then shows the side `e` chose."""
    app = make_app(case_study_run(), clock=FixedClock(), theme="gpuaudit-dark")
    async with app.run_test(size=(120, 40)) as pilot:
        app.open_drilldown("pcie")
        await pilot.pause()
        screen = app.screen
        await pilot.press("e")
        await pilot.pause()
        assert screen.output_side and not screen.has_class("-show-output")
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert screen.has_class("-narrow") and screen.has_class("-show-output")
        assert not screen.query_one("#dd-left").region.width  # only the output side shows
        await pilot.press("o")
        await pilot.pause()
        assert not screen.output_side and not screen.has_class("-show-output")
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        assert not screen.has_class("-narrow") and not screen.has_class("-show-output")
