"""The nvlink probe's rows of the check catalogue (PROBES.md §10 and §11) and one small verdict per check.

PCIe-only boards and GPUs in MIG mode make the link checks "not applicable" through `applies`, judged from the
GPU models and MIG mode themselves: an empty or refused `nvlink -s` never reads as "no NVLink" or "links ok".
"""

from __future__ import annotations

import re

from gpuaudit.probes.core.judge.checks import (
    BOTH,
    HOST,
    Check,
    Ctx,
    Message,
    Verdict,
    critical,
    info,
    not_applicable,
    ok,
    source_problem,
    unknown,
    warning,
)
from gpuaudit.probes.nvlink import knowledge as k
from gpuaudit.probes.nvlink.facts import NvlinkFacts

NAMES = ("nvlink_s", "smi_query_fabric", "smi_query_driver", "smi_q_xml")
"""Sources that name the GPU models (any one will do for the model-keyed checks)."""


def _why_unusable(ctx: Ctx, cid: str) -> str | None:
    """Why an optional source can't be used on the judged target (None when it can)."""
    role = ctx.role or "host"
    return source_problem(ctx.outputs.get(role, {}).get(cid), ctx.facts.get(role))


GPU_NAME_SOURCES = ("nvlink_s", "smi_query_fabric", "smi_query_driver", "smi_q_xml")
"""Where the GPU models come from (the first that names them): extract.FIELD_SOURCES["gpu_names"]."""


def _models_unknown(ctx: Ctx) -> Verdict | None:
    """Rules keyed on the GPU model cannot say "not applicable" when the model is unknown."""
    f: NvlinkFacts = ctx.f
    if f.gpu_names:
        return None
    return unknown("GPU models unknown: " + (f.smi_error or ctx.why(*GPU_NAME_SOURCES)))


# --------------------------------------------------------------------------- presence and links


def presence_applies(ctx: Ctx) -> str | None:
    f: NvlinkFacts = ctx.f
    if f.gpu_names and k.classes(f) <= {"pcie_none"}:
        return f"{k.describe(f)} has no NVLink"
    return k.mig_reason(f)


def presence(ctx: Ctx) -> Verdict:
    f: NvlinkFacts = ctx.f
    if v := _models_unknown(ctx):
        return v
    cls, desc, has = k.classes(f), k.describe(f), k.has_nvlink(f)
    if has is None:
        return unknown(f"{desc}; nvlink -s listed no GPU and topo -m was not readable")
    if has:
        return ok(
            f"{desc}: {k.active_total(f)} active links"
            + (f", {f.topo_nv_pairs} NV# GPU pairs" if f.topo_nv_pairs else ""),
            variant="nvlink_present",
        )
    if "sxm" in cls:
        return critical(
            f"{desc}: no active link, no NV# in topo",
            "NVLink between every GPU pair",
            variant="no_nvlink_on_sxm_hgx",
        )
    if cls <= {"pcie_none", "pcie_bridge"}:
        return not_applicable(f"{desc} without an NVLink bridge")
    return info(f"{desc}: no NVLink seen", variant="nvlink_expectation_unknown_gpu")


def link_state(ctx: Ctx) -> Verdict:
    f: NvlinkFacts = ctx.f
    links = k.judged_links(f)
    if not f.links_read or not links:
        return unknown(
            "nvidia-smi nvlink -s listed no GPU" + (" (empty output)" if not f.links else "")
        )
    want = {i: k.expected_for(f, i) for i in links}
    short = {i for i, ls in links.items() if (w := want[i]) and k.active_links(ls) < w}
    speeds = [s for ls in links.values() for _, a, s in ls if a and s]
    top = max(speeds) if speeds else None
    slow = sorted(
        {i for i, ls in links.items() for _, a, s in ls if a and s and top and s < top * 0.95}
    )
    counts = ", ".join(f"GPU{i}: {k.active_links(ls)}/{len(ls)}" for i, ls in sorted(links.items()))
    obs = f"active links {counts}" + (f" at {top:g} GB/s" if top else "")
    if short:
        return critical(
            obs,
            ", ".join(f"GPU{i}: {want[i]} active" for i in sorted(short)),
            variant="nvlink_links_missing",
        )
    if slow:
        return warning(
            obs,
            f"every active link at {top:g} GB/s",
            variant="nvlink_links_below_nominal_speed",
        )
    return ok(obs, variant="all_at_speed")


