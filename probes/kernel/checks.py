"""The kernel probe's rows of the check catalogue and one small pure verdict per check."""

from __future__ import annotations

import re

from gpuaudit.probes.core.judge.checks import (
    BOTH,
    Check,
    Ctx,
    Message,
    Verdict,
    info,
    not_applicable,
    ok,
    unknown,
    warning,
)
from gpuaudit.probes.core.judge.combiners import VM_SOURCES, virtual_machine
from gpuaudit.probes.core.parsers.system import cmdline_value
from gpuaudit.probes.core.parsing import version_tuple
from gpuaudit.probes.kernel.facts import KernelFacts

# Kernel command-line keys worth listing in the inventory (PROBES.md, kernel.cmdline).
NOTABLE_CMDLINE = (
    "iommu",
    "amd_iommu",
    "intel_iommu",
    "pcie_aspm",
    "pcie_aspm.policy",
    "pcie_port_pm",
    "pci",
    "pcie_acs_override",
    "processor.max_cstate",
    "intel_idle.max_cstate",
    "idle",
    "cpuidle.off",
    "amd_pstate",
    "intel_pstate",
    "numa_balancing",
    "transparent_hugepage",
    "mitigations",
    "isolcpus",
    "nohz_full",
    "tsc",
    "clocksource",
)
AMD_PSTATE_SERVER_DEFAULT = (6, 13)
"""First kernel that loads amd-pstate by default on server (ACPI "server" profile) Zen 5 EPYCs."""
ZEN5_FAMILY = 0x1A

PSTATE_WHY = (
    "amd-pstate refuses to load by default on ACPI 'server' profiles unless the CPU is family >= 0x1A "
    "(Zen 5), and that default only exists from kernel 6.13; otherwise the kernel falls back to acpi-cpufreq, "
    "which sees only the few ACPI P-states and reacts slowly, so the cores that feed the GPUs clock "
    "lower/later between kernel launches."
)
PSTATE_FIX = (
    "Either upgrade to a kernel >= 6.13 (on Proxmox VE 8: an opt-in proxmox-kernel-6.14 package) or add "
    "amd_pstate=active to the kernel command line (works on 6.8 when the BIOS exposes CPPC), then reboot and "
    "confirm /sys/devices/system/cpu/cpu0/cpufreq/scaling_driver reads amd-pstate-epp."
)


def is_amd_server(f: KernelFacts) -> bool:
    return f.cpu_vendor == "AMD" and bool(f.cpu_model_name and "EPYC" in f.cpu_model_name.upper())


def cpu_label(f: KernelFacts) -> str:
    name = f.cpu_model_name or f.cpu_vendor or "CPU"
    return f"{name} (family {f.cpu_family:#x})" if f.cpu_family is not None else name


def multi_node(ctx: Ctx) -> str | None:
    f: KernelFacts = ctx.f
    return "single NUMA node" if f.numa_nodes is not None and f.numa_nodes <= 1 else None


# --------------------------------------------------------------------------- verdicts


def pstate_advice(f: KernelFacts, cpu: str, pstate: str | None) -> Verdict | None:
    """The amd-pstate warning this kernel/CPU/cmdline earns on bare metal, or None."""
    if not is_amd_server(f):
        return None
    if pstate is not None and pstate.lower() == "disable":
        return warning(
            f"kernel {f.release}, {cpu}, cmdline amd_pstate=disable",
            "no amd_pstate=disable (amd_pstate=active or the kernel default)",
            variant="amd_pstate_disable_on_command",
        )
    if pstate is not None or f.cpu_family is None:
        return None
    ver = version_tuple(f.release or "")
    if f.cpu_family >= ZEN5_FAMILY and ver and ver < AMD_PSTATE_SERVER_DEFAULT:
        return warning(
            f"kernel {f.release} (< 6.13), {cpu}, no amd_pstate= on the command line",
            "kernel >= 6.13, or amd_pstate=active on the command line",
            variant="kernel_predates_amd_pstate_default",
            release=f.release,
        )
    if f.cpu_family < ZEN5_FAMILY:
        return warning(
            f"kernel {f.release}, {cpu}, no amd_pstate= on the command line",
            "amd_pstate=active (or guided/passive) on the command line",
            variant="never_gets_amd_pstate_default",
            cpu=cpu,
        )
    return None


