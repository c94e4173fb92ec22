"""Raw outputs of one target -> FirmwareFacts: one small reader per source; never raises.

A reader that finds its output unusable (an nvidia-smi error banner, no BIOS record, no NUMA node) notes why
in `problems[command_id]`, which makes the checks that need it unknown.
"""

from __future__ import annotations

import re

from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.judge.combiners import kernel_cmdline, parse_iommu_state
from gpuaudit.probes.core.judge.probe import Reads, read_table
from gpuaudit.probes.core.models import Role
from gpuaudit.probes.core.parsers.cpu import (
    cpu_identity,
    idle_states_from_sysfs,
    parse_cpupower_idle_info,
    parse_grep_h,
    parse_lscpu,
)
from gpuaudit.probes.core.parsers.dmi import (
    bios_info,
    is_system_dimm,
    memory_devices,
    parse_dmidecode,
    slot_place,
)
from gpuaudit.probes.core.parsers.lspci import parse_lspci_vvv
from gpuaudit.probes.core.parsers.nvidia_smi import (
    parse_query_gpu_csv,
    parse_smi_q,
    q_get,
)
from gpuaudit.probes.core.parsers.system import parse_numactl_h
from gpuaudit.probes.core.parsing import cpu_list, first_line, parse_once
from gpuaudit.probes.core.spec import Outputs, record_problem
from gpuaudit.probes.firmware.bios import (
    read_bios,
    read_lspci_aspm,
    read_pending,
    read_system,
)
from gpuaudit.probes.firmware.facts import Dimm, FirmwareFacts

FW_FIELDS = ("index", "pci.bus_id", "vbios_version", "inforom.img")

Data = dict[str, object]
Problems = dict[str, str]


@parse_once
def parse_numa_nodes(text: str) -> dict[str, dict[str, str]]:
    """`sys_numa` (grep -H of node*/cpulist and MemTotal) -> {"node0": {"cpulist": "0-63", "memtotal_kb": "..."}}."""
    nodes: dict[str, dict[str, str]] = {}
    for path, vals in parse_grep_h(text).items():
        m = re.search(r"/(node\d+)/(cpulist|meminfo)$", path)
        if m and vals:
            if m.group(2) == "cpulist":
                nodes.setdefault(m.group(1), {})["cpulist"] = vals[0]
            elif mm := re.search(r"MemTotal:\s*(\d+)", vals[0]):
                nodes.setdefault(m.group(1), {})["memtotal_kb"] = mm.group(1)
    return nodes


def _mib(value: str | None) -> int | None:
    m = re.match(r"\s*(\d+)\s*MiB", value or "")
    return int(m.group(1)) if m else None


def _bios(t: str, d: Data, p: Problems) -> None:
    d["bios"] = bios_info(parse_dmidecode(t))
    if not d["bios"]:
        p["dmidecode_bios"] = "no BIOS record in dmidecode output"


def _dmi_bios(t: str, d: Data, p: Problems) -> None:
    lines = [ln.strip() for ln in t.splitlines() if ln.strip()]
    if d.get("bios"):
        return
    if len(lines) == 3:
        d["bios"] = {
            "bios_vendor": lines[0],
            "bios_version": lines[1],
            "bios_release_date": lines[2],
        }
    else:
        p["dmi_bios"] = f"expected 3 lines (vendor, version, date), got {len(lines)}"


def _microcode(t: str, d: Data, p: Problems) -> None:
    d["microcode"] = first_line(t).split(":", 1)[-1].strip() or None


def _lscpu(t: str, d: Data, p: Problems) -> None:
    fields = parse_lscpu(t)
    ident = cpu_identity(fields)
    online = fields.get("On-line CPU(s) list")
    d.update(
        cpu_vendor=ident.vendor,
        cpu_family=ident.family,
        sockets=ident.sockets,
        hypervisor=ident.hypervisor,
        cpus=ident.cpus,
        online_cpus=len(cpu_list(online)) if online else None,
    )
    if ident.vendor is None or not ident.sockets:
        p["lscpu_json"] = "lscpu gave no CPU vendor or socket count"


