"""power.gpu_thermal_headroom over GPUs some of which answered temperature.gpu [N/A]: a busy GPU whose temperature
is unread is never compared (it crashed the verdict: None >= a number), and "ok" is never claimed for the box
while a GPU's temperature is unknown; a GPU read at or near its slowdown temperature still decides."""

from __future__ import annotations

from gpuaudit.probes import power
from gpuaudit.probes.core.judge.checks import judge_checks
from gpuaudit.probes.core.models import CommandRecord
from gpuaudit.probes.power import GpuPower, GpuReading, PowerFacts

FID = "power.gpu_thermal_headroom"


def _finding(facts: PowerFacts):
    outputs = {
        "host": {
            c.id: CommandRecord(
                target="host", probe_id="power", command_id=c.id, command=c.shell, exit_status=0
            )
            for c in power.COMMANDS
            if "host" in c.on and not c.active
        }
    }
    found = [f for f in judge_checks(power.CHECKS, {"host": facts}, outputs) if f.id == FID]
    assert len(found) == 1
    return found[0]


def _two(temp1: float | None, util1: float = 90, temp0: float = 40) -> PowerFacts:
    return PowerFacts(
        gpus=[GpuPower(index="0", temp_slowdown_c=90), GpuPower(index="1", temp_slowdown_c=90)],
        gpu_readings=[
            GpuReading(index="0", util=90, temp_c=temp0),
            GpuReading(index="1", util=util1, temp_c=temp1),
        ],
    )


def test_a_busy_gpu_with_unread_temperature_is_unknown_not_a_crash_nor_ok() -> None:
    f = _finding(_two(None))
    assert f.severity == "unknown", (f.severity, f.observed)
    assert "GPU 1" in f.observed


def test_an_idle_gpu_with_unread_temperature_is_unknown_not_ok() -> None:
    assert _finding(_two(None, util1=0)).severity == "unknown"


def test_a_read_gpu_at_its_slowdown_temperature_still_decides() -> None:
    assert _finding(_two(None, temp0=91)).severity == "critical"
    assert _finding(_two(None, temp0=86)).severity == "warning"


def test_every_temperature_read_stays_ok() -> None:
    assert _finding(_two(41)).severity == "ok"