def version(ctx: Ctx) -> Verdict:
    f: KernelFacts = ctx.f
    cpu = cpu_label(f)
    pstate = cmdline_value(f.cmdline or [], "amd_pstate")
    detail = f"kernel {f.release}, {cpu}" + (f", amd_pstate={pstate}" if pstate else "")
    vm, why_vm = virtual_machine(ctx.outputs.get(ctx.role or "host", {}))
    if vm:  # a guest's cpufreq driver is the hypervisor's business: no amd-pstate advice (issue: --plan's one wrong step)
        return info(
            f"{detail}; virtual machine ({why_vm}): the CPU frequency driver is the hypervisor host's",
            variant="kernel_virtual_machine",
            release=f.release,
            evidence=((ctx.role or "host", "cpu_hypervisor_flag"),),
        )
    if advice := pstate_advice(f, cpu, pstate):
        return advice
    return info(
        detail,
        "a kernel whose defaults suit the CPU (for Zen 5 EPYC: >= 6.13 or amd_pstate= set)",
        variant="release",
        release=f.release,
    )


def cmdline(ctx: Ctx) -> Verdict:
    f: KernelFacts = ctx.f
    pairs = f.cmdline or []
    notable = [f"{k}={v}" if v is not None else k for k, v in pairs if k in NOTABLE_CMDLINE]
    running = {f"{k}={v}" if v is not None else k for k, v in pairs}
    notes: list[str] = []
    pci = cmdline_value(pairs, "pci") or ""
    if "pcie_bus_perf" in pci:
        notes.append(
            "pci=pcie_bus_perf caps each device's MaxReadReq at its MaxPayload (see pcie.max_read_req)"
        )
    if "pcie_bus_peer2peer" in pci:
        notes.append("pci=pcie_bus_peer2peer forces MaxPayload 128 everywhere")
    if cmdline_value(pairs, "pcie_acs_override") is not None:
        notes.append(
            "pcie_acs_override only changes IOMMU grouping, it does not clear hardware ACS bits"
        )
    # Persisted configuration that the running kernel did not boot with: edited but not applied.
    persisted, source = (
        (f.etc_kernel_cmdline, "/etc/kernel/cmdline")
        if f.etc_kernel_cmdline
        else (f.grub_cmdline, "/etc/default/grub")
    )
    unapplied = [
        t
        for t in (persisted or [])
        if t not in running
        and t not in ("quiet", "splash")
        and not t.startswith(("root=", "boot="))
    ]
    observed = "; ".join([" ".join(notable) or "no performance-relevant parameters", *notes])
    if unapplied:
        return warning(
            f"in {source} but not in /proc/cmdline: {' '.join(unapplied)} (running: {observed})",
            "/proc/cmdline contains every parameter of the persisted boot configuration",
            variant="has_parameters_running_kernel_did",
            source=source,
        )
    return info(observed, variant="kernel_command_line")


def numa_balancing(ctx: Ctx) -> Verdict:
    f: KernelFacts = ctx.f
    obs = f"kernel.numa_balancing={f.numa_balancing} with {f.numa_nodes} NUMA nodes"
    if f.numa_balancing is None:
        return unknown("/proc/sys/kernel/numa_balancing is not a number")
    if f.numa_nodes is None:
        return unknown("no node listed under /sys/devices/system/node")
    if f.numa_balancing != 0:
        return warning(
            obs,
            "kernel.numa_balancing=0 on a multi-node GPU server",
            variant="automatic_numa_balancing_on",
        )
    return ok(obs, "0", variant="automatic_numa_balancing_off")