def _sys_numa(t: str, d: Data, p: Problems) -> None:
    d["numa_nodes"] = parse_numa_nodes(t)
    if not d[
        "numa_nodes"
    ]:  # the line ends in `; true`: an empty answer is the only sign of a failure
        p["sys_numa"] = "no NUMA node listed under /sys/devices/system/node"


def _lspci_bar1(t: str, d: Data, p: Problems) -> None:
    """`lspci -vvv` (the shared parser, parsed once): each NVIDIA GPU's BAR1 (the largest 64-bit prefetchable
    region), in MiB, by bus id."""
    d["bar1_mib_lspci"] = {
        dev.bdf: max(dev.prefetchable64.values()) >> 20
        for dev in parse_lspci_vvv(t)
        if dev.is_gpu and dev.prefetchable64
    }


def _lspci(t: str, d: Data, p: Problems) -> None:
    read_lspci_aspm(t, d, p)
    _lspci_bar1(t, d, p)


def _numactl(t: str, d: Data, p: Problems) -> None:
    """`numactl -H`: the same nodes (CPUs, memory) when the sysfs read gave none."""
    if d.get("numa_nodes"):
        return
    topo = parse_numactl_h(t)
    d["numa_nodes"] = {
        f"node{n.id}": {
            "cpulist": ",".join(map(str, n.cpus)),
            **({"memtotal_kb": str(n.size_mb * 1024)} if n.size_mb is not None else {}),
        }
        for n in topo.nodes.values()
    }
    if not d["numa_nodes"]:
        p["numactl_h"] = "numactl -H listed no node"


def _iommu(t: str, d: Data, p: Problems) -> None:
    try:  # the shared parser (nccl reads the same record)
        d["iommu_units"], d["gpu_iommu_types"] = parse_iommu_state(t)
    except ValueError as exc:
        raise ParseError(str(exc)) from None


def _cmdline(t: str, d: Data, p: Problems) -> None:
    d["cmdline"] = kernel_cmdline(t).line  # the shared reading (combiners)


def _cppc(t: str, d: Data, p: Problems) -> None:
    d["cppc"] = {k.rsplit("/", 1)[-1]: v[0] for k, v in parse_grep_h(t).items() if v}


def _cpuidle(t: str, d: Data, p: Problems) -> None:
    states = idle_states_from_sysfs(parse_grep_h(t))
    if states:
        d["idle_state_names"] = [f"{s.name}:{s.latency_us}" for s in next(iter(states.values()))]


def _cpupower_idle(t: str, d: Data, p: Problems) -> None:
    """Fallback when cpuidle sysfs is unreadable (the same line the power probe runs)."""
    if not d.get("idle_state_names"):
        d["idle_state_names"] = [
            f"{s.name}:{s.latency_us}" for s in parse_cpupower_idle_info(t).states
        ]


def _smi_q_memory(t: str, d: Data, p: Problems) -> None:
    try:
        gpus = parse_smi_q(t)
    except ParseError as exc:
        p["smi_q_memory"] = str(exc)
        return
    for key, section in (("bar1_mib", "BAR1 Memory Usage"), ("fb_mib", "FB Memory Usage")):
        d[key] = {
            g["_bus_id"]: v for g in gpus if (v := _mib(q_get(g, section, "Total"))) is not None
        }
    if not d["bar1_mib"]:
        p["smi_q_memory"] = "no BAR1 section in nvidia-smi -q"


def _dimms(t: str, d: Data, p: Problems) -> None:
    dimms = []
    for m in filter(is_system_dimm, memory_devices(parse_dmidecode(t))):
        place = slot_place(m.locator, m.bank)
        dimms.append(
            Dimm(
                locator=m.locator,
                size_mb=m.size_mb,
                speed_mts=m.speed_mts,
                configured_mts=m.configured_mts,
                bank=m.bank,
                socket=place.socket,
                channel=place.channel,
            )
        )
    d["dimms"] = dimms
    if not dimms:
        p["dmidecode_memory"] = "no memory device (DMI type 17) listed"


