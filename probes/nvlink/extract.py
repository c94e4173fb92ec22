"""Raw outputs of one target -> NvlinkFacts. Pure; never raises (broken output becomes facts.problems)."""

from __future__ import annotations

import re
from typing import Any

from gpuaudit.probes.core.judge.probe import Reads, read_table
from gpuaudit.probes.core.models import CommandRecord, Role
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
from gpuaudit.probes.core.parsing import first_line, parse_once
from gpuaudit.probes.core.sources import SOURCES
from gpuaudit.probes.core.spec import Outputs, record_problem
from gpuaudit.probes.nvlink.facts import NvlinkFacts

FABRIC_FIELDS = ("index", "name", "fabric.state", "fabric.status")
DRIVER_FIELDS = tuple(
    re.findall(r"--query-gpu=(\S+)", SOURCES["smi_query_driver"].shell)[0].split(",")
)
"""The columns of the shared per-GPU driver CSV (read here for mig.mode.current)."""
MIG_REFUSED = re.compile(r"Nvlink queries are not supported for Devices in MIG mode", re.I)

Fields = dict[str, Any]


def _names(f: Fields, names: list[str]) -> None:
    """GPU models from the first source that listed any (nvlink -s, fabric CSV, driver CSV, XML)."""
    if names and not f.get("gpu_names"):
        f["gpu_names"] = names


@parse_once
def parse_mig_refusal(text: str) -> bool:
    """`nvidia-smi nvlink -s` on GPUs in MIG mode (seen on an H200):

    Nvlink queries are not supported for Devices in MIG mode
    """
    return bool(MIG_REFUSED.search(text or ""))


def _nvlink_s(rec: CommandRecord, f: Fields) -> None:
    """The links per GPU (`nvlink_mig_refused` is read once by `extract`, whatever the exit status)."""
    gpus = parse_nvlink_s(rec.stdout)
    f.update(
        links={g.index: [(ln.link, ln.active, ln.speed_gbs) for ln in g.links] for g in gpus},
        link_names={g.index: g.name for g in gpus},
        all_inactive_gpus=[g.index for g in gpus if g.all_inactive],
        links_read=bool(gpus),
    )
    _names(f, [g.name for g in gpus])


def _topo(rec: CommandRecord) -> Fields:
    return {
        "topo_nv_pairs": len({tuple(sorted(p)) for p in parse_topo_m(rec.stdout).nvlink_pairs()})
    }


def _fabric_csv(rec: CommandRecord, f: Fields) -> None:
    rows = parse_query_gpu_csv(rec.stdout, FABRIC_FIELDS)
    fabric = [
        (int(r["index"] or i), r["fabric.state"], r["fabric.status"]) for i, r in enumerate(rows)
    ]
    f.update(
        fabric=fabric,
        fabric_read=True,
        fabric_unreadable=[
            i
            for (i, _, _), r in zip(fabric, rows)
            if {"fabric.state", "fabric.status"} & csv_row_errors(r)
        ],
    )
    _names(f, [r["name"] or "?" for r in rows])


def _driver_csv(rec: CommandRecord, f: Fields) -> None:
    rows = parse_query_gpu_csv(rec.stdout, DRIVER_FIELDS)
    modes = [
        (int(r["index"] or i), (r.get("mig.mode.current") or "").strip().lower())
        for i, r in enumerate(rows)
    ]
    if any(m in ("enabled", "disabled") for _, m in modes):
        f["mig_enabled"] = [i for i, m in modes if m == "enabled"]
    _names(f, [r["name"] or "?" for r in rows])


def _xml(rec: CommandRecord, f: Fields) -> None:
    xml = parse_smi_q_xml(rec.stdout)
    if not f.get("fabric_read"):  # fallback for drivers without fabric.* query fields
        f.update(
            fabric=[
                (
                    g.index,
                    g.fabric_state if g.fabric_state != "N/A" else None,
                    g.fabric_status if g.fabric_status != "N/A" else None,
                )
                for g in xml.gpus
            ],
            fabric_read=bool(xml.gpus),
        )
    if f.get("mig_enabled") is None and any(g.mig_current for g in xml.gpus):
        f["mig_enabled"] = [g.index for g in xml.gpus if (g.mig_current or "").lower() == "enabled"]
    _names(f, [g.product_name or "?" for g in xml.gpus])


