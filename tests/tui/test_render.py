"""Pure render helpers: neutralising remote text, severity labels, pane bodies (no App)."""

from __future__ import annotations

from datetime import timedelta

from gpuaudit.probes.core.models import CommandRecord, Severity
from gpuaudit.tui.views.render import (
    counts,
    format_elapsed,
    header_text,
    neutralise,
    pane_body,
    pane_subtitle,
    record_output,
    sev_label,
    state_class,
    visible,
)
from rich.text import Text
from tui_support import T_FIXED, running_run, synthetic_run


def test_neutralise_makes_escape_sequences_and_controls_visible() -> None:
    hostile = "\x1b]0;pwned\x07\x1b[2J"  # SYNTHETIC: OSC title + clear screen
    out = neutralise(hostile)
    assert out == "\\x1b]0;pwned\\x07\\x1b[2J"
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in out)
    assert neutralise("a\r\nb\rc\x7f\x9b\u202e") == "a\nb\\x0dc\\x7f\\x9b\\u202e"
    assert neutralise("tab\tand\nnewline") == "tab\tand\nnewline"


def test_one_neutraliser_for_every_front_end() -> None:
    import gpuaudit.probes.core.judge.plan as plan_mod
    import gpuaudit.tui.views.diff_report as diff_report_mod
    from gpuaudit.probes.core import text

    assert neutralise is text.neutralise and diff_report_mod.neutralise is text.neutralise
    assert plan_mod.neutralise is text.neutralise


def test_markup_in_remote_text_stays_literal() -> None:
    rec = CommandRecord(
        target="host",
        probe_id="kernel",
        command_id="x",
        command="echo",
        exit_status=0,
        stdout="[red]boom[/red] \x1b[31m",
    )
    text = record_output(rec)
    assert "[red]boom[/red] \\x1b[31m" in text
    run = synthetic_run()
    header = header_text(run.model_copy(update={"note": "[bold]n[/bold]"}))
    assert isinstance(header, Text) and "[bold]n[/bold]" in header.plain


def test_severity_is_never_colour_alone() -> None:
    assert [sev_label(s) for s in Severity] == [
        "✖ CRIT",
        "▲ WARN",
        "● INFO",
        "✔ OK",
        "? UNKN",
        "– N/A",
    ]


def test_state_classes_follow_worst_severity() -> None:
    run = synthetic_run()
    assert {p.probe_id: state_class(p) for p in run.probes} == {
        "firmware": "-ok",
        "container": "-ok",
        "driver": "-ok",
        "kernel": "-warn",
        "pcie": "-warn",
        "power": "-warn",
        "nccl": "-unknown",
        "numa": "-ok",
        "python": "-fail",
        "nvlink": "-error",
    }
    assert state_class(running_run().probes[6]) == "-running"


def test_pane_body_counts_per_target_and_top_findings() -> None:
    kernel = synthetic_run().probe("kernel")
    body = pane_body(
        kernel, roles=["host", "container"], now=T_FIXED, height=5, width=58
    ).plain.splitlines()
    assert body[0] == "6.8.12-9-pve · numa_balancing=1"
    assert body[1].startswith("host ▲2 ●1 ✔1") and "container no findings" in body[1]
    assert body[2] == "▲ WARN Kernel older than 6.13 on Zen 5"
    assert len(body) == 5 and all(len(line) <= 58 for line in body)


def test_running_pane_elapsed_is_deterministic_under_fixed_clock() -> None:
    probe = running_run().probes[6]
    now = probe.started_at + timedelta(seconds=2.5)
    body = pane_body(probe, roles=["host"], now=now, running=[("host", "smi_topo_p2p")])
    assert "running 2.5s" in body.plain and "host: smi_topo_p2p" in body.plain
    assert pane_subtitle(probe, now).endswith("running 2.5s")
    assert format_elapsed(-1) == "0.0s" and format_elapsed(65) == "1m05s"


def test_filter_and_counts() -> None:
    power = synthetic_run().probe("power")
    assert [f.severity for f in visible(power.findings, Severity.WARNING)] == [
        Severity.WARNING,
        Severity.WARNING,
    ]
    assert counts(power.findings, "host") == {Severity.WARNING: 2, Severity.OK: 1}
    assert counts(power.findings, "container") == {} and counts(power.findings, None) == {}
