"""nccl.iommu_acs_gate reads the same sources as pcie.acs and firmware.iommu_mode (issue 11: each datum read once),
through the shared combiners: `lspci_vvv` (+ `lspci_tv`) for ACS, `iommu_state` (+ `proc_cmdline`) for the IOMMU."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import hw_helpers as hw
import pytest
from gpuaudit.probes import nccl, pcie
from gpuaudit.probes.core.judge.checks import judge_checks
from gpuaudit.probes.core.judge.combiners import (
    gpu_acs_redirect,
    gpu_iommu_translation,
    parse_iommu_state,
)

FX = Path(__file__).parents[1] / "fixtures"
CASE = Path(__file__).parents[2] / "snapshots/examples/case-study"
RELEASE_0_1 = (
    Path(__file__).parents[1] / "fixtures/releases/0.1.0"
)  # written by the previous release
# Real capture: two H100 SXM5 behind PEX890xx switches (HPE XD665), ACS redirect on the root and switch ports.
HPE = (FX / "system/lspci-vvv-filtered/hpe-xd665-two-h100-behind-pex890xx-no-tree.txt").read_text()
HPE_GPU_PATH_REDIRECT = ["0000:00:01.1", "0000:02:01.0", "0000:60:01.1", "0000:62:01.0"]
rec = partial(hw.rec, "nccl")
# `iommu_state` lines (the source's own format) with the kernel's iommu_group/type strings: identity, DMA-FQ, DMA.
UNITS = "units: ivhd0 ivhd1\n"
IDENTITY = UNITS + "gpu 0000:04:00.0 identity\ngpu 0000:64:00.0 identity\n"
TRANSLATED = UNITS + "gpu 0000:04:00.0 DMA-FQ\ngpu 0000:64:00.0 DMA-FQ\n"
ENGINE_TP2 = "@@pid 7\n@@exe /usr/bin/python3\n@@cmdline\npython3\n-m\nsglang.launch_server\n--tp\n2\n\n@@environ\nNCCL_DEBUG=WARN\n@@maps\n@@end\n"


def test_acs_redirect_is_the_gpu_paths_bridges_of_the_real_capture():
    """Only bridges above the GPUs count: the switch's other downstream ports (02:00.0, 02:02.0, ...) redirect too
    but carry no GPU traffic (the old `lspci_acsctl` grep counted all 11 functions)."""
    got, why = gpu_acs_redirect({"lspci_vvv": rec("lspci_vvv", HPE)})
    assert got == HPE_GPU_PATH_REDIRECT, why
    assert "4 of 6 bridge(s) above 2 GPU(s)" in why


def test_pcie_and_nccl_flag_the_same_bridges():
    outs = {
        "lspci_vvv": rec("lspci_vvv", HPE),
        "lspci_tv": rec("lspci_tv", "", 127, "sh: 1: lspci: not found"),
    }
    pf = pcie.extract(outs, "host")
    acs = next(
        f for f in judge_checks(pcie.CHECKS, {"host": pf}, {"host": outs}) if f.id == "pcie.acs"
    )
    flagged = sorted(b for b in HPE_GPU_PATH_REDIRECT if b in acs.observed)
    assert (
        flagged == HPE_GPU_PATH_REDIRECT
        and nccl.extract(outs, "host").acs_redirect == HPE_GPU_PATH_REDIRECT
    )


def test_acs_unknown_without_root_or_data():
    denied = (
        "04:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)\n"
        "\tCapabilities: <access denied>\n"
    )
    assert gpu_acs_redirect({"lspci_vvv": rec("lspci_vvv", denied)}) == (
        None,
        "needs root: lspci printed <access denied> for the capabilities",
    )
    assert (
        gpu_acs_redirect({"lspci_vvv": rec("lspci_vvv", "", 1, "lspci: Unable to load libkmod")})[0]
        is None
    )
    assert gpu_acs_redirect({})[0] is None


@pytest.mark.parametrize(
    "state,cmdline,expected",
    [
        (IDENTITY, "ro quiet", False),
        (TRANSLATED, "ro quiet iommu=pt", True),  # the live domain type wins over the boot line
        ("units:\n", "ro quiet", False),  # no IOMMU unit: off
        (
            UNITS + "gpu 0000:04:00.0\n",
            "ro quiet",
            None,
        ),  # units but no readable type (kernel < 5.11): not a guess
        (UNITS + "gpu 0000:04:00.0\n", "ro quiet amd_iommu=on iommu=pt", False),
        (None, "ro quiet intel_iommu=off", False),
        (None, "ro quiet", None),
    ],
)
def test_iommu_translation(state, cmdline, expected):
    outs = {"proc_cmdline": rec("proc_cmdline", cmdline)}
    if state is not None:
        outs["iommu_state"] = rec("iommu_state", state)
    assert gpu_iommu_translation(outs)[0] is expected


def test_iommu_state_parser_rejects_other_output():
    assert parse_iommu_state(IDENTITY) == (
        ["ivhd0", "ivhd1"],
        {"0000:04:00.0": "identity", "0000:64:00.0": "identity"},
    )
    with pytest.raises(ValueError):
        parse_iommu_state("sh: 1: cannot open /sys/class/iommu\n")
    f = nccl.extract(
        {"iommu_state": rec("iommu_state", "garbage\n"), "proc_cmdline": rec("proc_cmdline", "ro")},
        "host",
    )
    assert "iommu_state" in f.problems and f.iommu_translated is None


def _gate(outs):
    facts = {"host": nccl.extract(outs, "host")}
    full = {cid: rec(cid, "") for cid in (c.id for c in nccl.COMMANDS)} | outs
    return next(
        f for f in judge_checks(nccl.CHECKS, facts, {"host": full}) if f.id == "nccl.iommu_acs_gate"
    )


def test_gate_critical_from_the_shared_sources():
    """Translated GPU domains + ACS redirect above the GPUs + TP=2 with P2P allowed: the hang recipe, read from
    lspci_vvv and iommu_state alone (no lspci_acsctl / sys_iommu_groups any more)."""
    outs = {
        "lspci_vvv": rec("lspci_vvv", HPE),
        "iommu_state": rec("iommu_state", TRANSLATED),
        "proc_cmdline": rec("proc_cmdline", "ro quiet"),
        "engine_procs": rec("engine_procs", ENGINE_TP2),
        "proc_driver_version": rec(
            "proc_driver_version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15\n"
        ),
    }
    g = _gate(outs)
    assert g.severity.value == "critical", g.observed
    assert "DMA-FQ×2" in g.observed and "0000:02:01.0" in g.observed
    assert {(e.target, e.command_id) for e in g.evidence} >= {
        ("host", "iommu_state"),
        ("host", "lspci_vvv"),
    }
    passthrough = _gate(outs | {"iommu_state": rec("iommu_state", IDENTITY)})
    assert passthrough.severity.value == "ok"
    no_root = _gate(
        outs
        | {
            "lspci_vvv": hw.rec("nccl", "lspci_vvv", "", None).model_copy(
                update={"error": "needs root (run as root or with --sudo)"}
            )
        }
    )
    assert (
        no_root.severity.value == "warning"
        and "ACS state unknown (lspci_vvv: needs root" in no_root.observed
    )


def test_nccl_reads_no_duplicate_lines():
    ids = {c.id for c in nccl.COMMANDS}
    assert {"lspci_vvv", "lspci_tv", "iommu_state"} <= ids and not ids & {
        "lspci_acsctl",
        "sys_iommu_groups",
    }
    shells = {c.shell for c in pcie.COMMANDS}
    assert {c.shell for c in nccl.COMMANDS if c.id.startswith("lspci")} <= shells


@pytest.mark.parametrize("phase", ["before", "after"])
def test_case_study_recordings_agree(phase):
    """The demo's lspci_vvv / iommu_state say what its old lspci_acsctl / sys_iommu_groups said (gate unchanged)."""
    host = CASE / phase / "host"
    outs = {
        cid: rec(cid, (host / f"{cid}.out").read_text())
        for cid in ("lspci_vvv", "lspci_tv", "iommu_state", "proc_cmdline")
    }
    f = nccl.extract(outs, "host")
    assert f.iommu_translated is False and f.acs_redirect is not None and len(f.acs_redirect) == 8


