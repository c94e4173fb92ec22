"""Kernel probe: running kernel and what it implies (power driver), boot parameters, runtime knobs."""

from __future__ import annotations

import re
from collections.abc import Iterator

from pydantic import BaseModel

from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.models import Finding, Role
from gpuaudit.probes.core.parsers.engine import parse_engine_status
from gpuaudit.probes.core.parsers.system import (
    cmdline_value,
    parse_bracketed_choice,
    parse_cmdline,
    parse_cpuinfo_id,
    parse_grep_h,
    parse_int,
    parse_node_list,
    parse_uname,
)
from gpuaudit.probes.core.parsing import first_line, version_tuple
from gpuaudit.probes.core.sources import use
from gpuaudit.probes.core.spec import FactsByTarget, Outputs, Probe, finding, problem_text, usable_stdout

PROBE_ID = "kernel"

# Kernel command-line keys worth listing in the inventory (PROBES.md, kernel.cmdline).
NOTABLE_CMDLINE = (
    "iommu", "amd_iommu", "intel_iommu", "pcie_aspm", "pcie_aspm.policy", "pcie_port_pm", "pci",
    "pcie_acs_override", "processor.max_cstate", "intel_idle.max_cstate", "idle", "cpuidle.off", "amd_pstate",
    "intel_pstate", "numa_balancing", "transparent_hugepage", "mitigations", "isolcpus", "nohz_full", "tsc",
    "clocksource",
)
AMD_PSTATE_SERVER_DEFAULT = (6, 13)
"""First kernel that loads amd-pstate by default on server (ACPI "server" profile) Zen 5 EPYCs."""
ZEN5_FAMILY = 0x1A

JOURNAL_PATTERN = ("IO_PAGE_FAULT|DMAR:.*fault|AER|PCIe Bus Error|Surprise Link Down|soft lockup|hung_task|NVRM"
                   "|Linux version")


class KernelFacts(BaseModel, frozen=True):
    release: str | None = None
    """`uname -r`, e.g. "6.8.12-9-pve"."""
    cmdline: list[tuple[str, str | None]] | None = None
    cpu_vendor: str | None = None
    cpu_family: int | None = None
    cpu_model: int | None = None
    cpu_model_name: str | None = None
    numa_balancing: int | None = None
    numa_nodes: int | None = None
    zone_reclaim: int | None = None
    thp_enabled: str | None = None
    thp_defrag: str | None = None
    clocksource: str | None = None
    swap_devices: int | None = None
    """Active swap areas (lines of /proc/swaps after the header)."""
    engine_swap_kb: dict[str, int] | None = None
    """"pid <n> <cmd>" -> VmSwap kB of each engine process; None = not read, {} = no engine running."""
    uvm_disable_hmm: str | None = None
    """"Y"/"N"; None when the nvidia_uvm module (or the parameter) is absent."""
    tuned_profile: str | None = None
    vulnerabilities: dict[str, str] | None = None
    grub_cmdline: list[str] | None = None
    """Tokens of GRUB_CMDLINE_LINUX(_DEFAULT) from /etc/default/grub."""
    etc_kernel_cmdline: list[str] | None = None
    """Tokens of /etc/kernel/cmdline (Proxmox systemd-boot / proxmox-boot-tool)."""
    journal_lines: list[str] | None = None
    journal_read: bool = False
    """The journal of this boot was readable ("Linux version" line seen)."""
    problems: dict[str, str] = {}
    """command_id -> why its output could not be used ("needs root", "tool not installed", ...)."""


ON_BOTH: frozenset[Role] = frozenset({"host", "container"})
COMMANDS = (
    use('uname_r', 'numa_balancing', 'engine_proc_status') + use('proc_cmdline', 'cpuinfo_id', 'node_list',
    'zone_reclaim', 'thp_enabled', 'thp_defrag', 'clocksource', 'proc_swaps', 'uvm_disable_hmm', 'tuned_active',
    'cpu_vulnerabilities', 'grub_cmdline', 'etc_kernel_cmdline', 'journal_kernel_faults')
)


