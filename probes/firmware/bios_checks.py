"""Firmware checks judged from the BIOS settings the BMC reports (--bmc; bios.py, bios_map.py).

Without --bmc the BMC records are absent: the new checks say "not applicable: no --bmc" and the older manual
checks keep their manual text. A BMC record that came back unusable makes the check unknown, naming it.
Each recommendation says for which workload it holds (sources disagree: NPS1 vs NPS4, Power vs Performance).
"""

from __future__ import annotations

from gpuaudit.probes.core.judge.checks import (
    HOST,
    Check,
    Ctx,
    Message,
    Verdict,
    info,
    ok,
    source_problem,
    unknown,
    warning,
)
from gpuaudit.probes.core.parsers.cpu import is_deep_cstate
from gpuaudit.probes.firmware.bios import BiosSetting, describe, label
from gpuaudit.probes.firmware.facts import FirmwareFacts

BIOS = ("host", "redfish_bios")
INFERENCE = "for a GPU inference host (latency-bound decode)"


def bmc_record_problem(ctx: Ctx, command_id: str) -> str | None:
    rec = ctx.outputs.get(ctx.role or "host", {}).get(command_id)
    return source_problem(rec, ctx.f) if rec is not None else "not collected"


def no_bmc(ctx: Ctx) -> str | None:
    """Not applicable when the audit did not read the BMC (no --bmc, or a recording without BMC records)."""
    if ctx.outputs.get(ctx.role or "host", {}).get("redfish_bios") is None:
        return "no --bmc: the BIOS settings were not read from the BMC"
    return None


def settings(ctx: Ctx) -> dict[str, BiosSetting] | None:
    """The normalised settings, or None when the BMC was not read or its Bios record is unusable."""
    rec = ctx.outputs.get(ctx.role or "host", {}).get("redfish_bios")
    if rec is None or source_problem(rec, ctx.f) is not None:
        return None
    h: FirmwareFacts = ctx.f
    return h.bios_settings


def _unusable(ctx: Ctx, command_id: str = "redfish_bios") -> Verdict:
    return unknown(
        f"{command_id}: {bmc_record_problem(ctx, command_id)}", evidence=(("host", command_id),)
    )


def _shown(s: dict[str, BiosSetting], *keys: str) -> str:
    got = [f"{label(k)}: {describe(s[k])}" for k in keys if k in s]
    return "; ".join(got)


# --------------------------------------------------------------------------- new checks


def bios_settings(ctx: Ctx) -> Verdict:
    h: FirmwareFacts = ctx.f
    s = settings(ctx)
    if s is None:
        return _unusable(ctx)
    sysinfo = " ".join(
        v for v in (h.bmc_system.get("manufacturer"), h.bmc_system.get("model")) if v
    )
    mapped = ", ".join(f"{k}={v.value or '?'} ({v.raw_name})" for k, v in sorted(s.items()))
    obs = (
        f"{sysinfo or 'BMC'}: {len(s)} setting(s) normalised [{mapped or 'none'}]; "
        f"{len(h.bios_unmapped)} attribute(s) not in the map, kept raw"
    )
    rec = ctx.outputs.get(ctx.role or "host", {}).get("redfish_bios")
    if rec is not None and rec.stderr.startswith(
        "illustrative"
    ):  # the demo's stand-in capture says so
        obs = "ILLUSTRATIVE, not this host's BMC: " + obs
    if h.bios_unmapped:
        obs += (
            " ("
            + ", ".join(h.bios_unmapped[:12])
            + (", ..." if len(h.bios_unmapped) > 12 else "")
            + ")"
        )
    return info(obs, variant="bios_settings_read_bmc", evidence=(BIOS,))


