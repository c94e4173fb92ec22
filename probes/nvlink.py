"""NVLink / NVSwitch / fabric probe: does this system have NVLink, are the links up, is the fabric ready.

On PCIe-only boards (RTX PRO 6000, L40S, GeForce) the whole domain is not applicable: "no NVLink"
is the expected state there, never a failure. Fabric Manager only matters on NVSwitch systems.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Literal

from pydantic import BaseModel

from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.models import Finding, Role, Severity
from gpuaudit.probes.core.parsers.nvidia_misc import parse_systemctl_status, parse_xid_events
from gpuaudit.probes.core.parsers.nvidia_smi import (
    csv_row_errors,
    detect_smi_error,
    parse_nvlink_errors,
    parse_nvlink_s,
    parse_query_gpu_csv,
    parse_smi_q_xml,
    parse_topo_m,
)
from gpuaudit.probes.core.parsing import first_line
from gpuaudit.probes.core.sources import use
from gpuaudit.probes.core.spec import FactsByTarget, Outputs, Probe, finding, record_problem, usable_record

PROBE_ID = "nvlink"
HOST: frozenset[Role] = frozenset({"host"})
BOTH: frozenset[Role] = frozenset({"host", "container"})
FABRIC_FIELDS = ("index", "name", "fabric.state", "fabric.status")

COMMANDS = (
    use('nvlink_s', 'nvlink_errors', 'smi_topo_m', 'smi_q_xml', 'fabricmanager_status',
    'fabricmanager_version', 'lspci_nvswitch', 'ib_umad_loaded', 'dmesg_nvrm', on=frozenset({'host'})) +
    use('smi_query_fabric')
)

SkuClass = Literal["pcie_none", "pcie_bridge", "sxm", "unknown"]

# Links per GPU on the baseboard, and NVSwitch chips per HGX baseboard (PROBES.md §10).
SXM_LINKS = (("B200", 18), ("B100", 18), ("H200", 18), ("H100", 18), ("H800", 8), ("A100", 12), ("A800", 8), ("V100", 6))
NVSWITCHES = (("A100", 6), ("A800", 6), ("H100", 4), ("H200", 4), ("H800", 4))


class NvlinkFacts(BaseModel, frozen=True):
    gpu_names: list[str] = []
    links: dict[int, list[tuple[int, bool, float | None]]] = {}
    """GPU index -> (link, active, GB/s) from `nvlink -s`."""
    links_read: bool = False
    all_inactive_gpus: list[int] = []
    topo_nv_pairs: int | None = None
    """GPU pairs with an NV# cell in topo -m; None when topo was not readable."""
    fabric: list[tuple[int, str | None, str | None]] = []
    """(index, fabric.state, fabric.status); None values = N/A."""
    fabric_read: bool = False
    fabric_unreadable: list[int] = []
    """GPU indexes whose fabric state nvidia-smi answered with an error token ("[Unknown Error]")."""
    fm_present: bool | None = None
    fm_active: str | None = None
    fm_messages: list[str] = []
    fm_version: str | None = None
    nvswitch_functions: int | None = None
    ib_umad: bool | None = None
    error_counters: dict[int, dict[int, dict[str, int]]] = {}
    xid74: int | None = None
    smi_error: str | None = None
    problems: dict[str, str] = {}