def parse_numa_balancing(text: str) -> int | None:
    """`/proc/sys/kernel/numa_balancing`: "1" (on), "0" (off); None when not a number."""
    return parse_int(text)


def parse_grub_cmdline(text: str) -> list[str]:
    """`grep -E '^GRUB_CMDLINE_LINUX(_DEFAULT)?=' /etc/default/grub` -> the tokens of both variables.

        GRUB_CMDLINE_LINUX_DEFAULT="quiet amd_iommu=on iommu=pt"
        GRUB_CMDLINE_LINUX=""
    """
    tokens: list[str] = []
    for line in text.splitlines():
        m = re.match(r'^GRUB_CMDLINE_LINUX(?:_DEFAULT)?=(["\']?)(.*)\1\s*$', line.strip())
        if m:
            tokens.extend(m.group(2).split())
    return tokens


def parse_tuned_active(text: str) -> str | None:
    """`tuned-adm active` -> "throughput-performance"; "No current active profile." -> "none"."""
    m = re.search(r"Current active profile:\s*(\S+)", text)
    if m:
        return m.group(1)
    return "none" if "no current active profile" in text.lower() else None


def extract(outputs: Outputs, role: Role) -> KernelFacts:
    problems: dict[str, str] = {}

    def text(cid: str) -> str | None:
        rec = outputs.get(cid)
        # grep exits 1 on "no match": for the journal that is a valid empty answer, not a failure.
        if cid == "journal_kernel_faults" and rec is not None and rec.exit_status == 1 and not rec.error and not rec.stdout.strip():
            return rec.stdout
        return usable_stdout(outputs, cid, problems)

    data: dict[str, object] = {}
    if (t := text("uname_r")) is not None:
        data["release"] = parse_uname(t).release
    if (t := text("proc_cmdline")) is not None:
        data["cmdline"] = parse_cmdline(t)
    if (t := text("cpuinfo_id")) is not None:
        cpu = parse_cpuinfo_id(t)
        data.update(cpu_vendor=cpu.vendor, cpu_family=cpu.family, cpu_model=cpu.model, cpu_model_name=cpu.model_name)
    if (t := text("numa_balancing")) is not None:
        data["numa_balancing"] = parse_numa_balancing(t)
    if (t := text("node_list")) is not None:
        data["numa_nodes"] = len(parse_node_list(t)) or None
    if (t := text("zone_reclaim")) is not None:
        data["zone_reclaim"] = parse_int(t)
    if (t := text("thp_enabled")) is not None:
        data["thp_enabled"] = parse_bracketed_choice(t)
    if (t := text("thp_defrag")) is not None:
        data["thp_defrag"] = parse_bracketed_choice(t)
    if (t := text("clocksource")) is not None:
        data["clocksource"] = first_line(t) or None
    if (t := text("proc_swaps")) is not None:
        data["swap_devices"] = len([ln for ln in t.splitlines()[1:] if ln.strip()])
    if (t := text("engine_proc_status")) is not None:
        try:
            data["engine_swap_kb"] = {f"pid {p.pid} {p.cmd.split(' ')[0] if p.cmd else ''}".strip(): p.swap_kb
                                      for p in parse_engine_status(t).procs if p.swap_kb is not None}
        except ParseError as exc:
            problems["engine_proc_status"] = str(exc)
    if (t := text("uvm_disable_hmm")) is not None:
        data["uvm_disable_hmm"] = first_line(t) or None
    if (t := text("tuned_active")) is not None:
        data["tuned_profile"] = parse_tuned_active(t)
    if (t := text("cpu_vulnerabilities")) is not None:
        data["vulnerabilities"] = {p.rsplit("/", 1)[-1]: v[0] for p, v in parse_grep_h(t).items() if v}
    if (t := text("grub_cmdline")) is not None:
        data["grub_cmdline"] = parse_grub_cmdline(t)
    if (t := text("etc_kernel_cmdline")) is not None:
        data["etc_kernel_cmdline"] = first_line(t).split()
    if (t := text("journal_kernel_faults")) is not None:
        lines = [ln for ln in t.splitlines() if ln.strip()]
        data["journal_read"] = any("Linux version" in ln for ln in lines)
        data["journal_lines"] = [ln for ln in lines if "Linux version" not in ln]
    return KernelFacts(problems=problems, **data)  # type: ignore[arg-type]