async def _replay(snap, probe):
    from gpuaudit.probes.core.run.events import ProbeFinished
    from gpuaudit.probes.core.run.runner import Audit
    from gpuaudit.probes.core.run.session import replay_bindings

    async for ev in Audit(replay_bindings(snap.targets, snap.records), [probe]).events():
        if isinstance(ev, ProbeFinished):
            return ev.result


@pytest.mark.parametrize("phase", ["before", "after"])
async def test_snapshots_written_before_the_merge_replay_with_the_same_verdicts(phase):
    """The previous release's demo snapshots were written with lspci_acsctl / sys_iommu_groups / smi_gpu_cc: they also hold
    lspci_vvv, lspci_tv, iommu_state, smi_gpu_ids and smi_query_driver (other probes declared them), so nccl and
    python replay them to the verdicts recorded then."""
    from gpuaudit.probes import python
    from gpuaudit.snapshots import store

    snap = store.load(RELEASE_0_1 / f"case-study-{phase}.json")
    assert {r.command_id for r in snap.records} >= {
        "lspci_acsctl",
        "sys_iommu_groups",
        "smi_gpu_cc",
    }
    recorded = {f.id: f.severity.value for f in snap.findings if f.probe in ("nccl", "python")}
    for probe in (nccl.PROBE, python.PROBE):
        result = await _replay(snap, probe)
        got = {
            f.id: f.severity.value for f in result.findings
        }  # by id: which targets a row names may change
        assert got == {k: v for k, v in recorded.items() if k in got} and len(got) >= 8, probe.id
        assert not any("not recorded" in f.observed for f in result.findings), probe.id
