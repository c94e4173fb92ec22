"""The pcie probe's outputs -> PcieFacts: a table of source -> reader, then the two real derivations
(which functions are GPUs, and the bridges above each GPU). Never raises on odd output."""

from __future__ import annotations

from typing import Any

from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.judge.combiners import kernel_cmdline
from gpuaudit.probes.core.judge.probe import Reads, read_table
from gpuaudit.probes.core.models import Role
from gpuaudit.probes.core.parsers.lspci import (
    PciDevice,
    bus_tree,
    parse_lspci_tree,
    parse_lspci_vvv,
    tree_path,
)
from gpuaudit.probes.core.parsers.system import parse_bracketed_choice
from gpuaudit.probes.core.spec import Outputs
from gpuaudit.probes.pcie.facts import LinkNow, PciDev, PcieFacts, SmiLink, SysPci
from gpuaudit.probes.pcie.parse import parse_smi_pcie, parse_sys_pci

Fields = dict[str, Any]
LIVE_SMI = ("util", "gen_cur", "width_cur")
LIVE_LSPCI = ("lnksta_speed", "lnksta_width", "speed_downgraded", "width_downgraded")
LIVE_SYSFS = ("current_link_speed", "current_link_width")
ACCESS_DENIED = (
    "needs root: lspci printed <access denied> for the capabilities (run as root or with --sudo)"
)


def _dev(d: PciDevice) -> PciDev:
    fields = {k: getattr(d, k) for k in PciDev.model_fields if hasattr(d, k)}
    return PciDev(**{**fields, "description": d.description[:160]})


def read_lspci_vvv(text: str) -> Fields:
    devices = parse_lspci_vvv(text)
    if not devices and text.strip():
        raise ValueError("unparsable lspci output")
    return {
        "devices": [_dev(d) for d in devices],
        "_raw_devices": devices,
        "_bus_tree": bus_tree(devices),
    }


def read_lspci_tv(text: str) -> Fields:
    tree = parse_lspci_tree(text)
    if not tree and text.strip():
        raise ValueError("unparsable lspci -tv output")
    return {"_tree": tree}


def read_smi(text: str) -> Fields:
    try:
        return {"smi": parse_smi_pcie(text)}
    except ParseError as exc:  # an error banner or a row of the wrong width: a fact, never a crash
        raise ValueError(f"unparsable nvidia-smi output: {exc}") from exc


TABLE: tuple[Reads, ...] = (
    Reads("lspci_vvv", read_lspci_vvv),
    Reads("lspci_tv", read_lspci_tv),
    Reads("sys_pci_nvidia", lambda t: {"sysfs": parse_sys_pci(t)}),
    Reads("smi_query_pcie", read_smi),
    Reads("aspm_policy", lambda t: {"aspm_policy": parse_bracketed_choice(t)}),
    Reads("proc_cmdline", lambda t: {"cmdline": kernel_cmdline(t).line}),
)
"""Source -> the reader of its usable stdout, run by the framework (`read_table`; ValueError = unusable, noted in
problems; an unusable record is the framework's gate's to report)."""


def gpu_functions(f: Fields) -> list[str]:
    """GPU BDFs from every source that names them: lspci class, sysfs class 0x0300/0x0302, nvidia-smi bus ids."""
    gpus = {d.bdf for d in f.get("devices", []) if d.is_gpu}
    gpus |= {
        s.bdf
        for s in f.get("sysfs", [])
        if s.values.get("class", "").startswith(("0x0300", "0x0302"))
    }
    gpus |= {s.bus_id for s in f.get("smi", [])}
    return sorted(gpus)


def gpu_paths(f: Fields, gpus: list[str]) -> tuple[dict[str, list[str]], str | None]:
    """The bridges above each GPU and where they came from: `lspci -tv`, else the bridges' bus numbers, else sysfs."""
    sys_up: dict[str, str | None] = {s.bdf: s.upstream for s in f.get("sysfs", [])}
    for source, tree in (
        ("lspci -tv", f.get("_tree")),
        ("lspci -vvv bus numbers", f.get("_bus_tree")),
    ):
        if tree and any(tree_path(tree, g) for g in gpus):
            return {
                g: tree_path(tree, g) or ([u] if (u := sys_up.get(g)) else []) for g in gpus
            }, source
    if any(sys_up.values()):
        return {g: [u] if (u := sys_up.get(g)) else [] for g in gpus}, "sysfs upstream port"
    return {g: [] for g in gpus}, None


def split_live(
    devices: list[PciDevice], smi: list[SmiLink], sysfs: list[SysPci]
) -> tuple[list[SmiLink], list[SysPci], dict[str, LinkNow]]:
    """Move what changes with load and power state out of the stable facts into `link_now` (a volatile fact),
    so two audits of an unchanged machine compare equal."""
    now: dict[str, dict[str, Any]] = {}
    for d in devices:
        if d.is_gpu:
            now.setdefault(d.bdf, {}).update({k: getattr(d, k) for k in LIVE_LSPCI})
    for s in smi:
        now.setdefault(s.bus_id, {}).update({k: getattr(s, k) for k in LIVE_SMI})
    for p in sysfs:
        if cur := {k: v for k, v in p.values.items() if k in LIVE_SYSFS}:
            now.setdefault(p.bdf, {})["sysfs"] = cur
    stable_smi = [s.model_copy(update=dict.fromkeys(LIVE_SMI)) for s in smi]
    stable_sys = [
        p.model_copy(update={"values": {k: v for k, v in p.values.items() if k not in LIVE_SYSFS}})
        for p in sysfs
    ]
    return stable_smi, stable_sys, {bdf: LinkNow.of(v) for bdf, v in now.items()}


def extract(outputs: Outputs, role: Role) -> PcieFacts:
    read = read_table(outputs, TABLE, note_unusable=False, why=str)
    f, problems = read.fields, read.problems
    if any(d.access_denied for d in f.get("devices", [])):
        problems["lspci_vvv"] = (
            ACCESS_DENIED  # config space beyond 64 bytes unread: every capability check is unknown
        )
    gpus = gpu_functions(f)
    parents, tree_source = gpu_paths(f, gpus)
    smi, sysfs, link_now = split_live(
        f.get("_raw_devices", []), f.get("smi", []), f.get("sysfs", [])
    )
    return PcieFacts(
        devices=f.get("devices", []),
        gpu_bdfs=gpus,
        parents=parents,
        tree_source=tree_source,
        smi=smi,
        link_now=link_now,
        sysfs=sysfs,
        aspm_policy=f.get("aspm_policy"),
        cmdline=f.get("cmdline"),
        problems=problems,
    )


FIELD_SOURCES: dict[str, tuple[str, ...]] = {
    "devices": ("lspci_vvv",),
    "gpu_bdfs": ("lspci_vvv", "smi_query_pcie", "sys_pci_nvidia"),
    "parents": ("lspci_tv", "lspci_vvv"),
    "tree_source": ("lspci_tv",),
    "smi": ("smi_query_pcie",),
    "link_now": ("lspci_vvv", "smi_query_pcie", "sys_pci_nvidia"),
    "sysfs": ("sys_pci_nvidia",),
    "aspm_policy": ("aspm_policy",),
    "cmdline": ("proc_cmdline",),
}
"""Each fact field -> the sources it is read from (provenance; the read-tracking test holds verdicts to
their checks' declarations through it). () = from the records' wrapping, not a source's output."""
