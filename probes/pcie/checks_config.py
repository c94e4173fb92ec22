"""Verdicts on config-space settings (MRRS, MPS, ACS, ASPM, tags) and the GPU topology (pure, over facts)."""

from __future__ import annotations

from gpuaudit.probes.core.judge.checks import Ctx, Verdict, critical, info, ok, unknown, warning
from gpuaudit.probes.core.judge.combiners import acs_redirects
from gpuaudit.probes.pcie.common import counts, first_upstream, no_gpu_found, why_unusable
from gpuaudit.probes.pcie.facts import PcieFacts


def max_read_req(ctx: Ctx) -> Verdict:
    h: PcieFacts = ctx.f
    known = [d for d in h.gpu_devs() if d.devctl_mrrs]
    if not known:
        return (
            no_gpu_found(ctx, "lspci_vvv")
            if not h.gpu_bdfs
            else unknown("no DevCtl MaxReadReq in the lspci GPU blocks")
        )
    worst = min(d.devctl_mrrs or 0 for d in known)
    obs = "MaxReadReq " + counts([f"{d.devctl_mrrs} B" for d in known])
    lowest = next(d for d in known if d.devctl_mrrs == worst)
    ev = (
        (("host", "lspci_vvv", lowest.lines["devctl_mrrs"]),)
        if "devctl_mrrs" in lowest.lines
        else ()
    )
    bus_perf = bool(h.cmdline and "pcie_bus_perf" in h.cmdline)
    if bus_perf or all(d.devctl_mrrs == d.devctl_mps for d in known):
        obs += "; MRRS equals MPS on every GPU" + (
            " and pci=pcie_bus_perf is set (it caps MRRS at MPS)" if bus_perf else ""
        )
    if worst <= 512:
        return warning(obs, "4096 bytes", variant="gpu_maxreadreq_bytes", mrrs=worst, evidence=ev)
    if worst < 4096:
        return info(
            obs, "4096 bytes", variant="gpu_maxreadreq_bytes_can_raised", mrrs=worst, evidence=ev
        )
    return ok(obs, variant="gpu_maxreadreq_4096_bytes", evidence=ev)


def _mps_problems(h: PcieFacts) -> list[str]:
    by = h.by_bdf()
    bad: list[str] = []
    for g in [d for d in h.gpu_devs() if d.devctl_mps]:
        ups = [by[p] for p in h.parents.get(g.bdf, []) if p in by]
        caps = [x.devcap_mps for x in [g, *ups] if x.devcap_mps]
        if caps and (g.devctl_mps or 0) < min(caps):
            bad.append(f"{g.bdf}: MPS {g.devctl_mps} B below the path's supported {min(caps)} B")
        if mism := [u for u in ups if u.devctl_mps and u.devctl_mps != g.devctl_mps]:
            bad.append(f"{g.bdf}: MPS {g.devctl_mps} B vs {mism[0].bdf} {mism[0].devctl_mps} B")
    return bad


def max_payload(ctx: Ctx) -> Verdict:
    h: PcieFacts = ctx.f
    gpus = [d for d in h.gpu_devs() if d.devctl_mps]
    if not gpus:
        return (
            no_gpu_found(ctx, "lspci_vvv")
            if not h.gpu_bdfs
            else unknown("no DevCtl MaxPayload in the lspci GPU blocks")
        )
    if bad := _mps_problems(h):
        return warning(
            "; ".join(bad[:6]),
            "MPS = min(DevCap) along each GPU path, equal on every hop",
            variant="max_payload_size_below_capability",
        )
    obs = "MaxPayload " + counts([f"{d.devctl_mps} B (cap {d.devcap_mps} B)" for d in gpus])
    return ok(
        obs + " (256 B is the usual NVIDIA GPU maximum)", variant="gpu_max_payload_size_consistent"
    )


def fewer_than_two_gpus(ctx: Ctx) -> str | None:
    h: PcieFacts = ctx.f
    return "fewer than two GPUs" if len(h.gpu_bdfs) == 1 else None


