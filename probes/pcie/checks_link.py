"""Verdicts on the GPU links: capability, downtraining under load, AER errors, upstream port PM (pure, over facts)."""

from __future__ import annotations

from gpuaudit.probes.core.judge.checks import Ctx, Verdict, critical, info, ok, unknown, warning
from gpuaudit.probes.pcie.common import counts, first_upstream, no_gpu_found, why_unusable
from gpuaudit.probes.pcie.facts import PcieFacts
from gpuaudit.probes.pcie.parse import GEN_BY_SPEED, to_int


def _capability_from_smi(h: PcieFacts) -> tuple[list[str], list[str]]:
    rows, bad = [], []
    for s in h.smi:
        rows.append(f"Gen{s.gen_hostmax or '?'}/{s.gen_gpumax or '?'} x{s.width_max or '?'}")
        if s.gen_hostmax and s.gen_gpumax and s.gen_hostmax < s.gen_gpumax:
            bad.append(
                f"GPU {s.index} ({s.bus_id}): host max Gen{s.gen_hostmax} < GPU max Gen{s.gen_gpumax}"
            )
        if s.width_max is not None and s.width_max < 16:
            bad.append(f"GPU {s.index} ({s.bus_id}): max width x{s.width_max}")
    return rows, bad


def _capability_from_lspci(h: PcieFacts) -> tuple[list[str], list[str]]:
    rows, bad = [], []
    by = h.by_bdf()
    for g in [d for d in h.gpu_devs() if d.lnkcap_speed]:
        up = by.get(first_upstream(h, g.bdf) or "")
        rows.append(f"Gen{GEN_BY_SPEED.get(g.lnkcap_speed or 0, '?')} x{g.lnkcap_width}")
        if up and up.lnkcap_speed and up.lnkcap_speed < (g.lnkcap_speed or 0):
            bad.append(
                f"{g.bdf}: port {up.bdf} max {up.lnkcap_speed} GT/s < GPU {g.lnkcap_speed} GT/s"
            )
        if (g.lnkcap_width and g.lnkcap_width < 16) or (
            up and up.lnkcap_width and up.lnkcap_width < (g.lnkcap_width or 0)
        ):
            bad.append(f"{g.bdf}: width capped")
    return rows, bad


def link_capability(ctx: Ctx) -> Verdict:
    h: PcieFacts = ctx.f
    rows, bad = _capability_from_smi(h) if h.smi else _capability_from_lspci(h)
    if not rows:
        return (
            no_gpu_found(ctx, "smi_query_pcie", "lspci_vvv")
            if not h.gpu_bdfs
            else unknown(
                f"no GPU link capability in the data read (smi_query_pcie: {why_unusable(ctx, 'smi_query_pcie')})"
            )
        )
    if bad:
        return warning(
            "; ".join(bad[:8]),
            "host max generation = GPU max, x16",
            variant="gpu_link_capped_below_what",
        )
    return ok(counts(rows), variant="gpu_links_can_reach_full")


def link_current_under_load(ctx: Ctx) -> Verdict:
    h: PcieFacts = ctx.f
    rows = h.smi_rows()
    if not rows:
        return unknown("nvidia-smi listed no GPU")
    busy = [s for s in rows if s.util is not None and s.util >= 50]
    down_busy = [
        s
        for s in busy
        if (s.gen_cur and s.gen_gpumax and s.gen_cur < min(s.gen_gpumax, s.gen_hostmax or 99))
        or (s.width_cur and s.width_max and s.width_cur < s.width_max)
    ]
    idle_down = [
        s for s in rows if s not in busy and s.gen_cur and s.gen_gpumax and s.gen_cur < s.gen_gpumax
    ]
    if not down_busy and not any(s.gen_cur and s.gen_gpumax for s in rows):
        return unknown("nvidia-smi gave no current and maximum link generation for any GPU")
    if down_busy:
        return critical(
            "; ".join(
                f"GPU {s.index}: Gen{s.gen_cur} x{s.width_cur} of Gen{s.gen_gpumax} x{s.width_max}"
                f" at {s.util:.0f}% util"
                for s in down_busy
            ),
            "full generation and width under load",
            variant="gpu_link_downtrained_busy",
        )
    if idle_down and not busy:
        return info(
            f"{len(idle_down)} idle GPU(s) at Gen{min(s.gen_cur or 0 for s in idle_down)} (normal idle downclock);"
            " no verdict without load",
            "judged only while utilisation >= 50%",
            variant="gpus_idle_links_power_save",
        )
    return ok(
        f"{len(busy)} busy GPU(s) at full link" if busy else "GPUs idle, links at full speed",
        variant="full_speed_under_load" if busy else "full_speed",
    )