def bios_pending(ctx: Ctx) -> Verdict:
    h: FirmwareFacts = ctx.f
    if (problem := bmc_record_problem(ctx, "redfish_bios_pending")) is not None:
        return unknown(
            f"redfish_bios_pending: {problem}", evidence=(("host", "redfish_bios_pending"),)
        )
    if not h.bios_pending:
        return ok(
            "the pending settings object holds no change",
            variant="no_pending_bios_change",
            evidence=(("host", "redfish_bios_pending"),),
        )
    changes = "; ".join(f"{k}: {cur} -> {new}" for k, (cur, new) in h.bios_pending.items())
    return warning(
        f"{len(h.bios_pending)} BIOS setting(s) set but not applied: {changes}",
        "pending settings applied (or cleared)",
        variant="bios_changes_pending_reboot_applies",
        evidence=(("host", "redfish_bios_pending"), BIOS),
    )


def nps_vs_numa(ctx: Ctx) -> Verdict:
    h: FirmwareFacts = ctx.f
    s = settings(ctx)
    if s is None:
        return _unusable(ctx)
    nps = s.get("nps")
    if nps is None or nps.value is None or not nps.value.startswith("NPS"):
        return info(
            f"BIOS NPS {describe(nps) if nps else 'not exposed by this BMC'}; kernel: {len(h.numa_nodes)} node(s)",
            variant="bios_nps_not_stated_auto",
            evidence=(BIOS,),
        )
    want = int(nps.value[3:] or 0) * (h.sockets or 1)
    got = len(h.numa_nodes)
    obs = f"BIOS {describe(nps)} × {h.sockets or 1} socket(s) = {max(want, 1)} node(s); kernel sees {got}"
    l3 = s.get("l3_as_numa")
    if l3 is not None and l3.value == "enabled":
        return info(obs + "; L3-as-NUMA enabled adds nodes", variant="nps_vs_numa_nodes_l3")
    if want == got or (want == 0 and got == 1):
        return ok(obs, variant="nodes_match_nps", evidence=(BIOS,))
    return warning(
        obs,
        f"{want} node(s)",
        variant="nodes_differ_from_nps",
        evidence=(BIOS, ("host", "sys_numa")),
    )


def cstates_vs_os(ctx: Ctx) -> Verdict:
    h: FirmwareFacts = ctx.f
    s = settings(ctx)
    if s is None:
        return _unusable(ctx)
    g = s.get("global_cstate")
    states = [n.split(":")[0] for n in h.idle_state_names]
    deep = [
        n.split(":")[0]
        for n in h.idle_state_names
        if is_deep_cstate(
            n.split(":")[0],
            int(n.split(":")[1]) if n.split(":")[1:] and n.split(":")[1].isdigit() else None,
            h.cpu_vendor,
        )
    ]
    obs = f"BIOS {describe(g) if g else 'global C-state control not exposed'}; OS states: {', '.join(states) or 'none'}"
    if g is None or g.value not in ("enabled", "disabled"):
        return info(
            obs,
            variant="bios_c_state_control_auto",
            evidence=(BIOS,),
        )
    if not states:
        return unknown(obs + ": no OS idle state read to compare with", evidence=(BIOS,))
    if g.value == "disabled" and deep:
        return warning(
            obs,
            "no deep C-state listed by the OS",
            variant="bios_says_c_states_disabled",
            evidence=(BIOS, ("host", "sys_cpuidle")),
        )
    if g.value == "enabled" and states and not deep:
        return info(
            obs,
            variant="bios_c_states_enabled_os",
        )
    return ok(obs, variant="bios_c_state_control_os", evidence=(BIOS,))


def iommu_vs_cmdline(ctx: Ctx) -> Verdict:
    h: FirmwareFacts = ctx.f
    s = settings(ctx)
    if s is None:
        return _unusable(ctx)
    io = s.get("iommu")
    cmd = " ".join(t for t in (h.cmdline or "").split() if "iommu" in t) or "no iommu= option"
    units = len(h.iommu_units or [])
    obs = f"BIOS {describe(io) if io else 'IOMMU setting not exposed'}; cmdline: {cmd}; kernel IOMMU units: {units}"
    if io is None or io.value not in ("enabled", "disabled"):
        return info(obs, variant="bios_iommu_auto_not_exposed", evidence=(BIOS,))
    asks = any(
        t in (h.cmdline or "") for t in ("amd_iommu=on", "intel_iommu=on", "iommu=pt", "iommu=on")
    )
    if io.value == "disabled" and (units or asks):
        return warning(
            obs,
            "BIOS IOMMU enabled when the kernel is asked to use it",
            variant="kernel_iommu_options_units_bios",
            evidence=(BIOS, ("host", "proc_cmdline"), ("host", "iommu_state")),
        )
    if io.value == "enabled" and not units:
        return info(
            obs,
            variant="bios_iommu_enabled_kernel_shows",
        )
    return ok(obs, variant="bios_iommu_setting_kernel_agree", evidence=(BIOS,))


