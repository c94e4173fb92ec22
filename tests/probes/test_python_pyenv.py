"""The Python-environment snippet and the collect-env report formats of the corpus."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from gpuaudit.probes.core.collect.targets import build_command_line
from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.parsers.pyenv import (
    PYENV_SHELL,
    arch_sms,
    cuda_major_minor,
    parse_collect_env,
    parse_pyenv_json,
)
from gpuaudit.probes.core.readonly import write_risks

FIX = Path(__file__).resolve().parents[1] / "fixtures/nvidia/collect-env"
CASE = Path(__file__).resolve().parents[2] / "snapshots/examples/case-study/before"


@pytest.mark.parametrize(
    "name,torch,cuda,driver,runtime,pkg",
    [
        (
            "torch-collect-env-h100-coreweave-cu130-on-570-driver.txt",
            "2.9.0",
            "13.0",
            "570.172.08",
            "13.0.88",
            ("triton", "3.5.0+gitbbb06c03"),
        ),
        (
            "vllm-collect-env-a30-4gpu-535-docker.txt",
            "2.8.0+cu128",
            "12.8",
            "535.274.02",
            "12.8.93",
            ("nvidia-nccl-cu12", "2.27.3"),
        ),
        (
            "sglang-check-env-h100-hgx-8gpu-570-cuda13.txt",
            "2.11.0+cu130",
            "13.0",
            "570.133.20",
            "13.0",
            ("flashinfer-python", "0.6.12"),
        ),
    ],
)
def test_collect_env_formats(name, torch, cuda, driver, runtime, pkg):
    env = parse_collect_env((FIX / name).read_text())
    assert (env.torch, env.torch_cuda, env.driver, env.cuda_runtime) == (
        torch,
        cuda,
        driver,
        runtime,
    )
    assert env.packages[pkg[0]] == pkg[1]


def test_collect_env_extras():
    a30 = parse_collect_env((FIX / "vllm-collect-env-a30-4gpu-535-docker.txt").read_text())
    assert a30.env["NCCL_VERSION"] == "2.25.1-1" and a30.packages["vllm"].startswith("0.11.1")
    sgl = parse_collect_env((FIX / "sglang-check-env-h100-hgx-8gpu-570-cuda13.txt").read_text())
    assert (
        sgl.compute_caps == ["9.0"]
        and "vllm" not in sgl.packages
        and sgl.packages["sglang"] == "0.5.14"
    )
    old = parse_collect_env(
        (FIX / "vllm-collect-env-old-format-2x-rtx5090-triton-container.txt").read_text()
    )
    assert old.torch and old.env.get("NCCL_P2P_DISABLE") == "1"


def test_collect_env_rejects_other_text():
    with pytest.raises(ParseError):
        parse_collect_env("hello\nworld\n")


def test_snippet_json_case_study_and_errors():
    env = parse_pyenv_json((CASE / "container/pyenv.out").read_text())
    assert (
        env.torch == "2.9.1+cu130"
        and env.torch_cuda == "13.0"
        and "sm_120" in env.arch_list
        and env.nccl == "2.27.7"
    )
    host = parse_pyenv_json((CASE / "host/pyenv.out").read_text())
    assert host.torch is None and "torch" in host.torch_error
    with pytest.raises(ParseError):
        parse_pyenv_json("@@python python3\nTraceback (most recent call last):\n")


def test_snippet_runs_read_only_here():
    assert write_risks(PYENV_SHELL) == []
    assert (
        "torch.cuda.is_available" not in PYENV_SHELL and "get_arch_list" not in PYENV_SHELL
    )  # no CUDA context
    # nothing of the engine's is imported or run: an isolated stdlib reader, no bytecode written (issue 29)
    assert '"$r" -I -S -B -c \'' in PYENV_SHELL and "import torch" not in PYENV_SHELL
    line = build_command_line(PYENV_SHELL.replace("{python}", "python3"))
    env = parse_pyenv_json(
        subprocess.run(line, shell=True, capture_output=True, text=True, timeout=60).stdout
    )
    assert env.python and env.interpreter


def test_helpers():
    assert (
        cuda_major_minor("12.8.93") == (12, 8)
        and cuda_major_minor("cu130") == (13, 0)
        and cuda_major_minor(None) is None
    )
    assert arch_sms(["sm_90", "sm_100a", "sm_120", "compute_120"]) == ({90, 100, 120}, {120})


@pytest.mark.parametrize("contained", [True, False])
def test_reader_does_not_read_a_contained_engine_from_the_host(tmp_path, contained):
    # an engine in a container (its /proc/PID/root is not /) names paths of its own root: read on the
    # host they are the host's files, so its torch would be the host's. Unknown, not the host's answer.
    import os
    import sys

    from gpuaudit.probes.core.parsers.pyenv import READER

    proc = tmp_path / "proc"
    eng = proc / "4242"
    eng.mkdir(parents=True)
    (eng / "cmdline").write_bytes(b"python3\0-m\0vllm.entrypoints.openai.api_server\0")
    (eng / "status").write_text(
        f"Uid:\t{os.getuid()}\t{os.getuid()}\t{os.getuid()}\t{os.getuid()}\n"
        f"Gid:\t{os.getgid()}\t{os.getgid()}\t{os.getgid()}\t{os.getgid()}\n"
    )
    (eng / "exe").symlink_to(sys.executable)
    (eng / "maps").write_text("")
    (eng / "environ").write_bytes(b"")
    other = tmp_path / "container-root"
    other.mkdir()
    (eng / "root").symlink_to(other if contained else Path("/"))
    src = READER.replace('PROC = "/proc"', f'PROC = "{proc}"')
    assert src != READER
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-B", "-c", src, "python3"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    env = parse_pyenv_json(out)
    if contained:
        assert env.torch is None and env.python is None
        assert env.torch_error and "container" in env.torch_error
    else:
        assert env.python and "container" not in (env.torch_error or "")


def test_reader_does_not_read_an_engine_whose_owner_is_unknown(tmp_path):
    # the engine left between its cmdline and its status: no uid to read as, so nothing is read
    import sys

    from gpuaudit.probes.core.parsers.pyenv import READER

    eng = tmp_path / "proc/4242"
    eng.mkdir(parents=True)
    (eng / "cmdline").write_bytes(b"/usr/bin/python3\0-m\0vllm.entrypoints.openai.api_server\0")
    src = READER.replace('PROC = "/proc"', f'PROC = "{tmp_path / "proc"}"')
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-B", "-c", src, "python3"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    env = parse_pyenv_json(out)
    assert env.python is None and env.torch is None
    assert env.torch_error and "owner unknown" in env.torch_error