def _why_missing(f: KernelFacts, *cids: str) -> str:
    return problem_text(f.problems, *cids)


def _mk(slug: str, severity: str, title: str, *, targets: tuple[Role, ...] = ("host",), observed: str = "",
        expected: str = "", why: str = "", fix: str = "", evidence: list[tuple[Role, str]] | None = None) -> Finding:
    return finding(PROBE_ID, slug, severity, title, targets=targets, observed=observed, expected=expected,
                   why=why, fix=fix, evidence=evidence or [])


# --------------------------------------------------------------------------- rules


def _is_amd_server(f: KernelFacts) -> bool:
    return f.cpu_vendor == "AuthenticAMD" and bool(f.cpu_model_name and "EPYC" in f.cpu_model_name.upper())


def judge_version(f: KernelFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "uname_r"), ("host", "cpuinfo_id"), ("host", "proc_cmdline")]
    if not f.release:
        return _mk("version", "unknown", "Kernel version could not be read",
                   observed=_why_missing(f, "uname_r"), evidence=ev)
    ver = version_tuple(f.release)
    if f.cpu_vendor is None or f.cmdline is None:
        return _mk("version", "unknown", f"Kernel {f.release}: CPU power-driver implications not checked",
                   observed=f"kernel {f.release}; " + _why_missing(f, "cpuinfo_id", "proc_cmdline"),
                   expected="CPU vendor/family and /proc/cmdline readable",
                   why="Whether amd-pstate loads by default depends on the CPU family and the kernel version together.",
                   evidence=ev)
    cpu = f"{f.cpu_model_name or f.cpu_vendor} (family {f.cpu_family:#x})" if f.cpu_family is not None else (f.cpu_model_name or f.cpu_vendor)
    pstate = cmdline_value(f.cmdline, "amd_pstate")
    amd_server = _is_amd_server(f)
    why = ("amd-pstate refuses to load by default on ACPI 'server' profiles unless the CPU is family >= 0x1A "
           "(Zen 5), and that default only exists from kernel 6.13; otherwise the kernel falls back to acpi-cpufreq, "
           "which sees only the few ACPI P-states and reacts slowly, so the cores that feed the GPUs clock "
           "lower/later between kernel launches.")
    fix = ("Either upgrade to a kernel >= 6.13 (on Proxmox VE 8: an opt-in proxmox-kernel-6.14 package) or add "
           "amd_pstate=active to the kernel command line (works on 6.8 when the BIOS exposes CPPC), then reboot and "
           "confirm /sys/devices/system/cpu/cpu0/cpufreq/scaling_driver reads amd-pstate-epp.")
    if amd_server and pstate is not None and pstate.lower() == "disable":
        return _mk("version", "warning", "amd_pstate=disable on the command line forces acpi-cpufreq",
                   observed=f"kernel {f.release}, {cpu}, cmdline amd_pstate=disable",
                   expected="no amd_pstate=disable (amd_pstate=active or the kernel default)", why=why,
                   fix="Remove amd_pstate=disable from the boot configuration (or set amd_pstate=active) and reboot.",
                   evidence=ev)
    if amd_server and pstate is None and f.cpu_family is not None:
        if f.cpu_family >= ZEN5_FAMILY and ver and ver < AMD_PSTATE_SERVER_DEFAULT:
            return _mk("version", "warning",
                       f"Kernel {f.release} predates amd-pstate-by-default for Zen 5 servers: acpi-cpufreq will drive the CPUs",
                       observed=f"kernel {f.release} (< 6.13), {cpu}, no amd_pstate= on the command line",
                       expected="kernel >= 6.13, or amd_pstate=active on the command line",
                       why=why, fix=fix, evidence=ev)
        if f.cpu_family < ZEN5_FAMILY:
            return _mk("version", "warning",
                       f"{cpu} never gets amd-pstate by default on a server: acpi-cpufreq will drive the CPUs",
                       observed=f"kernel {f.release}, {cpu}, no amd_pstate= on the command line",
                       expected="amd_pstate=active (or guided/passive) on the command line",
                       why=why, fix="Add amd_pstate=active to the kernel command line (needs CPPC enabled in the BIOS) and reboot.",
                       evidence=ev)
    detail = f"kernel {f.release}, {cpu}" + (f", amd_pstate={pstate}" if pstate else "")
    return _mk("version", "info", f"Kernel {f.release}", observed=detail,
               expected="a kernel whose defaults suit the CPU (for Zen 5 EPYC: >= 6.13 or amd_pstate= set)",
               why="The version alone is not a defect; what matters is which drivers and defaults it implies for this CPU.",
               evidence=ev)