def extract(outputs: Outputs, role: Role) -> NvlinkFacts:
    problems = {cid: p for cid, rec in outputs.items() if (p := record_problem(rec))}
    f: dict = {}
    for cid in ("nvlink_s", "smi_query_fabric", "smi_topo_m"):
        rec = outputs.get(cid)
        if rec is not None and not rec.missing_tool and (err := detect_smi_error(rec.stdout + "\n" + rec.stderr)):
            f.setdefault("smi_error", err)
            problems[cid] = f"nvidia-smi: {err}"
    if rec := usable_record(outputs, "nvlink_s", problems):
        try:
            gpus = parse_nvlink_s(rec.stdout)
            f.update(links={g.index: [(ln.link, ln.active, ln.speed_gbs) for ln in g.links] for g in gpus},
                     all_inactive_gpus=[g.index for g in gpus if g.all_inactive], links_read=True,
                     gpu_names=[g.name for g in gpus])
        except ParseError as exc:
            problems["nvlink_s"] = str(exc)
    if rec := usable_record(outputs, "smi_topo_m", problems):
        try:
            f["topo_nv_pairs"] = len({tuple(sorted(p)) for p in parse_topo_m(rec.stdout).nvlink_pairs()})
        except ParseError as exc:
            problems["smi_topo_m"] = str(exc)
    if rec := usable_record(outputs, "smi_query_fabric", problems):
        try:
            rows = parse_query_gpu_csv(rec.stdout, FABRIC_FIELDS)
            f.update(fabric=[(int(r["index"] or i), r["fabric.state"], r["fabric.status"]) for i, r in enumerate(rows)],
                     fabric_read=True,
                     fabric_unreadable=[int(r["index"] or i) for i, r in enumerate(rows)
                                        if {"fabric.state", "fabric.status"} & csv_row_errors(r)])
            if not f.get("gpu_names"):
                f["gpu_names"] = [r["name"] or "?" for r in rows]
        except (ParseError, ValueError) as exc:
            problems["smi_query_fabric"] = str(exc)
    if not f.get("fabric_read") and (rec := usable_record(outputs, "smi_q_xml", problems)):
        try:
            xml = parse_smi_q_xml(rec.stdout)
            f.update(fabric=[(i, g.fabric_state if g.fabric_state != "N/A" else None,
                              g.fabric_status if g.fabric_status != "N/A" else None) for i, g in enumerate(xml.gpus)],
                     fabric_read=bool(xml.gpus))
            if not f.get("gpu_names"):
                f["gpu_names"] = [g.product_name or "?" for g in xml.gpus]
        except ParseError as exc:
            problems["smi_q_xml"] = str(exc)
    if (rec := outputs.get("fabricmanager_status")) is not None and not rec.missing_tool and rec.error is None:
        st = parse_systemctl_status(rec.stdout + "\n" + rec.stderr)  # status exits 3 (inactive) / 4 (no unit)
        f.update(fm_present=st.present, fm_active=st.active if st.present else None, fm_messages=st.messages)
        problems.pop("fabricmanager_status", None)
    if rec := usable_record(outputs, "fabricmanager_version", problems):
        m = re.search(r"(\d+\.\d+\.\d+)", rec.stdout)
        f["fm_version"] = m.group(1) if m else None
    if rec := usable_record(outputs, "lspci_nvswitch", problems):
        f["nvswitch_functions"] = len([ln for ln in rec.stdout.splitlines() if ln.strip()])
    if rec := usable_record(outputs, "ib_umad_loaded", problems):
        f["ib_umad"] = bool(first_line(rec.stdout))
    if rec := usable_record(outputs, "nvlink_errors", problems):
        try:
            f["error_counters"] = parse_nvlink_errors(rec.stdout)
        except ParseError as exc:
            problems["nvlink_errors"] = str(exc)
    if rec := usable_record(outputs, "dmesg_nvrm", problems):
        if "not permitted" not in rec.stderr.lower():
            f["xid74"] = sum(1 for x in parse_xid_events(rec.stdout) if x.code == 74)
    return NvlinkFacts(**f, problems=problems)


# --------------------------------------------------------------------------- knowledge

def sku_class(name: str) -> SkuClass:
    """What NVLink a product name implies: none (PCIe board), optional bridge, baseboard (SXM/HGX), unknown."""
    n = name.upper()
    if re.search(r"RTX PRO|GEFORCE|RTX [2-5]0\d0|L40|\bL4\b|L20|\bA10\b|A16|\bA2\b|\bT4\b|RTX \d000 ADA|TITAN", n):
        return "pcie_none"
    if re.search(r"SXM|HBM3|\bB200\b|\bB100\b|GB200|\bH200\b(?! NVL)|H800|\bH20\b", n) and "PCIE" not in n:
        return "sxm"
    if re.search(r"PCIE|H100 NVL|H200 NVL|\bA30\b|\bA40\b|RTX A[456]000|QUADRO RTX [68]000", n):
        return "pcie_bridge"
    return "unknown"