def _aer_from_sysfs(h: PcieFacts) -> tuple[bool, list[str], list[str]]:
    seen = False
    fatal: list[str] = []
    corr: list[str] = []
    for s in h.sysfs:
        for vals, who in ((s.values, s.bdf), (s.upstream_values, s.upstream)):
            for k, v in vals.items():
                if not k.startswith("aer_dev_") or "/TOTAL_" not in k:
                    continue
                seen = True
                if (n := to_int(v)) and n > 0:
                    (corr if k.startswith("aer_dev_correctable") else fatal).append(
                        f"{who} {k.split('/')[-1]}={n}"
                    )
    return seen, fatal, corr


def _aer_from_lspci(h: PcieFacts) -> tuple[bool, list[str], list[str]]:
    blocks = [d for d in h.gpu_devs() if d.ue_status is not None or d.ce_status is not None]
    fatal = [f"{d.bdf} UESta {' '.join(d.ue_status)}" for d in blocks if d.ue_status]
    corr = [f"{d.bdf} CESta {' '.join(d.ce_status)}" for d in blocks if d.ce_status]
    return bool(blocks), fatal, corr


def link_errors(ctx: Ctx) -> Verdict:
    h: PcieFacts = ctx.f
    seen, fatal, corr = _aer_from_sysfs(h)
    if not seen and ctx.usable("lspci_vvv"):
        seen, fatal, corr = _aer_from_lspci(h)
    if not seen:
        return (
            no_gpu_found(ctx, "sys_pci_nvidia", "lspci_vvv")
            if not h.gpu_bdfs
            else unknown(
                f"no AER counters in sysfs; lspci: {why_unusable(ctx, 'lspci_vvv') if not ctx.usable('lspci_vvv') else 'no AER status in the GPU blocks'}"
            )
        )
    if fatal:
        return critical(
            "; ".join(sorted(set(fatal))[:8]),
            "0",
            variant="uncorrectable_pcie_errors_on_gpu",
        )
    if corr:
        return info(
            "; ".join(sorted(set(corr))[:8]),
            "0, or not growing between two audits",
            variant="correctable_pcie_errors_recorded_since",
        )
    return ok("AER counters 0", variant="no_pcie_errors_on_gpu")


def port_pm(ctx: Ctx) -> Verdict:
    h: PcieFacts = ctx.f
    ctl = {
        s.upstream: v
        for s in h.sysfs
        if s.upstream and (v := s.upstream_values.get("power/control"))
    }
    if not ctl:
        return (
            no_gpu_found(ctx, "sys_pci_nvidia")
            if not h.gpu_bdfs
            else unknown("no upstream power/control read")
        )
    auto = sorted(k for k, v in ctl.items() if v == "auto")
    if auto and not (h.cmdline and "pcie_port_pm=off" in h.cmdline):
        return info(
            f"power/control=auto on {len(auto)} port(s): {', '.join(auto[:4])}",
            "on (or pcie_port_pm=off) if AER 'Surprise Link Down' events appear",
            variant="gpu_upstream_ports_may_runtime",
        )
    return ok(f"{len(ctl)} port(s) on", variant="gpu_upstream_ports_stay_powered")
