"""python on a machine with no NVIDIA GPU (real outputs), and the roofline inputs it exports from the case study."""

from __future__ import annotations

from pathlib import Path

from gpuaudit.probes import python as py
from gpuaudit.probes.core.run.events import ProbeFinished
from gpuaudit.probes.core.run.runner import Audit
from gpuaudit.probes.core.run.session import directory_bindings
from gpuaudit.probes.core.sources import with_presence

NO_GPU = Path(__file__).resolve().parents[1] / "fixtures/engine/no-gpu-host"
CASE = Path(__file__).resolve().parents[2] / "snapshots/examples/case-study"


async def _run(d: Path, roles=("host",)):
    async for ev in Audit(directory_bindings(d, roles), [with_presence(py.PROBE)]).events():
        if isinstance(ev, ProbeFinished):
            return ev.result


async def test_no_nvidia_gpu_means_not_applicable_not_unknown_spam():
    """Before: GPU checks were unknown "tool not installed" and engine checks depended on each rule's gate."""
    r = await _run(NO_GPU)
    by = {f.id: f for f in r.findings}
    assert r.status == "done" and len(by) == 10
    for fid in (
        "python.torch_arch_support",
        "python.flashinfer_sm120",
        "python.cuda_runtime_vs_driver",
    ):
        assert (by[fid].severity.value, by[fid].observed) == (
            "n/a",
            "no NVIDIA GPU or driver on this host",
        ), fid
    for fid in (
        "python.cuda_graphs",
        "python.dangerous_env",
        "python.attention_backend",
        "python.engine_threads",
        "python.measured_throughput",
    ):
        assert (by[fid].severity.value, by[fid].observed) == (
            "n/a",
            "no serving engine found (no SGLang/vLLM/TGI server process)",
        ), fid
    assert not [f.id for f in r.findings if f.severity.value == "unknown"]


async def test_case_study_exports_the_roofline_inputs():
    r = await _run(CASE / "before", ("host", "container"))
    ctr = r.facts["container"]
    assert (ctr["engine_kind"], ctr["model"], ctr["tp"], ctr["pp"], ctr["dp"], ctr["ep"]) == (
        "sglang",
        "/models/GLM-5-NVFP4",
        8,
        1,
        1,
        None,
    )
    assert (
        ctr["quantization"],
        ctr["kv_cache_dtype"],
        ctr["speculative"],
        ctr["cuda_graphs_disabled"],
    ) == ("modelopt_fp4", None, None, True)
    assert (
        ctr["engine_port"],
        ctr["engine_port_is_default"],
        ctr["custom_allreduce_disabled"],
    ) == (30000, False, False)
    assert ctr["decode_single_stream_tok_s"] == 10.05 and ctr["decode_accept_len"] is None
    assert {
        "engine_pid",
        "throughput",
        "decode_single_stream_tok_s",
        "proc_threads",
    } <= py.PROBE.volatile_facts
