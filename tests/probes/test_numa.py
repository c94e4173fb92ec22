"""NUMA probe: rules over facts (host and container agreeing and disagreeing) and end to end."""

from __future__ import annotations

import pytest
from case_study import run_case_study
from gpuaudit.probes import numa as n
from gpuaudit.probes.core.judge.checks import judge_checks
from gpuaudit.probes.core.models import CommandRecord, Finding

BDFS = [
    "0000:01:00.0",
    "0000:21:00.0",
    "0000:41:00.0",
    "0000:61:00.0",
    "0000:81:00.0",
    "0000:a1:00.0",
    "0000:c1:00.0",
    "0000:e1:00.0",
]
NODES2 = [
    n.NodeInfo(id=0, cpus=list(range(32)), size_mb=773271),
    n.NodeInfo(id=1, cpus=list(range(32, 64)), size_mb=774028),
]
FREE2 = {0: 678823, 1: 684984}


def host(nodes=NODES2, numa=(0, 0, 0, 0, 1, 1, 1, 1), free=FREE2, **kw) -> n.NumaFacts:
    gpus = [
        n.GpuInfo(index=i, uuid=f"GPU-{i}", bus_id=b, numa_node=numa[i]) for i, b in enumerate(BDFS)
    ]
    return n.NumaFacts(
        nodes=nodes,
        node_free_mb=free,
        gpus=gpus,
        gpu_numa={b: numa[i] for i, b in enumerate(BDFS) if numa[i] is not None},
        **kw,
    )


def judged(facts: dict) -> dict[str, Finding]:
    """Every NUMA check over these facts (role -> facts), each source answering (exit 0)."""
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
    return {f.id: f for f in judge_checks(n.CHECKS, facts, outputs)}


def one(fid: str, facts) -> Finding | None:
    return judged(facts if isinstance(facts, dict) else {"host": facts}).get(f"numa.{fid}")


def ctr(cpus=tuple(range(64)), mems=(0, 1), gpus=8) -> n.NumaFacts:
    return n.NumaFacts(
        cpuset_cpus=list(cpus) if cpus is not None else None,
        cpuset_mems=list(mems) if mems is not None else None,
        cpuset_source="cgroup cpuset.cpus.effective",
        gpus=[n.GpuInfo(index=i, uuid=f"GPU-{i}", bus_id=BDFS[i]) for i in range(gpus)],
    )


@pytest.mark.parametrize(
    "h,c,severity,needles",
    [
        (host(), ctr(), "ok", ["0-63", "32/32"]),  # agree: spans both nodes
        (
            host(),
            ctr(cpus=range(32)),
            "warning",
            ["container cpuset 0-31", "GPU4 (0000:81:00.0) on node 1", "32-63"],
        ),  # wrong node
        (host(), ctr(cpus=range(32), gpus=4), "ok", ["0-31"]),  # only node-0 GPUs in it: fine
        (
            host(),
            ctr(cpus=range(40, 48), gpus=4),
            "warning",
            ["40-47", "GPU0"],
        ),  # cpuset on the other node
        (host(nodes=NODES2[:1]), ctr(), "n/a", ["single NUMA node"]),
        (host(), ctr(cpus=None), "unknown", []),
        (host(nodes=None), ctr(), "unknown", []),
        (host(numa=(None,) * 8), ctr(), "unknown", []),
        (
            host(numa=(-1,) * 8),
            ctr(),
            "unknown",
            ["8 GPU(s) report NUMA node -1"],
        ),  # every GPU at node -1: no coverage to judge
    ],
)
def test_cpuset_vs_gpu(h, c, severity, needles):
    facts = {"host": h} if c is None else {"host": h, "container": c}
    f = one("cpuset_vs_gpu", facts)
    assert f.id == "numa.cpuset_vs_gpu" and f.severity.value == severity, f.observed
    for s in needles:
        assert s in f.observed


@pytest.mark.parametrize("mems,severity", [((0, 1), "ok"), ((1,), "info"), (None, "unknown")])
def test_mems_vs_gpu(mems, severity):
    assert (
        one("mems_vs_gpu", {"host": host(), "container": ctr(mems=mems)}).severity.value == severity
    )


def test_mems_remote_from_all_gpus():
    f = one("mems_vs_gpu", {"host": host(), "container": ctr(mems=(1,), gpus=4)})
    assert (
        f.severity.value == "warning"
        and "memory nodes 1" in f.observed
        and "node(s) 0" in f.observed
    )
    assert one("mems_vs_gpu", {"host": host()}) is None  # host-only audit: no pair to compare


