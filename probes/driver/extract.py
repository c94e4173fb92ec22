"""Turns the driver probe's command outputs into DriverFacts (never raises on odd output)."""

from __future__ import annotations

import re

from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.models import Role
from gpuaudit.probes.core.parsers.nvidia_misc import (
    parse_dkms_status,
    parse_lib_versions,
    parse_modinfo,
    parse_modprobe_options,
    parse_nvcc_version,
    parse_nvrm_problems,
    parse_proc_driver_version,
    parse_xid_events,
)
from gpuaudit.probes.core.parsers.nvidia_smi import (
    detect_smi_error,
    nvml_library_version,
    csv_row_errors,
    parse_query_gpu_csv,
    parse_smi_table,
    smi_error_kind,
)
from gpuaudit.probes.core.parsing import first_line
from gpuaudit.probes.core.spec import Outputs, record_problem, usable_record
from gpuaudit.probes.driver.commands import QUERY_FIELDS
from gpuaudit.probes.driver.facts import DriverFacts, GpuState


def _int(v: str | None) -> int | None:
    return int(v) if v is not None and v.strip().isdigit() else None


def _gpus_from_csv(text: str) -> list[GpuState]:
    rows = parse_query_gpu_csv(text, QUERY_FIELDS)
    return [GpuState(index=_int(r["index"]) or i, name=r["name"] or "?", bus_id=r["pci.bus_id"], compute_cap=r["compute_cap"],
                     driver_version=r["driver_version"], persistence=r["persistence_mode"], compute_mode=r["compute_mode"],
                     mig_mode=r["mig.mode.current"], ecc_mode=r["ecc.mode.current"],
                     ecc_uncorrected=_int(r["ecc.errors.uncorrected.volatile.total"]),
                     remap_pending=r["remapped_rows.pending"], remap_failure=r["remapped_rows.failure"],
                     unreadable=sorted(csv_row_errors(r)))
            for i, r in enumerate(rows)]


def extract(outputs: Outputs, role: Role) -> DriverFacts:
    problems = {cid: p for cid, rec in outputs.items() if (p := record_problem(rec))}
    f: dict = {}
    # A banner can come with any exit status: look at every nvidia-smi output first.
    for cid in ("smi_table", "smi_query_driver"):
        rec = outputs.get(cid)
        if rec is not None and not rec.missing_tool:
            text = rec.stdout + "\n" + rec.stderr
            if (err := detect_smi_error(text)) and "smi_error" not in f:
                f.update(smi_error=err, smi_error_kind=smi_error_kind(text), nvml_lib_version=nvml_library_version(text))
    if (rec := outputs.get("smi_table")) is not None and rec.error is None:
        f["smi_installed"] = not rec.missing_tool
    if (rec := outputs.get("proc_driver_version")) is not None:
        parsed = parse_proc_driver_version(rec.stdout) if rec.ok else None
        if parsed:
            f.update(module_version=parsed.version, module_open=parsed.open_module, module_loaded=True)
        elif rec.exit_status not in (None, 0) and "no such file" in rec.stderr.lower():
            f["module_loaded"] = False  # the file exists exactly while the module is loaded
        elif rec.ok:
            problems["proc_driver_version"] = f"unrecognised content: {first_line(rec.stdout)[:80]!r}"
    if (rec := usable_record(outputs, "smi_table", problems)) and not f.get("smi_error"):
        table = parse_smi_table(rec.stdout)
        f.update(smi_driver_version=table.driver_version, cuda_version=table.cuda_version)
        table_gpus = [GpuState(index=g.index, name=g.name, bus_id=g.bus_id, persistence=g.persistence,
                               compute_mode=g.compute_mode, mig_mode=g.mig_mode,
                               ecc_mode=("Disabled" if g.ecc_uncorrected == "Off" else
                                         "Enabled" if (g.ecc_uncorrected or "").isdigit() else None),
                               ecc_uncorrected=_int(g.ecc_uncorrected)) for g in table.gpus]
        if table_gpus:
            f.update(gpus=table_gpus, gpu_source="smi_table")
    if (rec := usable_record(outputs, "smi_query_driver", problems)) and not f.get("smi_error"):
        try:
            gpus = _gpus_from_csv(rec.stdout)
            if gpus:
                f.update(gpus=gpus, gpu_source="smi_query_driver")
        except ParseError as exc:
            problems["smi_query_driver"] = str(exc)
    if (rec := outputs.get("modinfo_nvidia")) is not None:
        if rec.ok:
            mi = parse_modinfo(rec.stdout)
            kdir = re.search(r"/lib/modules/([^/]+)/", mi.filename or "")
            f.update(modinfo_version=mi.version, modinfo_license=mi.license, modinfo_vermagic=mi.vermagic_kernel,
                     modinfo_dir_kernel=kdir.group(1) if kdir else None)
        elif "not found" in (rec.stderr + rec.stdout).lower() and not rec.missing_tool:
            f["modinfo_missing"] = True  # "modinfo: ERROR: Module nvidia not found."
            problems.pop("modinfo_nvidia", None)
    if rec := usable_record(outputs, "uname_r", problems):
        f["kernel_release"] = first_line(rec.stdout) or None
    if rec := usable_record(outputs, "dkms_status", problems):
        f["dkms"] = [(e.version, e.kernel, e.state) for e in parse_dkms_status(rec.stdout) if e.module.startswith("nvidia")]
    if rec := usable_record(outputs, "dmesg_nvrm", problems):
        low = rec.stderr.lower()
        if "not permitted" in low or "permission denied" in low:
            problems["dmesg_nvrm"] = "needs root (dmesg: operation not permitted)"
        else:
            f["kernel_log_read"] = True
            f["xids"] = [(x.pci, x.code) for x in parse_xid_events(rec.stdout)]
            f["nvrm_problems"] = parse_nvrm_problems(rec.stdout)
    if (rec := outputs.get("persistenced_active")) is not None and not rec.missing_tool and rec.error is None:
        word = first_line(rec.stdout)  # `is-active` exits 3 for inactive: the word is the answer
        if word in ("active", "inactive", "failed", "activating", "deactivating", "unknown"):
            f["persistenced"] = word
            problems.pop("persistenced_active", None)
    if rec := usable_record(outputs, "nvidia_modprobe_opts", problems):
        f["modprobe_read"] = True
        f["modprobe_options"] = parse_modprobe_options(rec.stdout).get("nvidia", {})
    if rec := usable_record(outputs, "nvidia_lib_files", problems):
        libs = parse_lib_versions(rec.stdout)
        f.update(libcuda=libs["libcuda"], libnvml=libs["libnvidia-ml"], libs_read=True)
    if rec := usable_record(outputs, "nvcc_version", problems):
        f["nvcc"] = parse_nvcc_version(rec.stdout)
    return DriverFacts(**f, problems=problems)
