"""Parsers of the engine status/log commands: the real shell on a renamed process, plus labelled synthetic samples."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.parsers import engine as e
from gpuaudit.probes.core.readonly import write_risks


def test_commands_pass_the_read_only_lint():
    assert write_risks(e.ENGINE_STATUS_SHELL) == [] and write_risks(e.ENGINE_LOGS_SHELL) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_status_shell_on_a_real_process(tmp_path):
    # A real run of the declared command on this machine, against a `sleep` renamed like an SGLang rank.
    log = tmp_path / "engine.log"
    log.write_text(
        "Decode batch. #running-req: 1, #token: 10, token usage: 0.00, gen throughput (token/s): 10.12, #queue-req: 0\n"
    )
    with open(log, "a") as out:
        ranked = subprocess.Popen(["bash", "-c", "exec -a sglang::scheduler_TP3 sleep 20"])
        server = subprocess.Popen(
            ["bash", "-c", "exec -a 'python3 -m sglang.launch_server --tp 2' sleep 20"], stdout=out
        )
    try:
        for _ in range(50):  # wait for exec -a to rename them (no fixed sleep)
            with (
                open(f"/proc/{ranked.pid}/cmdline", "rb") as c1,
                open(f"/proc/{server.pid}/cmdline", "rb") as c2,
            ):
                if c1.read().startswith(b"sglang::") and b"launch_server" in c2.read():
                    break
            time.sleep(0.02)
        rep = e.parse_engine_status(
            subprocess.run(
                ["sh", "-c", e.ENGINE_STATUS_SHELL], capture_output=True, text=True
            ).stdout
        )
        me = next(p for p in rep.procs if p.pid == ranked.pid)
        assert (
            me.rank == 3
            and me.cpus
            and me.threads == 1
            and me.swap_kb == 0
            and me.numa_kb
            and sum(me.numa_kb.values()) > 0
        )
        assert rep.online and set(me.cpus) <= set(rep.online)
        logs = e.parse_engine_logs(
            subprocess.run(["sh", "-c", e.ENGINE_LOGS_SHELL], capture_output=True, text=True).stdout
        )
        mine = next(lg for lg in logs if lg.pid == server.pid)
        assert mine.source == "file" and mine.where == str(log)
        assert [s.tok_s for s in e.parse_throughput_lines(mine.throughput_lines)] == [10.12]
    finally:
        ranked.kill()
        server.kill()
        ranked.wait()
        server.wait()


SYNTH_STATUS = """@@apps
3122410,GPU-aaa
@@online 0-7
@@pid 3122410
@@cmd sglang::scheduler_TP0
Threads:\t212
VmRSS:\t  9400000 kB
VmSwap:\t     128 kB
Cpus_allowed_list:\t0-3
Mems_allowed_list:\t0
@@numa
N0 8836000
N1 564000
@@end
@@pid 77
@@cmd python3 -m vllm.entrypoints.openai.api_server
Cpus_allowed_list:\t0-7
@@numa
@@numa-unreadable
@@end
"""


def test_parse_engine_status_synthetic():
    # synthetic: shapes of /proc/<pid>/status and of the awk numa_maps summary
    rep = e.parse_engine_status(SYNTH_STATUS)
    assert rep.apps == {3122410: "GPU-aaa"} and rep.online == tuple(range(8))
    a, b = rep.procs
    assert (a.rank, a.threads, a.swap_kb, a.cpus, a.mems, a.numa_kb) == (
        0,
        212,
        128,
        (0, 1, 2, 3),
        (0,),
        {0: 8836000, 1: 564000},
    )
    assert b.rank is None and b.numa_kb is None and b.threads is None
    assert e.parse_engine_status("@@apps\n@@online 0-3\n@@none\n").procs == []
    with pytest.raises(ParseError):
        e.parse_engine_status("sh: 1: Syntax error")


@pytest.mark.parametrize(
    "title,rank",
    [
        ("sglang::scheduler_TP7", 7),
        ("VLLM::Worker_TP2", 2),
        ("VllmWorker-5", 5),
        ("python3 -m sglang.launch_server --tp 8", None),
    ],
)
def test_rank_from_title(title, rank):
    assert e.ProcStatus(pid=1, cmd=title).rank == rank


def test_nccl_channels_and_throughput_synthetic():
    # synthetic lines in NCCL 2.2x NCCL_DEBUG=INFO and SGLang/vLLM log formats
    lines = [
        "ct:2950:3101 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
        "ct:2951:3102 [1] NCCL INFO Channel 01 : 1[1] -> 0[0] via SHM/direct/direct",
        "ct:2951:3102 [1] NCCL INFO Channel 02/0 : 1[1] -> 2[2] [send] via NET/Socket/0",
        "ct:2950:3101 [0] NCCL INFO Connected all rings",
    ]
    ch = e.parse_nccl_channels(lines)
    assert [(c.src_dev, c.dst_dev, c.transport) for c in ch] == [
        (0, 1, "P2P"),
        (1, 0, "SHM"),
        (1, 2, "NET"),
    ]
    tp = e.parse_throughput_lines(
        [
            "[TP0] Decode batch. #running-req: 1, #token: 1893, token usage: 0.00, gen throughput (token/s): 10.12, #queue-req: 0",
            "INFO metrics.py:455] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 31.4 tokens/s, Running: 4 reqs",
            "unrelated",
        ]
    )
    assert [(s.tok_s, s.running) for s in tp] == [(10.12, 1), (31.4, 4)]


def test_parse_engine_logs_synthetic():
    text = "@@pid 2417\n@@stdout pipe:[1]\n@@source none\n@@nccl\n@@throughput\n@@end\n"
    (lg,) = e.parse_engine_logs(text)
    assert (lg.pid, lg.source, lg.stdout, lg.nccl_lines) == (2417, "none", "pipe:[1]", ())
    assert e.parse_engine_logs("@@none\n") == []
    with pytest.raises(ParseError):
        e.parse_engine_logs("journalctl: command not found")
