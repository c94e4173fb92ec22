"""python.engine_threads, python.jit_caches, python.measured_throughput: table-driven rules (synthetic facts)."""

from __future__ import annotations

import pytest
from gpuaudit.probes import python as p
from judge_facts import one as judged

ENGINE = dict(
    engine_listed=True, engine_kind="sglang", engine_pid=1, tp=2, engine_env_readable=True
)


def eng(**kw) -> dict:
    return {"container": p.PythonFacts(**{**ENGINE, **kw})}


def check(fid):
    return lambda facts: judged(p.PROBE, facts, f"python.{fid}")


@pytest.mark.parametrize(
    "kw,severity,needle",
    [
        (
            dict(
                proc_threads=[("sglang::scheduler_TP0", 20, 16), ("sglang::scheduler_TP1", 20, 16)],
                cpus_online=256,
                engine_env={"OMP_NUM_THREADS": "8"},
            ),
            "ok",
            "OMP_NUM_THREADS=8",
        ),  # pass: 8 x 2 = 16
        (
            dict(
                proc_threads=[("sglang::scheduler_TP0", 20, 16), ("sglang::scheduler_TP1", 20, 16)],
                cpus_online=256,
                engine_env={"OMP_NUM_THREADS": "9"},
            ),
            "warning",
            "exceed",
        ),  # boundary + 1
        (
            dict(proc_threads=[("sglang::scheduler_TP0", 300, 16)], cpus_online=256),
            "warning",
            "sized to the host",
        ),  # fail
        (
            dict(proc_threads=[("sglang::scheduler_TP0", 300, 256)], cpus_online=256),
            "n/a",
            "cpuset is the whole machine",
        ),  # precondition
        (
            dict(proc_threads=[("sglang::scheduler_TP0", 12, 16)], cpus_online=256),
            "ok",
            "allowed 16 of 256",
        ),
        (
            dict(proc_threads=None, problems={"engine_proc_status": "needs root"}),
            "unknown",
            "needs root",
        ),  # unknown
        (dict(proc_threads=[("x", 3, None)], cpus_online=256), "unknown", "unreadable"),
    ],
)
def test_engine_threads(kw, severity, needle):
    x = check("engine_threads")(eng(**kw))
    assert x.severity.value == severity and needle in x.title + x.observed, x.observed


def test_engine_threads_no_engine():
    x = check("engine_threads")({"container": p.PythonFacts(engine_listed=True)})
    assert x.severity.value == "n/a"


D = p.JitDir


@pytest.mark.parametrize(
    "dirs,pk,severity,needle",
    [
        (
            [D(path="/root/.cache/flashinfer", fs="zfs", writable=True, entries=["0.5.3"])],
            "0.5.3",
            "ok",
            "zfs",
        ),  # pass
        (
            [
                D(
                    path="/root/.cache/flashinfer",
                    fs="zfs",
                    writable=True,
                    entries=["0.4.1", "0.5.3"],
                )
            ],
            "0.5.3",
            "warning",
            "0.4.1",
        ),  # stale
        (
            [D(path="/root/.triton/cache", fs="tmpfs", writable=True, entries=["abc"])],
            "0.5.3",
            "info",
            "on tmpfs",
        ),  # volatile
        (
            [D(path="/root/.cache/flashinfer", fs="overlay", writable=False, entries=["120"])],
            "0.5.3",
            "info",
            "not writable",
        ),
        (
            [D(path="/root/.cache/flashinfer", fs="ext2/ext3", writable=True, entries=["90_120"])],
            None,
            "ok",
            "ext2",
        ),  # no FI installed
        ([], "0.5.3", "info", "no FlashInfer/Triton"),  # nothing cached yet
        (None, "0.5.3", "unknown", "timed out"),  # unknown
    ],
)
def test_jit_caches(dirs, pk, severity, needle):
    problems = {"jit_cache_dirs": "timed out"} if dirs is None else {}
    x = check("jit_caches")(
        eng(jit_dirs=dirs, packages={"flashinfer-python": pk} if pk else {}, problems=problems)
    )
    assert x.severity.value == severity and needle in x.observed, x.observed


def test_parse_jit_dirs_synthetic():
    # synthetic output of JIT_CACHE_SHELL
    text = "@@dir /root/.cache/flashinfer\n@@fs zfs\n@@writable\n0.5.3\n@@dir /tmp/torchinductor_root\n@@fs tmpfs\n@@done\n"
    a, b = p.parse_jit_dirs(text)
    assert (a.fs, a.writable, a.entries) == ("zfs", True, ["0.5.3"]) and (
        b.fs,
        b.writable,
        b.entries,
    ) == ("tmpfs", False, [])
    assert p.parse_jit_dirs("@@done\n") == []


@pytest.mark.parametrize(
    "kw,severity,needle",
    [
        (
            dict(
                log_sources=["journal sglang.service"],
                throughput=[(9.7, 1), (10.1, 1), (718.4, 256)],
            ),
            "info",
            "single stream median 10.1",
        ),
        (
            dict(log_sources=["file /var/log/vllm.log"], throughput=[(31.4, None)]),
            "info",
            "31.4 tok/s at ? running",
        ),
        (
            dict(log_sources=["journal sglang.service"], throughput=[]),
            "unknown",
            "no 'gen throughput'",
        ),
        (dict(log_sources=None, problems={"engine_logs": "timed out"}), "unknown", "timed out"),
    ],
)
def test_measured_throughput(kw, severity, needle):
    x = check("measured_throughput")(eng(**kw))
    assert x.severity.value == severity and needle in x.observed, x.observed


def test_measured_throughput_no_engine():
    assert (
        check("measured_throughput")(
            {"container": p.PythonFacts(engine_listed=True)}
        ).severity.value
        == "n/a"
    )