def judge_cmdline(f: KernelFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "proc_cmdline"), ("host", "grub_cmdline"), ("host", "etc_kernel_cmdline")]
    if f.cmdline is None:
        return _mk("cmdline", "unknown", "Kernel command line could not be read",
                   observed=_why_missing(f, "proc_cmdline"), evidence=ev)
    notable = [f"{k}={v}" if v is not None else k for k, v in f.cmdline if k in NOTABLE_CMDLINE]
    running = {f"{k}={v}" if v is not None else k for k, v in f.cmdline}
    notes: list[str] = []
    pci = cmdline_value(f.cmdline, "pci") or ""
    if "pcie_bus_perf" in pci:
        notes.append("pci=pcie_bus_perf caps each device's MaxReadReq at its MaxPayload (see pcie.max_read_req)")
    if "pcie_bus_peer2peer" in pci:
        notes.append("pci=pcie_bus_peer2peer forces MaxPayload 128 everywhere")
    if cmdline_value(f.cmdline, "pcie_acs_override") is not None:
        notes.append("pcie_acs_override only changes IOMMU grouping, it does not clear hardware ACS bits")
    # Persisted configuration that the running kernel did not boot with: edited but not applied.
    persisted, source = (f.etc_kernel_cmdline, "/etc/kernel/cmdline") if f.etc_kernel_cmdline else (f.grub_cmdline, "/etc/default/grub")
    skip = {"quiet", "splash"}
    unapplied = [t for t in (persisted or []) if t not in running and t not in skip and not t.startswith(("root=", "boot="))]
    observed = " ".join(notable) or "no performance-relevant parameters"
    if notes:
        observed += "; " + "; ".join(notes)
    if unapplied:
        return _mk("cmdline", "warning", f"{source} has parameters the running kernel did not boot with",
                   observed=f"in {source} but not in /proc/cmdline: {' '.join(unapplied)} (running: {observed})",
                   expected="/proc/cmdline contains every parameter of the persisted boot configuration",
                   why="An edited boot configuration only takes effect after regenerating the boot entries and rebooting; "
                       "on Proxmox with systemd-boot (ZFS root) /etc/kernel/cmdline rules and GRUB edits are ignored.",
                   fix="Run update-grub or proxmox-boot-tool refresh (whichever boots this host) and reboot in a maintenance window.",
                   evidence=ev)
    return _mk("cmdline", "info", "Kernel command line", observed=observed,
               why="Boot parameters feed the pcie, power, numa and firmware checks.", evidence=ev)