def expected_links(name: str) -> int | None:
    n = name.upper()
    return next((k for key, k in SXM_LINKS if key in n), None)


def _classes(f: NvlinkFacts) -> set[SkuClass]:
    return {sku_class(n) for n in f.gpu_names}


def _active_total(f: NvlinkFacts) -> int:
    return sum(1 for links in f.links.values() for _, active, _ in links if active)


def _has_nvlink(f: NvlinkFacts) -> bool | None:
    """NVLink present per nvlink -s or topo; None when neither was readable."""
    if not f.links_read and f.topo_nv_pairs is None:
        return None
    return _active_total(f) > 0 or bool(f.topo_nv_pairs)


def is_nvswitch_system(f: NvlinkFacts) -> bool | None:
    """HGX/DGX with NVSwitch: SXM GPUs (more than 4, or NVSwitch bridges seen, or a fabric state reported)."""
    if not f.gpu_names:
        return None
    if "sxm" not in _classes(f):
        return False
    fabric_reported = any(state for _, state, _ in f.fabric)
    return bool(f.nvswitch_functions) or fabric_reported or len(f.gpu_names) >= 8


def _is_nvl5(f: NvlinkFacts) -> bool:
    return any(re.search(r"\bB200\b|\bB100\b|GB200|B300", n.upper()) for n in f.gpu_names)


def _na(slug: str, title: str, why: str, ev) -> Finding:
    return finding(PROBE_ID, slug, "ok", title, observed=f"not applicable: {why}", evidence=ev)


# --------------------------------------------------------------------------- judge

def judge(facts: FactsByTarget) -> Iterator[Finding]:
    host: NvlinkFacts | None = facts.get("host")
    if host is not None:
        yield _presence(host)
        yield _link_state(host)
        yield _errors(host)
        yield _fm_service(host)
        yield _fabric_state(host)
        for rule in (_nvl5, _nvswitch_inventory, _nvls, _container_access):
            yield _unknown_without_gpus(rule(host), host)
    yield _fabric_vs_container(host, facts.get("container"))


def _pcie_only_reason(f: NvlinkFacts) -> str | None:
    """Why NVLink does not apply here, or None when it may."""
    classes = _classes(f)
    if classes and classes <= {"pcie_none"}:
        return "PCIe board without NVLink (" + ", ".join(sorted(set(f.gpu_names)))[:80] + ")"
    if classes and classes <= {"pcie_none", "pcie_bridge"} and _has_nvlink(f) is False:
        return "PCIe boards without an NVLink bridge installed"
    return None


def _presence(f: NvlinkFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "nvlink_s"), ("host", "smi_topo_m"), ("host", "smi_query_fabric")]
    t = "NVLink presence"
    has = _has_nvlink(f)
    if not f.gpu_names:
        return finding(PROBE_ID, "presence", "unknown", t,
                       observed=f"GPU models unknown: {f.smi_error or f.problems.get('nvlink_s') or f.problems.get('smi_query_fabric') or 'not read'}",
                       evidence=ev)
    classes = _classes(f)
    desc = f"{len(f.gpu_names)}× {sorted(set(f.gpu_names))[0]}" if len(set(f.gpu_names)) == 1 else ", ".join(sorted(set(f.gpu_names)))
    if classes <= {"pcie_none"}:
        return finding(PROBE_ID, "presence", "ok", "No NVLink (PCIe board)", observed=f"not applicable: {desc} has no NVLink",
                       expected="no NVLink on this SKU",
                       why="PCIe-only boards talk over PCIe; 'no NVLink' is their normal state, not a fault.", evidence=ev)
    if has is None:
        return finding(PROBE_ID, "presence", "unknown", t,
                       observed=f"{desc}; nvlink -s and topo -m not readable ({f.problems.get('nvlink_s', 'not read')})", evidence=ev)
    if "sxm" in classes and not has:
        return finding(PROBE_ID, "presence", "critical", "No NVLink on an SXM/HGX system", observed=f"{desc}: no active link, no NV# in topo",
                       expected="NVLink between every GPU pair",
                       why="Baseboard GPUs are wired by NVLink/NVSwitch; none visible means the fabric is down and all traffic falls back to PCIe.",
                       fix="Check Fabric Manager, the NVSwitch driver and dmesg for NVLink training errors.", evidence=ev)
    if has:
        return finding(PROBE_ID, "presence", "ok", "NVLink present",
                       observed=f"{desc}: {_active_total(f)} active links" + (f", {f.topo_nv_pairs} NV# GPU pairs" if f.topo_nv_pairs else ""),
                       evidence=ev)
    if classes <= {"pcie_none", "pcie_bridge"}:
        return finding(PROBE_ID, "presence", "ok", "No NVLink bridge", observed=f"not applicable: {desc} without an NVLink bridge",
                       why="NVLink bridges are optional on these PCIe boards; without one, GPU-to-GPU traffic uses PCIe.", evidence=ev)
    return finding(PROBE_ID, "presence", "info", "NVLink expectation unknown for this GPU", observed=f"{desc}: no NVLink seen",
                   evidence=ev)