def errors(ctx: Ctx) -> Verdict:
    f: NvlinkFacts = ctx.f
    if f.xid74:
        return critical(
            f"Xid 74 × {f.xid74}",
            "no Xid 74",
            variant="nvlink_xid_74_since_boot",
        )
    nonzero = {
        (g, ln, c): v
        for g, links in f.error_counters.items()
        for ln, cs in links.items()
        for c, v in cs.items()
        if v
    }
    if nonzero:
        return info(
            "; ".join(f"GPU{g} link {ln} {c}={v}" for (g, ln, c), v in list(nonzero.items())[:8]),
            "counters not growing between two samples",
            variant="nvlink_error_counters_non_zero",
        )
    if not any(f.error_counters.values()):
        # no Xid 74 in the log proves nothing while the counters themselves are unreadable
        log = "kernel log not read" if f.xid74 is None else "no Xid 74 in the kernel log"
        counters = _why_unusable(ctx, "nvlink_errors") or (
            "no counter line parsed for any GPU" if f.error_counters else "error counters not read"
        )
        return unknown(f"{counters}; {log}")
    return ok("no NVLink error counts" + ("" if f.xid74 is None else ", no Xid 74"))


# --------------------------------------------------------------------------- fabric


def fm_service(ctx: Ctx) -> Verdict:
    f: NvlinkFacts = ctx.f
    nvs = k.is_nvswitch_system(f)
    if nvs is None:
        return _models_unknown(ctx) or unknown("GPU models unknown")
    problem = _why_unusable(ctx, "fabricmanager_status")
    if nvs is False:
        if not problem and (
            f.fm_active in ("failed", "activating")
            or any("nothing to do" in m for m in f.fm_messages)
        ):
            return info(
                f"not applicable (no NVSwitch): unit {f.fm_active}; " + "; ".join(f.fm_messages),
                variant="fabric_manager_installed_not_needed",
            )
        return not_applicable("no NVSwitch in this system")
    if problem or f.fm_present is None:
        return unknown(f"fabricmanager_status: {problem or 'systemctl not readable'}")
    if not f.fm_present or f.fm_active != "active":
        return critical(
            "unit not installed" if not f.fm_present else f"unit {f.fm_active}",
            "nvidia-fabricmanager active (running)",
            variant="fabric_manager_not_running_on",
        )
    return ok("active" + (f", version {f.fm_version}" if f.fm_version else " (version not read)"))


def fabric_state(ctx: Ctx) -> Verdict:
    f: NvlinkFacts = ctx.f
    if f.fabric_unreadable:
        return unknown(
            "fabric state not readable (nvidia-smi error token) on "
            + ", ".join(f"GPU{i}" for i in f.fabric_unreadable)
        )
    states = [(i, s, st) for i, s, st in f.fabric if s]
    silent = ", ".join(f"GPU{i}" for i, s, _ in f.fabric if not s)
    if not states:
        if k.is_nvswitch_system(f):
            return unknown("NVSwitch system but no GPU reports a fabric state")
        return _models_unknown(ctx) or not_applicable("fabric state N/A (no NVSwitch fabric)")
    bad = [
        (i, s, st)
        for i, s, st in states
        if s.lower() != "completed" or (st and st.lower() != "success")
    ]
    # beside GPUs that report one, a GPU without a state is not proven registered: unknown, named
    if not bad and silent:
        return unknown(
            f"{len(states)} GPUs Completed/Success; no fabric state reported by {silent}"
        )
    if not bad:
        return ok(f"all {len(states)} GPUs Completed/Success")
    obs = ", ".join(f"GPU{i}: {s}/{st}" for i, s, st in states) + (
        f"; no fabric state reported by {silent}" if silent else ""
    )
    if all(s.lower() == "in progress" for _, s, _ in bad):
        return warning(obs, variant="gpus_not_registered_nvlink_fabric")
    return critical(obs, variant="gpus_not_registered_nvlink_fabric")