def zone_reclaim(ctx: Ctx) -> Verdict:
    f: KernelFacts = ctx.f
    if f.zone_reclaim is None:
        return unknown("/proc/sys/vm/zone_reclaim_mode is not a number")
    if f.zone_reclaim == 0:
        return ok("vm.zone_reclaim_mode=0", "0", variant="numa_zone_reclaim_off")
    if f.numa_nodes is None:  # node_list is optional: only a non-zero mode needs the node count
        return unknown(
            f"vm.zone_reclaim_mode={f.zone_reclaim}; nodes: {ctx.why('node_list')}",
            evidence=(("host", "node_list"),),
        )
    if f.numa_nodes > 1:
        return warning(
            f"vm.zone_reclaim_mode={f.zone_reclaim} with {f.numa_nodes} NUMA nodes",
            "0",
            variant="numa_zone_reclaim_on",
            evidence=(("host", "node_list"),),
        )
    return not_applicable(f"vm.zone_reclaim_mode={f.zone_reclaim} on {f.numa_nodes} node(s)")


def thp(ctx: Ctx) -> Verdict:
    f: KernelFacts = ctx.f
    obs = f"enabled=[{f.thp_enabled}] defrag=[{f.thp_defrag}]"
    if f.thp_enabled == "always" and f.thp_defrag == "always":
        return warning(
            obs,
            "defrag madvise or defer (enabled madvise or always)",
            variant="thp_always_synchronous_defrag",
        )
    return info(obs, variant="transparent_huge_pages")


def swap(ctx: Ctx) -> Verdict:
    f: KernelFacts = ctx.f
    if not f.swap_devices:
        return ok("no active swap areas", variant="no_swap_configured")
    ev = (("host", "engine_proc_status"),)
    if f.engine_swap_kb is None:
        return info(
            f"{f.swap_devices} active swap area(s); engine VmSwap not read "
            f"({ctx.why('engine_proc_status')})",
            variant="swap_configured",
            evidence=ev,
        )
    swapped = {k: v for k, v in f.engine_swap_kb.items() if v > 0}
    if swapped:
        sizes = ", ".join(
            f"{k}: {v // 1024} MiB" if v >= 1024 else f"{k}: {v} kB"
            for k, v in list(swapped.items())[:4]
        )
        return warning(
            f"{f.swap_devices} active swap area(s); VmSwap {sizes}",
            "VmSwap 0 kB for every engine process",
            variant="engine_process_es_have_pages",
            n_swapped=len(swapped),
            evidence=ev,
        )
    engines = (
        f"{len(f.engine_swap_kb)} engine process(es) with VmSwap 0 kB"
        if f.engine_swap_kb
        else "no engine process running"
    )
    return info(
        f"{f.swap_devices} active swap area(s); {engines}",
        variant="swap_configured_engine_does_not",
        evidence=ev,
    )


def clocksource(ctx: Ctx) -> Verdict:
    f: KernelFacts = ctx.f
    obs = f"current_clocksource={f.clocksource}"
    if f.clocksource in ("hpet", "acpi_pm"):
        return warning(obs, variant="clock_source_not_tsc", clocksource=f.clocksource)
    if f.clocksource == "tsc":
        return ok(obs, variant="clock_source_tsc")
    return info(obs, variant="clock_source", clocksource=f.clocksource)


def uvm_hmm(ctx: Ctx) -> Verdict:
    f: KernelFacts = ctx.f
    if f.uvm_disable_hmm is None:
        if ctx.absent(
            "uvm_disable_hmm"
        ):  # the source declares "No such file" an answer: not loaded
            return not_applicable("nvidia_uvm not loaded or no uvm_disable_hmm parameter")
        return unknown(f"uvm_disable_hmm: {ctx.problem('uvm_disable_hmm') or 'no value read'}")
    on = f.uvm_disable_hmm.upper() in ("N", "0")
    return info(
        f"uvm_disable_hmm={f.uvm_disable_hmm}",
        variant="uvm_hmm_enabled" if on else "uvm_hmm_disabled",
    )


