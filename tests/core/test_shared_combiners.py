"""Issue 23: facts several probes need are derived once, in probes/core/judge/combiners.py, and every probe that
reports them says the same thing: the kernel command line, the serving engine, the GPU list (and its fallback
order), on the case-study recordings and real nvidia-smi XML captures."""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path

import pytest
from gpuaudit.probes.catalogue import REGISTRY
from gpuaudit.probes.core.judge.combiners import (
    GPU_LIST_SOURCES,
    gpu_entries,
    gpu_list_of,
    kernel_cmdline_of,
    serving_engine_of,
)
from gpuaudit.probes.core.models import AuditRun, CommandRecord
from gpuaudit.probes.core.run.runner import Audit, AuditOptions
from gpuaudit.probes.core.run.session import directory_bindings, run_to_end

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "snapshots" / "examples" / "case-study"
XML = ROOT / "tests" / "fixtures" / "nvidia" / "nvidia-smi-q-x"


@functools.lru_cache(maxsize=2)
def audit(phase: str) -> AuditRun:
    async def go() -> AuditRun:
        return await run_to_end(
            Audit(directory_bindings(CASE / phase), list(REGISTRY), AuditOptions())
        )

    return asyncio.run(go())


def outputs(run: AuditRun, role: str) -> dict[str, CommandRecord]:
    return {r.command_id: r for p in run.probes for r in p.records if r.target == role}


def facts(run: AuditRun, probe: str, role: str) -> dict:
    return next(p.facts.get(role, {}) for p in run.probes if p.probe_id == probe)


@pytest.mark.parametrize("phase", ["before", "after"])
def test_every_probe_reports_the_one_kernel_command_line(phase: str) -> None:
    run = audit(phase)
    cmd, source = kernel_cmdline_of(outputs(run, "host"))
    assert cmd is not None and source == "proc_cmdline" and cmd.line
    for probe in ("pcie", "firmware", "power"):
        assert facts(run, probe, "host")["cmdline"] == cmd.line, probe
    assert [tuple(a) for a in facts(run, "kernel", "host")["cmdline"]] == list(cmd.args)


@pytest.mark.parametrize("phase", ["before", "after"])
def test_the_serving_engine_is_the_one_the_python_and_nccl_probes_report(phase: str) -> None:
    run = audit(phase)
    eng, source = serving_engine_of(outputs(run, "container"))
    assert eng is not None and source == "engine_procs"
    assert eng.main is not None and eng.config is not None
    py, nccl = facts(run, "python", "container"), facts(run, "nccl", "container")
    assert (py["engine_pid"], py["model"], py["tp"]) == (
        eng.main.pid,
        eng.config.model,
        eng.config.tp,
    )
    assert (nccl["engine_kind"], nccl["engine_tp"]) == (eng.config.kind, eng.config.tp)
    assert py["engine_env"] == nccl["engine_env"] == eng.env
    failed = outputs(run, "container")["engine_procs"].model_copy(update={"timed_out": True})
    assert serving_engine_of({"engine_procs": failed}) == (None, "engine_procs not read")


@pytest.mark.parametrize("phase", ["before", "after"])
def test_the_gpu_list_is_the_one_the_numa_container_and_nccl_probes_report(phase: str) -> None:
    run = audit(phase)
    for role in ("host", "container"):
        gpus, source = gpu_list_of(outputs(run, role))
        assert gpus and source == "smi_gpu_ids", role
        numa = facts(run, "numa", role).get("gpus") or []
        assert [(g["bus_id"], g["index"], g["numa_node"]) for g in numa] == [
            (g.bus_id, g.index, g.numa_node) for g in gpus
        ], role
        names = facts(run, "nccl", role).get("gpu_names")
        assert names is None or names == [g.name for g in gpus]
    ctr = facts(run, "container", "container")["gpus"]
    assert [g["bus_id"] for g in ctr] == [
        g.bus_id for g in gpu_list_of(outputs(run, "container"))[0] or []
    ]


def test_the_gpu_list_falls_back_in_its_declared_order() -> None:
    """smi_gpu_ids first; unread or broken -> the -q -x XML (real captures); neither -> None with each reason."""
    assert GPU_LIST_SOURCES == ("smi_gpu_ids", "smi_q_xml")
    run = audit("before")
    host = outputs(run, "host")
    ids = host["smi_gpu_ids"]
    xml_text = (XML / "telegraf-a100-sxm4-v12.xml").read_text()
    xml = ids.model_copy(update={"command_id": "smi_q_xml", "stdout": xml_text})
    failed = ids.model_copy(update={"timed_out": True, "exit_status": None, "stdout": ""})
    gpus, source = gpu_list_of({"smi_gpu_ids": failed, "smi_q_xml": xml})
    assert source == "smi_q_xml" and gpus == gpu_entries("smi_q_xml", xml_text)
    assert gpus and all(g.bus_id.startswith("0000:") and g.name for g in gpus)
    gpus, source = gpu_list_of({"smi_gpu_ids": ids, "smi_q_xml": xml})
    assert source == "smi_gpu_ids"
    gpus, why = gpu_list_of({"smi_gpu_ids": failed})
    assert gpus is None and "smi_gpu_ids not read" in why and "smi_q_xml not read" in why


@pytest.mark.parametrize("path", sorted(XML.glob("*.xml")), ids=lambda p: p.name)
def test_xml_gpu_entries_name_every_gpu(path: Path) -> None:
    gpus = gpu_entries("smi_q_xml", path.read_text())
    assert gpus and len({g.bus_id for g in gpus}) == len(gpus)
    assert [g.index for g in gpus] == list(range(len(gpus)))