def _link_state(f: NvlinkFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "nvlink_s")]
    t = "NVLink links up at rated speed"
    if (why := _pcie_only_reason(f)):
        return _na("link_state", t, why, ev)
    if not f.links_read:
        return finding(PROBE_ID, "link_state", "unknown", t, observed=f.problems.get("nvlink_s", "nvlink -s not read"), evidence=ev)
    names = f.gpu_names
    want = {i: expected_links(names[i]) if i < len(names) and sku_class(names[i]) == "sxm" else None for i in f.links}
    short = {i: sum(1 for _, a, _ in ls if a) for i, ls in f.links.items() if (w := want[i]) and sum(1 for _, a, _ in ls if a) < w}
    speeds = [s for ls in f.links.values() for _, a, s in ls if a and s]
    top = max(speeds) if speeds else None
    slow = sorted({i for i, ls in f.links.items() for _, a, s in ls if a and s and top and s < top * 0.95})
    counts = ", ".join(f"GPU{i}: {sum(1 for _, a, _ in ls if a)}/{len(ls)}" for i, ls in sorted(f.links.items()))
    obs = f"active links {counts}" + (f" at {top:g} GB/s" if top else "")
    if short:
        return finding(PROBE_ID, "link_state", "critical", "NVLink links missing",
                       observed=obs, expected=", ".join(f"GPU{i}: {want[i]} active" for i in sorted(short)),
                       why="A missing link unbalances rings and NVLink SHARP; NCCL's bandwidth model assumes every link of the generation.",
                       fix="Reset the GPUs; if links stay down, reseat/RMA the baseboard and check Fabric Manager logs.", evidence=ev)
    if slow:
        return finding(PROBE_ID, "link_state", "warning", "NVLink links below nominal speed", observed=obs,
                       expected=f"every active link at {top:g} GB/s", why="A slow link caps every collective that crosses it.",
                       fix="Reset the GPUs and check for NVLink errors (Xid 74).", evidence=ev)
    return finding(PROBE_ID, "link_state", "ok", t, observed=obs,
                   why="Bridged PCIe pairs list inactive link slots by design (e.g. 12 of 18 on H100 PCIe).", evidence=ev)