def aspm_vs_lnkctl(ctx: Ctx) -> Verdict:
    h: FirmwareFacts = ctx.f
    s = settings(ctx)
    if s is None:
        return _unusable(ctx)
    a = s.get("aspm")
    links = (
        ", ".join(f"{state} ×{n}" for state, n in sorted(h.link_aspm.items())) or "no LnkCtl read"
    )
    on = sum(n for state, n in h.link_aspm.items() if state.lower().endswith("enabled"))
    obs = f"BIOS {describe(a) if a else 'ASPM setting not exposed'}; links (LnkCtl): {links}"
    ev = (BIOS, ("host", "lspci_vvv"))
    if a is None or a.value not in ("enabled", "disabled"):
        return info(obs, variant="bios_aspm_auto_not_exposed", evidence=ev)
    if not h.link_aspm:
        return unknown(
            obs + " (lspci -vvv shows no LnkCtl: run as root to read the capabilities)",
            evidence=ev,
        )
    if a.value == "disabled" and on:
        return warning(
            obs,
            "ASPM disabled on every link",
            variant="bios_aspm_disabled_link_run",
            on=on,
            evidence=ev,
        )
    if a.value == "enabled" and h.link_aspm and not on:
        return info(obs, variant="bios_aspm_enabled_os_keeps", evidence=ev)
    return ok(obs, variant="bios_aspm_setting_links_lnkctl", evidence=ev)


# --------------------------------------------------------------------------- the manual checks, judged


def df_pstates_from_bios(ctx: Ctx) -> Verdict | None:
    """firmware.df_pstates from the BMC's settings; None: not read (the manual text stays)."""
    s = settings(ctx)
    if s is None or not any(k in s for k in ("df_cstates", "apbdis", "fixed_soc_pstate")):
        return None
    obs = _shown(s, "df_cstates", "apbdis", "fixed_soc_pstate")
    exp = f"DF C-states disabled, APBDIS 1 / fixed SoC P0 ({INFERENCE}; power-capped or idle-heavy hosts: auto)"
    dfc = s.get("df_cstates")
    fixed = (s.get("apbdis") and s["apbdis"].value == "enabled") or (
        s.get("fixed_soc_pstate") and s["fixed_soc_pstate"].value == "P0"
    )
    if dfc is not None and dfc.value == "enabled":
        return warning(
            obs,
            exp,
            variant="data_fabric_c_states_enabled",
            evidence=(BIOS,),
        )
    if dfc is not None and dfc.value == "disabled" and fixed:
        return ok(obs, exp, variant="data_fabric_pinned_df_c", evidence=(BIOS,))
    return info(obs, exp, variant="data_fabric_power_states_left", evidence=(BIOS,))


def socket_power_from_bios(ctx: Ctx) -> Verdict | None:
    s = settings(ctx)
    if s is None or not any(
        k in s for k in ("determinism", "determinism_control", "ppt_w", "power_profile")
    ):
        return None
    obs = _shown(s, "determinism_control", "determinism", "ppt_control", "ppt_w", "power_profile")
    exp = (
        f"Determinism = Power {INFERENCE} (AMD's GPU-server baseline); Performance only where equal speed "
        "across parts matters (multi-node lock-step jobs)"
    )
    det = s.get("determinism")
    if det is not None and det.value == "power":
        return ok(obs, exp, variant="power_determinism_bios_read_bmc", evidence=(BIOS,))
    if det is not None and det.value == "performance":
        return info(
            obs,
            exp,
            variant="performance_determinism_parts_equalised_common",
            evidence=(BIOS,),
        )
    return info(obs, exp, variant="determinism_left_platform_auto_not", evidence=(BIOS,))