GOOD_TUNED = (
    "accelerator-performance",
    "throughput-performance",
    "latency-performance",
    "network-latency",
    "hpc-compute",
)
SAVING_TUNED = ("balanced", "powersave", "virtual-host", "desktop")


def tuned_profile(ctx: Ctx) -> Verdict:
    f: KernelFacts = ctx.f
    if f.tuned_profile is None:
        if ctx.absent(
            "tuned_active"
        ):  # no tuned is an answer: no daemon overrides the power.* settings
            return info(
                "tuned not installed (Proxmox VE does not ship it): no profile overrides the power.* settings",
                variant="no_tuning_daemon",
            )
        return unknown(f"tuned_active: {ctx.problem('tuned_active') or 'no profile in the output'}")
    obs = f"active profile: {f.tuned_profile}"
    if f.tuned_profile in GOOD_TUNED:
        return ok(obs, variant="tuned_profile", tuned_profile=f.tuned_profile)
    if f.tuned_profile in SAVING_TUNED:
        return warning(
            obs,
            "accelerator-performance or throughput-performance",
            variant="tuned_profile_favours_power_saving",
            tuned_profile=f.tuned_profile,
        )
    return info(obs, variant="tuned_profile", tuned_profile=f.tuned_profile)


CRIT_LOG = re.compile(
    r"IO_PAGE_FAULT|DMAR:.*fault|Surprise Link Down|uncorrectable|Uncorrected|soft lockup.*|nvidia_uvm.*lockup",
    re.I,
)
WARN_LOG = re.compile(r"AER|PCIe Bus Error|hung_task|NVRM: Xid")


def dmesg_faults(ctx: Ctx) -> Verdict:
    f: KernelFacts = ctx.f
    lines = f.journal_lines or []
    crit = [ln for ln in lines if CRIT_LOG.search(ln)]
    warn = [ln for ln in lines if WARN_LOG.search(ln)]
    if crit:
        return Verdict(
            "critical",
            " | ".join(ln[-200:] for ln in crit[:3]),
            "none",
            variant="iommu_fault_link_down_lockup",
            params={"n_crit": len(crit)},
        )
    if warn:
        return warning(
            " | ".join(ln[-200:] for ln in warn[:3]),
            "none",
            variant="aer_hung_task_xid_line",
            n_warn=len(warn),
        )
    return ok(
        f"{len(lines)} matching line(s)",
        variant="no_iommu_faults_aer_errors",
    )


def mitigations(ctx: Ctx) -> Verdict:
    f: KernelFacts = ctx.f
    vulns = f.vulnerabilities or {}
    vuln = [k for k, v in vulns.items() if v.startswith("Vulnerable")]
    mit = cmdline_value(f.cmdline or [], "mitigations")
    obs = f"{len(vulns)} entries, {len(vuln)} vulnerable" + (
        f" ({', '.join(vuln[:6])})" if vuln else ""
    )
    return info(
        obs + (f"; mitigations={mit}" if mit is not None else ""),
        variant="cpu_vulnerability_mitigations",
    )


def host_knobs_visible(ctx: Ctx) -> Verdict:
    host: KernelFacts = ctx.f
    ctr: KernelFacts = ctx.of("container")
    if host.release != ctr.release:
        return info(
            f"host uname -r {host.release}, container uname -r {ctr.release}",
            "the same kernel (an LXC/Docker container shares the host kernel)",
            variant="container_runs_different_kernel_host",
        )
    if host.numa_balancing is None or ctr.numa_balancing is None:
        return unknown(
            f"host: {host.numa_balancing if host.numa_balancing is not None else ctx.why('numa_balancing', role='host')}; "
            f"container: {ctr.numa_balancing if ctr.numa_balancing is not None else ctx.why('numa_balancing', role='container')}"
        )
    if host.numa_balancing != ctr.numa_balancing:
        return info(
            f"host kernel.numa_balancing={host.numa_balancing}, container sees {ctr.numa_balancing}",
            "identical values (shared kernel)",
            variant="container_sees_different_kernel_numa",
        )
    return info(
        f"kernel {host.release} on both; kernel.numa_balancing={host.numa_balancing} on host and in container",
        variant="container_inherits_host_kernel_knobs",
    )