def judge_numa_balancing(f: KernelFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "numa_balancing"), ("host", "node_list")]
    if f.numa_balancing is None:
        return _mk("numa_balancing", "unknown", "NUMA balancing could not be read",
                   observed=_why_missing(f, "numa_balancing"), evidence=ev)
    if f.numa_nodes is None:
        return _mk("numa_balancing", "unknown", "NUMA node count could not be read",
                   observed=f"kernel.numa_balancing={f.numa_balancing}; nodes: {_why_missing(f, 'node_list')}", evidence=ev)
    if f.numa_nodes <= 1:
        return _mk("numa_balancing", "ok", "NUMA balancing: not applicable on a single NUMA node",
                   observed=f"not applicable: 1 NUMA node (kernel.numa_balancing={f.numa_balancing})", evidence=ev)
    if f.numa_balancing != 0:
        return _mk("numa_balancing", "warning", "Automatic NUMA balancing is on",
                   observed=f"kernel.numa_balancing={f.numa_balancing} with {f.numa_nodes} NUMA nodes",
                   expected="kernel.numa_balancing=0 on a multi-node GPU server",
                   why="The kernel periodically unmaps pages to sample accesses and migrates them; on a GPU server "
                       "that adds page faults and jitter on the threads and pinned buffers that feed the GPUs.",
                   fix="sysctl -w kernel.numa_balancing=0 and persist it in /etc/sysctl.d/ (or boot with numa_balancing=disable); A/B it.",
                   evidence=ev)
    return _mk("numa_balancing", "ok", "Automatic NUMA balancing is off",
               observed=f"kernel.numa_balancing=0 with {f.numa_nodes} NUMA nodes", expected="0", evidence=ev)


def judge_zone_reclaim(f: KernelFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "zone_reclaim"), ("host", "node_list")]
    if f.zone_reclaim is None:
        return _mk("zone_reclaim", "unknown", "vm.zone_reclaim_mode could not be read",
                   observed=_why_missing(f, "zone_reclaim"), evidence=ev)
    if f.zone_reclaim == 0:
        return _mk("zone_reclaim", "ok", "NUMA zone reclaim is off", observed="vm.zone_reclaim_mode=0", expected="0", evidence=ev)
    if f.numa_nodes is None:
        return _mk("zone_reclaim", "unknown", "NUMA node count could not be read",
                   observed=f"vm.zone_reclaim_mode={f.zone_reclaim}; nodes: {_why_missing(f, 'node_list')}", evidence=ev)
    if f.numa_nodes > 1:
        return _mk("zone_reclaim", "warning", "NUMA zone reclaim is on",
                   observed=f"vm.zone_reclaim_mode={f.zone_reclaim} with {f.numa_nodes} NUMA nodes", expected="0",
                   why="Non-zero makes the kernel reclaim page cache on the local node instead of allocating remotely, "
                       "stalling allocations during model loading and KV-offload bursts.",
                   fix="sysctl -w vm.zone_reclaim_mode=0 and persist it in /etc/sysctl.d/.", evidence=ev)
    return _mk("zone_reclaim", "ok", "Zone reclaim: not applicable",
               observed=f"not applicable: vm.zone_reclaim_mode={f.zone_reclaim} on {f.numa_nodes} node(s)", evidence=ev)


def judge_thp(f: KernelFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "thp_enabled"), ("host", "thp_defrag")]
    if f.thp_enabled is None or f.thp_defrag is None:
        return _mk("thp", "unknown", "Transparent huge page settings could not be read",
                   observed=_why_missing(f, "thp_enabled", "thp_defrag"), evidence=ev)
    obs = f"enabled=[{f.thp_enabled}] defrag=[{f.thp_defrag}]"
    if f.thp_enabled == "always" and f.thp_defrag == "always":
        return _mk("thp", "warning", "THP always with synchronous defrag", observed=obs,
                   expected="defrag madvise or defer (enabled madvise or always)",
                   why="With defrag=always a THP allocation that fails stalls and directly reclaims and compacts memory: "
                       "latency spikes in the Python server and tokeniser.",
                   fix="echo madvise > /sys/kernel/mm/transparent_hugepage/defrag (persist with transparent_hugepage= or a tmpfiles rule).",
                   evidence=ev)
    return _mk("thp", "info", "Transparent huge pages", observed=obs, evidence=ev)


