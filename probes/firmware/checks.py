"""The firmware probe's rows of the check catalogue and one small pure verdict per check.

Most BIOS knobs are invisible to Linux: where an effect can be read (CPPC objects, exposed C-states, NUMA
nodes, IOMMU group types, BAR1 size, DIMM population) the verdict judges it; the rest are `manual: check
BIOS setting X` items. The framework has already turned missing/failed sources into unknown.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpuaudit.probes.core.judge.checks import (
    HOST,
    Check,
    Ctx,
    Message,
    Verdict,
    critical,
    info,
    ok,
    unknown,
    warning,
)
from gpuaudit.probes.core.judge.combiners import VM_SOURCES, vm_reason
from gpuaudit.probes.core.parsers.cpu import is_deep_cstate
from gpuaudit.probes.firmware.bios_checks import (
    BIOS_CHECKS,
    df_pstates_from_bios,
    socket_power_from_bios,
    xgmi_from_bios,
)
from gpuaudit.probes.firmware.facts import FirmwareFacts
from gpuaudit.probes.firmware.population import defects, describe, population


def counts(values: Iterable[str]) -> str:
    """["a", "a", ""] -> "a ×2, none ×1"."""
    c: dict[str, int] = {}
    for v in values:
        c[v or "none"] = c.get(v or "none", 0) + 1
    return ", ".join(f"{k} ×{n}" for k, n in sorted(c.items())) or "none"


def in_vm(ctx: Ctx) -> str | None:
    return vm_reason(ctx.outputs.get(ctx.role or "host", {}))


def is_amd(h: FirmwareFacts) -> bool:
    return h.cpu_vendor == "AMD"


# --------------------------------------------------------------------------- verdicts


def inventory(ctx: Ctx) -> Verdict:
    h: FirmwareFacts = ctx.f
    b = h.bios
    obs = f"{b.get('bios_vendor', '?')} {b.get('bios_version', '?')} ({b.get('bios_release_date', '?')})"
    if b.get("system_product_name") or b.get("board_product_name"):
        obs += f"; {b.get('system_manufacturer', '')} {b.get('system_product_name', '')} / board {b.get('board_product_name', '?')}"
    if h.microcode:
        obs += f"; microcode {h.microcode}"
    return info(obs.strip(), variant="bios_board_identity")


def numa_mode(ctx: Ctx) -> Verdict:
    h: FirmwareFacts = ctx.f
    nodes, sockets = h.numa_nodes, h.sockets or 1
    if not nodes:  # neither sysfs nor numactl -H listed a node
        return unknown("no NUMA node listed (sys_numa, numactl -H)")
    nps = len(nodes) / sockets
    cpu_only = [
        n
        for n, v in nodes.items()
        if v.get("cpulist") and int(v.get("memtotal_kb") or 0) < 1024 * 1024
    ]
    obs = f"{len(nodes)} node(s), {sockets} socket(s): {nps:g} node(s) per socket"
    if cpu_only:
        return warning(
            obs + f"; memory-less: {', '.join(sorted(cpu_only))}",
            "NPS1, no CPU-only nodes",
            variant="numa_nodes_cpus_no_memory",
        )
    if len(nodes) < sockets:
        return warning(
            obs,
            "one NUMA node per socket (NPS1) or more",
            variant="fewer_numa_nodes_sockets_memory",
        )
    if nps <= 1:
        return ok(obs, variant="one_numa_node_per_socket")
    return info(
        obs,
        "NPS1 unless every rank is bound to its GPU's node",
        variant="nps_snc_several_nodes_per",
        nps=nps,
    )


def iommu_mode(ctx: Ctx) -> Verdict:
    h: FirmwareFacts = ctx.f
    units = h.iommu_units or []
    cmd = " ".join(t for t in (h.cmdline or "").split() if "iommu" in t)
    tail = f"; cmdline {cmd}" if cmd else ""
    if not units and not any(h.gpu_iommu_types.values()):
        if h.cpu_vendor is None or h.cpus is None:  # whether the x2APIC trap applies was not read
            return unknown(
                "IOMMU off (no IOMMU units)"
                + tail
                + "; the CPU vendor and thread count (lscpu) were "
                "not read: past 255 threads x2APIC needs the IOMMU's interrupt remapping"
            )
        if h.cpu_vendor == "AMD" and h.cpus > 255:
            online = (
                f"{h.online_cpus} of {h.cpus} CPUs online" if h.online_cpus else f"{h.cpus} CPUs"
            )
            return critical(
                f"IOMMU off (no IOMMU units) on an AMD host with {h.cpus} hardware threads; {online}"
                + tail,
                "IOMMU enabled with iommu=pt",
                variant="iommu_off_more_255_cpus",
            )
        return ok(
            "no IOMMU units" + tail + f"; {h.cpu_vendor}, {h.cpus} CPUs (x2APIC not at stake)",
            variant="iommu_off",
        )
    translated = [b for b, t in h.gpu_iommu_types.items() if t.startswith("DMA")]
    obs = (
        f"IOMMU on ({len(units)} unit(s)); GPU groups: {counts(h.gpu_iommu_types.values())}" + tail
    )
    if translated and len(h.gpu_iommu_types) >= 2:
        return warning(
            obs,
            "identity (iommu=pt) for host-driver GPUs",
            variant="gpus_translated_iommu_domains",
        )
    if translated:
        return info(obs, variant="single_gpu_translated_iommu_domain")
    return ok(obs, variant="iommu_passthrough_gpus")


def bar1_large_bar(ctx: Ctx) -> Verdict:
    h: FirmwareFacts = ctx.f
    bar1 = h.bar1_mib or h.bar1_mib_lspci  # lspci's region size when nvidia-smi -q was not read
    if not bar1:
        return unknown("no NVIDIA GPU BAR1 size in nvidia-smi -q or lspci -vvv")
    small = {g: v for g, v in bar1.items() if v <= 256}
    mid = {g: v for g, v in bar1.items() if 256 < v < h.fb_mib.get(g, 0)}
    obs = "BAR1 " + counts(f"{v} MiB" for v in bar1.values())
    if not h.bar1_mib:
        obs += " (lspci region size)"
    if small and len(bar1) > 1:
        return warning(obs, "BAR1 >= framebuffer", variant="256_mib_bar1_on_multi")
    if small or mid:
        return info(
            obs,
            variant="bar1_smaller_framebuffer",
        )
    return ok(obs, variant="large_bar1_above_4g_decoding")


def not_amd(ctx: Ctx) -> str | None:
    h: FirmwareFacts = ctx.f
    return None if is_amd(h) else f"CPU vendor {h.cpu_vendor}"


def amd_host(ctx: Ctx) -> str | None:
    """Not applicable off AMD and in a VM (the hypervisor host's BIOS decides)."""
    return not_amd(ctx) or in_vm(ctx)


def cppc(ctx: Ctx) -> Verdict:
    h: FirmwareFacts = ctx.f
    if h.cppc:
        return ok(
            "acpi_cppc: " + ", ".join(f"{k}={v}" for k, v in sorted(h.cppc.items())),
            variant="acpi_cppc_exposed_bios_cppc",
        )
    return warning(
        "/sys/devices/system/cpu/cpu0/acpi_cppc missing",
        "acpi_cppc present",
        variant="acpi_cppc_not_exposed_amd",
    )


def cstate_exposure(ctx: Ctx) -> Verdict:
    h: FirmwareFacts = ctx.f
    if not h.idle_state_names:
        return info(
            "no cpuidle states listed (idle driver none, or idle=poll)",
            variant="no_c_states_exposed_os",
        )
    states = [(n.split(":")[0], n.split(":")[1]) for n in h.idle_state_names]
    deep = [
        n
        for n, lat in states
        if is_deep_cstate(n, int(lat) if lat.isdigit() else None, h.cpu_vendor)
    ]
    return info(
        "states " + ", ".join(f"{n} ({lat} µs)" for n, lat in states),
        variant="deep_exposed" if deep else "shallow_only",
        deep=", ".join(deep),
    )


def df_pstates(ctx: Ctx) -> Verdict:
    if (v := df_pstates_from_bios(ctx)) is not None:  # --bmc: judged from the BIOS settings
        return v
    return unknown(
        "manual: check BIOS APBDIS = 1, Fixed SOC P-state = P0, DF C-states = Disabled (not readable from"
        " Linux without the amd_hsmp/E-SMI tools)",
        variant="data_fabric_p_states_manual",
    )


def socket_power(ctx: Ctx) -> Verdict:
    if (v := socket_power_from_bios(ctx)) is not None:  # --bmc: judged from the BIOS settings
        return v
    obs = (
        "manual: check BIOS Determinism Control = Manual, Determinism Slider = Power, cTDP and package power limit"
        " = maximum (E-SMI can read it where installed)"
    )
    h: FirmwareFacts = ctx.f
    return unknown(obs) if is_amd(h) else info(obs)


def xgmi_applies(ctx: Ctx) -> str | None:
    h: FirmwareFacts = ctx.f
    if (h.sockets or 0) < 2:
        return f"{h.sockets} socket(s)"
    return amd_host(ctx)


def xgmi_links(ctx: Ctx) -> Verdict:
    h: FirmwareFacts = ctx.f
    if (v := xgmi_from_bios(ctx)) is not None:  # --bmc: judged from the BIOS settings
        return v
    return info(
        f"manual: check BIOS xGMI Link Width Control = Manual, Force Link Width = x16, max speed"
        f" ({h.sockets} sockets; not readable from Linux)",
        variant="inter_socket_xgmi_links_manual",
    )


def memory_population(ctx: Ctx) -> Verdict:
    h: FirmwareFacts = ctx.f
    sockets = h.sockets if ctx.usable("lscpu_json") else None
    pop = population(h.dimms, sockets)
    sp5 = is_amd(h) and (h.cpu_family or 0) >= 0x19
    obs = describe(pop)
    if pop.populated == 0:
        return unknown(obs + ": no populated slot listed")
    if found := defects(pop, sp5):
        return warning(
            obs + "; " + "; ".join(found),
            "every channel of every socket populated, identical DIMMs",
            variant="memory_channels_not_fully_evenly",
        )
    slow = [
        d
        for d in h.dimms
        if d.size_mb and d.speed_mts and d.configured_mts and d.configured_mts < d.speed_mts
    ]
    if slow:
        return info(
            obs + f"; configured {slow[0].configured_mts} of {slow[0].speed_mts} MT/s",
            variant="dimms_configured_below_their_rated",
        )
    return ok(obs, variant="memory_evenly_populated")


def gpu_firmware_consistency(ctx: Ctx) -> Verdict:
    h: FirmwareFacts = ctx.f
    vb = {v[0] for v in h.gpu_fw.values()}
    ir = {v[1] for v in h.gpu_fw.values()}
    obs = f"VBIOS {', '.join(sorted(vb))}; InfoROM {', '.join(sorted(ir))}"
    if len(vb) == 1 and len(ir) == 1:
        return ok(obs, variant="gpu_firmware_uniform")
    return info(obs, variant="gpu_firmware_differs_between_gpus")


# --------------------------------------------------------------------------- the catalogue rows

CHECKS: tuple[Check, ...] = (
    Check(
        "firmware.inventory",
        "BIOS and board identity",
        "bios",
        "AGESA/BIOS revisions change PCIe, power and memory defaults; compare across the nodes of a pool.",
        "Keep every node of a pool on the same BIOS release.",
        inventory,
        any_of=("dmidecode_bios", "dmi_bios"),
        roles=HOST,
        optional=("cpuinfo_microcode",),
        variants={"bios_board_identity": Message(title="BIOS and board identity")},
    ),
    Check(
        "firmware.numa_mode",
        "NUMA mode (NPS / SNC / L3-as-NUMA)",
        "bios",
        "NPS1 keeps one node per socket; more nodes help only pinned ranks, fewer than one per socket interleaves "
        "memory across sockets.",
        "BIOS: AMD CBS > DF Common Options > NUMA nodes per socket = NPS1.",
        numa_mode,
        sources=("lscpu_json",),
        any_of=("sys_numa", "numactl_h"),  # numactl -H shows the same nodes when sysfs was not read
        applies=in_vm,
        expected="NPS1",
        optional=(*VM_SOURCES,),
        variants={
            "nps_snc_several_nodes_per": Message(
                title="NPS{nps:g} / SNC: several nodes per socket",
                why=(
                    "Extra nodes per socket help only when processes are pinned; unpinned they "
                    "add remote accesses."
                ),
                fix=(
                    "BIOS: AMD CBS > DF Common Options > NUMA nodes per socket = NPS1, or bind "
                    "ranks (numa.*)."
                ),
            ),
            "numa_nodes_cpus_no_memory": Message(
                title="NUMA nodes with CPUs but no memory (L3 as NUMA?)",
                why=(
                    "'ACPI SRAT L3 cache as NUMA domain' splits each CCX into a node, "
                    "fragmenting scheduling domains."
                ),
                fix="BIOS: disable 'ACPI SRAT L3 Cache as NUMA Domain'.",
            ),
            "fewer_numa_nodes_sockets_memory": Message(
                title="Fewer NUMA nodes than sockets: memory interleaved across sockets",
                why=(
                    "With socket (or node) interleaving on, every page is striped over both "
                    "sockets: the kernel, NCCL and the engine cannot place a GPU's staging "
                    "buffers and CPU threads next to it, and half of every host-device copy "
                    "crosses the socket link."
                ),
                fix=(
                    "BIOS: disable socket/NUMA interleaving (AMD: NUMA nodes per socket = NPS1, "
                    "not NPS0; Intel: Memory > NUMA = Enabled / Node Interleaving = Disabled)."
                ),
            ),
            "one_numa_node_per_socket": Message(title="One NUMA node per socket (NPS1)"),
        },
    ),
    Check(
        "firmware.iommu_mode",
        "IOMMU mode for the GPUs",
        "host",
        "Translated DMA can redirect GPU peer-to-peer traffic to the root complex: slow P2P or NCCL hangs (RTX PRO "
        "6000 reports with TP=2).",
        "Boot with iommu=pt (keeps VFIO VMs working on Proxmox); see pcie.acs for ACS redirect.",
        iommu_mode,
        sources=("iommu_state",),
        optional=("proc_cmdline", "lscpu_json"),
        variants={
            "iommu_passthrough_gpus": Message(title="IOMMU passthrough for the GPUs"),
            "iommu_off": Message(
                title="IOMMU off",
                why=(
                    "Off avoids P2P redirection; on hosts with >= 256 CPUs AMD prefers IOMMU on "
                    "+ iommu=pt."
                ),
            ),
            "gpus_translated_iommu_domains": Message(title="GPUs in translated IOMMU domains"),
            "single_gpu_translated_iommu_domain": Message(
                title="Single GPU in a translated IOMMU domain"
            ),
            "iommu_off_more_255_cpus": Message(
                title="IOMMU off with more than 255 CPUs (x2APIC)",
                why=(
                    "x2APIC needs the IOMMU's interrupt remapping: with the IOMMU off the kernel "
                    "falls back to xAPIC and CPUs past 255 stay offline (AMD's guidance: IOMMU "
                    "enabled + iommu=pt)."
                ),
                fix="BIOS: enable IOMMU (AMD-Vi); boot with iommu=pt.",
            ),
        },
    ),
    Check(
        "firmware.bar1_large_bar",
        "BAR1 aperture (Above-4G decoding / Resizable BAR)",
        "bios",
        "A small BAR1 limits P2P and CPU access to VRAM.",
        "manual: check BIOS Above 4G Decoding = Enabled and Re-Size BAR Support = Enabled; RTX PRO Workstation "
        "cards: switch display mode to compute/headless.",
        bar1_large_bar,
        any_of=("smi_q_memory", "lspci_vvv"),  # lspci -vvv shows the region size too
        needs_gpu=True,
        aliases=("pcie.bar1",),
        variants={
            "large_bar1_above_4g_decoding": Message(
                title="Large BAR1 (Above-4G decoding and ReBAR effective)"
            ),
            "256_mib_bar1_on_multi": Message(title="256 MiB BAR1 on a multi-GPU box"),
            "bar1_smaller_framebuffer": Message(
                title="BAR1 smaller than the framebuffer",
                fix="manual: check BIOS Re-Size BAR Support.",
            ),
        },
    ),
    Check(
        "firmware.cppc",
        "ACPI CPPC exposed (prerequisite for amd-pstate)",
        "bios",
        "amd-pstate needs the ACPI _CPC objects; without them the kernel falls back to acpi-cpufreq.",
        "manual: BIOS > AMD CBS > NBIO/SMU Common Options > CPPC = Enabled.",
        cppc,
        sources=("lscpu_json", "sys_cppc"),
        applies=amd_host,
        optional=(*VM_SOURCES,),
        variants={
            "acpi_cppc_not_exposed_amd": Message(
                title="ACPI CPPC not exposed: amd-pstate cannot load"
            ),
            "acpi_cppc_exposed_bios_cppc": Message(title="ACPI CPPC exposed (BIOS CPPC on)"),
        },
    ),
    Check(
        "firmware.cstate_exposure",
        "C-states exposed by the firmware",
        "bios",
        "AMD keeps Global C-state Control = Auto and disables C2 from the OS; the policy rule is power.cpu_cstates.",
        "Policy lives in power.cpu_cstates: on AMD keep BIOS Global C-state Control = Auto and disable C2 from the OS "
        "(cpupower idle-set -d 2) where latency matters.",
        cstate_exposure,
        sources=("lscpu_json",),
        any_of=("sys_cpuidle", "cpupower_idle"),
        applies=in_vm,
        optional=(*VM_SOURCES,),
        variants={
            "deep_exposed": Message(
                title="Firmware exposes deep C-states ({deep}): BIOS Global C-state Control on"
            ),
            "shallow_only": Message(
                title=(
                    "Firmware exposes only shallow states: BIOS Global C-state Control likely "
                    "disabled"
                )
            ),
            "no_c_states_exposed_os": Message(title="No C-states exposed to the OS"),
        },
    ),
    Check(
        "firmware.df_pstates",
        "Data-fabric P-states (APBDIS), fixed SoC P-state, DF C-states",
        "bios",
        "DF clock/power transitions add latency to memory and I/O paths.",
        "BIOS > AMD CBS > NBIO > SMU Common Options > APBDIS = 1, Fixed SOC P-state = P0, DF C-states = Disabled.",
        df_pstates,
        sources=("lscpu_json",),
        applies=amd_host,
        optional=(*VM_SOURCES, "redfish_bios"),
        variants={
            "data_fabric_power_states_left": Message(
                title="Data-fabric power states left to the platform (auto)"
            ),
            "data_fabric_c_states_enabled": Message(
                title="Data-fabric C-states enabled (BIOS, read from the BMC)"
            ),
            "data_fabric_pinned_df_c": Message(
                title="Data fabric pinned: DF C-states off, fixed P-state"
            ),
            "data_fabric_p_states_manual": Message(title="Data-fabric P-states: manual check"),
        },
    ),
    Check(
        "firmware.socket_power",
        "Determinism / cTDP / package power: manual check",
        "bios",
        "'Performance determinism' equalises parts to a lower common level; AMD's GPU-server baseline uses Power.",
        "BIOS: Determinism Control = Manual, Determinism Slider = Power, cTDP and package power limit = maximum.",
        socket_power,
        sources=("lscpu_json",),
        applies=in_vm,
        optional=(*VM_SOURCES, "redfish_bios"),
        variants={
            "determinism_left_platform_auto_not": Message(
                title="Determinism left to the platform (auto) or not exposed"
            ),
            "power_determinism_bios_read_bmc": Message(
                title="Power determinism (BIOS, read from the BMC)"
            ),
            "performance_determinism_parts_equalised_common": Message(
                title="Performance determinism: parts equalised to a common, lower level"
            ),
        },
    ),
    Check(
        "firmware.memory_population",
        "DIMM channels populated and speed",
        "hardware",
        "Host memory bandwidth scales with populated channels; it bounds pinned staging, KV offload and cross-socket P2P.",
        "Populate every channel of every socket symmetrically with identical DIMMs.",
        memory_population,
        sources=("dmidecode_memory",),
        applies=in_vm,
        applies_first=True,  # a VM is "not applicable" even without dmidecode
        optional=(*VM_SOURCES,),
        variants={
            "memory_evenly_populated": Message(title="Memory evenly populated"),
            "memory_channels_not_fully_evenly": Message(
                title="Memory channels not fully or evenly populated"
            ),
            "dimms_configured_below_their_rated": Message(
                title="DIMMs configured below their rated speed",
                why="2 DIMMs per channel or BIOS memory settings lower the speed.",
            ),
        },
    ),
    Check(
        "firmware.xgmi_links",
        "Inter-socket xGMI link width/speed",
        "bios",
        "Dynamic link-width management narrows xGMI at low utilisation, hurting bursty cross-socket P2P.",
        "BIOS: xGMI Link Width Control = Manual, Force Link Width = x16, max link speed.",
        xgmi_links,
        sources=("lscpu_json",),
        applies=xgmi_applies,
        optional=("redfish_bios", "cpu_hypervisor_flag"),
        variants={
            "xgmi_width_managed_dynamically_auto": Message(
                title="xGMI width managed dynamically (auto)"
            ),
            "xgmi_forced_x16_bios_read": Message(
                title="xGMI forced to x16 (BIOS, read from the BMC)"
            ),
            "inter_socket_xgmi_links_manual": Message(
                title="Inter-socket xGMI links: manual check"
            ),
        },
    ),
    Check(
        "firmware.gpu_firmware_consistency",
        "VBIOS/InfoROM uniformity",
        "hardware",
        "GPUs of one SKU on different VBIOS/InfoROM releases can behave differently (clocks, P2P, errata).",
        "Flash the GPUs to one VBIOS release (vendor tool).",
        gpu_firmware_consistency,
        sources=("smi_query_fw",),
        needs_gpu=True,
        variants={
            "gpu_firmware_differs_between_gpus": Message(title="GPU firmware differs between GPUs"),
            "gpu_firmware_uniform": Message(title="GPU firmware uniform"),
        },
    ),
    *BIOS_CHECKS,  # --bmc: the BIOS settings read from the BMC (bios_checks.py)
)
