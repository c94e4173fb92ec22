"""kernel.swap with the per-process part (VmSwap of the engine processes)."""

from __future__ import annotations

import pytest
from gpuaudit.probes import kernel as k
from gpuaudit.probes.core.judge.checks import judge_checks
from gpuaudit.probes.core.models import CommandRecord


@pytest.mark.parametrize(
    "devices,engine,severity,needle",
    [
        (0, {"pid 1 sglang::scheduler_TP0": 0}, "ok", "no active swap"),  # pass: no swap at all
        (1, {"pid 1 sglang::scheduler_TP0": 0}, "info", "VmSwap 0 kB"),  # configured, unused
        (1, {"pid 1 sglang::scheduler_TP0": 2048}, "warning", "2 MiB"),  # fail
        (1, {"pid 1 sglang::scheduler_TP0": 1}, "warning", "1 kB"),  # boundary: any page in swap
        (1, {}, "info", "no engine process running"),  # precondition: no engine
        (1, None, "info", "engine VmSwap not read"),  # per-process part unreadable
    ],
)
def test_swap(devices, engine, severity, needle):
    outputs = {
        c.id: CommandRecord(
            target="host", probe_id="kernel", command_id=c.id, command="x", exit_status=0
        )
        for c in k.COMMANDS
    }
    f = next(
        x
        for x in judge_checks(
            k.CHECKS,
            {"host": k.KernelFacts(swap_devices=devices, engine_swap_kb=engine)},
            {"host": outputs},
        )
        if x.id == "kernel.swap"
    )
    assert f.severity.value == severity and needle in f.observed, f.observed


def test_extract_engine_swap():
    # synthetic engine_proc_status output (shape of /proc/<pid>/status lines)
    out = "@@apps\n@@online 0-3\n@@pid 9\n@@cmd sglang::scheduler_TP0\nVmSwap:\t  4096 kB\n@@numa\n@@end\n"
    rec = CommandRecord(
        target="host",
        probe_id="kernel",
        command_id="engine_proc_status",
        command="x",
        exit_status=0,
        stdout=out,
    )
    assert k.extract({"engine_proc_status": rec}, "host").engine_swap_kb == {
        "pid 9 sglang::scheduler_TP0": 4096
    }
    bad = rec.model_copy(update={"stdout": "garbage"})
    assert "engine_proc_status" in k.extract({"engine_proc_status": bad}, "host").problems