def judge_swap(f: KernelFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "proc_swaps"), ("host", "engine_proc_status")]
    if f.swap_devices is None:
        return _mk("swap", "unknown", "Swap configuration could not be read", observed=_why_missing(f, "proc_swaps"), evidence=ev)
    if f.swap_devices == 0:
        return _mk("swap", "ok", "No swap configured", observed="no active swap areas", evidence=ev)
    why = "A swapped-out scheduler or tokeniser page turns into millisecond stalls between decode steps."
    if f.engine_swap_kb is None:
        return _mk("swap", "info", "Swap is configured", observed=f"{f.swap_devices} active swap area(s); engine VmSwap not read "
                   f"({_why_missing(f, 'engine_proc_status')})", why=why,
                   fix="Check VmSwap of the engine processes; lower vm.swappiness if they swap.", evidence=ev)
    swapped = {k: v for k, v in f.engine_swap_kb.items() if v > 0}
    if swapped:
        return _mk("swap", "warning", f"{len(swapped)} engine process(es) have pages in swap",
                   observed=f"{f.swap_devices} active swap area(s); VmSwap " + ", ".join(f"{k}: {v // 1024} MiB" if v >= 1024
                                                                                         else f"{k}: {v} kB" for k, v in list(swapped.items())[:4]),
                   expected="VmSwap 0 kB for every engine process", why=why,
                   fix="Lower vm.swappiness (e.g. 1-10), give the host/container more memory headroom, or disable swap on the GPU server.",
                   evidence=ev)
    engines = f"{len(f.engine_swap_kb)} engine process(es) with VmSwap 0 kB" if f.engine_swap_kb else "no engine process running"
    return _mk("swap", "info", "Swap is configured but the engine does not use it",
               observed=f"{f.swap_devices} active swap area(s); {engines}", why=why,
               fix="Keep an eye on VmSwap of the engine processes; lower vm.swappiness if they start to swap.", evidence=ev)


def judge_clocksource(f: KernelFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "clocksource")]
    if not f.clocksource:
        return _mk("clocksource", "unknown", "Clock source could not be read", observed=_why_missing(f, "clocksource"), evidence=ev)
    if f.clocksource in ("hpet", "acpi_pm"):
        return _mk("clocksource", "warning", f"Clock source is {f.clocksource}, not TSC", observed=f"current_clocksource={f.clocksource}",
                   expected="tsc", why="After the TSC is marked unstable every clock_gettime() reads a slow platform timer; "
                                       "Python serving stacks and NCCL proxies time things constantly.",
                   fix="Look for 'TSC unstable' in the kernel log; fix firmware timer settings (tsc=reliable only with vendor guidance).",
                   evidence=ev)
    sev = "ok" if f.clocksource == "tsc" else "info"
    return _mk("clocksource", sev, f"Clock source {f.clocksource}", observed=f"current_clocksource={f.clocksource}", expected="tsc", evidence=ev)


def judge_uvm_hmm(f: KernelFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "uvm_disable_hmm")]
    rec_problem = f.problems.get("uvm_disable_hmm")
    if f.uvm_disable_hmm is None:
        if rec_problem and ("exit 1" in rec_problem or "No such file" in rec_problem):
            return _mk("uvm_hmm", "info", "UVM HMM: not applicable",
                       observed="not applicable: nvidia_uvm not loaded or no uvm_disable_hmm parameter", evidence=ev)
        return _mk("uvm_hmm", "unknown", "nvidia_uvm HMM setting could not be read", observed=_why_missing(f, "uvm_disable_hmm"), evidence=ev)
    on = f.uvm_disable_hmm.upper() in ("N", "0")
    return _mk("uvm_hmm", "info", "UVM HMM " + ("enabled" if on else "disabled"),
               observed=f"uvm_disable_hmm={f.uvm_disable_hmm}",
               why="HMM has caused CUDA init failures and fault-service deadlocks on some driver/kernel pairs; "
                   "disabling it is a documented workaround, needed only when those symptoms appear.",
               fix="options nvidia_uvm uvm_disable_hmm=1 in /etc/modprobe.d/uvm.conf if CUDA init or P2P hangs are seen." if on else "",
               evidence=ev)


