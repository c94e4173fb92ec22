"""Issue 13: every kernel unknown names what is missing; the GPU-only check is not applicable without a GPU."""

from __future__ import annotations

from gpuaudit.probes import kernel as k
from gpuaudit.probes.core.judge.checks import judge_checks
from gpuaudit.probes.core.models import CommandRecord


def rec(
    cid: str, stdout: str = "", exit_status: int | None = 0, stderr: str = "", command: str = "x"
) -> CommandRecord:
    return CommandRecord(
        target="host",
        probe_id="kernel",
        command_id=cid,
        command=command,
        exit_status=exit_status,
        stdout=stdout,
        stderr=stderr,
    )


def test_missing_journalctl_is_named_not_hidden_by_the_pipe():
    # `journalctl ... | grep ...` without journalctl: the pipe's status is grep's (1), stderr names the tool
    outputs = {
        "journal_kernel_faults": rec("journal_kernel_faults", "", 1, "sh: 1: journalctl: not found")
    }
    f = k.extract(outputs, "host")
    found = {x.id: x for x in judge_checks(k.CHECKS, {"host": f}, {"host": outputs})}
    assert "journalctl not installed (package systemd)" in found["kernel.dmesg_faults"].observed


def test_no_gpu_makes_uvm_hmm_not_applicable():
    outputs = {c.id: rec(c.id) for c in k.COMMANDS}
    outputs["proc_driver_version"] = rec(
        "proc_driver_version", "", 1, "cat: /proc/driver/nvidia/version: No such file or directory"
    )
    outputs["pci_nvidia_sysfs"] = rec("pci_nvidia_sysfs", "", 1)
    found = {x.id: x for x in judge_checks(k.CHECKS, {"host": k.KernelFacts()}, {"host": outputs})}
    assert found["kernel.uvm_hmm"].observed == "no NVIDIA GPU or driver on this host"


def test_every_check_is_unknown_naming_the_command_when_nothing_answered():
    outputs = {c.id: rec(c.id, "", None) for c in k.COMMANDS}
    found = judge_checks(k.CHECKS, {"host": k.extract(outputs, "host")}, {"host": outputs})
    for x in found:
        assert x.severity.value == "unknown", (x.id, x.observed)
        assert "no exit status" in x.observed or "not collected" in x.observed, (x.id, x.observed)
