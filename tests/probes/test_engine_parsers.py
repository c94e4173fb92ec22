"""Serving-engine discovery: argv/environ/ps parsing, engine flags, and the discovery command on a live process."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from gpuaudit.probes.core.collect.targets import build_command_line
from gpuaudit.probes.core.parsers.engine import (
    ENGINE_PROCS_SHELL,
    engine_env,
    main_engine,
    parse_engine_args,
    parse_engine_procs,
    parse_environ,
)
from gpuaudit.probes.core.readonly import write_risks

CASE = Path(__file__).resolve().parents[2] / "snapshots/examples/case-study/before"


def test_environ_nul_separated():
    env = parse_environ("CUDA_VISIBLE_DEVICES=0,1\0NCCL_P2P_DISABLE=1\0weird\0X=a=b\0")
    assert env == {"CUDA_VISIBLE_DEVICES": "0,1", "NCCL_P2P_DISABLE": "1", "X": "a=b"}


# synthetic argv, written from each engine's documented flags
@pytest.mark.parametrize(
    "argv,kind,tp,eager,flag,attn,car",
    [
        (
            "python3 -m sglang.launch_server --model-path /m --tp 8 --disable-cuda-graph",
            "sglang",
            8,
            True,
            "--disable-cuda-graph",
            None,
            False,
        ),
        (
            "python3 -m sglang.launch_server --model-path=/m --tp-size=4 --attention-backend triton --disable-custom-all-reduce",
            "sglang",
            4,
            False,
            None,
            "triton",
            True,
        ),
        (
            "/opt/venv/bin/python /opt/venv/bin/vllm serve /models/x --tensor-parallel-size 2 --enforce-eager",
            "vllm",
            2,
            True,
            "--enforce-eager",
            None,
            False,
        ),
        (
            "python -m vllm.entrypoints.openai.api_server --model m -tp 8",
            "vllm",
            8,
            False,
            None,
            None,
            False,
        ),
        (
            "text-generation-launcher --model-id m --num-shard 2 --cuda-graphs 0",
            "tgi",
            2,
            True,
            "--cuda-graphs 0",
            None,
            False,
        ),
    ],
)
def test_engine_args(argv, kind, tp, eager, flag, attn, car):
    cfg = parse_engine_args(argv.split())
    assert cfg is not None
    assert (
        cfg.kind,
        cfg.tp,
        cfg.cuda_graphs_disabled,
        cfg.graph_flag,
        cfg.attention_backend,
        cfg.custom_allreduce_disabled,
    ) == (kind, tp, eager, flag, attn, car)


def test_workers_and_other_processes_are_not_engines():
    assert parse_engine_args(["sglang::scheduler_TP0"]) is None
    assert parse_engine_args(["python3", "train.py", "--tp", "8"]) is None


def test_case_study_recording():
    procs = parse_engine_procs((CASE / "container/engine_procs.out").read_text())
    assert [p.pid for p in procs] == [2417, 2950, 2951]
    proc, cfg = main_engine(procs)
    assert (
        proc.pid == 2417
        and cfg.tp == 8
        and cfg.cuda_graphs_disabled
        and cfg.moe_backend == "flashinfer_cutlass"
    )
    env, readable = engine_env(procs)
    assert readable and env["CUDA_HOME"] == "/usr/local/cuda"
    assert procs[1].nccl_libs[0].endswith("libnccl.so.2")


def test_unreadable_environ_and_none():
    procs = parse_engine_procs(
        "@@pid 7\n@@exe \n@@cmdline\nvllm\nserve\n\n@@environ\n@@environ-unreadable\n@@maps\n@@end\n"
    )
    assert procs[0].env_readable is False and engine_env(procs) == ({}, False)
    assert parse_engine_procs("@@none\n") == []


def test_discovery_command_is_read_only_and_finds_a_live_engine():
    assert write_risks(ENGINE_PROCS_SHELL) == []
    # a harmless stand-in whose argv looks like an SGLang server (argv[0] is the real interpreter)
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time; time.sleep(20)",
            "-m",
            "sglang.launch_server",
            "--tp",
            "2",
            "--disable-cuda-graph",
        ],
        env={"NCCL_P2P_DISABLE": "1", "SECRET_TOKEN": "x"},
    )
    try:
        for _ in range(50):
            if Path(f"/proc/{child.pid}/cmdline").read_bytes().count(b"\0") > 3:
                break
            time.sleep(0.02)
        out = subprocess.run(
            build_command_line(ENGINE_PROCS_SHELL),
            shell=True,
            capture_output=True,
            text=True,
            timeout=20,
        ).stdout
    finally:
        child.kill()
        child.wait()
    procs = {p.pid: p for p in parse_engine_procs(out)}
    assert child.pid in procs
    p = procs[child.pid]
    assert p.env == {"NCCL_P2P_DISABLE": "1"}  # secrets and unrelated variables are never kept
    assert "@@p" not in " ".join(
        a for q in procs.values() for a in q.argv
    )  # our own shell is skipped