def xgmi_from_bios(ctx: Ctx) -> Verdict | None:
    s = settings(ctx)
    if s is None or not any(k in s for k in ("xgmi_width", "xgmi_max_width", "xgmi_width_control")):
        return None
    obs = _shown(s, "xgmi_width_control", "xgmi_width", "xgmi_max_width")
    exp = "forced x16 at maximum speed (cross-socket P2P on a dual-socket GPU host)"
    if any(s.get(k) and s[k].value == "x16" for k in ("xgmi_width",)):
        return ok(obs, exp, variant="xgmi_forced_x16_bios_read", evidence=(BIOS,))
    return info(obs, exp, variant="xgmi_width_managed_dynamically_auto", evidence=(BIOS,))


BIOS_CHECKS: tuple[Check, ...] = (
    Check(
        "firmware.bios_settings",
        "BIOS settings read from the BMC (normalised beside the raw attribute names)",
        "bios",
        "The BMC's Redfish Bios resource states the BIOS settings the OS cannot read (determinism, NPS, DF "
        "C-states, xGMI, ASPM, Above-4G...).",
        "Compare nodes of one pool setting by setting (gpuaudit-tui fleet); unknown names stay raw.",
        bios_settings,
        roles=HOST,
        applies=no_bmc,
        optional=(
            "redfish_bios",
            "redfish_system",
        ),
        variants={"bios_settings_read_bmc": Message(title="BIOS settings read from the BMC")},
    ),
    Check(
        "firmware.bios_pending",
        "BIOS changes pending (set, not applied until a reboot)",
        "bios",
        "A change set through the BMC or setup applies at the next boot only.",
        "Reboot to apply, or clear the pending settings object.",
        bios_pending,
        roles=HOST,
        applies=no_bmc,
        optional=("redfish_bios_pending", "redfish_bios"),
        variants={
            "bios_changes_pending_reboot_applies": Message(
                title="BIOS changes pending: a reboot applies them",
                why=(
                    "Settings changed through the BMC or setup take effect at the next boot; "
                    "until then the running system still has the old values (the classic 'I "
                    "changed it and nothing happened')."
                ),
                fix=(
                    "Reboot the host in a maintenance window to apply them, or clear the pending "
                    "object if unintended."
                ),
            ),
            "no_pending_bios_change": Message(title="No pending BIOS change"),
        },
    ),
    Check(
        "firmware.bios_nps_vs_numa",
        "BIOS NPS vs the kernel's NUMA nodes",
        "bios",
        "The BIOS NPS setting and the nodes the kernel built should agree; a mismatch is a pending change or a "
        "boot option.",
        "Check firmware.bios_pending and numa= on the command line.",
        nps_vs_numa,
        sources=("sys_numa", "lscpu_json"),
        roles=HOST,
        applies=no_bmc,
        optional=("redfish_bios",),
        variants={
            "nodes_differ_from_nps": Message(
                title="The kernel's NUMA nodes do not match the BIOS NPS setting",
                why=(
                    "A changed NPS that is still pending, numa=off on the command line, or a "
                    "memory population the mode cannot use leaves the kernel with another "
                    "topology than the BIOS states."
                ),
                fix=(
                    "Check firmware.bios_pending (a reboot applies pending changes) and "
                    "/proc/cmdline for numa=off."
                ),
            ),
            "bios_nps_not_stated_auto": Message(
                title="BIOS NPS not stated (auto or not exposed): nothing to cross-check"
            ),
            "nps_vs_numa_nodes_l3": Message(title="NPS vs NUMA nodes: L3 as NUMA on"),
            "nodes_match_nps": Message(title="The kernel's NUMA nodes match the BIOS NPS setting"),
        },
    ),
    Check(
        "firmware.bios_cstates_vs_os",
        "BIOS C-state control vs the OS's idle states",
        "bios",
        "Global C-state control decides which idle states the OS can use.",
        "Policy lives in power.cpu_cstates; a mismatch points at a pending change.",
        cstates_vs_os,
        sources=("lscpu_json",),
        any_of=("sys_cpuidle", "cpupower_idle"),
        roles=HOST,
        applies=no_bmc,
        optional=("redfish_bios",),
        variants={
            "bios_c_state_control_os": Message(
                title="BIOS C-state control and the OS's idle states agree"
            ),
            "bios_c_state_control_auto": Message(
                title="BIOS C-state control auto / not exposed: the OS list decides"
            ),
            "bios_says_c_states_disabled": Message(
                title="BIOS says C-states disabled but the OS lists deep states",
                why=(
                    "The BIOS value the BMC reports is not what runs: a pending change, or "
                    "another knob (Dell Custom profile, Lenovo operating mode) overrides it."
                ),
                fix="Check firmware.bios_pending; policy stays with power.cpu_cstates.",
            ),
            "bios_c_states_enabled_os": Message(
                title=(
                    "BIOS C-states enabled, the OS lists only shallow states (idle driver or "
                    "cmdline limits)"
                )
            ),
        },
    ),
    Check(
        "firmware.bios_iommu_vs_cmdline",
        "BIOS IOMMU vs /proc/cmdline and the kernel's IOMMU units",
        "bios",
        "iommu=pt and amd_iommu/intel_iommu options need the BIOS IOMMU; the kernel's units show what booted.",
        "Make the BIOS and the kernel options agree (firmware.iommu_mode has the policy).",
        iommu_vs_cmdline,
        sources=("proc_cmdline", "iommu_state"),
        roles=HOST,
        applies=no_bmc,
        optional=("redfish_bios",),
        variants={
            "bios_iommu_setting_kernel_agree": Message(
                title="BIOS IOMMU setting and the kernel agree"
            ),
            "bios_iommu_auto_not_exposed": Message(
                title="BIOS IOMMU auto / not exposed: the kernel's view decides"
            ),
            "kernel_iommu_options_units_bios": Message(
                title="Kernel IOMMU options or units while the BIOS says IOMMU disabled",
                why=(
                    "iommu=pt / amd_iommu=on need the BIOS IOMMU on; a mismatch means a pending "
                    "change or a setting the BMC reports differently from what booted."
                ),
                fix=(
                    "Check firmware.bios_pending; enable IOMMU in the BIOS or drop the kernel "
                    "options."
                ),
            ),
            "bios_iommu_enabled_kernel_shows": Message(
                title="BIOS IOMMU enabled, the kernel shows no IOMMU unit (disabled on the cmdline?)"
            ),
        },
    ),
    Check(
        "firmware.bios_aspm_vs_lnkctl",
        "BIOS ASPM vs the links' LnkCtl",
        "bios",
        "The BIOS ASPM setting and what each link's LnkCtl shows should agree; the OS can turn ASPM on.",
        "Keep ASPM off on GPU/NIC links of an inference host (pcie_aspm=off or the performance policy).",
        aspm_vs_lnkctl,
        sources=("lspci_vvv",),
        roles=HOST,
        applies=no_bmc,
        optional=("redfish_bios",),
        variants={
            "bios_aspm_setting_links_lnkctl": Message(
                title="BIOS ASPM setting and the links' LnkCtl agree"
            ),
            "bios_aspm_auto_not_exposed": Message(
                title="BIOS ASPM auto / not exposed: the links' LnkCtl decides"
            ),
            "bios_aspm_disabled_link_run": Message(
                title="BIOS ASPM disabled but {on} link(s) run with ASPM enabled",
                why=(
                    "The OS turned ASPM on (pcie_aspm=force, or a powersave policy over links "
                    "the BIOS left capable): L1 exit latency on GPU and NIC links adds to every "
                    "transfer that wakes them."
                ),
                fix=(
                    "Boot with pcie_aspm=off or set /sys/module/pcie_aspm/parameters/policy to "
                    "performance."
                ),
            ),
            "bios_aspm_enabled_os_keeps": Message(
                title="BIOS ASPM enabled, the OS keeps every link's ASPM off"
            ),
        },
    ),
)
