"""The driver probe's sources and how each becomes DriverFacts (pure; never raises on odd output).

Per-GPU state comes from the first usable of `nvidia-smi -q -x` (machine-readable, primary), the csv query and the
default table. Every nvidia-smi output is read for error banners first, whatever its exit status: a banner is the
finding (a lost GPU, a mismatch), and the source it came from is marked unusable for the other checks.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.judge.checks import source_problem
from gpuaudit.probes.core.judge.combiners import nvidia_presence
from gpuaudit.probes.core.models import CommandRecord, Role
from gpuaudit.probes.core.parsers.nvidia_misc import (
    parse_dkms_status,
    parse_fallen_off_bus,
    parse_lib_versions,
    parse_modinfo,
    parse_modprobe_options,
    parse_nvcc_version,
    parse_nvrm_problems,
    parse_proc_driver_version,
    parse_xid_events,
)
from gpuaudit.probes.core.parsers.nvidia_smi import (
    SmiXmlGpu,
    csv_row_errors,
    detect_smi_error,
    nvml_library_version,
    parse_handle_errors,
    parse_query_gpu_csv,
    parse_smi_q_xml,
    parse_smi_table,
    smi_error_kind,
)
from gpuaudit.probes.core.parsers.system import normalize_bdf
from gpuaudit.probes.core.parsing import first_line, one_value
from gpuaudit.probes.core.spec import Outputs
from gpuaudit.probes.driver.facts import DriverFacts, GpuState, HandleFailure

SMI_SOURCES = ("smi_q_xml", "smi_query_driver", "smi_table")
"""Per-GPU state, machine-readable first."""
QUERY_FIELDS = (
    "index",
    "name",
    "pci.bus_id",
    "compute_cap",
    "driver_version",
    "persistence_mode",
    "compute_mode",
    "mig.mode.current",
    "ecc.mode.current",
    "ecc.errors.uncorrected.volatile.total",
    "remapped_rows.pending",
    "remapped_rows.failure",
)
_XML_UNREADABLE = {
    "mig_current": "mig.mode.current",
    "ecc_current": "ecc.mode.current",
    "ecc_volatile_uncorrected": "ecc.errors.uncorrected.volatile.total",
    "remap_pending": "remapped_rows.pending",
    "remap_failure": "remapped_rows.failure",
    "persistence_mode": "persistence_mode",
    "compute_mode": "compute_mode",
}
"""XML field -> the csv field name the checks know (one vocabulary for "could not read")."""


def _int(v: str | None) -> int | None:
    return int(v) if v is not None and v.strip().isdigit() else None


# --------------------------------------------------------------------------------------------------
# Per-GPU state, one reader per source


def gpus_from_xml(text: str) -> tuple[list[GpuState], dict[str, Any]]:
    xml = parse_smi_q_xml(text)
    gpus = [_xml_state(g, xml.driver_version) for g in xml.gpus]
    return gpus, {"smi_driver_version": xml.driver_version, "cuda_version": xml.cuda_version}


def _xml_state(g: SmiXmlGpu, driver_version: str | None) -> GpuState:
    return GpuState(
        index=g.index,
        name=g.product_name or "?",
        bus_id=g.bus_id,
        architecture=g.product_architecture,
        driver_version=driver_version,
        persistence=g.persistence_mode,
        compute_mode=g.compute_mode,
        mig_mode=g.mig_current,
        mig_pending=g.mig_pending,
        ecc_mode=g.ecc_current,
        ecc_uncorrected=_sum_known(g.ecc_volatile_uncorrected, g.ecc_volatile_sram_uncorrected),
        retired_pending=g.retired_pending,
        recovery_action=g.recovery_action,
        reset_required="Yes"
        if "Yes" in (g.reset_required, g.drain_and_reset_recommended)
        else g.reset_required,
        retired_dbe=g.retired_dbe,
        remap_pending=g.remap_pending,
        remap_failure=g.remap_failure,
        unreadable=sorted(_XML_UNREADABLE[k] for k in g.errors if k in _XML_UNREADABLE),
    )


def _sum_known(dram: int | None, sram: int | None) -> int | None:
    """Uncorrectable DRAM + SRAM (what the csv's ecc.errors.uncorrected.volatile.total counts); None if DRAM unread."""
    return None if dram is None else dram + (sram or 0)


def gpus_from_csv(text: str) -> tuple[list[GpuState], dict[str, Any]]:
    rows = parse_query_gpu_csv(text, QUERY_FIELDS)
    lines = [ln for ln in text.splitlines() if ln.strip()]
    lost = (
        [("[gpu is lost]" in ln.lower()) for ln in lines]
        if len(lines) == len(rows)
        else [False] * len(rows)
    )
    return [
        GpuState(
            lost=lost[i],
            index=_int(r["index"]) or i,
            name=r["name"] or "?",
            bus_id=r["pci.bus_id"],
            compute_cap=r["compute_cap"],
            driver_version=r["driver_version"],
            persistence=r["persistence_mode"],
            compute_mode=r["compute_mode"],
            mig_mode=r["mig.mode.current"],
            ecc_mode=r["ecc.mode.current"],
            ecc_uncorrected=_int(r["ecc.errors.uncorrected.volatile.total"]),
            remap_pending=r["remapped_rows.pending"],
            remap_failure=r["remapped_rows.failure"],
            unreadable=sorted(csv_row_errors(r)),
        )
        for i, r in enumerate(rows)
    ], {}


_TABLE_ECC = {"Off": "Disabled", "On": "Enabled"}
"""The table's "Volatile Uncorr. ECC" cell: a count (ECC on), "Off", or "On" (MIG mode hides the count)."""


def gpus_from_table(text: str) -> tuple[list[GpuState], dict[str, Any]]:
    table = parse_smi_table(text)
    gpus = [
        GpuState(
            index=g.index,
            name=g.name,
            bus_id=g.bus_id,
            persistence=g.persistence,
            compute_mode=g.compute_mode,
            mig_mode=g.mig_mode,
            ecc_mode=_TABLE_ECC.get(g.ecc_uncorrected or "")
            or ("Enabled" if (g.ecc_uncorrected or "").isdigit() else None),
            ecc_uncorrected=_int(g.ecc_uncorrected),
            sensor_errors=g.sensor_errors,
        )
        for g in table.gpus
    ]
    return gpus, {"smi_driver_version": table.driver_version, "cuda_version": table.cuda_version}


GPU_READERS: dict[str, Callable[[str], tuple[list[GpuState], dict[str, Any]]]] = {
    "smi_q_xml": gpus_from_xml,
    "smi_query_driver": gpus_from_csv,
    "smi_table": gpus_from_table,
}


def _with_compute_caps(gpus: list[GpuState], csv_gpus: list[GpuState]) -> list[GpuState]:
    """The XML has no compute capability: borrow it from the csv row of the same bus id."""
    by_bus = {normalize_bdf(g.bus_id or ""): g for g in csv_gpus}
    out = []
    for g in gpus:
        other = by_bus.get(normalize_bdf(g.bus_id or ""))
        out.append(
            g.model_copy(update={"compute_cap": other.compute_cap})
            if other and not g.compute_cap
            else g
        )
    return out


# --------------------------------------------------------------------------------------------------
# Health: banners, lost GPUs, hangs


_GATED = re.compile(r"nvidia-smi hung in (\S+)")
"""The runner's "not run: nvidia-smi hung in <command id> (...)" for nvidia-smi lines after one timed out."""


def _smi_banners(outputs: Outputs, problems: dict[str, str], f: dict[str, Any]) -> None:
    """An error banner can come with any exit status: read every nvidia-smi output for one first."""
    failures: dict[str, HandleFailure] = {}
    for cid in ("smi_table", "smi_query_driver", "smi_q_xml"):
        rec = outputs.get(cid)
        if rec is not None and rec.error and (m := _GATED.search(rec.error)):
            f.setdefault("smi_hung", []).append(
                m.group(1)
            )  # the runner did not start it: nvidia-smi hung elsewhere
            continue
        if rec is None or rec.missing_tool or rec.error:
            continue
        if rec.timed_out:
            f.setdefault("smi_hung", []).append(cid)
            continue
        text = rec.stdout + "\n" + rec.stderr
        for h in parse_handle_errors(text):
            failures.setdefault(
                normalize_bdf(h.bus_id),
                HandleFailure(
                    bus_id=normalize_bdf(h.bus_id), reason=h.reason, lost=h.lost, command_id=cid
                ),
            )
        if err := detect_smi_error(text):
            problems[cid] = f"nvidia-smi: {err}"
            if "smi_error" not in f:
                f.update(
                    smi_error=err,
                    smi_error_kind=smi_error_kind(text),
                    smi_error_source=cid,
                    nvml_lib_version=nvml_library_version(text),
                )
    f["handle_failures"] = list(failures.values())
    if f.get("smi_hung"):
        f["smi_hung"] = list(dict.fromkeys(f["smi_hung"]))


def _gpu_state(outputs: Outputs, problems: dict[str, str], f: dict[str, Any]) -> None:
    parsed: dict[str, list[GpuState]] = {}
    for cid, reader in GPU_READERS.items():
        rec = outputs.get(cid)
        if rec is None or cid in problems:
            continue
        try:
            gpus, header = reader(rec.stdout)
        except ParseError as exc:
            problems[cid] = str(exc)
            continue
        parsed[cid] = gpus
        for key, value in header.items():
            if (
                value and key not in f
            ):  # versions from the most machine-readable source that has them
                f[key] = value
    for cid in GPU_READERS:  # first usable source wins
        if parsed.get(cid):
            gpus = parsed[cid]
            f.update(
                gpus=_with_compute_caps(gpus, parsed.get("smi_query_driver", [])), gpu_source=cid
            )
            table = {g.index: g for g in parsed.get("smi_table", [])}
            if cid != "smi_table" and table:  # ERR! cells exist only in the table
                f["gpus"] = [
                    g.model_copy(update={"sensor_errors": table[g.index].sensor_errors})
                    if g.index in table
                    else g
                    for g in f["gpus"]
                ]
            break


# --------------------------------------------------------------------------------------------------
# The rest: one small reader per source


def _proc_version(rec: CommandRecord, f: dict[str, Any], problems: dict[str, str]) -> None:
    parsed = parse_proc_driver_version(rec.stdout) if rec.ok else None
    if parsed:
        f.update(module_version=parsed.version, module_open=parsed.open_module, module_loaded=True)
    elif rec.exit_status not in (None, 0) and "no such file" in rec.stderr.lower():
        f["module_loaded"] = False  # the file exists exactly while the module is loaded
    elif rec.ok:
        problems["proc_driver_version"] = f"unrecognised content: {first_line(rec.stdout)[:80]!r}"


def _modinfo(rec: CommandRecord, f: dict[str, Any], problems: dict[str, str]) -> None:
    if rec.ok:
        mi = parse_modinfo(rec.stdout)
        kdir = re.search(r"/lib/modules/([^/]+)/", mi.filename or "")
        f.update(
            modinfo_version=mi.version,
            modinfo_license=mi.license,
            modinfo_vermagic=mi.vermagic_kernel,
            modinfo_dir_kernel=kdir.group(1) if kdir else None,
        )
    elif "not found" in (rec.stderr + rec.stdout).lower() and not rec.missing_tool:
        f["modinfo_missing"] = True  # "modinfo: ERROR: Module nvidia not found."
        problems.pop("modinfo_nvidia", None)


def _dmesg(rec: CommandRecord, f: dict[str, Any], problems: dict[str, str]) -> None:
    low = rec.stderr.lower()
    if "not permitted" in low or "permission denied" in low:
        problems["dmesg_nvrm"] = "needs root (dmesg: operation not permitted)"
        return
    f.update(
        kernel_log_read=True,
        xids=[(x.pci, x.code) for x in parse_xid_events(rec.stdout)],
        nvrm_problems=parse_nvrm_problems(rec.stdout),
        fallen_off_bus=parse_fallen_off_bus(rec.stdout),
        init_failed=sorted({m.group(1).lower() for m in _INIT_FAILED.finditer(rec.stdout)}),
    )


_INIT_FAILED = re.compile(
    r"NVRM: GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d): RmInitAdapter failed"
)
"""`NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:884)`: the GPU the driver could not initialise."""


def _persistenced(rec: CommandRecord, f: dict[str, Any], problems: dict[str, str]) -> None:
    word = first_line(rec.stdout)  # `is-active` exits 3 for inactive: the word is the answer
    if word in ("active", "inactive", "failed", "activating", "deactivating", "unknown"):
        f["persistenced"] = word
        problems.pop("persistenced_active", None)


def _libs(rec: CommandRecord, f: dict[str, Any], problems: dict[str, str]) -> None:
    libs = parse_lib_versions(rec.stdout)
    f.update(libcuda=libs["libcuda"], libnvml=libs["libnvidia-ml"], libs_read=True)


def _functions(rec: CommandRecord, f: dict[str, Any], problems: dict[str, str]) -> None:
    f["nvidia_functions"] = sorted(
        {m.group(1) for m in re.finditer(r"/devices/([0-9a-fA-F:.]+)/vendor", rec.stdout)}
    )


def _kernel_release(rec: CommandRecord, f: dict[str, Any], problems: dict[str, str]) -> None:
    value, why = one_value(rec.stdout)
    if why:
        problems["uname_r"] = why
    else:
        f.update(kernel_release=value or None)


Reader = Callable[[CommandRecord, dict[str, Any], dict[str, str]], None]
# source -> (reader, read even when the record is not a normal answer)
READERS: dict[str, tuple[Reader, bool]] = {
    "proc_driver_version": (_proc_version, True),
    "modinfo_nvidia": (_modinfo, True),
    "persistenced_active": (_persistenced, True),
    "uname_r": (_kernel_release, False),
    "dkms_status": (
        lambda rec, f, p: f.update(
            dkms=[
                (e.version, e.kernel, e.state)
                for e in parse_dkms_status(rec.stdout)
                if e.module.startswith("nvidia")
            ]
        ),
        False,
    ),
    "dmesg_nvrm": (_dmesg, False),
    "nvidia_modprobe_opts": (
        lambda rec, f, p: f.update(
            modprobe_read=True,
            modprobe_options=parse_modprobe_options(rec.stdout).get("nvidia", {}),
        ),
        False,
    ),
    "nvidia_lib_files": (_libs, False),
    "nvcc_version": (lambda rec, f, p: f.update(nvcc=parse_nvcc_version(rec.stdout)), False),
    "pci_nvidia_sysfs": (_functions, False),
}


def extract(outputs: Outputs, role: Role) -> DriverFacts:
    # The framework's reasons (a missing tool names its package; grep's exit 1 is an answer), kept in the facts so
    # the checks that read failures themselves say the same.
    problems = {cid: p for cid, rec in outputs.items() if (p := source_problem(rec))}
    f: dict[str, Any] = {"nvidia_present": nvidia_presence(outputs)[0]}
    _smi_banners(outputs, problems, f)
    if (rec := outputs.get("smi_table")) is not None and rec.error is None:
        f["smi_installed"] = not rec.missing_tool
    _gpu_state(outputs, problems, f)
    for cid, (reader, always) in READERS.items():
        rec = outputs.get(cid)
        if rec is None or (rec.missing_tool and always) or (not always and cid in problems):
            continue
        if always and rec.error is not None:
            continue
        reader(rec, f, problems)
    return DriverFacts.of(f, problems=problems)


FIELD_SOURCES: dict[str, tuple[str, ...]] = {
    "module_version": ("proc_driver_version",),
    "module_open": ("proc_driver_version",),
    "module_loaded": ("proc_driver_version",),
    "smi_installed": ("smi_table",),
    "smi_error": ("smi_q_xml", "smi_query_driver", "smi_table"),
    "smi_error_kind": ("smi_q_xml", "smi_query_driver", "smi_table"),
    "smi_error_source": ("smi_q_xml", "smi_query_driver", "smi_table"),
    "nvml_lib_version": ("smi_q_xml", "smi_query_driver", "smi_table"),
    "smi_driver_version": ("smi_table",),
    "cuda_version": ("smi_table",),
    "gpus": ("smi_query_driver",),
    "gpu_source": ("smi_query_driver",),
    "handle_failures": ("smi_q_xml", "smi_query_driver", "smi_table"),
    "smi_hung": ("smi_q_xml", "smi_query_driver", "smi_table"),
    "nvidia_present": ("pci_nvidia_sysfs", "proc_driver_version"),
    "nvidia_functions": ("pci_nvidia_sysfs",),
    "modinfo_version": ("modinfo_nvidia",),
    "modinfo_license": ("modinfo_nvidia",),
    "modinfo_vermagic": ("modinfo_nvidia",),
    "modinfo_dir_kernel": ("modinfo_nvidia",),
    "modinfo_missing": ("modinfo_nvidia",),
    "kernel_release": ("uname_r",),
    "dkms": ("dkms_status",),
    "kernel_log_read": ("dmesg_nvrm",),
    "xids": ("dmesg_nvrm",),
    "nvrm_problems": ("dmesg_nvrm",),
    "fallen_off_bus": ("dmesg_nvrm",),
    "init_failed": ("dmesg_nvrm",),
    "persistenced": ("persistenced_active",),
    "modprobe_read": ("nvidia_modprobe_opts",),
    "modprobe_options": ("nvidia_modprobe_opts",),
    "libs_read": ("nvidia_lib_files",),
    "libcuda": ("nvidia_lib_files",),
    "libnvml": ("nvidia_lib_files",),
    "nvcc": ("nvcc_version",),
}
"""Each fact field -> the sources it is read from (provenance; the read-tracking test holds verdicts to
their checks' declarations through it). () = from the records' wrapping, not a source's output."""