def nvl5_prereqs(ctx: Ctx) -> Verdict:
    f: NvlinkFacts = ctx.f
    if v := _models_unknown(ctx):
        return v
    if not (k.is_nvswitch_system(f) and k.is_nvl5(f)):
        return not_applicable("not an NVLink-5 (B200/GB200-class) NVSwitch system")
    if f.ib_umad is None:
        return unknown(f"ib_umad_loaded: {_why_unusable(ctx, 'ib_umad_loaded') or 'not read'}")
    if not f.ib_umad:
        return critical(
            "ib_umad absent from /proc/modules",
            "ib_umad loaded, NVLink subnet manager running",
            variant="ib_umad_not_loaded_on",
        )
    return ok("ib_umad loaded")


def nvswitch_inventory(ctx: Ctx) -> Verdict:
    f: NvlinkFacts = ctx.f
    board = k.switches_expected(f)  # lspci names the switch generation: its board's count
    known = next((n for key, n in k.NVSWITCHES if any(key in g.upper() for g in f.gpu_names)), None)
    if board and f.nvswitch_functions and (not f.gpu_names or known is None):
        obs = f"{f.nvswitch_functions} NVSwitch PCI functions ({', '.join(sorted(set(f.nvswitch_models)))})"
        expect_text = f"{board[0]} ({board[1]} baseboard)"
        if f.nvswitch_functions < board[0]:
            return critical(obs, expect_text, variant="nvswitch_devices_missing")
        return ok(obs, expect_text)
    if v := _models_unknown(ctx):
        return v
    if not k.is_nvswitch_system(f):
        return not_applicable("no NVSwitch system")
    if k.is_nvl5(f):
        return info(
            "NVLink-5 switches are managed over the NVLink subnet manager, not visible as PCI bridges:"
            " count them in FM/NVLSM logs"
        )
    want = next((n for key, n in k.NVSWITCHES if any(key in g.upper() for g in f.gpu_names)), None)
    if f.nvswitch_functions is None or want is None:
        return unknown(
            f"lspci_nvswitch: {_why_unusable(ctx, 'lspci_nvswitch')}"
            if f.nvswitch_functions is None
            else "expected NVSwitch count unknown for this baseboard"
        )
    if f.nvswitch_functions < want:
        return critical(
            f"{f.nvswitch_functions} NVSwitch PCI functions",
            f"{want}",
            variant="nvswitch_devices_missing",
        )
    return ok(f"{f.nvswitch_functions} NVSwitch PCI functions", f"{want}")


def nvls(ctx: Ctx) -> Verdict:
    f: NvlinkFacts = ctx.f
    if v := _models_unknown(ctx):
        return v
    if not k.is_nvswitch_system(f) or not any(
        re.search(r"H100|H200|B200|GB200", n.upper()) for n in f.gpu_names
    ):
        return not_applicable("NVLS needs an H100/H200/B200 NVSwitch system")
    return unknown(
        "the engine's NCCL_NVLS_ENABLE is read by nccl.env_overrides (engine environment), not here"
    )


def container_access(ctx: Ctx) -> Verdict:
    f: NvlinkFacts = ctx.f
    if v := _models_unknown(ctx):
        return v
    if any("GB200" in n.upper() or "GB300" in n.upper() for n in f.gpu_names):
        return info(
            "GB200-class: multi-node NVLink needs IMEX channel devices (/dev/nvidia-caps-imex-channels) in the"
            " container"
        )
    return not_applicable(
        "single-node NVLink needs only the GPU device nodes; IMEX is for multi-node NVLink"
    )


def fabric_vs_container_applies(ctx: Ctx) -> str | None:
    host: NvlinkFacts | None = ctx.of("host")
    return (
        "no NVSwitch fabric on this host"
        if host is not None and k.is_nvswitch_system(host) is False
        else None
    )


def fabric_vs_container(ctx: Ctx) -> Verdict:
    ctr: NvlinkFacts = ctx.of("container")
    rec = ctx.outputs.get("container", {}).get("smi_query_fabric")
    if problem := source_problem(
        rec, ctr
    ):  # read here, not gated: a PCIe host makes it not applicable first
        return unknown(
            f"smi_query_fabric (container): {problem}",
            evidence=(("container", "smi_query_fabric"),),
        )
    ev = (("container", "smi_query_fabric"), ("host", "smi_query_fabric"))
    bad = [(i, s) for i, s, _ in ctr.fabric if s and s.lower() != "completed"]
    if bad:
        return warning(
            ", ".join(f"GPU{i}: {s}" for i, s in bad),
            "Completed",
            variant="container_sees_fabric_not_ready",
            evidence=ev,
        )
    return ok("container sees the fabric Completed or N/A", evidence=ev)


