"""python.* rules over facts (pass / fail / boundary / precondition not met / unknown), and end to end."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpuaudit.probes import python as py
from gpuaudit.probes.core.run.events import ProbeFinished
from gpuaudit.probes.core.run.runner import Audit
from gpuaudit.probes.core.run.session import directory_bindings
from judge_facts import one

F = py.PythonFacts
CASE = Path(__file__).resolve().parents[2] / "snapshots/examples/case-study"
SM120 = dict(
    gpus=["NVIDIA RTX PRO 6000 Blackwell Server Edition"] * 8,
    compute_caps=["12.0"] * 8,
    driver="590.48.01",
)
TORCH = dict(
    torch="2.9.1+cu130",
    torch_cuda="13.0",
    arch_list=["sm_90", "sm_100", "sm_120", "compute_120"],
    packages={"torch": "2.9.1+cu130", "triton": "3.5.1"},
)
ENG = dict(
    engine_listed=True,
    engine_kind="sglang",
    engine_pid=1,
    tp=8,
    pp=1,
    engine_env_readable=True,
    engine_env={"OMP_NUM_THREADS": "8"},
)


def sev(facts, fid):
    return one(py.PROBE, facts, fid).severity.value


@pytest.mark.parametrize(
    "ctr,expected",
    [
        (F(**SM120, **TORCH), "ok"),
        (
            F(**SM120, **(TORCH | {"arch_list": ["sm_80", "sm_90", "compute_90"]})),
            "warning",
        ),  # PTX only (JIT)
        (F(**SM120, **(TORCH | {"arch_list": ["sm_50", "sm_80", "sm_90"]})), "critical"),
        (
            F(**SM120, **(TORCH | {"torch_cuda": None, "arch_list": []})),
            "critical",
        ),  # CPU-only build
        (
            F(**SM120, torch_error="ModuleNotFoundError"),
            "n/a",
        ),  # precondition: no torch in this python
        (F(**TORCH), "unknown"),  # no GPU data
        (F(**SM120, problems={"pyenv": "timed out"}), "unknown"),
    ],
)
def test_torch_arch_support(ctr, expected):
    assert sev({"container": ctr}, "python.torch_arch_support") == expected


@pytest.mark.parametrize(
    "ctr,expected",
    [
        (F(**SM120, **ENG, cuda_graphs_disabled=False), "ok"),
        (
            F(**SM120, **ENG, cuda_graphs_disabled=True, graph_flag="--disable-cuda-graph"),
            "critical",
        ),
        (F(**SM120, engine_listed=True, engine_procs=0), "n/a"),  # no engine: not applicable
        (F(**SM120, problems={"engine_procs": "timed out"}), "unknown"),
    ],
)
def test_cuda_graphs(ctr, expected):
    assert sev({"container": ctr}, "python.cuda_graphs") == expected


@pytest.mark.parametrize(
    "env,tp,expected",
    [
        ({"OMP_NUM_THREADS": "8"}, 8, "ok"),
        ({}, 8, "info"),
        ({"OMP_NUM_THREADS": "8", "CUDA_LAUNCH_BLOCKING": "1"}, 8, "critical"),
        ({"OMP_NUM_THREADS": "8", "CUDA_LAUNCH_BLOCKING": "0"}, 8, "ok"),
        ({"OMP_NUM_THREADS": "8", "NCCL_DEBUG": "TRACE"}, 8, "warning"),
        ({"OMP_NUM_THREADS": "8", "CUDA_VISIBLE_DEVICES": "0,1,2,3"}, 8, "critical"),
        (
            {"OMP_NUM_THREADS": "8", "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"},
            8,
            "ok",
        ),  # boundary: exactly enough
        ({"OMP_NUM_THREADS": "8"}, 16, "critical"),  # TP larger than the GPUs
    ],
)
def test_dangerous_env(env, tp, expected):
    f = F(**SM120, **(ENG | {"engine_env": env, "tp": tp}))
    assert sev({"container": f}, "python.dangerous_env") == expected
    assert (
        sev(
            {"container": F(**SM120, **(ENG | {"engine_env_readable": False}))},
            "python.dangerous_env",
        )
        == "unknown"
    )


@pytest.mark.parametrize(
    "backend,env,caps,expected",
    [
        ("flashinfer", {}, ["12.0"], "ok"),
        ("fa3", {}, ["12.0"], "warning"),
        ("fa3", {}, ["9.0"], "ok"),  # precondition: Hopper has FA3
        (None, {}, ["12.0"], "info"),
        (None, {"SGLANG_ENABLE_JIT_DEEPGEMM": "1"}, ["12.0"], "warning"),
        ("torch_native", {}, ["9.0"], "warning"),
    ],
)
def test_attention_backend(backend, env, caps, expected):
    f = F(compute_caps=caps, **(ENG | {"engine_env": env}), attention_backend=backend)
    assert sev({"container": f}, "python.attention_backend") == expected


@pytest.mark.parametrize(
    "packages,caps,expected",
    [
        ({"torch": "2.9.1", "nvidia-nccl-cu13": "2.27.7"}, ["12.0"], "ok"),
        (
            {"torch": "2.9.1", "nvidia-nccl-cu13": "2.27.7", "nvidia-cublas-cu12": "12.8"},
            ["12.0"],
            "warning",
        ),
        ({"torch": "2.6.0", "triton": "3.2.0"}, ["12.0"], "critical"),
        ({"torch": "2.6.0", "triton": "3.2.0"}, ["9.0"], "ok"),
        ({"torch": "2.7.0", "triton": "3.3.0"}, ["12.0"], "ok"),  # boundary
    ],
)
def test_cuda_stack_versions(packages, caps, expected):
    f = F(compute_caps=caps, torch="x", torch_cuda="13.0", arch_list=["sm_120"], packages=packages)
    assert sev({"container": f}, "python.cuda_stack_versions") == expected


@pytest.mark.parametrize(
    "packages,env,caps,expected",
    [
        ({"flashinfer-python": "0.6.1", "flashinfer-cubin": "0.6.1"}, {}, ["12.0"], "ok"),
        ({"flashinfer-python": "0.6.11", "flashinfer-cubin": "0.6.11"}, {}, ["12.0"], "critical"),
        (
            {"flashinfer-python": "0.6.1"},
            {"FLASHINFER_CUDA_ARCH_LIST": "9.0 10.0"},
            ["12.0"],
            "critical",
        ),
        (
            {"flashinfer-python": "0.6.11", "flashinfer-cubin": "0.6.11"},
            {},
            ["9.0"],
            "n/a",
        ),  # not sm_120
        ({}, {}, ["12.0"], "n/a"),  # not installed
    ],
)
def test_flashinfer_sm120(packages, env, caps, expected):
    f = F(
        compute_caps=caps,
        packages=packages,
        engine_env=env,
        engine_kind="sglang",
        engine_env_readable=True,
    )
    assert sev({"container": f}, "python.flashinfer_sm120") == expected


@pytest.mark.parametrize(
    "torch_cuda,driver,expected",
    [
        ("13.0", "590.48.01", "ok"),
        ("13.1", "590.48.01", "ok"),  # boundary: same
        ("13.0", "570.172.08", "critical"),  # corpus torch-collect-env case: cu130 on a 570 driver
        ("12.9", "570.172.08", "ok"),  # newer minor: compatible
        ("13.0", None, "unknown"),
        (None, "590.48.01", "n/a"),  # no CUDA torch: not applicable
    ],
)
def test_cuda_runtime_vs_driver(torch_cuda, driver, expected):
    facts = {
        "host": F(driver=driver, compute_caps=["12.0"] if driver else []),
        "container": F(torch="x" if torch_cuda else None, torch_cuda=torch_cuda),
    }
    assert sev(facts, "python.cuda_runtime_vs_driver") == expected


def test_driver_table():
    assert py.driver_max_cuda("590.48.01") == (13, 1) and py.driver_max_cuda("535.274.02") == (
        12,
        2,
    )
    assert py.driver_max_cuda("460.1") is None and py.driver_max_cuda(None) is None


async def _run(d: Path):
    async for ev in Audit(directory_bindings(d), [py.PROBE]).events():
        if isinstance(ev, ProbeFinished):
            return ev.result


async def test_end_to_end_case_study_before():
    r = await _run(CASE / "before")
    by = {f.id: f for f in r.findings}
    assert r.status == "done" and by["python.cuda_graphs"].severity.value == "critical"
    assert max(r.findings, key=lambda f: f.severity.rank).id == "python.cuda_graphs"
    assert (
        by["python.torch_arch_support"].severity.value == "ok"
        and "sm_120" in by["python.torch_arch_support"].observed
    )
    assert by["python.cuda_runtime_vs_driver"].targets == [
        "container"
    ]  # judged on the engine's Python
    assert [(e.target, e.command_id) for e in by["python.cuda_runtime_vs_driver"].evidence] == [
        ("container", "pyenv"),
        ("host", "smi_query_driver"),
    ]
    assert (
        "TP=8" in r.summary
        and len(by) == 10
        and by["python.measured_throughput"].severity.value == "info"
    )


async def test_end_to_end_gpu_less(tmp_path: Path):
    (tmp_path / "host").mkdir()  # no nvidia-smi, no python answers: every command "not found"
    r = await _run(tmp_path)
    assert r.status == "done"
    assert all(f.severity.value == "unknown" or f.severity.value == "n/a" for f in r.findings)
    assert {f.severity.value for f in r.findings} == {"unknown"}


def test_torch_arch_unreadable_compute_capability_is_unknown():
    """nvidia-smi listed GPUs but no compute capability: "kernels for every GPU" cannot be claimed."""
    unread = dict(gpus=["NVIDIA X"] * 2, compute_caps=["?", "?"], driver="590.48.01")
    assert sev({"container": F(**unread, **TORCH)}, "python.torch_arch_support") == "unknown"
    partial = dict(gpus=["NVIDIA X"] * 2, compute_caps=["12.0", "?"], driver="590.48.01")
    assert sev({"container": F(**partial, **TORCH)}, "python.torch_arch_support") == "unknown"
    missing = dict(gpus=["NVIDIA X"] * 2, compute_caps=["12.0", "?"], driver="590.48.01")
    assert (
        sev(
            {"container": F(**missing, **(TORCH | {"arch_list": ["sm_90"]}))},
            "python.torch_arch_support",
        )
        == "critical"
    )