def judge_tuned(f: KernelFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "tuned_active")]
    rec = f.problems.get("tuned_active")
    if f.tuned_profile is None:
        if rec == "tool not installed":
            return _mk("tuned_profile", "info", "No tuning daemon", observed="tuned not installed (Proxmox does not ship it); "
                       "the individual power.* checks decide", evidence=ev)
        return _mk("tuned_profile", "unknown", "tuned profile could not be read", observed=_why_missing(f, "tuned_active"), evidence=ev)
    good = ("accelerator-performance", "throughput-performance", "latency-performance", "network-latency", "hpc-compute")
    if f.tuned_profile in good:
        return _mk("tuned_profile", "ok", f"tuned profile {f.tuned_profile}", observed=f"active profile: {f.tuned_profile}", evidence=ev)
    if f.tuned_profile in ("balanced", "powersave", "virtual-host", "desktop"):
        return _mk("tuned_profile", "warning", f"tuned profile {f.tuned_profile} favours power saving",
                   observed=f"active profile: {f.tuned_profile}", expected="accelerator-performance or throughput-performance",
                   why="Power-oriented profiles allow deep C-states and slow frequency ramps on the CPUs that launch GPU work.",
                   fix="tuned-adm profile accelerator-performance", evidence=ev)
    return _mk("tuned_profile", "info", f"tuned profile {f.tuned_profile}", observed=f"active profile: {f.tuned_profile}", evidence=ev)


def judge_journal(f: KernelFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "journal_kernel_faults")]
    if f.journal_lines is None or not f.journal_read:
        reason = _why_missing(f, "journal_kernel_faults") if f.journal_lines is None else "this boot's kernel log is not in the journal"
        return _mk("dmesg_faults", "unknown", "Kernel log could not be read", observed=reason, evidence=ev)
    lines = f.journal_lines
    crit = [ln for ln in lines if re.search(r"IO_PAGE_FAULT|DMAR:.*fault|Surprise Link Down|uncorrectable|Uncorrected|soft lockup.*|nvidia_uvm.*lockup", ln, re.I)]
    warn = [ln for ln in lines if re.search(r"AER|PCIe Bus Error|hung_task|NVRM: Xid", ln)]
    if crit:
        return _mk("dmesg_faults", "critical", f"{len(crit)} IOMMU fault / link-down / lockup line(s) in this boot's kernel log",
                   observed=" | ".join(ln[-200:] for ln in crit[:3]), expected="none",
                   why="IOMMU page faults on GPU addresses block P2P/DMA; link-downs and soft lockups precede hangs.",
                   fix="Correlate with pcie.acs / firmware.iommu_mode; check slots, risers and firmware.", evidence=ev)
    if warn:
        return _mk("dmesg_faults", "warning", f"{len(warn)} AER / hung-task / Xid line(s) in this boot's kernel log",
                   observed=" | ".join(ln[-200:] for ln in warn[:3]), expected="none",
                   why="Correctable AER bursts mean link replays (lost bandwidth); hung tasks point at stalled I/O.",
                   fix="See pcie.link_errors and driver.xid_history.", evidence=ev)
    return _mk("dmesg_faults", "ok", "No IOMMU faults, AER errors or lockups this boot", observed=f"{len(lines)} matching line(s)", evidence=ev)


def judge_mitigations(f: KernelFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "cpu_vulnerabilities"), ("host", "proc_cmdline")]
    if f.vulnerabilities is None:
        return _mk("cpu_vulnerability_mitigations", "unknown", "CPU vulnerability state could not be read",
                   observed=_why_missing(f, "cpu_vulnerabilities"), evidence=ev)
    vuln = [k for k, v in f.vulnerabilities.items() if v.startswith("Vulnerable")]
    mit = cmdline_value(f.cmdline or [], "mitigations")
    obs = f"{len(f.vulnerabilities)} entries, {len(vuln)} vulnerable" + (f" ({', '.join(vuln[:6])})" if vuln else "")
    if mit is not None:
        obs += f"; mitigations={mit}"
    return _mk("cpu_vulnerability_mitigations", "info", "CPU vulnerability mitigations", observed=obs,
               why="GPU-bound serving is syscall-light; turning mitigations off is a security decision, not a tuning step.",
               evidence=ev)