def _link_applies(ctx: Ctx) -> str | None:
    return k.link_checks_reason(ctx.f)


def _pcie_applies(ctx: Ctx) -> str | None:
    return k.pcie_only_reason(ctx.f)


CHECKS: tuple[Check, ...] = (
    Check(
        "nvlink.presence",
        "NVLink presence",
        "hardware",
        why="SXM/HGX GPUs are wired by NVLink; PCIe-only boards talk over PCIe, where 'no NVLink' is their normal state.",
        fix="Check Fabric Manager, the NVSwitch driver and dmesg for NVLink training errors.",
        verdict=presence,
        applies=presence_applies,
        any_of=("nvlink_s", "smi_topo_m"),
        roles=HOST,
        needs_gpu=True,
        optional=("smi_query_fabric", "smi_q_xml", "smi_query_driver"),
        variants={
            "nvlink_expectation_unknown_gpu": Message(
                title="NVLink expectation unknown for this GPU"
            ),
            "nvlink_present": Message(title="NVLink present"),
            "no_nvlink_on_sxm_hgx": Message(
                title="No NVLink on an SXM/HGX system",
                why=(
                    "Baseboard GPUs are wired by NVLink/NVSwitch; none visible means the fabric "
                    "is down and all traffic falls back to PCIe."
                ),
                fix=(
                    "Check Fabric Manager, the NVSwitch driver and dmesg for NVLink training "
                    "errors."
                ),
            ),
        },
    ),
    Check(
        "nvlink.link_state",
        "NVLink links up at rated speed",
        "hardware",
        why="A missing link unbalances rings and NVLink SHARP; NCCL's bandwidth model assumes every link of the"
        " generation.",
        fix="Reset the GPUs; if links stay down, reseat/RMA the baseboard and check Fabric Manager logs.",
        verdict=link_state,
        applies=_link_applies,
        sources=("nvlink_s",),
        roles=HOST,
        needs_gpu=True,
        optional=("smi_query_fabric", "smi_q_xml", "smi_query_driver"),
        variants={
            "all_at_speed": Message(
                why=(
                    "Bridged PCIe pairs list inactive link slots by design (e.g. 12 of 18 on "
                    "H100 PCIe)."
                )
            ),
            "nvlink_links_missing": Message(title="NVLink links missing"),
            "nvlink_links_below_nominal_speed": Message(
                title="NVLink links below nominal speed",
                why="A slow link caps every collective that crosses it.",
                fix="Reset the GPUs and check for NVLink errors (Xid 74).",
            ),
        },
    ),
    Check(
        "nvlink.errors",
        "NVLink errors",
        "hardware",
        why="NVLink CRC/replay/recovery errors and Xid 74 mean a link retrains or fails.",
        fix="Reset the GPUs; recurring errors on one link mean hardware (baseboard/bridge) service.",
        verdict=errors,
        applies=_link_applies,
        any_of=("nvlink_errors", "dmesg_nvrm"),
        roles=HOST,
        needs_gpu=True,
        optional=("smi_query_fabric", "nvlink_s", "smi_q_xml", "smi_query_driver"),
        variants={
            "nvlink_xid_74_since_boot": Message(
                title="NVLink Xid 74 since boot",
                why="Xid 74 is an NVLink error: the link was retrained or failed.",
                fix=(
                    "Reset the GPUs; recurring Xid 74 on one link means hardware "
                    "(baseboard/bridge) service."
                ),
            ),
            "nvlink_error_counters_non_zero": Message(
                title="NVLink error counters non-zero",
                why="One sample cannot tell old from growing errors; compare a second run.",
            ),
        },
    ),
    Check(
        "nvlink.fabric_manager_service",
        "Fabric Manager service",
        "host",
        why="Fabric Manager trains the NVSwitch links and routing; without it CUDA init fails with error 802"
        " 'system not yet initialized'.",
        fix="Install nvidia-fabricmanager of exactly the driver's version and systemctl enable --now it.",
        verdict=fm_service,
        any_of=NAMES,
        roles=HOST,
        needs_gpu=True,
        optional=("fabricmanager_status",),
        variants={
            "fabric_manager_not_running_on": Message(
                title="Fabric Manager not running on an NVSwitch system"
            ),
            "fabric_manager_installed_not_needed": Message(
                title="Fabric Manager installed but not needed",
                why=(
                    "Without NVSwitches Fabric Manager has nothing to do (NV_WARN_NOTHING_TO_DO) "
                    "and fails by design."
                ),
                fix="Optionally disable nvidia-fabricmanager to quiet the failed unit.",
            ),
        },
    ),
    Check(
        "nvlink.fabric_state",
        "Per-GPU fabric registration",
        "host",
        why="GPUs move Not Started -> In Progress -> Completed as Fabric Manager registers them; until then NVLink P2P"
        " is off.",
        fix="Check Fabric Manager (status and /var/log/fabricmanager.log) on the host.",
        verdict=fabric_state,
        applies=_pcie_applies,
        any_of=("smi_query_fabric", "smi_q_xml"),
        roles=HOST,
        needs_gpu=True,
        expected="Completed / Success on every GPU",
        optional=(
            "nvlink_s",
            "smi_query_driver",
        ),
        variants={
            "gpus_not_registered_nvlink_fabric": Message(
                title="GPUs not registered with the NVLink fabric"
            )
        },
    ),
    Check(
        "nvlink.fabric_nvl5_prereqs",
        "NVLink-5 prerequisites (ib_umad, NVLink subnet manager)",
        "host",
        why="Fabric Manager 570+ on NVL5 systems talks to the switches with InfiniBand-style management datagrams"
        " through ib_umad.",
        fix="Load ib_umad at boot (modules-load.d) and install/enable the NVLink subnet manager.",
        verdict=nvl5_prereqs,
        any_of=NAMES,
        roles=HOST,
        needs_gpu=True,
        variants={
            "ib_umad_not_loaded_on": Message(title="ib_umad not loaded on an NVLink-5 system")
        },
    ),
    Check(
        "nvlink.fabric_nvswitch_inventory",
        "NVSwitch devices present",
        "hardware",
        why="A missing switch removes bandwidth from every GPU pair and may stop Fabric Manager.",
        fix="Check the baseboard (BMC logs) and the NVSwitch driver in dmesg.",
        verdict=nvswitch_inventory,
        any_of=(*NAMES, "lspci_nvswitch"),  # lspci names the switch generation without nvidia-smi
        roles=HOST,
        needs_gpu=True,
        variants={"nvswitch_devices_missing": Message(title="NVSwitch devices missing")},
    ),
    Check(
        "nvlink.nvls",
        "NVLink SHARP (NVLS)",
        "engine",
        why="On 8× H100 NVLS all-reduce reaches ~480 GB/s busBw against ~370 GB/s with rings.",
        fix="Leave NCCL_NVLS_ENABLE unset (or 1) in the engine's environment.",
        verdict=nvls,
        any_of=NAMES,
        roles=HOST,
        needs_gpu=True,
    ),
    Check(
        "nvlink.fabric_container_access",
        "What containers need for NVLink",
        "container",
        why="Single-node NVLink needs only the GPU device nodes; IMEX channels are for multi-node NVLink.",
        fix="Pass /dev/nvidia-caps-imex-channels into the container on GB200-class multi-node NVLink systems.",
        verdict=container_access,
        any_of=NAMES,
        roles=HOST,
        needs_gpu=True,
    ),
    Check(
        "nvlink.fabric_vs_container",
        "Fabric state seen from the container",
        "host",
        why="Fabric registration is done by Fabric Manager on the host; a container can neither see nor fix its cause.",
        fix="Fix it on the HOST (see nvlink.fabric_state / fabric_manager_service); nothing to change in the container.",
        verdict=fabric_vs_container,
        applies=fabric_vs_container_applies,
        roles=BOTH,
        cross=True,
        needs_gpu=True,
        expected="Completed",
        optional=(
            ("container", "smi_query_fabric"),
            ("host", "smi_query_fabric"),
            ("host", "nvlink_s"),
            ("host", "smi_q_xml"),
            ("host", "smi_query_driver"),
        ),
        variants={
            "container_sees_fabric_not_ready": Message(title="Container sees the fabric not ready")
        },
    ),
)
