"""The pcie probe's outputs -> PcieFacts: a table of source -> reader, then the two real derivations
(which functions are GPUs, and the bridges above each GPU). Never raises on odd output."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpuaudit.probes.core.checks import source_problem
from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.models import CommandRecord, Role
from gpuaudit.probes.core.parsers.lspci import PciDevice, bus_tree, parse_lspci_tree, parse_lspci_vvv, tree_path
from gpuaudit.probes.core.parsers.system import parse_bracketed_choice
from gpuaudit.probes.core.parsing import first_line
from gpuaudit.probes.core.spec import Outputs
from gpuaudit.probes.pcie.facts import PciDev, PcieFacts, SysPci
from gpuaudit.probes.pcie.parse import parse_smi_pcie, parse_sys_pci

Fields = dict[str, Any]
ACCESS_DENIED = "needs root: lspci printed <access denied> for the capabilities (run as root or with --sudo)"


def _dev(d: PciDevice) -> PciDev:
    fields = {k: getattr(d, k) for k in PciDev.model_fields if hasattr(d, k)}
    return PciDev(**{**fields, "description": d.description[:160]})


def read_lspci_vvv(text: str) -> Fields:
    devices = parse_lspci_vvv(text)
    if not devices and text.strip():
        raise ValueError("unparsable lspci output")
    return {"devices": [_dev(d) for d in devices], "_bus_tree": bus_tree(devices)}


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


READERS: dict[str, Callable[[str], Fields]] = {
    "lspci_vvv": read_lspci_vvv,
    "lspci_tv": read_lspci_tv,
    "sys_pci_nvidia": lambda t: {"sysfs": parse_sys_pci(t)},
    "smi_query_pcie": read_smi,
    "aspm_policy": lambda t: {"aspm_policy": parse_bracketed_choice(t)},
    "proc_cmdline": lambda t: {"cmdline": first_line(t)},
}
"""Source -> the reader of its usable stdout (ValueError = unusable, noted in problems)."""


def gpu_functions(f: Fields) -> list[str]:
    """GPU BDFs from every source that names them: lspci class, sysfs class 0x0300/0x0302, nvidia-smi bus ids."""
    gpus = {d.bdf for d in f.get("devices", []) if d.is_gpu}
    gpus |= {s.bdf for s in f.get("sysfs", []) if s.values.get("class", "").startswith(("0x0300", "0x0302"))}
    gpus |= {s.bus_id for s in f.get("smi", [])}
    return sorted(gpus)


def gpu_paths(f: Fields, gpus: list[str]) -> tuple[dict[str, list[str]], str | None]:
    """The bridges above each GPU and where they came from: `lspci -tv`, else the bridges' bus numbers, else sysfs."""
    sys_up: dict[str, str | None] = {s.bdf: s.upstream for s in f.get("sysfs", [])}
    for source, tree in (("lspci -tv", f.get("_tree")), ("lspci -vvv bus numbers", f.get("_bus_tree"))):
        if tree and any(tree_path(tree, g) for g in gpus):
            return {g: tree_path(tree, g) or ([u] if (u := sys_up.get(g)) else []) for g in gpus}, source
    if any(sys_up.values()):
        return {g: [u] if (u := sys_up.get(g)) else [] for g in gpus}, "sysfs upstream port"
    return {g: [] for g in gpus}, None


def _read(rec: CommandRecord, read: Callable[[str], Fields]) -> tuple[Fields, str | None]:
    try:
        return read(rec.stdout), None
    except ValueError as exc:
        return {}, str(exc)


def extract(outputs: Outputs, role: Role) -> PcieFacts:
    f: Fields = {}
    problems: dict[str, str] = {}
    for cid, read in READERS.items():
        rec = outputs.get(cid)
        if rec is None or source_problem(rec) is not None:
            continue
        fields, problem = _read(rec, read)
        f.update(fields)
        if problem:
            problems[cid] = problem
    if any(d.access_denied for d in f.get("devices", [])):
        problems["lspci_vvv"] = ACCESS_DENIED  # config space beyond 64 bytes unread: every capability check is unknown
    gpus = gpu_functions(f)
    parents, tree_source = gpu_paths(f, gpus)
    sysfs: list[SysPci] = f.get("sysfs", [])
    return PcieFacts(devices=f.get("devices", []), gpu_bdfs=gpus, parents=parents, tree_source=tree_source,
                     smi=f.get("smi", []), sysfs=sysfs, aspm_policy=f.get("aspm_policy"), cmdline=f.get("cmdline"),
                     problems=problems)