def judge_host_knobs_visible(facts: FactsByTarget) -> Finding:
    host: KernelFacts | None = facts.get("host")
    ctr: KernelFacts | None = facts.get("container")
    ev: list[tuple[Role, str]] = [("host", "numa_balancing"), ("container", "numa_balancing"),
                                  ("host", "uname_r"), ("container", "uname_r")]
    if ctr is None:
        return _mk("host_knobs_visible", "ok", "Host knobs from the container: not applicable",
                   observed="not applicable: no container target", evidence=[("host", "numa_balancing")])
    assert host is not None
    targets: tuple[Role, ...] = ("host", "container")
    if host.release and ctr.release and host.release != ctr.release:
        return _mk("host_knobs_visible", "info", "The container runs a different kernel than the host", targets=targets,
                   observed=f"host uname -r {host.release}, container uname -r {ctr.release}",
                   expected="the same kernel (an LXC/Docker container shares the host kernel)",
                   why="A different kernel means the 'container' is a VM or another machine: host knobs do not apply to it.",
                   fix="Re-check which machine the container target points at.", evidence=ev)
    if host.numa_balancing is None or ctr.numa_balancing is None:
        return _mk("host_knobs_visible", "unknown", "Host knobs from the container could not be compared", targets=targets,
                   observed=f"host: {host.numa_balancing if host.numa_balancing is not None else _why_missing(host, 'numa_balancing')}; "
                            f"container: {ctr.numa_balancing if ctr.numa_balancing is not None else _why_missing(ctr, 'numa_balancing')}",
                   evidence=ev)
    if host.numa_balancing != ctr.numa_balancing:
        return _mk("host_knobs_visible", "info", "Container sees a different kernel.numa_balancing than the host", targets=targets,
                   observed=f"host kernel.numa_balancing={host.numa_balancing}, container sees {ctr.numa_balancing}",
                   expected="identical values (shared kernel)",
                   why="A container shares the host's sysctls; a difference means the two targets are not the same kernel.",
                   fix="Re-check which machine the container target points at.", evidence=ev)
    return _mk("host_knobs_visible", "info", "Container inherits the host's kernel knobs", targets=targets,
               observed=f"kernel {host.release} on both; kernel.numa_balancing={host.numa_balancing} on host and in container",
               why="Kernel knobs are global: fix them on the host, they cannot be changed from inside the container.",
               evidence=ev)


def judge(facts: FactsByTarget) -> Iterator[Finding]:
    host: KernelFacts | None = facts.get("host")
    if host is None:
        return
    yield judge_version(host)
    yield judge_cmdline(host)
    yield judge_numa_balancing(host)
    yield judge_zone_reclaim(host)
    yield judge_thp(host)
    yield judge_swap(host)
    yield judge_clocksource(host)
    yield judge_uvm_hmm(host)
    yield judge_tuned(host)
    yield judge_journal(host)
    yield judge_mitigations(host)
    yield judge_host_knobs_visible(facts)


def summarize(facts: FactsByTarget) -> str:
    host: KernelFacts | None = facts.get("host")
    if not host or not host.release:
        return ""
    parts = [f"kernel {host.release}"]
    if host.numa_balancing is not None:
        parts.append(f"numa_balancing={host.numa_balancing}")
    if host.cmdline is not None:
        pstate = cmdline_value(host.cmdline, "amd_pstate")
        parts.append(f"amd_pstate={pstate}" if pstate else "no amd_pstate=")
    return " · ".join(parts)


PROBE = Probe(id=PROBE_ID, title="Kernel", commands=COMMANDS, extract=extract, judge=judge, summarize=summarize)