def test_gpu_locality():
    assert one("gpu_locality", host()).severity.value == "ok"
    bad = one("gpu_locality", host(numa=(-1,) * 8))
    assert bad.severity.value == "warning" and "node -1" in bad.observed
    single = one("gpu_locality", host(nodes=NODES2[:1], numa=(-1,) * 8))
    assert (
        single.severity.value == "ok" and "single node" in single.observed
    )  # trap 2: -1 is normal on one node
    assert (
        one("gpu_locality", n.NumaFacts(problems={"pci_nvidia_numa": "exit 2"})).severity.value
        == "unknown"
    )
    assert one("gpu_locality", n.NumaFacts(gpus=[], gpu_numa={})).severity.value == "n/a"


def test_topology_pressure_span():
    t = one("topology", host())
    assert t.severity.value == "info" and "node 1: CPUs 32-63" in t.observed
    assert (
        one(
            "topology", n.NumaFacts(problems={"numactl_h": "x", "node_cpulists": "y"})
        ).severity.value
        == "unknown"
    )
    assert one("node_pressure", host(free={0: 1000, 1: 684984})).severity.value == "warning"
    assert one("node_pressure", host()).severity.value == "ok"
    assert one("node_pressure", host(nodes=NODES2[:1])).severity.value == "n/a"
    assert one("tp_group_span", host()).severity.value == "info"
    assert one("tp_group_span", host(numa=(0,) * 8)).severity.value == "ok"
    assert n.ranges([0, 1, 2, 3, 8, 10, 11]) == "0-3,8,10-11"


@pytest.mark.parametrize(
    "h,severity",
    [
        (host(numa=(-1,) * 8), "unknown"),  # GPUs listed, sysfs says -1 on a 2-node host
        (host(numa=(None,) * 8), "unknown"),  # pci_nvidia_numa failed
        (
            n.NumaFacts(
                nodes=NODES2,
                gpus=[n.GpuInfo(index=0, bus_id=BDFS[0])],
                problems={"pci_nvidia_numa": "exit 2"},
            ),
            "unknown",
        ),
        (
            host(nodes=NODES2[:1], numa=(-1,) * 8),
            "n/a",
        ),  # single node: -1 is normal, one node by definition
    ],
)
def test_tp_group_span_without_known_nodes(h, severity):
    f = one("tp_group_span", h)
    assert f.severity.value == severity, f.observed
    assert "(none)" not in f.observed


def rec(cid, stdout="", exit_status=0, stderr=""):
    return CommandRecord(
        target="container",
        probe_id="numa",
        command_id=cid,
        command="x",
        exit_status=exit_status,
        stdout=stdout,
        stderr=stderr,
    )


def test_extract_partial_grep_and_status_fallback():
    f = n.extract(
        {
            "cgroup_limits": rec(
                "cgroup_limits",
                "/sys/fs/cgroup/cpu.max:max 100000\n",
                2,
                "grep: /sys/fs/cgroup/cpuset.cpus.effective: No such file or directory",
            ),
            "status_allowed": rec(
                "status_allowed", "Cpus_allowed_list:\t0-7\nMems_allowed_list:\t0\n"
            ),
            "smi_gpu_ids": rec(
                "smi_gpu_ids", "Failed to initialize NVML: Driver/library version mismatch\n", 18
            ),
        },
        "container",
    )
    assert (
        f.cpuset_cpus == list(range(8))
        and f.cpuset_source.startswith("/proc/self/status")
        and f.cpuset_mems == [0]
    )
    assert "mismatch" in f.problems["smi_gpu_ids"]


async def run(phase, roles=("host", "container")):
    return await run_case_study(n.PROBE, phase, roles)


@pytest.mark.parametrize("phase", ["before", "after"])
async def test_case_study(phase):
    f = await run(phase)
    assert (
        f["numa.cpuset_vs_gpu"].severity.value == "ok"
        and "cpuset 0-255" in f["numa.cpuset_vs_gpu"].observed
    )
    assert (
        f["numa.gpu_locality"].severity.value == "ok"
        and "node 1: GPU4 (0000:81:00.0)" in f["numa.gpu_locality"].observed
    )
    # SGLang does not pin its ranks by default and the container's cpuset is 0-255: PROBES.md §8 says WARN there
    assert (
        f["numa.worker_binding"].severity.value == "warning"
        and "CPUs 0-255 (nodes 0-1)" in f["numa.worker_binding"].observed
    )
    assert f["numa.memory_placement"].severity.value == "ok"
    assert all(x.severity.rank < 3 for k, x in f.items() if k != "numa.worker_binding")
    h = await run(phase, ("host",))
    assert "numa.cpuset_vs_gpu" not in h and h["numa.worker_binding"].severity.value == "warning"