def _switches(text: str) -> Fields:
    """`lspci -d 10de::0680`: one line per NVSwitch function, with the model lspci knows ("[H100 NVSwitch]")."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    models = []
    for ln in lines:
        m = re.search(r"\[([^\]]*NVSwitch[^\]]*)\]", ln) or re.search(r"Device ([0-9a-f]{4})", ln)
        models.append(m.group(1) if m else "?")
    return {"nvswitch_functions": len(lines), "nvswitch_models": models}


def _fm_version(rec: CommandRecord) -> Fields:
    m = re.search(r"(\d+\.\d+\.\d+)", rec.stdout)
    return {"fm_version": m.group(1) if m else None}


def _xid(rec: CommandRecord) -> Fields:
    if "not permitted" in rec.stderr.lower():
        return {}
    return {"xid74": sum(1 for x in parse_xid_events(rec.stdout) if x.code == 74)}


# source -> reader, in order (names: nvlink -s first, then the CSVs, then the XML), run by the framework
# (`read_table`); a parse error -> problems[source].
TABLE: tuple[Reads, ...] = (
    Reads("nvlink_s", fill_record=_nvlink_s),
    Reads("smi_topo_m", record=_topo),
    Reads("smi_query_fabric", fill_record=_fabric_csv),
    Reads("smi_query_driver", fill_record=_driver_csv),
    Reads("smi_q_xml", fill_record=_xml),
    Reads("fabricmanager_version", record=_fm_version),
    Reads("lspci_nvswitch", parse=_switches),
    Reads("ib_umad_loaded", parse=lambda t: {"ib_umad": bool(first_line(t))}),
    Reads("nvlink_errors", parse=lambda t: {"error_counters": parse_nvlink_errors(t)}),
    Reads("dmesg_nvrm", record=_xid),
)
SMI_TABLES = ("nvlink_s", "smi_query_fabric", "smi_topo_m", "smi_query_driver")


def _fabric_manager(outputs: Outputs, f: Fields, problems: dict[str, str]) -> None:
    """`systemctl status` exits 3 (inactive) / 4 (no unit): both are answers (the source's ok_exits)."""
    rec = outputs.get("fabricmanager_status")
    if rec is None or rec.missing_tool or rec.error is not None or rec.timed_out:
        if rec is not None and (p := record_problem(rec)):
            problems["fabricmanager_status"] = p
        return
    st = parse_systemctl_status(rec.stdout + "\n" + rec.stderr)
    f.update(
        fm_present=st.present, fm_active=st.active if st.present else None, fm_messages=st.messages
    )


def extract(outputs: Outputs, role: Role) -> NvlinkFacts:
    problems: dict[str, str] = {}
    f: Fields = {}
    for cid in SMI_TABLES:  # an error banner instead of data (exit 0 on some drivers)
        rec = outputs.get(cid)
        if (
            rec is not None
            and not rec.missing_tool
            and (err := detect_smi_error(rec.stdout + "\n" + rec.stderr))
        ):
            f.setdefault("smi_error", err)
            problems[cid] = f"nvidia-smi: {err}"
    rec = outputs.get("nvlink_s")
    if rec is not None and parse_mig_refusal(rec.stdout + rec.stderr):
        f["nvlink_mig_refused"] = True  # whatever the exit status: MIG mode is the answer
    # ValueError: a non-numeric index column; a banner source above is not read again
    read = read_table(
        {cid: r for cid, r in outputs.items() if cid not in problems},
        TABLE,
        why=str,
        usability=record_problem,
    )
    f.update(read.fields)
    problems.update(read.problems)
    _fabric_manager(outputs, f, problems)
    return NvlinkFacts.of(f, problems=problems)


FIELD_SOURCES: dict[str, tuple[str, ...]] = {
    "gpu_names": ("nvlink_s", "smi_q_xml", "smi_query_driver", "smi_query_fabric"),
    "links": ("nvlink_s",),
    "link_names": ("nvlink_s",),
    "links_read": ("nvlink_s",),
    "all_inactive_gpus": ("nvlink_s",),
    "nvlink_mig_refused": ("nvlink_s",),
    "mig_enabled": ("smi_query_driver",),
    "topo_nv_pairs": ("smi_topo_m",),
    "fabric": ("smi_query_fabric",),
    "fabric_read": ("smi_query_fabric",),
    "fabric_unreadable": ("smi_query_fabric",),
    "fm_present": ("fabricmanager_status",),
    "fm_active": ("fabricmanager_status",),
    "fm_messages": ("fabricmanager_status",),
    "fm_version": ("fabricmanager_version",),
    "nvswitch_functions": ("lspci_nvswitch",),
    "nvswitch_models": ("lspci_nvswitch",),
    "ib_umad": ("ib_umad_loaded",),
    "error_counters": ("nvlink_errors",),
    "xid74": ("dmesg_nvrm",),
    "smi_error": ("nvlink_s", "smi_query_driver", "smi_query_fabric", "smi_topo_m"),
}
"""Each fact field -> the sources it is read from (provenance; the read-tracking test holds verdicts to
their checks' declarations through it). () = from the records' wrapping, not a source's output."""
