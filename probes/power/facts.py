"""Typed facts of the power probe (host only): CPU frequency/idle policy and GPU power, clocks, RTD3.

Readings that change on an unchanged machine (cpuidle usage counters, GPU draw, temperature, utilisation,
current clocks, active clock-event reasons) live in their own fields, listed in VOLATILE_FACTS.
"""

from __future__ import annotations

from gpuaudit.probes.core.record import Record

VOLATILE_FACTS = frozenset({"idle_usage", "gpu_readings"})


class IdleStateFact(Record, frozen=True):
    cpu: int
    name: str
    latency_us: int | None = None
    disabled: bool | None = None

    @property
    def key(self) -> str:
        """ "cpu0/C2": the key of this state's usage counter in `PowerFacts.idle_usage`."""
        return f"cpu{self.cpu}/{self.name}"


class GpuPower(Record, frozen=True):
    """What an unchanged GPU keeps: limits, maximum and application clocks."""

    index: str
    bus_id: str | None = None
    enforced_w: float | None = None
    default_w: float | None = None
    max_w: float | None = None
    sm_max_mhz: float | None = None
    mem_max_mhz: float | None = None
    app_sm_mhz: float | None = None
    temp_slowdown_c: float | None = None
    """The GPU's own slowdown temperature (`nvidia-smi -q -x`), when reported."""


class GpuReading(Record, frozen=True):
    """What a GPU reports at this instant (volatile)."""

    index: str
    pstate: str | None = None
    util: float | None = None
    draw_w: float | None = None
    sm_mhz: float | None = None
    mem_mhz: float | None = None
    temp_c: float | None = None
    active_reasons: list[str] = []
    """Clock-event reasons reported Active ("hw_slowdown", "sw_power_cap", ...)."""
    unread_reasons: list[str] = []
    """Clock-event reasons nvidia-smi answered [N/A] or with an error token."""


class PowerFacts(Record, frozen=True):
    cpu_vendor: str | None = None
    cpu_family: int | None = None
    cpu_model: int | None = None
    cpu_model_name: str | None = None
    cpu_has_cppc_flag: bool | None = None
    scaling_driver: str | None = None
    amd_pstate_status: str | None = None
    governors: dict[str, int] = {}
    epp: dict[str, int] = {}
    boost: bool | None = None
    boost_source: str | None = None
    policy_max_mhz: float | None = None
    """The frequency policy's ceiling (scaling_max_freq of cpu0, or cpupower's "current policy")."""
    hw_max_mhz: float | None = None
    """The CPU's own ceiling (cpuinfo_max_freq of cpu0, or cpupower's "hardware limits")."""
    policy_source: str | None = None
    cppc_present: bool | None = None
    idle_driver: str | None = None
    pm_qos_resume_latency_us: int | None = None
    idle_states: list[IdleStateFact] = []
    idle_usage: dict[str, int] = {}
    """"cpu0/C2" -> times entered since boot (a counter: volatile)."""
    cmdline: str | None = None
    gpus: list[GpuPower] = []
    gpu_readings: list[GpuReading] = []
    rtd3: dict[str, str] = {}
    problems: dict[str, str] = {}
    """command_id -> why its output could not be used."""
