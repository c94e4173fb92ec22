"""diff shows the roofline before and after; only changed bounds make two snapshots differ."""

from __future__ import annotations

from pathlib import Path

from gpuaudit.snapshots.diff import diff_snapshots
from gpuaudit.snapshots.schema import Snapshot
from gpuaudit.tui.views.diff_report import render

BEFORE = Path(__file__).resolve().parents[2] / "snapshots" / "examples" / "case-study-before.json"


def with_roofline(snap: Snapshot, bounds: dict, measured: float | None, strip: str) -> Snapshot:
    return snap.model_copy(
        update={"roofline": {"bounds": bounds, "measured_tok_s": measured, "strip": strip}}
    )


def test_a_faster_decode_is_shown_but_is_not_a_difference_by_itself():
    snap = Snapshot.model_validate_json(BEFORE.read_text())
    bounds = {"tp_aware": 194.9, "comm_aware": 98.5}
    a = with_roofline(
        snap, bounds, 10.1, "decode 10.1 tok/s · bound 98–195 tok/s · 5–10% of physics"
    )
    b = with_roofline(
        snap, bounds, 47.0, "decode 47.0 tok/s · bound 98–195 tok/s · 24–48% of physics"
    )
    d = diff_snapshots(a, b)
    assert d.roofline is not None and d.roofline.new_measured == 47.0 and d.identical
    assert (
        "roofline: decode 10.1 tok/s" in render(d).plain and "decode 47.0 tok/s" in render(d).plain
    )


def test_changed_bounds_make_a_difference():
    snap = Snapshot.model_validate_json(BEFORE.read_text())
    a = with_roofline(
        snap, {"tp_aware": 194.9}, None, "decode ? tok/s (not measured) · bound 195 tok/s"
    )
    b = with_roofline(
        snap, {"tp_aware": 230.0}, None, "decode ? tok/s (not measured) · bound 230 tok/s"
    )
    d = diff_snapshots(a, b)
    assert d.roofline is not None and d.roofline.bounds_changed and not d.identical


def test_no_roofline_on_either_side_says_nothing():
    snap = Snapshot.model_validate_json(BEFORE.read_text()).model_copy(update={"roofline": None})
    assert diff_snapshots(snap, snap).roofline is None
