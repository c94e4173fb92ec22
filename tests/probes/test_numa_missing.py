"""Issue 13 for the NUMA probe: without an NVIDIA GPU its GPU checks are not applicable; a missing numactl is named
with its package, and the topology still comes from sysfs."""

from __future__ import annotations

from gpuaudit.probes import numa as n
from gpuaudit.probes.core.judge.checks import judge_checks
from gpuaudit.probes.core.models import CommandRecord


def rec(cid: str, stdout: str = "", exit_status: int | None = 0, stderr: str = "") -> CommandRecord:
    return CommandRecord(
        target="host",
        probe_id="numa",
        command_id=cid,
        command=cid,
        exit_status=exit_status,
        stdout=stdout,
        stderr=stderr,
    )


def test_no_gpu_host_without_numactl():
    outputs = {
        "numactl_h": rec("numactl_h", "", 127, "sh: 1: numactl: not found"),
        "node_cpulists": rec("node_cpulists", "/sys/devices/system/node/node0/cpulist:0-1\n"),
        "pci_nvidia_numa": rec(
            "pci_nvidia_numa",
            "",
            2,
            "grep: /sys/bus/pci/drivers/nvidia/*/numa_node: No such file or directory",
        ),
        "smi_gpu_ids": rec("smi_gpu_ids", "", 127, "sh: 1: nvidia-smi: not found"),
        "engine_proc_status": rec("engine_proc_status", "@@apps\n@@online 0-1\n@@end\n"),
        "proc_driver_version": rec(
            "proc_driver_version",
            "",
            1,
            "cat: /proc/driver/nvidia/version: No such file or directory",
        ),
        "pci_nvidia_sysfs": rec("pci_nvidia_sysfs", "", 1),
    }
    facts = n.extract(outputs, "host")
    found = {f.id: f for f in judge_checks(n.CHECKS, {"host": facts}, {"host": outputs})}
    for fid in (
        "numa.gpu_locality",
        "numa.tp_group_span",
        "numa.worker_binding",
        "numa.memory_placement",
    ):
        assert found[fid].observed == "no NVIDIA GPU or driver on this host", fid
    assert (
        found["numa.topology"].severity.value == "info"
        and "node 0: CPUs 0-1" in found["numa.topology"].observed
    )
    assert "numactl not installed (package numactl)" in found["numa.node_pressure"].observed
