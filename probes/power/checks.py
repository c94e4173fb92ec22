"""The power probe's rows of the check catalogue (PROBES.md §6). Verdicts: cpu_checks.py, gpu_checks.py."""

from __future__ import annotations

from gpuaudit.probes.core.judge.checks import HOST, Check
from gpuaudit.probes.core.judge.combiners import CPU_IDENTITY_SOURCES, VM_SOURCES
from gpuaudit.probes.power import cpu_checks as cpu
from gpuaudit.probes.power import gpu_checks as gpu

CPUFREQ = ("sys_cpufreq", "cpupower_freq")
CPUIDLE = ("sys_cpuidle", "cpupower_idle")
SMI = ("smi_query_power", "smi_q_xml")
"""The CSV first (clocks), the XML where the CSV is unusable or silent (reasons, limits, slowdown temperature)."""

CHECKS: tuple[Check, ...] = (
    Check(
        "power.cpu_scaling_driver",
        "CPU frequency driver",
        "host",
        why="acpi-cpufreq exposes only a few coarse ACPI P-states; amd-pstate (CPPC) and intel_pstate (HWP) let the"
        " firmware pick frequency on a continuous scale.",
        fix="Boot with amd_pstate=active (or move to kernel >= 6.13 on Zen 5); keep BIOS CPPC enabled.",
        verdict=cpu.scaling_driver,
        any_of=CPUFREQ,
        roles=HOST,
        applies=cpu.in_vm,
        optional=(
            *CPU_IDENTITY_SOURCES,
            "sys_cppc",
            *VM_SOURCES,
        ),
    ),
    Check(
        "power.cpu_governor",
        "CPU scaling governor",
        "host",
        why="Load-following governors ramp frequency after load appears; short host steps between GPU kernels"
        " finish before the clock rises.",
        fix="cpupower frequency-set -g performance at boot (systemd unit or tuned accelerator-performance).",
        verdict=cpu.governor,
        any_of=("sys_governors", *CPUFREQ),
        roles=HOST,
        applies=cpu.in_vm,
        expected="performance",
        optional=(*VM_SOURCES,),
    ),
    Check(
        "power.cpu_epp",
        "Energy-performance preference",
        "host",
        why="The energy-performance preference tells the CPU's own frequency controller how eagerly to boost.",
        fix="Set EPP to performance (tuned accelerator-performance, or cpupower set --epp performance).",
        verdict=cpu.epp,
        sources=("sys_epp",),
        any_of=CPUFREQ,
        roles=HOST,
        applies=cpu.in_vm,
        expected="performance",
        optional=(
            *CPU_IDENTITY_SOURCES,
            *VM_SOURCES,
        ),
    ),
    Check(
        "power.cpu_boost",
        "CPU boost (Core Performance Boost / Turbo)",
        "bios",
        why="Without Core Performance Boost / Turbo the CPU stays at base clock, slowing the single-threaded"
        " host steps of each decode iteration.",
        fix="Enable Core Performance Boost in BIOS and echo 1 into /sys/devices/system/cpu/cpufreq/boost"
        " (unless capped on purpose for power).",
        verdict=cpu.boost,
        any_of=CPUFREQ,
        roles=HOST,
        applies=cpu.in_vm,
        optional=(*VM_SOURCES,),
    ),
    Check(
        "power.cpu_cstates",
        "Deep CPU idle states",
        "host",
        why="Every wake from a deep state adds its exit latency to the next host-side step (scheduling, sampling,"
        " kernel launch); with tensor parallelism all ranks wait for the slowest. Measure A/B: the effect"
        " depends on the per-token step time.",
        fix="cpupower idle-set -D 10 (or -d <state>) from a boot-time unit, or tuned accelerator-performance;"
        " AMD keeps BIOS Global C-state Control on Auto and disables C2 from the OS.",
        verdict=cpu.cstates,
        any_of=CPUIDLE,
        roles=HOST,
        applies=cpu.in_vm,
        expected=f"deep idle states (AMD C2+, Intel C3+ or exit latency >= {cpu.DEEP_LATENCY_US} µs) disabled on"
        " the CPUs that run engine/NCCL threads",
        optional=(
            *CPU_IDENTITY_SOURCES,
            "proc_cmdline",
            *VM_SOURCES,
        ),
    ),
    Check(
        "power.cpu_effective_freq",
        "Effective CPU clocks and the frequency policy ceiling",
        "host",
        why="Validates the combined effect of socket power, governor/EPP, boost and the policy ceiling:"
        " busy engine cores should reach ~85% of the all-core boost.",
        fix="Find the cap: scaling_max_freq (cpupower frequency-set -u), tuned profile, BIOS power cap/cTDP.",
        verdict=cpu.effective_freq,
        roles=HOST,
        applies=cpu.in_vm,
        expected="busy engine cores >= ~85% of the all-core boost",
        optional=(
            "sys_cpufreq",
            "cpupower_freq",
            *VM_SOURCES,
        ),
    ),
    Check(
        "power.gpu_power_limit",
        "GPU board power limit",
        "host",
        why="A lowered cap mostly slows compute-bound prefill; single-stream decode is bandwidth-bound and barely"
        " changes.",
        fix="nvidia-smi -pl <default> (persisted by your boot tooling) if not deliberate.",
        verdict=gpu.power_limit,
        any_of=SMI,
        roles=HOST,
        needs_gpu=True,
    ),
    Check(
        "power.gpu_clock_events",
        "GPU clock-event reasons",
        "hardware",
        why="HW slowdown/power brake cut clocks hard (often PSU, BMC or thermal signals).",
        fix="Check PSU capacity, cabling and cooling; see nvidia-smi -q -d PERFORMANCE.",
        verdict=gpu.clock_events,
        any_of=SMI,
        roles=HOST,
        needs_gpu=True,
    ),
    Check(
        "power.gpu_thermal_headroom",
        "GPU temperatures",
        "hardware",
        why="Passively cooled cards throttle near their slowdown temperature.",
        fix="Improve chassis airflow (fan profile, blanking panels, inlet temperature).",
        verdict=gpu.thermal_headroom,
        any_of=SMI,
        roles=HOST,
        needs_gpu=True,
    ),
    Check(
        "power.gpu_locked_clocks",
        "Locked or application GPU clocks",
        "host",
        why="-ac/-lgc settings survive in persistence mode and cap throughput.",
        fix="nvidia-smi -rac / -rgc unless deliberate.",
        verdict=gpu.locked_clocks,
        any_of=SMI,
        roles=HOST,
        needs_gpu=True,
    ),
    Check(
        "power.gpu_pstate_under_load",
        "GPU performance state under load",
        "host",
        why="Decode is memory-bandwidth-bound: the memory clock must reach its maximum while busy.",
        fix="Check clock locks and power limits.",
        verdict=gpu.pstate_under_load,
        any_of=SMI,
        roles=HOST,
        needs_gpu=True,
    ),
    Check(
        "power.gpu_rtd3",
        "GPU runtime D3 (RTD3)",
        "host",
        why="RTD3 powers the GPU off when unused; waking adds latency and link retrains.",
        fix="NVreg_DynamicPowerManagement=0x00 in the nvidia module options.",
        verdict=gpu.rtd3,
        sources=("nvidia_rtd3",),
        roles=HOST,
        needs_gpu=True,
    ),
)
