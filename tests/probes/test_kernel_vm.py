"""Issue 12 item 12: one virtualisation fact. A KVM guest on an EPYC gets no amd-pstate advice from kernel.version
(firmware.cppc already said "not applicable in a virtual machine" for the same run); bare metal keeps it.

Real /proc/cpuinfo captures (tests/fixtures/system/cpuinfo, SOURCES.md): the same EPYC 9754 seen from a KVM guest
(`hypervisor` flag) and on bare metal. The records are what the probe's own grep lines print for them.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from gpuaudit.probes import firmware
from gpuaudit.probes import kernel as k
from gpuaudit.probes.core.judge.checks import judge_checks
from gpuaudit.probes.core.models import CommandRecord
from gpuaudit.probes.core.sources import SOURCES

FX = Path(__file__).parents[1] / "fixtures/system/cpuinfo"


def run_on_fixture(cid: str, path: Path) -> CommandRecord:
    """Run the registry's own command line for `cid` with /proc/cpuinfo replaced by the captured file."""
    line = SOURCES[cid].shell.replace("/proc/cpuinfo", str(path))
    p = subprocess.run(["sh", "-c", line], capture_output=True, text=True, check=False)
    return CommandRecord(
        target="host",
        probe_id="kernel",
        command_id=cid,
        command=line,
        exit_status=p.returncode,
        stdout=p.stdout,
        stderr=p.stderr,
    )


def rec(cid: str, stdout: str) -> CommandRecord:
    return CommandRecord(
        target="host", probe_id="kernel", command_id=cid, command=cid, exit_status=0, stdout=stdout
    )


def host_outputs(capture: str) -> dict[str, CommandRecord]:
    path = FX / capture
    return {
        "uname_r": rec("uname_r", "6.8.0-51-generic\n"),
        "proc_cmdline": rec(
            "proc_cmdline", "BOOT_IMAGE=/boot/vmlinuz-6.8.0-51-generic root=/dev/vda1 ro quiet\n"
        ),
        "cpuinfo_id": run_on_fixture("cpuinfo_id", path),
        "cpu_hypervisor_flag": run_on_fixture("cpu_hypervisor_flag", path),
    }


@pytest.mark.parametrize(
    "capture,severity,needle",
    [
        (
            "ollama-5554-epyc-9754-kvm-guest-cpu0.txt",
            "info",
            "virtual machine",
        ),  # was: warning "never gets amd-pstate"
        ("ollama-5554-epyc-9754-bare-metal-cpu0.txt", "warning", "never gets amd-pstate"),
    ],
)
def test_kernel_version_in_a_guest_gives_no_amd_pstate_advice(capture, severity, needle):
    outputs = host_outputs(capture)
    facts = k.extract(outputs, "host")
    assert facts.cpu_model_name == "AMD EPYC 9754 128-Core Processor" and facts.cpu_family == 25
    found = {f.id: f for f in judge_checks(k.CHECKS, {"host": facts}, {"host": outputs})}
    v = found["kernel.version"]
    assert v.severity.value == severity, v.observed
    assert needle in v.title + v.observed
    if severity == "info":
        assert "amd_pstate=active" not in v.fix


def test_firmware_and_kernel_agree_on_the_guest():
    outputs = host_outputs("ollama-5554-epyc-9754-kvm-guest-cpu0.txt")
    fw_facts = firmware.FirmwareFacts(cpu_vendor="AMD", cpu_family=25, sockets=2, cppc={})
    fw = {
        f.id: f
        for f in judge_checks(
            firmware.CHECKS,
            {"host": fw_facts},
            {
                "host": outputs
                | {"lscpu_json": rec("lscpu_json", ""), "sys_cppc": rec("sys_cppc", "")}
            },
        )
    }
    kv = {
        f.id: f
        for f in judge_checks(k.CHECKS, {"host": k.extract(outputs, "host")}, {"host": outputs})
    }
    assert fw["firmware.cppc"].observed.startswith("virtual machine")
    assert (
        kv["kernel.version"].severity.value == "info"
        and "virtual machine" in kv["kernel.version"].observed
    )


def test_plan_of_the_guest_has_no_amd_pstate_step():
    """The reported --plan on the KVM guest was exactly one wrong step (add amd_pstate=active): now it has none."""
    from gpuaudit.probes.core.judge.plan import build_plan
    from gpuaudit.probes.core.judge.probe import judge_probe
    from gpuaudit.probes.core.models import AuditRun

    outputs = host_outputs("ollama-5554-epyc-9754-kvm-guest-cpu0.txt")
    records = [r.model_copy(update={"probe_id": "kernel"}) for r in outputs.values()]
    run = AuditRun(probes=[judge_probe(k.PROBE, {"host": records})])
    assert not [s for s in build_plan(run) if "amd_pstate" in s.fix or "amd-pstate" in s.title], (
        build_plan(run)
    )
    bare = host_outputs("ollama-5554-epyc-9754-bare-metal-cpu0.txt")
    run = AuditRun(probes=[judge_probe(k.PROBE, {"host": list(bare.values())})])
    assert [s for s in build_plan(run) if "amd_pstate" in s.fix]  # bare metal keeps the step
