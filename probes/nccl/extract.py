"""Turns the NCCL probe's command outputs into NcclFacts (never raises on odd output)."""

from __future__ import annotations

import re

from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.models import Role
from gpuaudit.probes.core.parsers.engine import (
    log_source_labels,
    parse_engine_logs,
    parse_engine_procs,
    parse_nccl_channels,
    summarize_engine,
)
from gpuaudit.probes.core.parsers.nccl_tests import parse_all_reduce_perf
from gpuaudit.probes.core.parsers.nvidia_smi import parse_query_gpu_csv
from gpuaudit.probes.core.parsers.system import parse_cpuinfo_id
from gpuaudit.probes.core.parsers.pyenv import parse_pyenv_json
from gpuaudit.probes.core.spec import Outputs, record_problem
from gpuaudit.probes.nccl.facts import NcclFacts
from gpuaudit.probes.nccl.parsers import parse_acsctl, parse_gpu_matrix, parse_iommu_groups, parse_ldconfig_nccl


def _ok(outputs: Outputs, cid: str, problems: dict[str, str]) -> str | None:
    rec = outputs.get(cid)
    if rec is None or cid in problems:
        return None
    return rec.stdout


def extract(outputs: Outputs, role: Role) -> NcclFacts:
    problems = {cid: p for cid, rec in outputs.items() if (p := record_problem(rec))}
    f: dict = {}
    if (t := _ok(outputs, "smi_gpu_cc", problems)) is not None:
        try:
            names = [r["name"] for r in parse_query_gpu_csv(t, ("index", "name", "compute_cap", "driver_version")) if r.get("name")]
        except ParseError as exc:
            problems["smi_gpu_cc"] = f"unreadable: {exc}"
        else:
            if names:
                f["gpu_names"] = names
            elif t.strip():
                problems["smi_gpu_cc"] = f"unreadable: {t.strip().splitlines()[0][:120]}"
    for cid, key in (("smi_topo_m", "topo"), ("smi_topo_p2p_r", "p2p_read"), ("smi_topo_p2p_w", "p2p_write")):
        if (t := _ok(outputs, cid, problems)) is not None:
            try:
                matrix, numa, _n = parse_gpu_matrix(t)
                f[key] = matrix
                if key == "topo":
                    f["gpu_numa"] = numa
            except ParseError as exc:
                problems[cid] = f"unreadable: {exc}"
    if (t := _ok(outputs, "proc_cmdline", problems)) is not None:
        f["cmdline"] = t.strip()
    if (t := _ok(outputs, "sys_iommu_groups", problems)) is not None:
        f["iommu_groups"], f["iommu_types"] = parse_iommu_groups(t)
    if (t := _ok(outputs, "lspci_acsctl", problems)) is not None:
        if "ACSCtl" in t or re.search(r"^[0-9a-f]{2,4}:", t, re.M):
            f["acs_redirect"] = parse_acsctl(t)
        else:
            problems["lspci_acsctl"] = "no PCIe functions listed"
    if (t := _ok(outputs, "cpuinfo_id", problems)) is not None:
        f["cpu_vendor"] = parse_cpuinfo_id(t).vendor
    if (t := _ok(outputs, "engine_procs", problems)) is not None:
        try:
            eng = summarize_engine(parse_engine_procs(t))
        except ParseError as exc:
            problems["engine_procs"] = f"unreadable: {exc}"
        else:
            if (cfg := eng.config) is not None:
                f.update(engine_kind=cfg.kind, engine_tp=cfg.tp, custom_allreduce_disabled=cfg.custom_allreduce_disabled)
            if eng.procs:
                f.update(engine_env=eng.env, engine_env_readable=eng.env_readable, engine_nccl_libs=eng.nccl_libs)
    if (t := _ok(outputs, "engine_logs", problems)) is not None:
        try:
            logs = parse_engine_logs(t)
            f["log_sources"] = log_source_labels(logs)
            f["nccl_channels"] = sorted({(c.src_dev, c.dst_dev, c.transport) for lg in logs for c in parse_nccl_channels(lg.nccl_lines)})
        except ParseError as exc:
            problems["engine_logs"] = f"unreadable: {exc}"
    if (t := _ok(outputs, "ldconfig_nccl", problems)) is not None:
        f["system_nccl"] = parse_ldconfig_nccl(t)
    if (t := _ok(outputs, "pyenv", problems)) is not None:
        try:
            f["torch_nccl"] = parse_pyenv_json(t).nccl
        except ParseError as exc:
            problems["pyenv"] = f"unreadable: {exc}"
    rec = outputs.get("nccl_all_reduce_perf")
    if rec is not None:
        if rec.exit_status == 3 and rec.stdout.startswith("gate:"):
            f["allreduce_note"] = rec.stdout.strip()
        elif (t := _ok(outputs, "nccl_all_reduce_perf", problems)) is not None or (rec.timed_out and rec.stdout):
            try:
                perf = parse_all_reduce_perf(rec.stdout)
                f.update(allreduce=[{"size_b": r.size_b, "time_us": r.time_us, "busbw": r.busbw} for r in perf.rows],
                         allreduce_gpus=perf.n_gpus if perf.n_gpus and perf.n_gpus > 1 else perf.ranks or None,
                         allreduce_peak=perf.peak_busbw)
                if perf.errors():
                    f["allreduce_note"] = f"{perf.errors()} message size(s) returned wrong values"
                if rec.timed_out:
                    f["allreduce_note"] = "timed out after partial output (hang risk)"
            except ParseError as exc:
                problems["nccl_all_reduce_perf"] = f"unreadable: {exc}"
    return NcclFacts(**f, problems=problems)
