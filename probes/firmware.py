"""Firmware / UEFI probe: BIOS identity and the OS-visible effects of BIOS settings.

Most BIOS knobs are invisible to Linux: where an effect can be read (CPPC objects, exposed
C-states, NUMA nodes, IOMMU group types, BAR1 size, DIMM population) the rule judges it; the rest
become `manual: check BIOS setting X` findings with whatever evidence Linux does give.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pydantic import BaseModel

from gpuaudit.probes.core.models import Finding, Role
from gpuaudit.probes.core.parsers.cpu import cpu_identity, idle_states_from_sysfs, parse_grep_h, parse_lscpu
from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.parsers.dmi import bios_info, memory_devices, parse_dmidecode
from gpuaudit.probes.core.parsers.nvidia_smi import parse_query_gpu_csv, parse_smi_q, q_get
from gpuaudit.probes.core.parsing import first_line
from gpuaudit.probes.core.sources import use
from gpuaudit.probes.core.spec import FactsByTarget, Outputs, Probe, finding, usable_stdout

PROBE_ID = "firmware"
FW_FIELDS = ("index", "pci.bus_id", "vbios_version", "inforom.img")

COMMANDS = (
    use('dmidecode_bios', 'dmidecode_memory', 'dmi_bios', 'cpuinfo_microcode', 'lscpu_json', 'sys_numa',
    'iommu_state', 'proc_cmdline', 'sys_cppc', 'sys_cpuidle', 'smi_q_memory', 'smi_query_fw')
)


class Dimm(BaseModel, frozen=True):
    locator: str
    size_mb: int | None = None
    speed_mts: int | None = None
    configured_mts: int | None = None


class FirmwareFacts(BaseModel, frozen=True):
    bios: dict[str, str] = {}
    microcode: str | None = None
    cpu_vendor: str | None = None
    cpu_family: int | None = None
    sockets: int | None = None
    hypervisor: str | None = None
    numa_nodes: dict[str, dict[str, str]] = {}
    """node name -> {"cpulist": ..., "memtotal_kb": ...}."""
    iommu_units: list[str] | None = None
    gpu_iommu_types: dict[str, str] = {}
    cmdline: str | None = None
    cppc: dict[str, str] | None = None
    idle_state_names: list[str] = []
    bar1_mib: dict[str, int] = {}
    fb_mib: dict[str, int] = {}
    dimms: list[Dimm] = []
    gpu_fw: dict[str, tuple[str, str]] = {}
    problems: dict[str, str] = {}


def parse_iommu_state(text: str) -> tuple[list[str], dict[str, str]]:
    """`iommu_state` output -> (IOMMU units, {GPU BDF: group type}).

        units: ivhd0 ivhd1
        gpu 0000:01:00.0 identity
    A GPU without a type (no IOMMU group) maps to "".
    """
    units: list[str] = []
    types: dict[str, str] = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if parts[:1] == ["units:"]:
            units = parts[1:]
        elif parts[:1] == ["gpu"] and len(parts) >= 2:
            types[parts[1]] = parts[2] if len(parts) > 2 else ""
    return units, types


def _mib(value: str | None) -> int | None:
    m = re.match(r"\s*(\d+)\s*MiB", value or "")
    return int(m.group(1)) if m else None


def extract(outputs: Outputs, role: Role) -> FirmwareFacts:
    problems: dict[str, str] = {}
    f: dict = {}
    if (t := usable_stdout(outputs, "dmidecode_bios", problems)) is not None:
        f["bios"] = bios_info(parse_dmidecode(t))
        if not f["bios"]:
            problems["dmidecode_bios"] = "no BIOS record in dmidecode output"
    if not f.get("bios") and (t := usable_stdout(outputs, "dmi_bios", problems)) is not None:
        lines = [ln.strip() for ln in t.splitlines() if ln.strip()]
        if len(lines) == 3:
            f["bios"] = {"bios_vendor": lines[0], "bios_version": lines[1], "bios_release_date": lines[2]}
    if (t := usable_stdout(outputs, "cpuinfo_microcode", problems)) is not None:
        f["microcode"] = first_line(t).split(":", 1)[-1].strip() or None
    if (t := usable_stdout(outputs, "lscpu_json", problems)) is not None:
        ident = cpu_identity(parse_lscpu(t))
        f.update(cpu_vendor=ident.vendor, cpu_family=ident.family, sockets=ident.sockets, hypervisor=ident.hypervisor)
    if (t := usable_stdout(outputs, "sys_numa", problems)) is not None:
        nodes: dict[str, dict[str, str]] = {}
        for path, vals in parse_grep_h(t).items():
            m = re.search(r"/(node\d+)/(cpulist|meminfo)$", path)
            if m and vals:
                if m.group(2) == "cpulist":
                    nodes.setdefault(m.group(1), {})["cpulist"] = vals[0]
                elif (mm := re.search(r"MemTotal:\s*(\d+)", vals[0])):
                    nodes.setdefault(m.group(1), {})["memtotal_kb"] = mm.group(1)
        f["numa_nodes"] = nodes
    if (t := usable_stdout(outputs, "iommu_state", problems)) is not None:
        f["iommu_units"], f["gpu_iommu_types"] = parse_iommu_state(t)
    if (t := usable_stdout(outputs, "proc_cmdline", problems)) is not None:
        f["cmdline"] = first_line(t)
    if (t := usable_stdout(outputs, "sys_cppc", problems)) is not None:
        f["cppc"] = {k.rsplit("/", 1)[-1]: v[0] for k, v in parse_grep_h(t).items() if v}
    if (t := usable_stdout(outputs, "sys_cpuidle", problems)) is not None:
        states = idle_states_from_sysfs(parse_grep_h(t))
        if states:
            f["idle_state_names"] = [f"{s.name}:{s.latency_us}" for s in next(iter(states.values()))]
    if (t := usable_stdout(outputs, "smi_q_memory", problems)) is not None:
        try:
            gpus = parse_smi_q(t)
        except ParseError as exc:
            problems["smi_q_memory"] = str(exc)
            gpus = []
        for key, section in (("bar1_mib", "BAR1 Memory Usage"), ("fb_mib", "FB Memory Usage")):
            f[key] = {g["_bus_id"]: v for g in gpus if (v := _mib(q_get(g, section, "Total"))) is not None}
    if (t := usable_stdout(outputs, "dmidecode_memory", problems)) is not None:
        f["dimms"] = [Dimm(locator=d.locator, size_mb=d.size_mb, speed_mts=d.speed_mts, configured_mts=d.configured_mts)
                      for d in memory_devices(parse_dmidecode(t))]
    if (t := usable_stdout(outputs, "smi_query_fw", problems)) is not None:
        try:
            rows = parse_query_gpu_csv(t, FW_FIELDS)
        except ParseError as exc:
            problems["smi_query_fw"] = str(exc)
            rows = []
        f["gpu_fw"] = {r["index"]: (r["vbios_version"] or "N/A", r["inforom.img"] or "N/A") for r in rows if r["index"]}
    return FirmwareFacts(**f, problems=problems)


# --------------------------------------------------------------------------- rules

def _inventory(h: FirmwareFacts) -> Iterator[Finding]:
    ev: list[tuple[Role, str]] = [("host", "dmidecode_bios"), ("host", "dmi_bios"), ("host", "cpuinfo_microcode")]
    b = h.bios
    if not b:
        reason = h.problems.get("dmidecode_bios") or h.problems.get("dmi_bios") or "no DMI data"
        yield finding(PROBE_ID, "inventory", "unknown", "BIOS identity unknown", observed=reason, evidence=ev)
        return
    obs = f"{b.get('bios_vendor', '?')} {b.get('bios_version', '?')} ({b.get('bios_release_date', '?')})"
    if b.get("system_product_name") or b.get("board_product_name"):
        obs += f"; {b.get('system_manufacturer', '')} {b.get('system_product_name', '')} / board {b.get('board_product_name', '?')}"
    if h.microcode:
        obs += f"; microcode {h.microcode}"
    yield finding(PROBE_ID, "inventory", "info", "BIOS and board identity", observed=obs.strip(),
                  why="AGESA/BIOS revisions change PCIe, power and memory defaults; compare across the nodes of a pool.",
                  evidence=ev)


def _numa_mode(h: FirmwareFacts) -> Iterator[Finding]:
    ev: list[tuple[Role, str]] = [("host", "sys_numa"), ("host", "lscpu_json")]
    nodes = h.numa_nodes
    if not nodes or not h.sockets:
        yield finding(PROBE_ID, "numa_mode", "unknown", "NUMA mode unknown",
                      observed=h.problems.get("sys_numa") or h.problems.get("lscpu_json") or "node or socket count missing",
                      evidence=ev)
        return
    nps = len(nodes) / h.sockets
    cpu_only = [n for n, v in nodes.items() if v.get("cpulist") and int(v.get("memtotal_kb") or 0) < 1024 * 1024]
    obs = f"{len(nodes)} node(s), {h.sockets} socket(s): {nps:g} node(s) per socket"
    if cpu_only:
        yield finding(PROBE_ID, "numa_mode", "warning", "NUMA nodes with CPUs but no memory (L3 as NUMA?)",
                      observed=obs + f"; memory-less: {', '.join(sorted(cpu_only))}", expected="NPS1, no CPU-only nodes",
                      why="'ACPI SRAT L3 cache as NUMA domain' splits each CCX into a node, fragmenting scheduling domains.",
                      fix="BIOS: disable 'ACPI SRAT L3 Cache as NUMA Domain'.", evidence=ev)
    elif nps <= 1:
        yield finding(PROBE_ID, "numa_mode", "ok", "One NUMA node per socket (NPS1)", observed=obs, evidence=ev)
    else:
        yield finding(PROBE_ID, "numa_mode", "info", f"NPS{nps:g} / SNC: several nodes per socket", observed=obs,
                      expected="NPS1 unless every rank is bound to its GPU's node",
                      why="Extra nodes per socket help only when processes are pinned; unpinned they add remote accesses.",
                      fix="BIOS: AMD CBS > DF Common Options > NUMA nodes per socket = NPS1, or bind ranks (numa.*).",
                      evidence=ev)


def _iommu(h: FirmwareFacts) -> Iterator[Finding]:
    ev: list[tuple[Role, str]] = [("host", "iommu_state"), ("host", "proc_cmdline")]
    if h.iommu_units is None:
        yield finding(PROBE_ID, "iommu_mode", "unknown", "IOMMU state unknown",
                      observed=h.problems.get("iommu_state", "not collected"), evidence=ev)
        return
    types = sorted(set(h.gpu_iommu_types.values()))
    cmd = " ".join(t for t in (h.cmdline or "").split() if "iommu" in t)
    if not h.iommu_units and not any(types):
        yield finding(PROBE_ID, "iommu_mode", "ok", "IOMMU off", observed="no IOMMU units" + (f"; cmdline {cmd}" if cmd else ""),
                      why="Off avoids P2P redirection; on hosts with >= 256 CPUs AMD prefers IOMMU on + iommu=pt.",
                      evidence=ev)
        return
    translated = [b for b, t in h.gpu_iommu_types.items() if t.startswith("DMA")]
    multi = len(h.gpu_iommu_types) >= 2
    obs = f"IOMMU on ({len(h.iommu_units)} unit(s)); GPU groups: {_counts(h.gpu_iommu_types.values())}" + (f"; cmdline {cmd}" if cmd else "")
    if translated and multi:
        yield finding(PROBE_ID, "iommu_mode", "warning", "GPUs in translated IOMMU domains", observed=obs,
                      expected="identity (iommu=pt) for host-driver GPUs",
                      why="Translated DMA can redirect GPU peer-to-peer traffic to the root complex: slow P2P or NCCL"
                          " hangs (RTX PRO 6000 reports with TP=2).",
                      fix="Boot with iommu=pt (keeps VFIO VMs working on Proxmox); see pcie.acs for ACS redirect.",
                      evidence=ev)
    elif translated:
        yield finding(PROBE_ID, "iommu_mode", "info", "Single GPU in a translated IOMMU domain", observed=obs, evidence=ev)
    else:
        yield finding(PROBE_ID, "iommu_mode", "ok", "IOMMU passthrough for the GPUs", observed=obs, evidence=ev)


def _counts(values) -> str:
    c: dict[str, int] = {}
    for v in values:
        c[v or "none"] = c.get(v or "none", 0) + 1
    return ", ".join(f"{k} ×{n}" for k, n in sorted(c.items())) or "none"


def _bar1(h: FirmwareFacts) -> Iterator[Finding]:
    ev: list[tuple[Role, str]] = [("host", "smi_q_memory")]
    if not h.bar1_mib:
        yield finding(PROBE_ID, "bar1_large_bar", "unknown", "BAR1 size unknown",
                      observed=h.problems.get("smi_q_memory", "no BAR1 section in nvidia-smi -q"), evidence=ev)
        return
    small = {g: v for g, v in h.bar1_mib.items() if v <= 256}
    mid = {g: v for g, v in h.bar1_mib.items() if v > 256 and v < h.fb_mib.get(g, 0)}
    obs = "BAR1 " + _counts(f"{v} MiB" for v in h.bar1_mib.values())
    if small and len(h.bar1_mib) > 1:
        yield finding(PROBE_ID, "bar1_large_bar", "warning", "256 MiB BAR1 on a multi-GPU box", observed=obs,
                      expected="BAR1 >= framebuffer", why="A small BAR1 limits P2P and CPU access to VRAM.",
                      fix="manual: check BIOS Above 4G Decoding = Enabled and Re-Size BAR Support = Enabled; RTX PRO"
                          " Workstation cards: switch display mode to compute/headless.", evidence=ev)
    elif small or mid:
        yield finding(PROBE_ID, "bar1_large_bar", "info", "BAR1 smaller than the framebuffer", observed=obs,
                      fix="manual: check BIOS Re-Size BAR Support.", evidence=ev)
    else:
        yield finding(PROBE_ID, "bar1_large_bar", "ok", "Large BAR1 (Above-4G decoding and ReBAR effective)", observed=obs,
                      evidence=ev)


def _vendor_problem(h: FirmwareFacts) -> str:
    return "CPU vendor unknown: " + (h.problems.get("lscpu_json") or "lscpu gave no vendor")


def _cppc(h: FirmwareFacts) -> Iterator[Finding]:
    ev: list[tuple[Role, str]] = [("host", "sys_cppc"), ("host", "lscpu_json")]
    if h.cpu_vendor is None:
        yield finding(PROBE_ID, "cppc", "unknown", "CPPC check: CPU vendor unknown", observed=_vendor_problem(h), evidence=ev)
    elif h.cpu_vendor != "AMD":
        yield finding(PROBE_ID, "cppc", "ok", "CPPC check not applicable",
                      observed=f"not applicable: CPU vendor {h.cpu_vendor or 'unknown'}", evidence=ev)
    elif h.hypervisor and not h.cppc:
        # a guest rarely sees _CPC: CPPC and amd-pstate are the hypervisor host's settings, not this machine's
        yield finding(PROBE_ID, "cppc", "info", "CPPC check not applicable in a virtual machine",
                      observed=f"not applicable: virtual machine ({h.hypervisor}); acpi_cppc not exposed to the guest",
                      fix="Audit the hypervisor host itself for CPPC / amd-pstate.", evidence=ev)
    elif h.cppc is None:
        yield finding(PROBE_ID, "cppc", "unknown", "ACPI CPPC state unknown", observed=h.problems.get("sys_cppc", "not collected"),
                      evidence=ev)
    elif h.cppc:
        yield finding(PROBE_ID, "cppc", "ok", "ACPI CPPC exposed (BIOS CPPC on)",
                      observed="acpi_cppc: " + ", ".join(f"{k}={v}" for k, v in sorted(h.cppc.items())), evidence=ev)
    else:
        yield finding(PROBE_ID, "cppc", "warning", "ACPI CPPC not exposed: amd-pstate cannot load",
                      observed="/sys/devices/system/cpu/cpu0/acpi_cppc missing", expected="acpi_cppc present",
                      why="amd-pstate needs the ACPI _CPC objects; without them the kernel falls back to acpi-cpufreq.",
                      fix="manual: BIOS > AMD CBS > NBIO/SMU Common Options > CPPC = Enabled.", evidence=ev)


def _cstate_exposure(h: FirmwareFacts) -> Iterator[Finding]:
    ev: list[tuple[Role, str]] = [("host", "sys_cpuidle")]
    if not h.idle_state_names:
        yield finding(PROBE_ID, "cstate_exposure", "unknown" if "sys_cpuidle" in h.problems else "info",
                      "C-states exposed by firmware unknown",
                      observed=h.problems.get("sys_cpuidle", "no cpuidle states listed (VM or idle driver none)"), evidence=ev)
        return
    names = [n.split(":")[0] for n in h.idle_state_names]
    shallow_only = set(names) <= {"POLL", "C1", "C1E"}
    yield finding(PROBE_ID, "cstate_exposure", "info",
                  "Firmware exposes " + ("only POLL/C1: BIOS Global C-state Control likely disabled" if shallow_only
                                         else "deep C-states: BIOS Global C-state Control on"),
                  observed="states " + ", ".join(f"{n.split(':')[0]} ({n.split(':')[1]} µs)" for n in h.idle_state_names),
                  why="AMD keeps Global C-state Control = Auto and disables C2 from the OS; the policy rule is power.cpu_cstates.",
                  evidence=ev)


def _manual(h: FirmwareFacts) -> Iterator[Finding]:
    amd = h.cpu_vendor == "AMD"
    if h.cpu_vendor is None:
        yield finding(PROBE_ID, "df_pstates", "unknown", "Data-fabric P-states: CPU vendor unknown",
                      observed=_vendor_problem(h), evidence=[("host", "lscpu_json")])
    else:
        yield finding(PROBE_ID, "df_pstates", "unknown" if amd else "ok",
                      "Data-fabric P-states: manual check" if amd else "DF P-states not applicable",
                      observed="manual: check BIOS APBDIS = 1, Fixed SOC P-state = P0, DF C-states = Disabled (not"
                               " readable from Linux without the amd_hsmp/E-SMI tools)" if amd
                      else f"not applicable: CPU vendor {h.cpu_vendor}",
                      why="DF clock/power transitions add latency to memory and I/O paths." if amd else "")
    yield finding(PROBE_ID, "socket_power", "unknown" if amd or h.cpu_vendor is None else "info",
                  "Determinism / cTDP / package power: manual check",
                  observed="manual: check BIOS Determinism Control = Manual, Determinism Slider = Power, cTDP and package"
                           " power limit = maximum (E-SMI can read it where installed)",
                  why="'Performance determinism' equalises parts to a lower common level; AMD's GPU-server baseline uses Power.")
    if not h.sockets:
        yield finding(PROBE_ID, "xgmi_links", "unknown", "Socket count unknown",
                      observed=h.problems.get("lscpu_json", "lscpu missing"), evidence=[("host", "lscpu_json")])
    elif h.sockets >= 2 and h.cpu_vendor is None:
        yield finding(PROBE_ID, "xgmi_links", "unknown", "xGMI links: CPU vendor unknown", observed=_vendor_problem(h),
                      evidence=[("host", "lscpu_json")])
    elif h.sockets < 2 or not amd:
        yield finding(PROBE_ID, "xgmi_links", "ok", "xGMI links not applicable",
                      observed=f"not applicable: {h.sockets} socket(s), vendor {h.cpu_vendor}", evidence=[("host", "lscpu_json")])
    else:
        yield finding(PROBE_ID, "xgmi_links", "info", "Inter-socket xGMI links: manual check",
                      observed=f"manual: check BIOS xGMI Link Width Control = Manual, Force Link Width = x16, max speed"
                               f" ({h.sockets} sockets; not readable from Linux)",
                      why="Dynamic link-width management narrows xGMI at low utilisation, hurting bursty cross-socket P2P.",
                      evidence=[("host", "lscpu_json")])


def _memory(h: FirmwareFacts) -> Iterator[Finding]:
    ev: list[tuple[Role, str]] = [("host", "dmidecode_memory")]
    if not h.dimms:
        yield finding(PROBE_ID, "memory_population", "unknown", "DIMM population unknown",
                      observed=h.problems.get("dmidecode_memory", "no memory devices listed"), evidence=ev)
        return
    pop = [d for d in h.dimms if d.size_mb]
    sizes = sorted({d.size_mb for d in pop if d.size_mb})  # the filter repeats pop's, for mypy
    per_socket = len(pop) / (h.sockets or 1)
    obs = f"{len(pop)} of {len(h.dimms)} slots populated ({per_socket:g} per socket), sizes {', '.join(f'{s // 1024} GB' for s in sizes)}"
    slow = [d for d in pop if d.speed_mts and d.configured_mts and d.configured_mts < d.speed_mts]
    sp5 = h.cpu_vendor == "AMD" and (h.cpu_family or 0) >= 0x19 and len(h.dimms) / (h.sockets or 1) >= 12
    if len(sizes) > 1 or (sp5 and per_socket < 12):
        yield finding(PROBE_ID, "memory_population", "warning", "Memory channels not fully or evenly populated", observed=obs,
                      expected="all channels populated with identical DIMMs",
                      why="Host memory bandwidth scales with populated channels; it bounds pinned staging, KV offload and"
                          " cross-socket P2P.", fix="Populate every channel symmetrically with identical DIMMs.", evidence=ev)
    elif slow:
        yield finding(PROBE_ID, "memory_population", "info", "DIMMs configured below their rated speed",
                      observed=obs + f"; configured {slow[0].configured_mts} of {slow[0].speed_mts} MT/s",
                      why="2 DIMMs per channel or BIOS memory settings lower the speed.", evidence=ev)
    else:
        yield finding(PROBE_ID, "memory_population", "ok", "Memory evenly populated", observed=obs, evidence=ev)


def _gpu_fw(h: FirmwareFacts) -> Iterator[Finding]:
    ev: list[tuple[Role, str]] = [("host", "smi_query_fw")]
    if not h.gpu_fw:
        yield finding(PROBE_ID, "gpu_firmware_consistency", "unknown", "GPU firmware versions unknown",
                      observed=h.problems.get("smi_query_fw", "no GPUs listed"), evidence=ev)
        return
    vb = {v[0] for v in h.gpu_fw.values()}
    ir = {v[1] for v in h.gpu_fw.values()}
    obs = f"VBIOS {', '.join(sorted(vb))}; InfoROM {', '.join(sorted(ir))}"
    sev = "ok" if len(vb) == 1 and len(ir) == 1 else "info"
    yield finding(PROBE_ID, "gpu_firmware_consistency", sev,
                  "GPU firmware uniform" if sev == "ok" else "GPU firmware differs between GPUs", observed=obs, evidence=ev)


def judge(facts: FactsByTarget) -> Iterator[Finding]:
    h: FirmwareFacts | None = facts.get("host")
    if h is None:
        return
    yield from _inventory(h)
    yield from _numa_mode(h)
    yield from _iommu(h)
    yield from _bar1(h)
    yield from _cppc(h)
    yield from _cstate_exposure(h)
    yield from _manual(h)
    yield from _memory(h)
    yield from _gpu_fw(h)


def summarize(facts: FactsByTarget) -> str:
    h: FirmwareFacts | None = facts.get("host")
    if h is None:
        return ""
    parts = []
    if h.bios:
        raw = h.bios.get("bios_vendor") or "?"
        vendor = "AMI" if raw.startswith("American Megatrends") else raw.split()[0].rstrip(",")
        date = h.bios.get("bios_release_date", "")
        m = re.match(r"(\d\d)/\d\d/(\d{4})", date)
        parts.append(f"{vendor} {h.bios.get('bios_version', '?')}" + (f" ({m.group(2)}-{m.group(1)})" if m else ""))
    types = set(h.gpu_iommu_types.values())
    if h.iommu_units is not None:
        if not h.iommu_units and not any(types):
            parts.append("IOMMU off")
        elif types == {"identity"}:
            parts.append("IOMMU pt")
        elif types:
            parts.append("IOMMU " + "/".join(sorted(t or "none" for t in types)))
        else:
            parts.append("IOMMU on")
    return " · ".join(parts)


PROBE = Probe(id=PROBE_ID, title="Firmware / UEFI", commands=COMMANDS, extract=extract, judge=judge, summarize=summarize)
