"""The shared serving-engine gate and discovery parsers: "no engine" only from proof, one policy for python and nccl."""

from __future__ import annotations

import re
import subprocess

import pytest
from gpuaudit.probes import nccl
from gpuaudit.probes import python as py
from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.models import CommandRecord
from gpuaudit.probes.core.parsers import engine as e
from judge_facts import judge

PROC = (
    "@@pid 7\n@@exe /usr/bin/python3\n@@cmdline\npython3\n-m\nsglang.launch_server\n--tp\n2\n\n@@environ\n"
    "NCCL_DEBUG=WARN\n@@maps\n/x/libnccl.so.2\n@@end\n"
)


def rec(role, cid, stdout, exit_status=0, probe="python"):
    return CommandRecord(
        target=role,
        probe_id=probe,
        command_id=cid,
        command=cid,
        exit_status=exit_status,
        stdout=stdout,
    )


# ------------------------------------------------------------------ C: "no engine" needs the @@none marker


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n",
        "sh: 1: Syntax error: end of file unexpected\n",
        "@@pid 7\n@@exe /usr/bin/python3\n@@cmdline\npython3\n",
    ],
)  # cut before @@end
def test_engine_procs_without_proof_is_unreadable(text):
    with pytest.raises(ParseError):
        e.parse_engine_procs(text)


def test_engine_procs_none_marker_and_sections():
    assert e.parse_engine_procs("@@none\n") == []
    assert [p.pid for p in e.parse_engine_procs(PROC)] == [7]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "@@none\n",
        "@@apps\n@@none\n",
        "@@apps\n@@online 0-3\n",
        "@@apps\n@@online 0-3\n@@pid 9\n@@cmd x\n",
    ],
)
def test_engine_status_without_markers_is_unreadable(text):
    with pytest.raises(ParseError):
        e.parse_engine_status(text)


def test_engine_logs_without_proof_is_unreadable():
    with pytest.raises(ParseError):
        e.parse_engine_logs("")
    assert e.parse_engine_logs("@@none\n") == []


def test_empty_discovery_output_is_unknown_not_no_engine():
    """A successful exit with empty stdout used to read as "no engine" (ok); it must be unknown."""
    out = {"engine_procs": rec("container", "engine_procs", "")}
    facts = py.extract(out, "container")
    assert "engine_procs" in facts.problems
    cg = [f for f in judge(py.PROBE, {"container": facts}) if f.id == "python.cuda_graphs"]
    assert [f.severity.value for f in cg] == ["unknown"]
    nf = nccl.extract(
        {"engine_procs": rec("container", "engine_procs", "", probe="nccl")}, "container"
    )
    assert "engine_procs" in nf.problems


# ------------------------------------------------------------------ B: one gate for python and nccl


def test_listing_problem_policy():
    assert e.engine_listing_problem({"host": None, "container": None}, found=False) is None
    assert (
        e.engine_listing_problem({"host": None, "container": "timed out"}, found=False)
        == "container: timed out"
    )
    assert (
        e.engine_listing_problem({"host": "x", "container": "y"}, found=False)
        == "host: x; container: y"
    )
    assert e.engine_listing_problem({"host": None, "container": "timed out"}, found=True) is None


def test_python_one_failed_listing_without_engine_is_unknown():
    """Host listed no engine, the container's listing failed: the engine may run there, so not "ok"."""
    facts = {
        "host": py.PythonFacts(engine_listed=True),
        "container": py.PythonFacts(problems={"engine_procs": "timed out"}),
    }
    for fid in (
        "python.cuda_graphs",
        "python.dangerous_env",
        "python.attention_backend",
        "python.engine_threads",
        "python.measured_throughput",
    ):
        assert [f.severity.value for f in judge(py.PROBE, facts) if f.id == fid] == ["unknown"], fid
    # the checks are judged on the container: its own listing failed, so unknown even with an engine on the host
    engine_host = {
        "host": py.PythonFacts(engine_listed=True, engine_kind="sglang", engine_pid=1, tp=1),
        "container": py.PythonFacts(problems={"engine_procs": "timed out"}),
    }
    assert [
        f.severity.value for f in judge(py.PROBE, engine_host) if f.id == "python.cuda_graphs"
    ] == ["unknown"]
    # the container answered without an engine, the host's scan found one: that engine is judged
    engine_host["container"] = py.PythonFacts(engine_listed=True)
    assert [
        f.severity.value for f in judge(py.PROBE, engine_host) if f.id == "python.cuda_graphs"
    ] == ["ok"]
    no_engine = [
        f
        for f in judge(py.PROBE, {"host": py.PythonFacts(engine_listed=True)})
        if f.id == "python.cuda_graphs"
    ]
    assert [(f.severity.value, f.observed) for f in no_engine] == [
        ("n/a", "no serving engine found (no SGLang/vLLM/TGI server process)")
    ]