def _gpu_fw(t: str, d: Data, p: Problems) -> None:
    try:
        rows = parse_query_gpu_csv(t, FW_FIELDS)
    except ParseError as exc:
        p["smi_query_fw"] = str(exc)
        return
    d["gpu_fw"] = {
        r["index"]: (r["vbios_version"] or "N/A", r["inforom.img"] or "N/A")
        for r in rows
        if r["index"]
    }
    if not d["gpu_fw"]:
        p["smi_query_fw"] = "no GPU listed"


TABLE: tuple[Reads, ...] = (
    Reads("dmidecode_bios", fill=_bios),
    Reads("dmi_bios", fill=_dmi_bios),
    Reads("cpuinfo_microcode", fill=_microcode),
    Reads("lscpu_json", fill=_lscpu),
    Reads("sys_numa", fill=_sys_numa),
    Reads("numactl_h", fill=_numactl),  # the fallback for sys_numa
    Reads("iommu_state", fill=_iommu),
    Reads("proc_cmdline", fill=_cmdline),
    Reads("sys_cppc", fill=_cppc),
    Reads("sys_cpuidle", fill=_cpuidle),
    Reads("cpupower_idle", fill=_cpupower_idle),
    Reads("smi_q_memory", fill=_smi_q_memory),
    Reads("dmidecode_memory", fill=_dimms),
    Reads("smi_query_fw", fill=_gpu_fw),
    # --bmc (bios.py): the system first, it picks the vendor's map rows
    Reads("redfish_system", fill=read_system),
    Reads("redfish_bios", fill=read_bios),
    Reads("redfish_bios_pending", fill=read_pending),
    # the links' ASPM state beside the BIOS setting; the GPUs' BAR1 aperture from the region sizes
    Reads("lspci_vvv", fill=_lspci),
)
"""Source -> reader, in order (dmi_bios is the fallback for dmidecode_bios), run by the framework (`read_table`):
an unusable record or odd output makes its source a problem, never the probe fail."""


def extract(outputs: Outputs, role: Role) -> FirmwareFacts:
    read = read_table(outputs, TABLE, why=str, usability=record_problem)
    return FirmwareFacts.of(read.fields, problems=read.problems)


FIELD_SOURCES: dict[str, tuple[str, ...]] = {
    "bios": ("dmidecode_bios",),
    "microcode": ("cpuinfo_microcode",),
    "cpu_vendor": ("lscpu_json",),
    "cpu_family": ("lscpu_json",),
    "sockets": ("lscpu_json",),
    "cpus": ("lscpu_json",),
    "online_cpus": ("lscpu_json",),
    "hypervisor": ("lscpu_json",),
    "numa_nodes": ("sys_numa",),
    "iommu_units": ("iommu_state",),
    "gpu_iommu_types": ("iommu_state",),
    "cmdline": ("proc_cmdline",),
    "cppc": ("sys_cppc",),
    "idle_state_names": ("sys_cpuidle",),
    "bar1_mib": ("smi_q_memory",),
    "fb_mib": ("smi_q_memory",),
    "bar1_mib_lspci": ("lspci_vvv",),
    "dimms": ("dmidecode_memory",),
    "gpu_fw": ("smi_query_fw",),
    "bmc_system": ("redfish_system",),
    "bios_settings": ("redfish_bios",),
    "bios_unmapped": ("redfish_bios",),
    "bios_vendor_map": ("redfish_bios", "redfish_system"),
    "bios_registry": ("redfish_bios",),
    "link_aspm": ("lspci_vvv",),
    "bios_pending": ("redfish_bios_pending",),
}
"""Each fact field -> the sources it is read from (provenance; the read-tracking test holds verdicts to
their checks' declarations through it). () = from the records' wrapping, not a source's output."""