def _errors(f: NvlinkFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "nvlink_errors"), ("host", "dmesg_nvrm")]
    t = "NVLink errors"
    if (why := _pcie_only_reason(f)):
        return _na("errors", t, why, ev)
    if f.xid74:
        return finding(PROBE_ID, "errors", "critical", "NVLink Xid 74 since boot", observed=f"Xid 74 × {f.xid74}",
                       expected="no Xid 74", why="Xid 74 is an NVLink error: the link was retrained or failed.",
                       fix="Reset the GPUs; recurring Xid 74 on one link means hardware (baseboard/bridge) service.", evidence=ev)
    nonzero = {(g, ln, k): v for g, links in f.error_counters.items() for ln, c in links.items() for k, v in c.items() if v}
    if nonzero:
        obs = "; ".join(f"GPU{g} link {ln} {k}={v}" for (g, ln, k), v in list(nonzero.items())[:8])
        return finding(PROBE_ID, "errors", "info", "NVLink error counters non-zero", observed=obs,
                       expected="counters not growing between two samples",
                       why="One sample cannot tell old from growing errors; compare a second run.", evidence=ev)
    if not any(f.error_counters.values()):
        # no Xid 74 in the log proves nothing while the counters themselves are unreadable
        log = "kernel log not read" if f.xid74 is None else "no Xid 74 in the kernel log"
        counters = f.problems.get("nvlink_errors") or (
            "no counter line parsed for any GPU" if f.error_counters else "error counters not read")
        return finding(PROBE_ID, "errors", "unknown", t, observed=counters + "; " + log, evidence=ev)
    return finding(PROBE_ID, "errors", "ok", t, observed="no NVLink error counts" + ("" if f.xid74 is None else ", no Xid 74"),
                   evidence=ev)


def _fm_service(f: NvlinkFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "fabricmanager_status"), ("host", "fabricmanager_version")]
    t = "Fabric Manager service"
    nvs = is_nvswitch_system(f)
    if nvs is False:
        if f.fm_active in ("failed", "activating") or any("nothing to do" in m for m in f.fm_messages):
            return finding(PROBE_ID, "fabric_manager_service", "info", "Fabric Manager installed but not needed",
                           observed=f"not applicable (no NVSwitch): unit {f.fm_active}; " + "; ".join(f.fm_messages),
                           why="Without NVSwitches Fabric Manager has nothing to do (NV_WARN_NOTHING_TO_DO) and fails by design.",
                           fix="Optionally disable nvidia-fabricmanager to quiet the failed unit.", evidence=ev)
        return _na("fabric_manager_service", t, "no NVSwitch in this system", ev)
    if nvs is None:
        return finding(PROBE_ID, "fabric_manager_service", "unknown", t, observed="GPU models unknown", evidence=ev)
    if f.fm_present is None:
        return finding(PROBE_ID, "fabric_manager_service", "unknown", t,
                       observed=f.problems.get("fabricmanager_status", "systemctl not readable"), evidence=ev)
    if not f.fm_present or f.fm_active != "active":
        return finding(PROBE_ID, "fabric_manager_service", "critical", "Fabric Manager not running on an NVSwitch system",
                       observed="unit not installed" if not f.fm_present else f"unit {f.fm_active}",
                       expected="nvidia-fabricmanager active (running)",
                       why="Fabric Manager trains the NVSwitch links and routing; without it CUDA init fails with error 802 'system not yet initialized'.",
                       fix="Install nvidia-fabricmanager of exactly the driver's version and systemctl enable --now it.", evidence=ev)
    return finding(PROBE_ID, "fabric_manager_service", "ok", t,
                   observed="active" + (f", version {f.fm_version}" if f.fm_version else " (version not read)"), evidence=ev)


