"""A single-value output that holds two lines (`uname -r` printing a second line) is malformed, never half-read
(issue 29): the kernel and driver probes list it as a problem, no label takes its first or second line."""

from __future__ import annotations

from gpuaudit.probes.catalogue import get
from gpuaudit.probes.core.models import CommandRecord
from gpuaudit.probes.core.parsing import one_value

TWO = "6.8.12-9-pve\nEVIL second line\n"


def rec(stdout: str) -> CommandRecord:
    return CommandRecord(
        target="host",
        probe_id="kernel",
        command_id="uname_r",
        command="uname -r",
        exit_status=0,
        stdout=stdout,
        stderr="",
    )


def test_one_value():
    assert one_value("6.8.12-9-pve\n") == ("6.8.12-9-pve", None)
    assert one_value(TWO)[0] == "" and "malformed" in (one_value(TWO)[1] or "")


def test_kernel_and_driver_probes_call_two_lines_malformed():
    for pid, field in (("kernel", "release"), ("driver", "kernel_release")):
        facts = get(pid).extract({"uname_r": rec(TWO)}, "host")
        assert "malformed" in facts.problems.get("uname_r", ""), (pid, facts.problems)
        assert getattr(facts, field) is None
        good = get(pid).extract({"uname_r": rec("6.8.12-9-pve\n")}, "host")
        assert getattr(good, field) == "6.8.12-9-pve"


def test_the_snapshot_label_takes_no_half_read_line():
    from gpuaudit.snapshots.naming import _record_line

    class S:
        records = [rec(TWO).model_copy(update={"target": "host"})]

    assert _record_line(S(), "uname_r") is None  # type: ignore[arg-type]