def test_nccl_one_failed_listing_without_engine_is_unknown():
    facts = {
        "host": nccl.NcclFacts(engine_listed=True),
        "container": nccl.NcclFacts(problems={"engine_procs": "timed out"}),
    }
    for fid in ("nccl.env_overrides", "nccl.library_in_use", "nccl.custom_allreduce"):
        assert [f.severity.value for f in judge(nccl.PROBE, facts) if f.id == fid] == ["unknown"], (
            fid
        )
    ok = {
        "host": nccl.NcclFacts(engine_listed=True),
        "container": nccl.NcclFacts(engine_listed=True),
    }
    for fid in ("nccl.env_overrides", "nccl.library_in_use", "nccl.custom_allreduce"):
        assert [(f.severity.value, f.observed) for f in judge(nccl.PROBE, ok) if f.id == fid] == [
            ("n/a", "no serving engine found (no SGLang/vLLM/TGI server process)")
        ], fid


# ------------------------------------------------------------------ H: one summary of a listing


def test_summarize_engine():
    s = e.summarize_engine(e.parse_engine_procs(PROC))
    assert s.main is not None and s.main.pid == 7 and s.config is not None and s.config.tp == 2
    assert (
        s.env == {"NCCL_DEBUG": "WARN"}
        and s.env_readable is True
        and s.nccl_libs == ["/x/libnccl.so.2"]
    )
    none = e.summarize_engine([])
    assert none.main is None and none.env_readable is None and none.env == {}


def test_env_grep_is_built_from_env_keep():
    grep = re.search(r"grep -E '\^\(([^)]*)\)'", e.ENGINE_PROCS_SHELL)
    assert grep is not None
    assert grep.group(1).split("|") == [k if k.endswith("_") else k + "=" for k in e.ENV_KEEP]


# ------------------------------------------------------------------ E: the log is read once


def test_engine_logs_single_pass_keeps_first_nccl_and_last_throughput(tmp_path):
    awk = re.search(r"src \| (awk '.*?'); echo '@@end'", e.ENGINE_LOGS_SHELL)
    assert awk is not None and e.ENGINE_LOGS_SHELL.count("src |") == 1
    lines = []
    for i in range(150):
        lines += [
            f"n:1:2 [0] NCCL INFO Channel {i:02d} : 0[0] -> 1[1] via P2P/CUMEM/read",
            f"Decode batch. #running-req: 1, gen throughput (token/s): {i}.5, #queue-req: 0",
            "other line",
        ]
    log = tmp_path / "engine.log"
    log.write_text("\n".join(lines) + "\n")
    out = subprocess.run(
        ["sh", "-c", f"echo '@@pid 1'; echo '@@nccl'; cat {log} | {awk.group(1)}; echo '@@end'"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    [lg] = e.parse_engine_logs(out)
    assert (
        len(lg.nccl_lines) == 96
        and "Channel 00 " in lg.nccl_lines[0]
        and "Channel 95 " in lg.nccl_lines[-1]
    )
    assert [x.tok_s for x in e.parse_throughput_lines(lg.throughput_lines)] == [
        i + 0.5 for i in range(130, 150)
    ]
    short = subprocess.run(
        ["sh", "-c", f"printf 'gen throughput (token/s): 3.0\\n' | {awk.group(1)}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert short == "@@throughput\ngen throughput (token/s): 3.0\n"
