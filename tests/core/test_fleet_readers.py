"""The fleet comparison's lspci readers (MaxReadReq of the NVIDIA GPUs, ACS redirect count) read through the shared
lspci parser, parsed once per text (issue 23: no private regex); on the real recorded outputs, and on the same text
with other line breaks, they answer what the plain line-by-line reading answers (issue 25's answers unchanged)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from gpuaudit.probes.core.fleet.peers import _acs, _mrrs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "system"
NO_DEVCTL = {"hpe-xd665-two-h100-behind-pex890xx-no-tree.txt"}
"""Filtered without the GPUs' `DevCtl:` lines: the pcie probe reads no MaxReadReq there, nor does the fleet."""
OUTPUTS = sorted(
    p
    for d in ("lspci-vvv", "lspci-vvv-filtered")
    for p in (FIXTURES / d).glob("*.txt")
    if p.name not in NO_DEVCTL
) + sorted(
    (FIXTURES.parents[1] / "snapshots" / "examples" / "case-study").glob("*/host/lspci_vvv.out")
)


def mrrs_by_line(text: str) -> str | None:
    """The reading the fast path must equal: each line, a device line starts a block."""
    values, in_nvidia = [], False
    for ln in text.splitlines():
        if ln and not ln[0].isspace():
            in_nvidia = "NVIDIA" in ln and ("VGA" in ln or "3D controller" in ln)
        elif in_nvidia and (m := re.search(r"MaxReadReq (\d+) bytes", ln)):
            values.append(m.group(1))
    vals = sorted(set(v for v in values if v))
    return " / ".join(vals) if vals else None


def acs_by_line(text: str) -> str | None:
    if not text:
        return None
    redirect = sum(1 for ln in text.splitlines() if "ACSCtl:" in ln and "ReqRedir+" in ln)
    return f"ReqRedir+ on {redirect} port(s)"


def variants(text: str) -> list[str]:
    """The recording, with CRLF, and without its last line break."""
    return [text, text.replace("\n", "\r\n"), text.rstrip("\n")]


@pytest.mark.parametrize("path", OUTPUTS, ids=lambda p: p.name)
def test_lspci_readers_answer_what_reading_each_line_answers(path: Path) -> None:
    for text in variants(path.read_text()):
        assert _mrrs({"lspci_vvv": text}) == mrrs_by_line(text)
        assert _acs({"lspci_vvv": text}) == acs_by_line(text)


def test_the_recordings_exercise_both_answers() -> None:
    """The comparison above can fail: the real outputs give MaxReadReq values and redirect counts."""
    mrrs = {_mrrs({"lspci_vvv": p.read_text()}) for p in OUTPUTS}
    acs = {_acs({"lspci_vvv": p.read_text()}) for p in OUTPUTS}
    assert len(OUTPUTS) >= 8
    assert mrrs - {None}, mrrs
    assert {a for a in acs if a and not a.startswith("ReqRedir+ on 0 ")}, acs