# --------------------------------------------------------------------------- the catalogue rows

_AMD_PSTATE_WHY = (
    "amd-pstate refuses to load by default on ACPI 'server' profiles unless the "
    "CPU is family >= 0x1A (Zen 5), and that default only exists from kernel "
    "6.13; otherwise the kernel falls back to acpi-cpufreq, which sees only the "
    "few ACPI P-states and reacts slowly, so the cores that feed the GPUs clock "
    "lower/later between kernel launches."
)


CHECKS: tuple[Check, ...] = (
    Check(
        "kernel.version",
        "Running kernel and what it implies for the CPU power driver",
        "host",
        "The version alone is not a defect; what matters is which drivers and defaults it implies for this CPU.",
        PSTATE_FIX,
        version,
        sources=("uname_r", "cpuinfo_id", "proc_cmdline"),
        optional=(*VM_SOURCES,),
        variants={
            "release": Message(title="Kernel {release}"),
            "amd_pstate_disable_on_command": Message(
                title="amd_pstate=disable on the command line forces acpi-cpufreq",
                why=_AMD_PSTATE_WHY,
                fix=(
                    "Remove amd_pstate=disable from the boot configuration (or set "
                    "amd_pstate=active) and reboot."
                ),
            ),
            "kernel_predates_amd_pstate_default": Message(
                title=(
                    "Kernel {release} predates amd-pstate-by-default for Zen 5 servers: "
                    "acpi-cpufreq will drive the CPUs"
                ),
                why=_AMD_PSTATE_WHY,
                fix=(
                    "Either upgrade to a kernel >= 6.13 (on Proxmox VE 8: an opt-in "
                    "proxmox-kernel-6.14 package) or add amd_pstate=active to the kernel command "
                    "line (works on 6.8 when the BIOS exposes CPPC), then reboot and confirm "
                    "/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver reads amd-pstate-epp."
                ),
            ),
            "never_gets_amd_pstate_default": Message(
                title=(
                    "{cpu} never gets amd-pstate by default on a server: acpi-cpufreq will drive "
                    "the CPUs"
                ),
                why=_AMD_PSTATE_WHY,
                fix=(
                    "Add amd_pstate=active to the kernel command line (needs CPPC enabled in the "
                    "BIOS) and reboot."
                ),
            ),
            "kernel_virtual_machine": Message(
                title="Kernel {release} (virtual machine)",
                why=(
                    "In a guest the host's kernel and BIOS drive the CPU clocks; amd-pstate "
                    "settings here change nothing."
                ),
                fix="Audit the hypervisor host itself for amd-pstate / CPPC.",
            ),
        },
    ),
    Check(
        "kernel.cmdline",
        "Kernel command line",
        "host",
        "Boot parameters feed the pcie, power, numa and firmware checks.",
        "Change boot parameters in /etc/kernel/cmdline (systemd-boot) or /etc/default/grub, regenerate the boot "
        "entries (proxmox-boot-tool refresh / update-grub) and reboot.",
        cmdline,
        sources=("proc_cmdline",),
        optional=(
            "etc_kernel_cmdline",
            "grub_cmdline",
        ),
        variants={
            "kernel_command_line": Message(title="Kernel command line"),
            "has_parameters_running_kernel_did": Message(
                title="{source} has parameters the running kernel did not boot with",
                why=(
                    "An edited boot configuration only takes effect after regenerating the boot "
                    "entries and rebooting; on Proxmox with systemd-boot (ZFS root) "
                    "/etc/kernel/cmdline rules and GRUB edits are ignored."
                ),
                fix=(
                    "Run update-grub or proxmox-boot-tool refresh (whichever boots this host) "
                    "and reboot in a maintenance window."
                ),
            ),
        },
    ),
    Check(
        "kernel.numa_balancing",
        "Automatic NUMA balancing",
        "host",
        "The kernel periodically unmaps pages to sample accesses and migrates them; on a GPU server that adds page "
        "faults and jitter on the threads and pinned buffers that feed the GPUs.",
        "sysctl -w kernel.numa_balancing=0 and persist it in /etc/sysctl.d/ (or boot with numa_balancing=disable); A/B it.",
        numa_balancing,
        sources=("numa_balancing", "node_list"),
        applies=multi_node,
        aliases=("numa.balancing",),
        variants={
            "automatic_numa_balancing_off": Message(title="Automatic NUMA balancing is off"),
            "automatic_numa_balancing_on": Message(title="Automatic NUMA balancing is on"),
        },
    ),
    Check(
        "kernel.thp",
        "Transparent huge pages",
        "host",
        "With defrag=always a THP allocation that fails stalls and directly reclaims and compacts memory: latency "
        "spikes in the Python server and tokeniser.",
        "echo madvise > /sys/kernel/mm/transparent_hugepage/defrag (persist with transparent_hugepage= or a tmpfiles rule).",
        thp,
        sources=("thp_enabled", "thp_defrag"),
        variants={
            "transparent_huge_pages": Message(title="Transparent huge pages"),
            "thp_always_synchronous_defrag": Message(title="THP always with synchronous defrag"),
        },
    ),
    Check(
        "kernel.swap",
        "Swap use by the serving processes",
        "host",
        "A swapped-out scheduler or tokeniser page turns into millisecond stalls between decode steps.",
        "Lower vm.swappiness (e.g. 1-10), give the host/container more memory headroom, or disable swap on the GPU server.",
        swap,
        sources=("proc_swaps",),
        variants={
            "swap_configured_engine_does_not": Message(
                title="Swap is configured but the engine does not use it",
                fix=(
                    "Keep an eye on VmSwap of the engine processes; lower vm.swappiness if they "
                    "start to swap."
                ),
            ),
            "no_swap_configured": Message(title="No swap configured"),
            "swap_configured": Message(
                title="Swap is configured",
                fix="Check VmSwap of the engine processes; lower vm.swappiness if they swap.",
            ),
            "engine_process_es_have_pages": Message(
                title="{n_swapped} engine process(es) have pages in swap"
            ),
        },
    ),
    Check(
        "kernel.zone_reclaim",
        "NUMA zone reclaim",
        "host",
        "Non-zero makes the kernel reclaim page cache on the local node instead of allocating remotely, stalling "
        "allocations during model loading and KV-offload bursts.",
        "sysctl -w vm.zone_reclaim_mode=0 and persist it in /etc/sysctl.d/.",
        zone_reclaim,
        sources=("zone_reclaim",),
        aliases=("numa.zone_reclaim",),
        variants={
            "numa_zone_reclaim_off": Message(title="NUMA zone reclaim is off"),
            "numa_zone_reclaim_on": Message(title="NUMA zone reclaim is on"),
        },
    ),
    Check(
        "kernel.clocksource",
        "TSC in use",
        "host",
        "After the TSC is marked unstable every clock_gettime() reads a slow platform timer; Python serving stacks "
        "and NCCL proxies time things constantly.",
        "Look for 'TSC unstable' in the kernel log; fix firmware timer settings (tsc=reliable only with vendor guidance).",
        clocksource,
        sources=("clocksource",),
        expected="tsc",
        variants={
            "clock_source": Message(title="Clock source {clocksource}"),
            "clock_source_not_tsc": Message(title="Clock source is {clocksource}, not TSC"),
            "clock_source_tsc": Message(title="Clock source tsc"),
        },
    ),
    Check(
        "kernel.uvm_hmm",
        "NVIDIA UVM Heterogeneous Memory Management",
        "host",
        "HMM has caused CUDA init failures and fault-service deadlocks on some driver/kernel pairs; disabling it is "
        "a documented workaround, needed only when those symptoms appear.",
        "options nvidia_uvm uvm_disable_hmm=1 in /etc/modprobe.d/uvm.conf, only if CUDA init failures or P2P hangs are seen.",
        uvm_hmm,
        needs_gpu=True,
        optional=("uvm_disable_hmm",),
        variants={
            "uvm_hmm_enabled": Message(
                title="UVM HMM enabled",
                fix=(
                    "options nvidia_uvm uvm_disable_hmm=1 in /etc/modprobe.d/uvm.conf if CUDA "
                    "init or P2P hangs are seen."
                ),
            ),
            "uvm_hmm_disabled": Message(title="UVM HMM disabled"),
        },
    ),
    Check(
        "kernel.tuned_profile",
        "System tuning daemon profile",
        "host",
        "Power-oriented profiles allow deep C-states and slow frequency ramps on the CPUs that launch GPU work.",
        "tuned-adm profile accelerator-performance",
        tuned_profile,
        optional=("tuned_active",),
        variants={
            "tuned_profile": Message(title="tuned profile {tuned_profile}"),
            "tuned_profile_favours_power_saving": Message(
                title="tuned profile {tuned_profile} favours power saving"
            ),
            "no_tuning_daemon": Message(title="No tuning daemon"),
        },
    ),
    Check(
        "kernel.dmesg_faults",
        "IOMMU faults, AER and lockups in the kernel log",
        "host",
        "Correctable AER bursts mean link replays (lost bandwidth); hung tasks point at stalled I/O.",
        "See pcie.link_errors and driver.xid_history.",
        dmesg_faults,
        sources=("journal_kernel_faults",),
        variants={
            "no_iommu_faults_aer_errors": Message(
                title="No IOMMU faults, AER errors or lockups this boot"
            ),
            "iommu_fault_link_down_lockup": Message(
                title="{n_crit} IOMMU fault / link-down / lockup line(s) in this boot's kernel log",
                why=(
                    "IOMMU page faults on GPU addresses block P2P/DMA; link-downs and soft "
                    "lockups precede hangs."
                ),
                fix=(
                    "Correlate with pcie.acs / firmware.iommu_mode; check slots, risers and "
                    "firmware."
                ),
            ),
            "aer_hung_task_xid_line": Message(
                title="{n_warn} AER / hung-task / Xid line(s) in this boot's kernel log"
            ),
        },
    ),
    Check(
        "kernel.cpu_vulnerability_mitigations",
        "CPU vulnerability mitigations",
        "host",
        "GPU-bound serving is syscall-light; turning mitigations off is a security decision, not a tuning step.",
        "Keep the kernel defaults unless a security review accepts mitigations=off for an isolated GPU server.",
        mitigations,
        sources=("cpu_vulnerabilities",),
        optional=("proc_cmdline",),
        variants={"cpu_vulnerability_mitigations": Message(title="CPU vulnerability mitigations")},
    ),
    Check(
        "kernel.host_knobs_visible",
        "Host kernel knobs seen from the container",
        "host",
        "Kernel knobs are global: fix them on the host, they cannot be changed from inside the container.",
        "Change kernel knobs on the host (sysctl, boot parameters); if the kernels differ, re-check which machine the "
        "container target points at.",
        host_knobs_visible,
        sources=("uname_r",),
        roles=BOTH,
        cross=True,
        optional=(
            ("container", "numa_balancing"),
            ("host", "numa_balancing"),
        ),
        variants={
            "container_inherits_host_kernel_knobs": Message(
                title="Container inherits the host's kernel knobs"
            ),
            "container_runs_different_kernel_host": Message(
                title="The container runs a different kernel than the host",
                why=(
                    "A different kernel means the 'container' is a VM or another machine: host "
                    "knobs do not apply to it."
                ),
                fix="Re-check which machine the container target points at.",
            ),
            "container_sees_different_kernel_numa": Message(
                title="Container sees a different kernel.numa_balancing than the host",
                why=(
                    "A container shares the host's sysctls; a difference means the two targets "
                    "are not the same kernel."
                ),
                fix="Re-check which machine the container target points at.",
            ),
        },
    ),
)