def _fabric_state(f: NvlinkFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "smi_query_fabric"), ("host", "smi_q_xml")]
    t = "Per-GPU fabric registration"
    if (why := _pcie_only_reason(f)):
        return _na("fabric_state", t, why, ev)
    if not f.fabric_read:
        return finding(PROBE_ID, "fabric_state", "unknown", t, observed=f.problems.get("smi_query_fabric", "not read"), evidence=ev)
    states = [(i, s, st) for i, s, st in f.fabric if s]
    if f.fabric_unreadable:
        return finding(PROBE_ID, "fabric_state", "unknown", t, observed="fabric state not readable (nvidia-smi error token) on "
                       + ", ".join(f"GPU{i}" for i in f.fabric_unreadable), evidence=ev)
    if not states and is_nvswitch_system(f):
        return finding(PROBE_ID, "fabric_state", "unknown", t,
                       observed="NVSwitch system but no GPU reports a fabric state", evidence=ev)
    if not states:
        return _na("fabric_state", t, "fabric state N/A (no NVSwitch fabric)", ev)
    bad = [(i, s, st) for i, s, st in states if s.lower() != "completed" or (st and st.lower() != "success")]
    obs = ", ".join(f"GPU{i}: {s}/{st}" for i, s, st in states)
    if not bad:
        return finding(PROBE_ID, "fabric_state", "ok", t, observed=f"all {len(states)} GPUs Completed/Success", evidence=ev)
    sev = "warning" if all(s.lower() == "in progress" for _, s, _ in bad) else "critical"
    return finding(PROBE_ID, "fabric_state", sev, "GPUs not registered with the NVLink fabric", observed=obs,
                   expected="Completed / Success on every GPU",
                   why="GPUs move Not Started -> In Progress -> Completed as Fabric Manager registers them; until then NVLink P2P is off.",
                   fix="Check Fabric Manager (status and /var/log/fabricmanager.log) on the host.", evidence=ev)


def _nvl5(f: NvlinkFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "ib_umad_loaded"), ("host", "fabricmanager_status")]
    t = "NVLink-5 prerequisites (ib_umad, NVLink subnet manager)"
    if not (is_nvswitch_system(f) and _is_nvl5(f)):
        return _na("fabric_nvl5_prereqs", t, "not an NVLink-5 (B200/GB200-class) NVSwitch system", ev)
    if f.ib_umad is None:
        return finding(PROBE_ID, "fabric_nvl5_prereqs", "unknown", t, observed=f.problems.get("ib_umad_loaded", "not read"), evidence=ev)
    if not f.ib_umad:
        return finding(PROBE_ID, "fabric_nvl5_prereqs", "critical", "ib_umad not loaded on an NVLink-5 system",
                       observed="ib_umad absent from /proc/modules", expected="ib_umad loaded, NVLink subnet manager running",
                       why="Fabric Manager 570+ on NVL5 systems talks to the switches with InfiniBand-style management datagrams through ib_umad.",
                       fix="Load ib_umad at boot (modules-load.d) and install/enable the NVLink subnet manager.", evidence=ev)
    return finding(PROBE_ID, "fabric_nvl5_prereqs", "ok", t, observed="ib_umad loaded", evidence=ev)


def _nvswitch_inventory(f: NvlinkFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "lspci_nvswitch")]
    t = "NVSwitch devices present"
    if not is_nvswitch_system(f):
        return _na("fabric_nvswitch_inventory", t, "no NVSwitch system", ev)
    if _is_nvl5(f):
        return finding(PROBE_ID, "fabric_nvswitch_inventory", "info", t,
                       observed="NVLink-5 switches are managed over the NVLink subnet manager, not visible as PCI bridges: count them in FM/NVLSM logs",
                       evidence=ev)
    want = next((k for key, k in NVSWITCHES if any(key in n.upper() for n in f.gpu_names)), None)
    if f.nvswitch_functions is None or want is None:
        return finding(PROBE_ID, "fabric_nvswitch_inventory", "unknown", t,
                       observed=f.problems.get("lspci_nvswitch", "expected NVSwitch count unknown for this baseboard"), evidence=ev)
    if f.nvswitch_functions < want:
        return finding(PROBE_ID, "fabric_nvswitch_inventory", "critical", "NVSwitch devices missing",
                       observed=f"{f.nvswitch_functions} NVSwitch PCI functions", expected=f"{want}",
                       why="A missing switch removes bandwidth from every GPU pair and may stop Fabric Manager.",
                       fix="Check the baseboard (BMC logs) and the NVSwitch driver in dmesg.", evidence=ev)
    return finding(PROBE_ID, "fabric_nvswitch_inventory", "ok", t, observed=f"{f.nvswitch_functions} NVSwitch PCI functions",
                   expected=f"{want}", evidence=ev)


