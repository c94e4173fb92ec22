"""The power probe's rows of the check catalogue (PROBES.md §6). Verdicts: cpu_checks.py, gpu_checks.py."""

from __future__ import annotations

from gpuaudit.probes.core.judge.checks import HOST, Check, Message
from gpuaudit.probes.core.judge.combiners import CPU_IDENTITY_SOURCES, VM_SOURCES
from gpuaudit.probes.power import cpu_checks as cpu
from gpuaudit.probes.power import gpu_checks as gpu

CPUFREQ = ("sys_cpufreq", "cpupower_freq")
CPUIDLE = ("sys_cpuidle", "cpupower_idle")
SMI = ("smi_query_power", "smi_q_xml")
"""The CSV first (clocks), the XML where the CSV is unusable or silent (reasons, limits, slowdown temperature)."""

_HW_SLOWDOWN_WHY = (
    "HW slowdown halves clocks or more; it is driven by the board's power-brake "
    "input (PSU, BMC power table) or a thermal alarm, and it is active whether "
    "or not work runs."
)

_HW_SLOWDOWN_FIX = (
    "Check PSU capacity and cabling, the BMC/iDRAC power and thermal tables for "
    "this GPU, and cooling; nvidia-smi -q -d PERFORMANCE,TEMPERATURE shows which "
    "reason holds."
)


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
        variants={
            "cpu_frequency_driver": Message(title="CPU frequency driver {driver}"),
            "acpi_cpufreq_zen5": Message(
                title="acpi-cpufreq instead of amd-pstate on an AMD CPU",
                why=(
                    "acpi-cpufreq only knows the few coarse ACPI _PSS P-states, while amd-pstate "
                    "uses CPPC so the firmware picks frequency on a continuous scale and ramps "
                    "faster between host-side steps. On Zen 5 (family 0x1A) servers amd-pstate "
                    "is only the default from kernel 6.13; older kernels need amd_pstate=active."
                ),
                fix=(
                    "Boot with amd_pstate=active (kernel command line) or move to kernel >= "
                    "6.13; keep BIOS CPPC enabled."
                ),
            ),
            "acpi_cpufreq_instead_amd_pstate": Message(
                title="acpi-cpufreq instead of amd-pstate on an AMD CPU",
                why=(
                    "acpi-cpufreq only knows the few coarse ACPI _PSS P-states, while amd-pstate "
                    "uses CPPC so the firmware picks frequency on a continuous scale and ramps "
                    "faster between host-side steps."
                ),
                fix=(
                    "Boot with amd_pstate=active (kernel command line) or move to kernel >= "
                    "6.13; keep BIOS CPPC enabled."
                ),
            ),
            "intel_pstate_passive_mode": Message(
                title="intel_pstate in passive mode",
                why=(
                    "Passive mode lets a generic governor pick frequencies instead of the "
                    "hardware (HWP)."
                ),
                fix=(
                    "Remove intel_pstate=passive from the kernel command line if it was not "
                    "deliberate."
                ),
            ),
            "acpi_cpufreq_on_amd_cpu": Message(
                title="acpi-cpufreq on an AMD CPU without visible CPPC",
                why=(
                    "amd-pstate needs the ACPI _CPC objects; without them the kernel falls back "
                    "to acpi-cpufreq."
                ),
                fix="Enable CPPC in BIOS (see firmware.cppc), then boot with amd_pstate=active.",
            ),
        },
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
        variants={
            "governor_powersave_hardware_managed_driver": Message(
                title="Governor powersave with a hardware-managed driver",
                why=(
                    "With amd-pstate-epp/intel_pstate active the hardware picks the frequency "
                    "from the EPP hint; powersave is not slow by itself (see power.cpu_epp)."
                ),
            ),
            "governor_performance_everywhere": Message(title="Governor performance everywhere"),
            "powersave_governor_pins_cpus_lowest": Message(
                title="powersave governor pins CPUs to the lowest P-state",
                why=(
                    "With {driver} powersave selects the lowest frequency, stretching every "
                    "host-side step between GPU kernels."
                ),
                fix="cpupower frequency-set -g performance at boot (systemd unit or tuned profile).",
            ),
            "load_following_governor_on_cpus": Message(
                title="Load-following governor on the CPUs",
                why=(
                    "schedutil/ondemand/conservative ramp frequency after load appears; short "
                    "bursty host steps between GPU kernels often finish before the clock rises."
                ),
                fix=(
                    "cpupower frequency-set -g performance at boot (systemd unit or tuned "
                    "accelerator-performance)."
                ),
            ),
        },
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
        variants={
            "epp_balance_performance_default": Message(title="EPP balance_performance / default"),
            "epp_biased_towards_power_saving": Message(title="EPP biased towards power saving"),
            "epp_performance": Message(title="EPP performance"),
        },
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
        variants={
            "cpu_boost_disabled": Message(title="CPU boost disabled"),
            "cpu_boost_enabled": Message(title="CPU boost enabled"),
        },
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
        variants={
            "no_deep_c_state_enabled": Message(title="No deep C-state enabled"),
            "deep_c_states_capped_kernel": Message(title="Deep C-states capped by the kernel"),
            "deep_cpu_c_states_enabled": Message(title="Deep CPU C-states enabled"),
            "deep_c_states_not_entered": Message(
                title="Deep CPU C-states enabled (not entered yet)"
            ),
        },
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
        variants={
            "cpu_frequency_policy_capped_below": Message(
                title="CPU frequency policy capped below the hardware maximum",
                why=(
                    "Every core of the engine, NCCL proxy and tokenizer threads runs at most at "
                    "the policy ceiling: each host-side step between GPU kernels takes "
                    "proportionally longer."
                ),
                fix=(
                    "Raise the ceiling: cpupower frequency-set -u <max> (or echo "
                    "cpuinfo_max_freq into scaling_max_freq); check the tuned profile (tuned-adm "
                    "active) and the BIOS power cap / cTDP / determinism settings that lower it; "
                    "after suspend-resume bugs, reboot."
                ),
            ),
            "frequency_policy_nominal_boost_off": Message(
                title="Frequency policy at nominal: boost off"
            ),
        },
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
        variants={
            "gpu_power_limit_below_default": Message(title="GPU power limit below default"),
            "gpu_power_limits_not_reported": Message(title="GPU power limits not reported"),
            "gpu_power_limits_default": Message(title="GPU power limits at default"),
        },
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
        variants={
            "no_harmful_clock_reductions_under": Message(
                title="No harmful clock reductions under load"
            ),
            "hardware_slowdown_active_on_idle": Message(
                title="Hardware slowdown active on idle GPUs",
                why=_HW_SLOWDOWN_WHY,
                fix=_HW_SLOWDOWN_FIX,
            ),
            "hardware_slowdown_active": Message(
                title="Hardware slowdown active",
                why=_HW_SLOWDOWN_WHY,
                fix=_HW_SLOWDOWN_FIX,
            ),
            "software_thermal_slowdown_active": Message(
                title="Software thermal slowdown active",
                why="The driver lowers clocks to stay under the temperature target.",
                fix="Improve airflow.",
            ),
        },
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
        variants={
            "gpu_temperatures_fine": Message(title="GPU temperatures fine"),
            "gpu_temperatures_not_reported": Message(title="GPU temperatures not reported"),
            "gpus_their_slowdown_temperature": Message(title="GPUs at their slowdown temperature"),
            "gpus_hot_under_load": Message(title="GPUs hot under load"),
        },
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
        variants={
            "no_reduced_application_clocks": Message(title="No reduced application clocks"),
            "gpu_max_clocks_not_reported": Message(title="GPU max clocks not reported"),
            "application_clocks_below_max": Message(title="Application clocks below max"),
        },
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
        variants={
            "memory_clocks_max_under_load": Message(title="Memory clocks at max under load"),
            "gpu_load_unknown_p_state": Message(title="GPU load unknown: P-state not judged"),
            "memory_clock_below_max_under": Message(title="Memory clock below max under load"),
            "memory_clock_under_load_not": Message(title="Memory clock under load not reported"),
        },
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
        variants={
            "runtime_d3_off": Message(title="Runtime D3 off"),
            "gpu_runtime_d3_status_not": Message(title="GPU runtime D3 status not visible"),
            "runtime_d3_enabled_on_gpus": Message(title="Runtime D3 enabled on GPUs"),
        },
    ),
)
