"""PCIe probe: link capability and state, MRRS/MPS, ACS, ASPM, port PM, AER, 10-bit tags, topology.

Config-space registers come from `lspci -vvv` (root: without it capabilities read `<access
denied>` and the checks that need them say `unknown (needs root)`); link speed/width and AER
counters also come from sysfs and nvidia-smi without root. Link speed is judged against
nvidia-smi's maxima and the GPU's utilisation: an idle GPU at 2.5 GT/s is power saving, not a fault.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pydantic import BaseModel

from gpuaudit.probes.core.models import Finding, Role
from gpuaudit.probes.core.parsers.lspci import PciDevice, normalize_bdf, parse_lspci_tree, parse_lspci_vvv, tree_path
from gpuaudit.probes.core.parsers.system import parse_bracketed_choice
from gpuaudit.probes.core.parsing import first_line
from gpuaudit.probes.core.sources import use
from gpuaudit.probes.core.spec import FactsByTarget, Outputs, Probe, finding, usable_stdout

PROBE_ID = "pcie"
SMI_PCIE_FIELDS = ("index", "pci.bus_id", "utilization.gpu", "pcie.link.gen.gpucurrent", "pcie.link.gen.gpumax",
                   "pcie.link.gen.hostmax", "pcie.link.width.current", "pcie.link.width.max")
GEN_BY_SPEED = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}

COMMANDS = use('lspci_vvv', 'lspci_tv', 'sys_pci_nvidia', 'smi_query_pcie', 'aspm_policy', 'proc_cmdline')


class PciDev(BaseModel, frozen=True):
    bdf: str
    description: str = ""
    port_type: str | None = None
    is_gpu: bool = False
    devcap_mps: int | None = None
    devctl_mps: int | None = None
    devctl_mrrs: int | None = None
    lnkcap_speed: float | None = None
    lnkcap_width: int | None = None
    lnksta_speed: float | None = None
    lnksta_width: int | None = None
    speed_downgraded: bool = False
    width_downgraded: bool = False
    aspm_ctl: str | None = None
    acs_ctl: dict[str, bool] | None = None
    tag10_req_cap: bool | None = None
    tag10_req_en: bool | None = None
    relaxed_ordering: bool | None = None
    ue_status: list[str] | None = None
    """AER UESta bits set; None = no UESta line read (no AER capability or access denied)."""
    ce_status: list[str] | None = None
    access_denied: bool = False


class SmiLink(BaseModel, frozen=True):
    index: str
    bus_id: str
    util: float | None = None
    gen_cur: int | None = None
    gen_gpumax: int | None = None
    gen_hostmax: int | None = None
    width_cur: int | None = None
    width_max: int | None = None


class SysPci(BaseModel, frozen=True):
    bdf: str
    upstream: str | None = None
    values: dict[str, str] = {}
    upstream_values: dict[str, str] = {}


class PcieFacts(BaseModel, frozen=True):
    devices: list[PciDev] = []
    gpu_bdfs: list[str] = []
    """GPU functions (display/3D class) from lspci, sysfs or nvidia-smi, normalised BDFs."""
    parents: dict[str, list[str]] = {}
    """GPU BDF -> upstream bridges from its parent up to the root port."""
    smi: list[SmiLink] = []
    sysfs: list[SysPci] = []
    aspm_policy: str | None = None
    cmdline: str | None = None
    lspci_access_denied: bool = False
    gpu_sources: list[str] = []
    """GPU sources (lspci_vvv, sys_pci_nvidia, smi_query_pcie) that were read and searched for GPUs."""
    problems: dict[str, str] = {}


_SYS_LINE = re.compile(r"^(/sys/\S*?/([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]))/([\w/]+):(.*)$")


def parse_sys_pci(text: str) -> list[SysPci]:
    """Output of the `sys_pci_nvidia` loop -> SysPci per NVIDIA function.

        /sys/bus/pci/devices/0000:01:00.0/upstream:/sys/devices/pci0000:00/0000:00:01.1
        /sys/bus/pci/devices/0000:01:00.0/max_link_speed:32.0 GT/s PCIe
        /sys/devices/pci0000:00/0000:00:01.1/power/control:auto
    Multi-line AER files keep one key per counter ("aer_dev_fatal/TOTAL_ERR_FATAL": "0").
    """
    devs: dict[str, dict] = {}
    up_of: dict[str, str] = {}
    for line in (text or "").splitlines():
        m = _SYS_LINE.match(line.strip())
        if not m:
            continue
        base, bdf, key, val = m.group(1), m.group(2), m.group(3), m.group(4).strip()
        if key == "upstream":
            um = re.search(r"([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])$", val)
            devs.setdefault(bdf, {"bdf": bdf, "values": {}, "upstream_values": {}})["upstream"] = um.group(1) if um else None
            if um:
                up_of[um.group(1)] = bdf
            continue
        if key.startswith("aer_dev_") and " " in val:
            name, _, count = val.rpartition(" ")
            key, val = f"{key}/{name.strip()}", count
        if base.startswith("/sys/bus/pci/devices/"):
            devs.setdefault(bdf, {"bdf": bdf, "values": {}, "upstream_values": {}})["values"][key] = val
        else:  # an upstream port, addressed by its device path; several GPUs may share it
            for dev in devs.values():
                if dev.get("upstream") == bdf:
                    dev["upstream_values"][key] = val
    return [SysPci(**d) for d in devs.values()]


def _to_int(v: str | None) -> int | None:
    try:
        return int(float(v)) if v not in (None, "") else None
    except ValueError:
        return None


def parse_smi_pcie(text: str) -> list[SmiLink]:
    """`nvidia-smi --query-gpu=<SMI_PCIE_FIELDS> --format=csv,noheader,nounits` -> SmiLink per GPU.

        0, 00000000:01:00.0, 0, 1, 5, 5, 16, 16
    Raises ParseError on an error banner or a row of the wrong width.
    """
    from gpuaudit.probes.core.parsers.nvidia_smi import parse_query_gpu_csv

    out: list[SmiLink] = []
    for r in parse_query_gpu_csv(text, list(SMI_PCIE_FIELDS)):
        util = r.get("utilization.gpu")
        out.append(SmiLink(index=r.get("index") or str(len(out)), bus_id=normalize_bdf(r.get("pci.bus_id") or f"gpu{len(out)}"),
                           util=float(util) if util and re.fullmatch(r"[0-9.]+", util) else None,
                           # older captures use the deprecated gen.current/gen.max names (header-driven)
                           gen_cur=_to_int(r.get("pcie.link.gen.gpucurrent") or r.get("pcie.link.gen.current")),
                           gen_gpumax=_to_int(r.get("pcie.link.gen.gpumax") or r.get("pcie.link.gen.max")),
                           gen_hostmax=_to_int(r.get("pcie.link.gen.hostmax")),
                           width_cur=_to_int(r.get("pcie.link.width.current")), width_max=_to_int(r.get("pcie.link.width.max"))))
    return out


def _dev(d: PciDevice) -> PciDev:
    fields = {k: getattr(d, k) for k in PciDev.model_fields if hasattr(d, k)}
    return PciDev(**{**fields, "description": d.description[:160]})


def extract(outputs: Outputs, role: Role) -> PcieFacts:
    problems: dict[str, str] = {}
    f: dict = {}
    sources: list[str] = []
    devices: list[PciDevice] = []
    if (t := usable_stdout(outputs, "lspci_vvv", problems)) is not None:
        devices = parse_lspci_vvv(t)
        if not devices and t.strip():
            problems["lspci_vvv"] = "unparsable lspci output"
        f["lspci_access_denied"] = any(d.access_denied for d in devices)
        if devices or not t.strip():
            sources.append("lspci_vvv")
    f["devices"] = [_dev(d) for d in devices]
    gpus = [d.bdf for d in devices if d.is_gpu]
    tree = {}
    if (t := usable_stdout(outputs, "lspci_tv", problems)) is not None:
        tree = parse_lspci_tree(t)
    if (t := usable_stdout(outputs, "sys_pci_nvidia", problems)) is not None:
        f["sysfs"] = parse_sys_pci(t)
        sources.append("sys_pci_nvidia")
    for s in f.get("sysfs", []):
        if s.values.get("class", "").startswith(("0x0300", "0x0302")) and s.bdf not in gpus:
            gpus.append(s.bdf)
    if (t := usable_stdout(outputs, "smi_query_pcie", problems)) is not None:
        try:
            f["smi"] = parse_smi_pcie(t)
            sources.append("smi_query_pcie")
        except Exception as exc:  # ParseError / error banner: a fact, never a crash
            problems["smi_query_pcie"] = f"unparsable nvidia-smi output: {exc}"
    for s in f.get("smi", []):
        if s.bus_id not in gpus:
            gpus.append(s.bus_id)
    parents: dict[str, list[str]] = {}
    sys_up = {s.bdf: s.upstream for s in f.get("sysfs", [])}
    for g in gpus:
        path = tree_path(tree, g) if tree else []
        if not path and sys_up.get(g):
            path = [sys_up[g]]  # type: ignore[list-item]
        parents[g] = path
    f["gpu_bdfs"], f["parents"] = sorted(gpus), parents
    if (t := usable_stdout(outputs, "aspm_policy", problems)) is not None:
        f["aspm_policy"] = parse_bracketed_choice(t)
    if (t := usable_stdout(outputs, "proc_cmdline", problems)) is not None:
        f["cmdline"] = first_line(t)
    return PcieFacts(**f, gpu_sources=sources, problems=problems)


# --------------------------------------------------------------------------- rules

def _root_reason(h: PcieFacts) -> str | None:
    if "lspci_vvv" in h.problems:
        return h.problems["lspci_vvv"]
    if h.lspci_access_denied:
        return "unknown (needs root): lspci printed <access denied> for capabilities"
    return None


def _no_gpu_proven(h: PcieFacts) -> bool:
    """True only on a positive reading: a bus source (lspci or sysfs) was read and no source found a GPU.

    nvidia-smi may be absent on a GPU-less host; any other nvidia-smi failure leaves the question open.
    """
    smi_problem = h.problems.get("smi_query_pcie")
    return (not h.gpu_bdfs and bool({"lspci_vvv", "sys_pci_nvidia"} & set(h.gpu_sources))
            and smi_problem in (None, "tool not installed"))


def _gpu_missing_reason(h: PcieFacts) -> str:
    """Why no GPU is known when that is not proven: the failed GPU sources."""
    failed = [f"{k}: {h.problems[k]}" for k in ("lspci_vvv", "sys_pci_nvidia", "smi_query_pcie") if k in h.problems]
    return "; ".join(failed) or "no GPU source was read"


def _no_gpu(h: PcieFacts, slug: str, what: str, ev: list[tuple[Role, str]]) -> Finding:
    """The finding for a check with no GPU to judge: ok "not applicable" only when proven, else unknown."""
    if _no_gpu_proven(h):
        return finding(PROBE_ID, slug, "ok", f"{what} not applicable", observed="not applicable: no NVIDIA GPU",
                       evidence=ev)
    return finding(PROBE_ID, slug, "unknown", f"{what} unknown", observed=_gpu_missing_reason(h), evidence=ev)


def _gpu_devs(h: PcieFacts) -> list[PciDev]:
    return [d for d in h.devices if d.is_gpu]


def _by_bdf(h: PcieFacts) -> dict[str, PciDev]:
    return {d.bdf: d for d in h.devices}


def _fmt_counts(values: list) -> str:
    counts: dict = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return ", ".join(f"{k} on {n} GPU{'s' if n != 1 else ''}" for k, n in sorted(counts.items(), key=lambda kv: str(kv[0])))


def _mrrs(h: PcieFacts) -> Iterator[Finding]:
    ev: list[tuple[Role, str]] = [("host", "lspci_vvv")]
    slug = "max_read_req"
    reason = _root_reason(h)
    gpus = [d for d in _gpu_devs(h) if not d.access_denied]
    if reason or (h.gpu_bdfs and not gpus):
        yield finding(PROBE_ID, slug, "unknown", "GPU Max Read Request Size not readable",
                      observed=reason or "GPUs known but lspci shows no readable GPU block", evidence=ev)
        return
    if not gpus:
        yield _no_gpu(h, slug, "GPU Max Read Request Size", ev)
        return
    known = [d for d in gpus if d.devctl_mrrs]
    if not known:
        yield finding(PROBE_ID, slug, "unknown", "GPU MaxReadReq not shown", observed="no DevCtl MaxReadReq in the GPU blocks",
                      evidence=ev)
        return
    worst = min(d.devctl_mrrs or 0 for d in known)
    obs = "MaxReadReq " + _fmt_counts([f"{d.devctl_mrrs} B" for d in known])
    bus_perf = bool(h.cmdline and "pcie_bus_perf" in h.cmdline)
    if bus_perf or all(d.devctl_mrrs == d.devctl_mps for d in known):
        obs += "; MRRS equals MPS on every GPU" + (" and pci=pcie_bus_perf is set (it caps MRRS at MPS)" if bus_perf else "")
    why = ("MRRS caps each read request the GPU issues; small requests mean more TLP headers and tags for the same"
           " bandwidth. It affects GPU copy-engine reads of host memory (model load, host-to-device copies, KV-cache"
           " restore from host), not steady-state decode from weights already in VRAM.")
    fix = ("BIOS 'PCIe Max Read Request' = 4096 (or Auto) where offered; note pci=pcie_bus_perf lowers MRRS to MPS."
           " Runtime setpci changes are non-persistent and risky on production.")
    if worst <= 512:
        yield finding(PROBE_ID, slug, "warning", f"GPU MaxReadReq {worst} bytes", observed=obs, expected="4096 bytes",
                      why=why, fix=fix, evidence=ev)
    elif worst < 4096:
        yield finding(PROBE_ID, slug, "info", f"GPU MaxReadReq {worst} bytes can be raised", observed=obs,
                      expected="4096 bytes", why=why, fix=fix, evidence=ev)
    else:
        yield finding(PROBE_ID, slug, "ok", "GPU MaxReadReq 4096 bytes", observed=obs, evidence=ev)


def _mps(h: PcieFacts) -> Iterator[Finding]:
    ev: list[tuple[Role, str]] = [("host", "lspci_vvv"), ("host", "lspci_tv")]
    slug = "max_payload"
    reason = _root_reason(h)
    gpus = [d for d in _gpu_devs(h) if d.devctl_mps]
    if not reason and not gpus and not h.gpu_bdfs:
        yield _no_gpu(h, slug, "GPU Max Payload Size", ev)
        return
    if reason or not gpus:
        yield finding(PROBE_ID, slug, "unknown", "GPU Max Payload Size not readable",
                      observed=reason or "no DevCtl MaxPayload in the GPU blocks", evidence=ev)
        return
    by = _by_bdf(h)
    bad: list[str] = []
    for g in gpus:
        ups = [by[p] for p in h.parents.get(g.bdf, []) if p in by]
        caps = [x.devcap_mps for x in [g, *ups] if x.devcap_mps]
        limit = min(caps) if caps else None
        assert g.devctl_mps is not None  # `gpus` keeps only devices with a DevCtl MaxPayload
        if limit and g.devctl_mps < limit:
            bad.append(f"{g.bdf}: MPS {g.devctl_mps} B below the path's supported {limit} B")
        mism = [u for u in ups if u.devctl_mps and u.devctl_mps != g.devctl_mps]
        if mism:
            bad.append(f"{g.bdf}: MPS {g.devctl_mps} B vs {mism[0].bdf} {mism[0].devctl_mps} B")
    obs = "MaxPayload " + _fmt_counts([f"{d.devctl_mps} B (cap {d.devcap_mps} B)" for d in gpus])
    if bad:
        yield finding(PROBE_ID, slug, "warning", "Max Payload Size below capability or inconsistent on a GPU path",
                      observed="; ".join(bad[:6]), expected="MPS = min(DevCap) along each GPU path, equal on every hop",
                      why="MPS bounds write and completion payloads; a smaller value raises header overhead.",
                      fix="BIOS PCIe MPS = Auto/max, or kernel pci=pcie_bus_safe (keeps MRRS untouched).", evidence=ev)
    else:
        yield finding(PROBE_ID, slug, "ok", "GPU Max Payload Size consistent",
                      observed=obs + " (256 B is the usual NVIDIA GPU maximum)", evidence=ev)


def _link_capability(h: PcieFacts) -> Iterator[Finding]:
    ev: list[tuple[Role, str]] = [("host", "smi_query_pcie"), ("host", "sys_pci_nvidia"), ("host", "lspci_vvv")]
    slug = "link_capability"
    bad: list[str] = []
    rows: list[str] = []
    if h.smi:
        for s in h.smi:
            rows.append(f"Gen{s.gen_hostmax or '?'}/{s.gen_gpumax or '?'} x{s.width_max or '?'}")
            if s.gen_hostmax and s.gen_gpumax and s.gen_hostmax < s.gen_gpumax:
                bad.append(f"GPU {s.index} ({s.bus_id}): host max Gen{s.gen_hostmax} < GPU max Gen{s.gen_gpumax}")
            if s.width_max is not None and s.width_max < 16:
                bad.append(f"GPU {s.index} ({s.bus_id}): max width x{s.width_max}")
    else:
        by = _by_bdf(h)
        for g in [d for d in _gpu_devs(h) if d.lnkcap_speed]:
            ups = [by[p] for p in h.parents.get(g.bdf, [])[:1] if p in by]
            rows.append(f"Gen{GEN_BY_SPEED.get(g.lnkcap_speed or 0, '?')} x{g.lnkcap_width}")
            if ups and ups[0].lnkcap_speed and ups[0].lnkcap_speed < (g.lnkcap_speed or 0):
                bad.append(f"{g.bdf}: port {ups[0].bdf} max {ups[0].lnkcap_speed} GT/s < GPU {g.lnkcap_speed} GT/s")
            if g.lnkcap_width and g.lnkcap_width < 16 or ups and ups[0].lnkcap_width and ups[0].lnkcap_width < (g.lnkcap_width or 0):
                bad.append(f"{g.bdf}: width capped")
    if not rows:
        if not h.gpu_bdfs:
            yield _no_gpu(h, slug, "GPU link capability", ev)
        else:
            reason = h.problems.get("smi_query_pcie") or _root_reason(h) or "no GPU link data"
            yield finding(PROBE_ID, slug, "unknown", "GPU link capability unknown", observed=reason, evidence=ev)
    elif bad:
        yield finding(PROBE_ID, slug, "warning", "GPU link capped below what the GPU supports", observed="; ".join(bad[:8]),
                      expected="host max generation = GPU max, x16",
                      why="A slot, riser, retimer or BIOS setting caps the link; x8 or one generation less halves"
                          " host-to-device and P2P bandwidth.",
                      fix="Check slot wiring/risers and the BIOS PCIe link speed setting for those slots.", evidence=ev)
    else:
        yield finding(PROBE_ID, slug, "ok", "GPU links can reach full speed", observed=_fmt_counts(rows), evidence=ev)


def _link_under_load(h: PcieFacts) -> Iterator[Finding]:
    ev: list[tuple[Role, str]] = [("host", "smi_query_pcie"), ("host", "lspci_vvv")]
    slug = "link_current_under_load"
    if not h.smi:
        if not h.gpu_bdfs:
            yield _no_gpu(h, slug, "Link under load", ev)
        else:
            yield finding(PROBE_ID, slug, "unknown", "Link under load not judged",
                          observed=h.problems.get("smi_query_pcie", "nvidia-smi data missing"), evidence=ev)
        return
    busy = [s for s in h.smi if s.util is not None and s.util >= 50]
    down_busy = [s for s in busy if (s.gen_cur and s.gen_gpumax and s.gen_cur < min(s.gen_gpumax, s.gen_hostmax or 99))
                 or (s.width_cur and s.width_max and s.width_cur < s.width_max)]
    idle_down = [s for s in h.smi if s not in busy and s.gen_cur and s.gen_gpumax and s.gen_cur < s.gen_gpumax]
    read = [s for s in h.smi if s.gen_cur and s.gen_gpumax]
    if not down_busy and not read:
        yield finding(PROBE_ID, slug, "unknown", "Link under load not judged",
                      observed="nvidia-smi gave no current and maximum link generation for any GPU", evidence=ev)
        return
    if down_busy:
        yield finding(PROBE_ID, slug, "critical", "GPU link downtrained while busy",
                      observed="; ".join(f"GPU {s.index}: Gen{s.gen_cur} x{s.width_cur} of Gen{s.gen_gpumax} x{s.width_max}"
                                         f" at {s.util:.0f}% util" for s in down_busy),
                      expected="full generation and width under load",
                      why="A busy GPU retrains to its maximum; staying low under load points at signal integrity"
                          " (riser, retimer, slot) or a BIOS cap.", fix="Reseat/replace risers, check the slot's BIOS speed.",
                      evidence=ev)
    elif idle_down and not busy:
        yield finding(PROBE_ID, slug, "info", "GPUs idle: links in power-save",
                      observed=f"{len(idle_down)} idle GPU(s) at Gen{min(s.gen_cur or 0 for s in idle_down)} (normal idle downclock);"
                               " no verdict without load", expected="judged only while utilisation >= 50%",
                      why="NVIDIA GPUs drop the link to Gen1 when idle and retrain when busy.", evidence=ev)
    else:
        yield finding(PROBE_ID, slug, "ok", "GPU links at full speed" + (" under load" if busy else ""),
                      observed=f"{len(busy)} busy GPU(s) at full link" if busy else "GPUs idle, links at full speed",
                      evidence=ev)


def _acs(h: PcieFacts) -> Iterator[Finding]:
    ev: list[tuple[Role, str]] = [("host", "lspci_vvv"), ("host", "lspci_tv")]
    slug = "acs"
    reason = _root_reason(h)
    if reason:
        yield finding(PROBE_ID, slug, "unknown", "ACS state not readable", observed=reason, evidence=ev)
        return
    if not h.gpu_bdfs:
        yield _no_gpu(h, slug, "ACS", ev)
        return
    if len(h.gpu_bdfs) < 2:
        yield finding(PROBE_ID, slug, "ok", "ACS not relevant", observed="not applicable: fewer than two GPUs", evidence=ev)
        return
    by = _by_bdf(h)
    bridges = {p for g in h.gpu_bdfs for p in h.parents.get(g, []) if p in by}
    if not bridges:
        yield finding(PROBE_ID, slug, "unknown", "GPU path bridges unknown",
                      observed=h.problems.get("lspci_tv", "no bridge found above the GPUs"), evidence=ev)
        return
    redir = [by[b] for b in sorted(bridges) if (acs := by[b].acs_ctl) and (acs.get("ReqRedir") or acs.get("CmpltRedir"))]
    if not redir:
        yield finding(PROBE_ID, slug, "ok", "No ACS redirect on GPU paths",
                      observed=f"{len(bridges)} bridge(s) on GPU paths, ReqRedir-/CmpltRedir- or no ACS capability",
                      evidence=ev)
        return
    switch = [d for d in redir if d.port_type == "Downstream Port"]
    sev = "critical" if switch else "warning"
    yield finding(PROBE_ID, slug, sev, "ACS redirect on bridges between GPUs",
                  observed="ReqRedir+/CmpltRedir+ on " + ", ".join(f"{d.bdf} ({d.port_type or 'bridge'})" for d in redir[:8]),
                  expected="ACS redirect off on the bridges between GPUs used for P2P",
                  why="ACS redirect sends GPU-to-GPU traffic up to the root complex/IOMMU; with a translated IOMMU this"
                      " has caused NCCL hangs and very slow P2P on RTX PRO 6000 systems.",
                  fix="BIOS ACS = Disabled when no VM passthrough is needed, or pci=disable_acs_redir=<bridges> /"
                      " pci=config_acs=...; pair with iommu=pt.", evidence=ev)


def _aspm(h: PcieFacts) -> Iterator[Finding]:
    ev: list[tuple[Role, str]] = [("host", "lspci_vvv"), ("host", "aspm_policy")]
    slug = "aspm"
    by = _by_bdf(h)
    on: list[str] = []
    read = [g for g in _gpu_devs(h) if g.aspm_ctl]
    for g in _gpu_devs(h):
        for d in [g] + [by[p] for p in h.parents.get(g.bdf, [])[:1] if p in by]:
            if d.aspm_ctl and "Enabled" in d.aspm_ctl:
                on.append(f"{d.bdf}: ASPM {d.aspm_ctl}")
    pol_bad = h.aspm_policy in ("powersave", "powersupersave")
    reason = _root_reason(h)
    if on or pol_bad:
        obs = "; ".join(sorted(set(on))[:8]) + (("; " if on else "") + f"policy {h.aspm_policy}" if pol_bad else "")
        yield finding(PROBE_ID, slug, "warning", "PCIe link power management on GPU links", observed=obs,
                      expected="ASPM Disabled on GPU links, policy default/performance",
                      why="ASPM adds exit latency on every link wake; RTX PRO 6000 builders attribute 'Surprise Link Down'"
                          " lock-ups to link power management.",
                      fix="pcie_aspm=off (or policy performance) and BIOS ASPM = Disabled.", evidence=ev)
    elif reason and h.aspm_policy is None:
        yield finding(PROBE_ID, slug, "unknown", "ASPM state not readable", observed=reason, evidence=ev)
    elif reason:
        yield finding(PROBE_ID, slug, "unknown", "ASPM per link not readable",
                      observed=f"policy {h.aspm_policy}; per-link LnkCtl: {reason}", evidence=ev)
    elif not h.gpu_bdfs:
        yield _no_gpu(h, slug, "ASPM on GPU links", ev)
    elif not read:
        yield finding(PROBE_ID, slug, "unknown", "ASPM per link not shown",
                      observed=f"policy {h.aspm_policy or 'unknown'}; no LnkCtl ASPM field in any GPU block", evidence=ev)
    else:
        yield finding(PROBE_ID, slug, "ok", "ASPM off on GPU links",
                      observed=f"LnkCtl ASPM Disabled; policy {h.aspm_policy or 'unknown'}", evidence=ev)


def _port_pm(h: PcieFacts) -> Iterator[Finding]:
    ev: list[tuple[Role, str]] = [("host", "sys_pci_nvidia")]
    ctl = {s.upstream: s.upstream_values.get("power/control") for s in h.sysfs if s.upstream}
    ctl = {k: v for k, v in ctl.items() if v}
    if not ctl:
        if not h.gpu_bdfs:
            yield _no_gpu(h, "port_pm", "GPU port runtime PM", ev)
        else:
            yield finding(PROBE_ID, "port_pm", "unknown", "GPU port runtime PM unknown",
                          observed=h.problems.get("sys_pci_nvidia", "no upstream power/control read"), evidence=ev)
        return
    auto = sorted(k for k, v in ctl.items() if v == "auto")
    if auto and not (h.cmdline and "pcie_port_pm=off" in h.cmdline):
        yield finding(PROBE_ID, "port_pm", "info", "GPU upstream ports may runtime-suspend",
                      observed=f"power/control=auto on {len(auto)} port(s): {', '.join(auto[:4])}",
                      expected="on (or pcie_port_pm=off) if AER 'Surprise Link Down' events appear",
                      why="A suspending root port while the GPU retrains between Gen1 and Gen5 has caused link drops"
                          " in community RTX PRO 6000 reports.", fix="pcie_port_pm=off if link-down errors are logged.",
                      evidence=ev)
    else:
        yield finding(PROBE_ID, "port_pm", "ok", "GPU upstream ports stay powered", observed=f"{len(ctl)} port(s) on",
                      evidence=ev)


def _link_errors(h: PcieFacts) -> Iterator[Finding]:
    ev: list[tuple[Role, str]] = [("host", "sys_pci_nvidia"), ("host", "lspci_vvv")]
    fatal: list[str] = []
    corr: list[str] = []
    seen = False
    for s in h.sysfs:
        for vals, who in ((s.values, s.bdf), (s.upstream_values, s.upstream)):
            for k, v in vals.items():
                if not k.startswith("aer_dev_") or "/TOTAL_" not in k:
                    continue
                seen = True
                if (n := _to_int(v)) and n > 0:
                    (corr if k.startswith("aer_dev_correctable") else fatal).append(f"{who} {k.split('/')[-1]}={n}")
    lspci_reason = _root_reason(h)
    if not seen and not lspci_reason:  # lspci fallback: only blocks where a UESta/CESta line was parsed count
        for d in _gpu_devs(h):
            if d.ue_status is None and d.ce_status is None:
                continue
            seen = True
            if d.ue_status:
                fatal.append(f"{d.bdf} UESta {' '.join(d.ue_status)}")
            if d.ce_status:
                corr.append(f"{d.bdf} CESta {' '.join(d.ce_status)}")
    if not seen and not h.gpu_bdfs:
        yield _no_gpu(h, "link_errors", "PCIe error counters", ev)
    elif not seen:
        why = [h.problems.get("sys_pci_nvidia") or "no sysfs AER counters",
               f"lspci: {lspci_reason}" if lspci_reason else "no AER status in the lspci GPU blocks"]
        yield finding(PROBE_ID, "link_errors", "unknown", "PCIe error counters not readable", observed="; ".join(why),
                      evidence=ev)
    elif fatal:
        yield finding(PROBE_ID, "link_errors", "critical", "Uncorrectable PCIe errors on GPU links",
                      observed="; ".join(sorted(set(fatal))[:8]), expected="0",
                      why="Non-fatal/fatal AER errors are lost transactions and precede link drops.",
                      fix="Check risers, retimers, Gen5 cabling and slot seating; lower the link speed in BIOS to test.",
                      evidence=ev)
    elif corr:
        yield finding(PROBE_ID, "link_errors", "info", "Correctable PCIe errors recorded since boot",
                      observed="; ".join(sorted(set(corr))[:8]), expected="0, or not growing between two audits",
                      why="Correctable errors are retransmissions (lost bandwidth); growing counts point at signal integrity.",
                      fix="Compare with a later audit; investigate cabling if the counts grow.", evidence=ev)
    else:
        yield finding(PROBE_ID, "link_errors", "ok", "No PCIe errors on GPU links", observed="AER counters 0", evidence=ev)


def _tags(h: PcieFacts) -> Iterator[Finding]:
    ev: list[tuple[Role, str]] = [("host", "lspci_vvv")]
    reason = _root_reason(h)
    gpus = _gpu_devs(h)
    if not reason and not gpus and not h.gpu_bdfs:
        yield _no_gpu(h, "tags_ordering", "10-bit tags / relaxed ordering", ev)
        return
    if reason or not gpus:
        yield finding(PROBE_ID, "tags_ordering", "unknown", "10-bit tags / relaxed ordering not readable",
                      observed=reason or "no lspci GPU blocks", evidence=ev)
        return
    obs = _fmt_counts([f"10BitTagReq cap{'+' if d.tag10_req_cap else '-'}/en{'+' if d.tag10_req_en else '-'},"
                       f" RlxdOrd{'+' if d.relaxed_ordering else '-'}" for d in gpus])
    yield finding(PROBE_ID, "tags_ordering", "info", "10-bit tags and relaxed ordering", observed=obs,
                  why="More outstanding tags help saturate Gen5 links; enable 'PCIe Ten Bit Tag Support' in BIOS if"
                      " offered and the GPU requests are disabled.", evidence=ev)


def _topology(h: PcieFacts) -> Iterator[Finding]:
    ev: list[tuple[Role, str]] = [("host", "lspci_tv"), ("host", "sys_pci_nvidia")]
    if not h.gpu_bdfs:
        yield _no_gpu(h, "topology_map", "GPU topology", ev)
        return
    node = {s.bdf: s.values.get("numa_node") for s in h.sysfs}
    roots: dict[str, list[str]] = {}
    for g in h.gpu_bdfs:
        path = h.parents.get(g) or []
        roots.setdefault(path[-1] if path else "?", []).append(g)
    shared = {r: gs for r, gs in roots.items() if r != "?" and len(gs) > 1}
    lines = [f"{g} via {' > '.join(reversed(h.parents.get(g) or ['?']))} (node {node.get(g) or '?'})" for g in h.gpu_bdfs]
    yield finding(PROBE_ID, "topology_map", "info",
                  f"{len(h.gpu_bdfs)} GPU(s) on {len([r for r in roots if r != '?'])} root port(s)"
                  + (", some behind a shared uplink" if shared else ""),
                  observed="; ".join(lines[:8]) + (f"; shared uplinks: {', '.join(shared)}" if shared else ""),
                  why="Several GPUs behind one switch uplink share one x16 for host traffic (loads, KV offload).",
                  evidence=ev)


def judge(facts: FactsByTarget) -> Iterator[Finding]:
    h: PcieFacts | None = facts.get("host")
    if h is None:
        return
    yield from _link_capability(h)
    yield from _link_under_load(h)
    yield from _mrrs(h)
    yield from _mps(h)
    yield from _acs(h)
    yield from _aspm(h)
    yield from _port_pm(h)
    yield from _link_errors(h)
    yield from _tags(h)
    yield from _topology(h)


def summarize(facts: FactsByTarget) -> str:
    h: PcieFacts | None = facts.get("host")
    if h is None:
        return ""
    parts = []
    gpus = _gpu_devs(h)
    n = len(h.gpu_bdfs)
    if h.smi:
        gens = sorted({s.gen_gpumax for s in h.smi if s.gen_gpumax})
        widths = sorted({s.width_max for s in h.smi if s.width_max})
        parts.append(f"{n} GPU{'s' if n != 1 else ''} " + "/".join(f"Gen{g}" for g in gens) + " "
                     + "/".join(f"x{w}" for w in widths))
    elif gpus:
        gens = sorted({GEN_BY_SPEED.get(d.lnkcap_speed or 0, 0) for d in gpus} - {0})
        parts.append(f"{n} GPU{'s' if n != 1 else ''} " + "/".join(f"Gen{g}" for g in gens))
    elif n:
        parts.append(f"{n} GPU{'s' if n != 1 else ''}")
    mrrs = sorted({d.devctl_mrrs for d in gpus if d.devctl_mrrs})
    if mrrs:
        parts.append("MRRS " + "/".join(map(str, mrrs)))
    elif _root_reason(h):
        parts.append("MRRS ? (needs root)")
    return " · ".join(p.strip() for p in parts)


PROBE = Probe(id=PROBE_ID, title="PCIe", commands=COMMANDS, extract=extract, judge=judge, summarize=summarize)
