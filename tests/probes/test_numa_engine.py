"""numa.worker_binding and numa.memory_placement: table-driven rules over synthetic facts."""

from __future__ import annotations

import pytest
from gpuaudit.probes import numa as n
from gpuaudit.probes.core.judge.checks import judge_checks
from gpuaudit.probes.core.models import CommandRecord, Finding

BDFS = ["0000:01:00.0", "0000:81:00.0"]
NODE0, NODE1 = list(range(0, 4)) + list(range(8, 12)), list(range(4, 8)) + list(range(12, 16))
NODES = [n.NodeInfo(id=0, cpus=NODE0), n.NodeInfo(id=1, cpus=NODE1)]


def host(workers=None, nodes=NODES, problems=None) -> n.NumaFacts:
    gpus = [n.GpuInfo(index=i, uuid=f"GPU-{i}", bus_id=b, numa_node=i) for i, b in enumerate(BDFS)]
    return n.NumaFacts(nodes=nodes, gpus=gpus, engine_workers=workers, problems=problems or {})


def w(rank, cpus, numa=None, uuid=None, pid=None) -> n.EngineWorker:
    return n.EngineWorker(
        pid=pid or 100 + rank,
        cmd=f"sglang::scheduler_TP{rank}",
        rank=rank,
        gpu_uuid=uuid,
        cpus=cpus,
        numa_kb=numa,
    )


def judge(fid: str, facts: dict) -> Finding:
    outputs = {
        role: {
            c.id: CommandRecord(
                target=role, probe_id="numa", command_id=c.id, command="x", exit_status=0
            )
            for c in n.COMMANDS
            if role in c.on
        }
        for role in facts
    }
    return next(f for f in judge_checks(n.CHECKS, facts, outputs) if f.id == f"numa.{fid}")


def ctr(workers) -> n.NumaFacts:
    return n.NumaFacts(
        gpus=[n.GpuInfo(index=i, uuid=f"GPU-{i}", bus_id=b) for i, b in enumerate(BDFS)],
        engine_workers=workers,
    )


@pytest.mark.parametrize(
    "facts,severity,needle",
    [
        (
            {"host": host([w(0, NODE0, uuid="GPU-0"), w(1, NODE1, uuid="GPU-1")])},
            "ok",
            "node 0",
        ),  # pass
        ({"host": host([w(0, NODE1, uuid="GPU-0")])}, "warning", "pinned away"),  # fail: wrong node
        (
            {"host": host([]), "container": ctr([w(0, list(range(16))), w(1, NODE1)])},
            "warning",
            "nodes 0-1",
        ),  # fail: unpinned
        ({"host": host([w(0, [3], uuid="GPU-0")])}, "ok", "CPUs 3"),  # boundary: one local CPU
        (
            {"host": host([w(0, NODE1, uuid="GPU-0")], nodes=NODES[:1])},
            "n/a",
            "single",
        ),  # precondition
        ({"host": host([])}, "n/a", "no SGLang"),  # no engine
        (
            {"host": host(None, problems={"engine_proc_status": "timed out"})},
            "unknown",
            "timed out",
        ),  # unknown
        ({"host": host([w(0, None, uuid="GPU-0")])}, "unknown", "TP0"),  # affinity unreadable
    ],
)
def test_worker_binding(facts, severity, needle):
    f = judge("worker_binding", facts)
    assert f.severity.value == severity, f.observed
    assert needle in f.title + f.observed


def test_worker_binding_title_and_targets():
    f = judge("worker_binding", {"host": host([]), "container": ctr([w(0, NODE0), w(1, NODE0)])})
    assert (
        f.severity.value == "warning"
        and "container pid" in f.observed
        and "TP1" in f.observed
        and "GPU1" in f.observed
    )


@pytest.mark.parametrize(
    "numa,severity",
    [
        ({0: 900, 1: 100}, "ok"),  # pass: 10% remote
        ({0: 500, 1: 500}, "warning"),  # fail: 50% remote
        ({0: 750, 1: 250}, "ok"),  # boundary: exactly 25% is allowed
        ({0: 749, 1: 251}, "warning"),  # just over
    ],
)
def test_memory_placement(numa, severity):
    f = judge("memory_placement", {"host": host([w(0, NODE0, numa=numa, uuid="GPU-0")])})
    assert f.severity.value == severity, f.observed


@pytest.mark.parametrize(
    "facts,severity,needle",
    [
        (
            {"host": host([w(0, NODE0, numa={0: 1}, uuid="GPU-0")], nodes=NODES[:1])},
            "n/a",
            "",
        ),  # precondition
        ({"host": host([w(0, NODE0, numa=None, uuid="GPU-0")])}, "unknown", "numa_maps unreadable"),
        (
            {"host": host(None, problems={"engine_proc_status": "timed out"})},
            "unknown",
            "timed out",
        ),
        (
            {
                "host": host(
                    [n.EngineWorker(pid=5, cmd="python3 -m sglang.launch_server", numa_kb={0: 1})]
                )
            },
            "unknown",
            "tied to a GPU",
        ),
    ],
)
def test_memory_placement_preconditions(facts, severity, needle):
    f = judge("memory_placement", facts)
    assert f.severity.value == severity and needle in f.observed


def test_worker_binding_is_not_ok_while_a_rank_is_unread():
    """ok is a claim about every rank: TP0 near its GPU and TP1 unread was ok ("; unreadable: 1")."""
    f = judge(
        "worker_binding", {"host": host([w(0, NODE0, uuid="GPU-0"), w(1, None, uuid="GPU-1")])}
    )
    assert f.severity.value == "unknown", f.observed
    assert "1 of 2" in f.title and "TP1" in f.observed


def test_memory_placement_is_not_ok_while_a_worker_is_unread():
    f = judge(
        "memory_placement",
        {
            "host": host(
                [w(0, NODE0, numa={0: 900}, uuid="GPU-0"), w(1, NODE1, numa=None, uuid="GPU-1")]
            )
        },
    )
    assert f.severity.value == "unknown", f.observed
    assert "1 of 2" in f.title