def acs(ctx: Ctx) -> Verdict:
    h: PcieFacts = ctx.f
    if not h.gpu_bdfs:
        return no_gpu_found(ctx, "lspci_vvv")
    by = h.by_bdf()
    bridges = {p for g in h.gpu_bdfs for p in h.parents.get(g, []) if p in by}
    if not bridges:
        return unknown(
            f"no bridge found above the GPUs (lspci_tv: {why_unusable(ctx, 'lspci_tv')}; "
            "no `Bus: secondary=` line leads to them)"
        )
    redir = [by[b] for b in sorted(bridges) if acs_redirects(by[b].acs_ctl)]
    via = f" (paths from {h.tree_source})" if h.tree_source != "lspci -tv" else ""
    if not redir:
        return ok(
            f"{len(bridges)} bridge(s) on GPU paths, ReqRedir-/CmpltRedir- or no ACS capability{via}",
            variant="no_acs_redirect_on_gpu",
        )
    obs = (
        "ReqRedir+/CmpltRedir+ on "
        + ", ".join(f"{d.bdf} ({d.port_type or 'bridge'})" for d in redir[:8])
        + via
    )
    expected = "ACS redirect off on the bridges between GPUs used for P2P"
    ev = tuple(("host", "lspci_vvv", d.lines["acs_ctl"]) for d in redir[:1] if "acs_ctl" in d.lines)
    if any(d.port_type == "Downstream Port" for d in redir):
        return critical(obs, expected, variant="acs_redirect_on_switch_ports", evidence=ev)
    return warning(obs, expected, variant="acs_redirect_on_bridges_between", evidence=ev)


def _aspm_on_links(h: PcieFacts) -> list[str]:
    by = h.by_bdf()
    on = []
    for g in h.gpu_devs():
        for d in [g] + ([by[u]] if (u := first_upstream(h, g.bdf)) in by else []):
            if d.aspm_ctl and "Enabled" in d.aspm_ctl:
                on.append(f"{d.bdf}: ASPM {d.aspm_ctl}")
    return sorted(set(on))


def aspm(ctx: Ctx) -> Verdict:
    h: PcieFacts = ctx.f
    lspci = ctx.usable("lspci_vvv")
    on = _aspm_on_links(h) if lspci else []
    pol_bad = h.aspm_policy in ("powersave", "powersupersave")
    if on or pol_bad:
        return warning(
            "; ".join(on[:8] + ([f"policy {h.aspm_policy}"] if pol_bad else [])),
            "ASPM Disabled on GPU links, policy default/performance",
            variant="pcie_link_power_management_on",
        )
    policy = h.aspm_policy or f"unknown ({why_unusable(ctx, 'aspm_policy')})"
    if not lspci:
        return unknown(
            f"policy {policy}; per-link LnkCtl: lspci_vvv: {why_unusable(ctx, 'lspci_vvv')}"
        )
    if not h.gpu_bdfs:
        return no_gpu_found(ctx, "lspci_vvv")
    if not any(g.aspm_ctl for g in h.gpu_devs()):
        return unknown(f"policy {policy}; no LnkCtl ASPM field in any GPU block")
    return ok(f"LnkCtl ASPM Disabled; policy {policy}", variant="aspm_off_on_gpu_links")


def tags_ordering(ctx: Ctx) -> Verdict:
    h: PcieFacts = ctx.f
    gpus = h.gpu_devs()
    if not gpus:
        return no_gpu_found(ctx, "lspci_vvv") if not h.gpu_bdfs else unknown("no lspci GPU blocks")
    return info(
        counts(
            [
                f"10BitTagReq cap{'+' if d.tag10_req_cap else '-'}/en{'+' if d.tag10_req_en else '-'},"
                f" RlxdOrd{'+' if d.relaxed_ordering else '-'}"
                for d in gpus
            ]
        )
    )


def topology_map(ctx: Ctx) -> Verdict:
    h: PcieFacts = ctx.f
    if not h.gpu_bdfs:
        return no_gpu_found(ctx, "lspci_tv", "lspci_vvv", "sys_pci_nvidia")
    node = {s.bdf: s.values.get("numa_node") for s in h.sysfs}
    roots: dict[str, list[str]] = {}
    for g in h.gpu_bdfs:
        path = h.parents.get(g) or []
        roots.setdefault(path[-1] if path else "?", []).append(g)
    if "?" in roots and len(roots) == 1:
        return unknown(
            f"{len(h.gpu_bdfs)} GPU(s), path to the root port unknown: lspci_tv: {why_unusable(ctx, 'lspci_tv')}; "
            f"lspci_vvv: {why_unusable(ctx, 'lspci_vvv') if not ctx.usable('lspci_vvv') else 'no Bus: lines lead to the GPUs'}"
        )
    shared = {r: gs for r, gs in roots.items() if r != "?" and len(gs) > 1}
    lines = [
        f"{g} via {' > '.join(reversed(h.parents.get(g) or ['?']))} (node {node.get(g) or '?'})"
        for g in h.gpu_bdfs
    ]
    return info(
        "; ".join(lines[:8])
        + (f"; shared uplinks: {', '.join(shared)}" if shared else "")
        + (f" (paths from {h.tree_source})" if h.tree_source != "lspci -tv" else ""),
        variant="shared_uplink" if shared else "gpus_on_root_ports",
        n_gpu_bdfs=len(h.gpu_bdfs),
        n_roots=len([r for r in roots if r != "?"]),
    )
