"""The NCCL probe's outputs -> NcclFacts: one parser per source, each into its own fields (never raises)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.judge.combiners import (
    ACS_SOURCES,
    IOMMU_SOURCES,
    VENDORS,
    engine_fill,
    gpu_acs_redirect,
    gpu_entries,
    gpu_iommu_translation,
    parse_iommu_state,
)
from gpuaudit.probes.core.judge.probe import Reads, read_table
from gpuaudit.probes.core.models import Role
from gpuaudit.probes.core.parsers.engine import (
    log_source_labels,
    parse_engine_logs,
    parse_nccl_channels,
    serving_engine,
)
from gpuaudit.probes.core.parsers.lspci import parse_lspci_vvv
from gpuaudit.probes.core.parsers.nccl_tests import parse_all_reduce_perf
from gpuaudit.probes.core.parsers.pyenv import parse_pyenv_json
from gpuaudit.probes.core.parsers.system import parse_cpuinfo_id
from gpuaudit.probes.core.spec import Outputs
from gpuaudit.probes.nccl.facts import NcclFacts
from gpuaudit.probes.nccl.parsers import parse_gpu_matrix, parse_ldconfig_nccl


def _vendor(raw: str | None) -> str | None:
    """CPUID vendor -> the one spelling every probe uses ("AMD", "Intel")."""
    return VENDORS.get(raw or "", raw)


def gpu_names(text: str) -> dict[str, Any]:
    """`smi_gpu_ids` (index, uuid, pci.bus_id, name: the line the container and numa probes read) -> names."""
    names = [g.name for g in gpu_entries("smi_gpu_ids", text) if g.name]  # the shared GPU list
    if not names:
        raise ParseError((text.strip().splitlines() or ["empty output"])[0][:120])
    return {"gpu_names": names}


def topo_fields(text: str) -> dict[str, Any]:
    cells, numa, n = parse_gpu_matrix(text)
    return {"topo": cells, "gpu_numa": numa, "gpu_count": n}


def matrix(field: str) -> Callable[[str], dict[str, Any]]:
    return lambda text: {field: parse_gpu_matrix(text)[0]}


def iommu_state_fields(text: str) -> dict[str, Any]:
    """Only proves the output is `iommu_state`'s: the fact itself is the shared combiner's (see `derived`)."""
    try:
        parse_iommu_state(text)
    except ValueError as exc:
        raise ParseError(str(exc)) from exc
    return {}


def lspci_fields(text: str) -> dict[str, Any]:
    """lspci -vvv must list PCI functions (the ACS combiner reads the shared parse, this only checks it)."""
    if not parse_lspci_vvv(text):
        raise ParseError("no PCI function listed")
    return {}


def engine_fields(text: str) -> dict[str, Any]:
    eng = serving_engine(text)  # the shared combiner: derived once per listing
    out: dict[str, Any] = {"engine_listed": True}
    if (cfg := eng.config) is not None:
        out.update(
            engine_kind=cfg.kind,
            engine_tp=cfg.tp,
            custom_allreduce_disabled=cfg.custom_allreduce_disabled,
            allreduce_flags=list(cfg.allreduce_flags),
        )
    if eng.procs:
        out.update(
            engine_env=eng.env, engine_env_readable=eng.env_readable, engine_nccl_libs=eng.nccl_libs
        )
    return out


def log_fields(text: str) -> dict[str, Any]:
    logs = parse_engine_logs(text)
    return {
        "log_sources": log_source_labels(logs),
        "nccl_channels": sorted(
            {
                (c.src_dev, c.dst_dev, c.transport)
                for lg in logs
                for c in parse_nccl_channels(lg.nccl_lines)
            }
        ),
    }


def allreduce_fields(text: str) -> dict[str, Any]:
    perf = parse_all_reduce_perf(text)
    out: dict[str, Any] = {
        "allreduce": [
            {"size_b": r.size_b, "time_us": r.time_us, "busbw": r.busbw} for r in perf.rows
        ],
        "allreduce_gpus": perf.n_gpus if perf.n_gpus and perf.n_gpus > 1 else perf.ranks or None,
        "allreduce_peak": perf.peak_busbw,
    }
    if perf.errors():
        out["allreduce_note"] = f"{perf.errors()} message size(s) returned wrong values"
    return out


TABLE: tuple[Reads, ...] = (
    Reads("smi_gpu_ids", gpu_names),
    Reads("smi_topo_m", topo_fields),
    Reads("smi_topo_p2p_r", matrix("p2p_read")),
    Reads("smi_topo_p2p_w", matrix("p2p_write")),
    Reads("iommu_state", iommu_state_fields),
    Reads("lspci_vvv", lspci_fields),
    Reads("cpuinfo_id", lambda t: {"cpu_vendor": _vendor(parse_cpuinfo_id(t).vendor)}),
    Reads("engine_procs", fill=engine_fill(engine_fields)),
    Reads("engine_logs", log_fields),
    Reads("ldconfig_nccl", lambda t: {"system_nccl": parse_ldconfig_nccl(t)}),
    Reads("pyenv", lambda t: {"torch_nccl": parse_pyenv_json(t).nccl}),
    Reads("nccl_all_reduce_perf", allreduce_fields),
)
"""Source -> the parser that fills its fields, run by the framework (`read_table`): a source that failed, or whose
output does not parse, is in `problems`."""


def derived(outputs: Outputs) -> dict[str, Any]:
    """The IOMMU/ACS facts from the shared combiners, over the very records pcie.acs and firmware.iommu_mode read."""
    if not any(cid in outputs for cid in IOMMU_SOURCES + ACS_SOURCES):
        return {}
    translated, iommu_why = gpu_iommu_translation(outputs)
    redirect, acs_why = gpu_acs_redirect(outputs)
    return {
        "iommu_translated": translated,
        "iommu_detail": iommu_why,
        "acs_redirect": redirect,
        "acs_detail": acs_why,
    }


def extract(outputs: Outputs, role: Role) -> NcclFacts:
    read = read_table(outputs, TABLE)
    return NcclFacts.of({**read.fields, **derived(outputs)}, problems=read.problems)


FIELD_SOURCES: dict[str, tuple[str, ...]] = {
    "gpu_names": ("smi_gpu_ids",),
    "topo": ("smi_topo_m",),
    "gpu_count": ("smi_topo_m",),
    "gpu_numa": ("smi_topo_m",),
    "p2p_read": ("smi_topo_p2p_r",),
    "p2p_write": ("smi_topo_p2p_w",),
    "iommu_translated": ("iommu_state",),
    "iommu_detail": ("iommu_state",),
    "acs_redirect": ("lspci_vvv",),
    "acs_detail": ("lspci_vvv",),
    "cpu_vendor": ("cpuinfo_id",),
    "engine_listed": ("engine_procs",),
    "engine_kind": ("engine_procs",),
    "engine_tp": ("engine_procs",),
    "custom_allreduce_disabled": ("engine_procs",),
    "allreduce_flags": ("engine_procs",),
    "engine_env": ("engine_procs",),
    "engine_env_readable": ("engine_procs",),
    "engine_nccl_libs": ("engine_procs",),
    "system_nccl": ("ldconfig_nccl",),
    "torch_nccl": ("pyenv",),
    "allreduce": ("nccl_all_reduce_perf",),
    "allreduce_gpus": ("nccl_all_reduce_perf",),
    "allreduce_peak": ("nccl_all_reduce_perf",),
    "allreduce_note": ("nccl_all_reduce_perf",),
    "log_sources": ("engine_logs",),
    "nccl_channels": ("engine_logs",),
}
"""Each fact field -> the sources it is read from (provenance; the read-tracking test holds verdicts to
their checks' declarations through it). () = from the records' wrapping, not a source's output."""