def _nvls(f: NvlinkFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "smi_query_fabric")]
    t = "NVLink SHARP (NVLS)"
    if not is_nvswitch_system(f) or not any(re.search(r"H100|H200|B200|GB200", n.upper()) for n in f.gpu_names):
        return _na("nvls", t, "NVLS needs an H100/H200/B200 NVSwitch system", ev)
    return finding(PROBE_ID, "nvls", "unknown", t,
                   observed="the engine's NCCL_NVLS_ENABLE is read by nccl.env_overrides (engine environment), not here",
                   evidence=ev)


def _container_access(f: NvlinkFacts) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "smi_query_fabric")]
    t = "What containers need for NVLink"
    if any("GB200" in n.upper() or "GB300" in n.upper() for n in f.gpu_names):
        return finding(PROBE_ID, "fabric_container_access", "info", t,
                       observed="GB200-class: multi-node NVLink needs IMEX channel devices (/dev/nvidia-caps-imex-channels) in the container",
                       evidence=ev)
    return _na("fabric_container_access", t, "single-node NVLink needs only the GPU device nodes; IMEX is for multi-node NVLink", ev)


def _unknown_without_gpus(f: Finding, facts: NvlinkFacts) -> Finding:
    """Rules keyed on the GPU model cannot say "not applicable" when the model is unknown."""
    if facts.gpu_names or f.severity.value == "unknown":
        return f
    return f.model_copy(update={"severity": Severity.UNKNOWN,
                                "observed": f"GPU models unknown: {facts.smi_error or 'nvidia-smi not readable'}"})


def _fabric_vs_container(host: NvlinkFacts | None, ctr: NvlinkFacts | None) -> Finding:
    t = "Fabric state seen from the container"
    targets: list[Role] = ["host", "container"] if ctr is not None else ["host"]
    ev: list[tuple[Role, str]] = [("container", "smi_query_fabric"), ("host", "smi_query_fabric")]
    if ctr is None:
        return finding(PROBE_ID, "fabric_vs_container", "ok", t, targets=targets, observed="not applicable: no container target")
    if host is not None and is_nvswitch_system(host) is False:
        return finding(PROBE_ID, "fabric_vs_container", "ok", t, targets=targets,
                       observed="not applicable: no NVSwitch fabric on this host", evidence=ev)
    if not ctr.fabric_read:
        return finding(PROBE_ID, "fabric_vs_container", "unknown", t, targets=targets,
                       observed=ctr.problems.get("smi_query_fabric", "not read"), evidence=ev)
    bad = [(i, s) for i, s, _ in ctr.fabric if s and s.lower() != "completed"]
    if bad:
        return finding(PROBE_ID, "fabric_vs_container", "warning", "Container sees the fabric not ready", targets=targets,
                       observed=", ".join(f"GPU{i}: {s}" for i, s in bad), expected="Completed",
                       why="Fabric registration is done by Fabric Manager on the host; a container can neither see nor fix its cause.",
                       fix="Fix it on the HOST (see nvlink.fabric_state / fabric_manager_service); nothing to change in the container.",
                       evidence=ev)
    return finding(PROBE_ID, "fabric_vs_container", "ok", t, targets=targets, observed="container sees the fabric Completed or N/A",
                   evidence=ev)


def summarize(facts: FactsByTarget) -> str:
    f: NvlinkFacts | None = facts.get("host")
    if f is None:
        return ""
    if not f.gpu_names:
        return f"unknown ({f.smi_error[:50]})" if f.smi_error else "unknown"
    if _pcie_only_reason(f):
        return "no NVLink (PCIe board) — n/a"
    if _has_nvlink(f):
        speeds = [s for ls in f.links.values() for _, a, s in ls if a and s]
        per = max((sum(1 for _, a, _ in ls if a) for ls in f.links.values()), default=0)
        nvs = " · NVSwitch" if is_nvswitch_system(f) else ""
        return f"{per} links/GPU" + (f" @ {max(speeds):g} GB/s" if speeds else "") + nvs
    return "no NVLink seen"


PROBE = Probe(id=PROBE_ID, title="NVLink / fabric", commands=COMMANDS, extract=extract, judge=judge, summarize=summarize)
