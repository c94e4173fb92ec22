"""Kernel probe: rules over facts (table-driven) and end to end over the case-study recordings."""

from __future__ import annotations

from pathlib import Path

import pytest
from case_study import run_case_study
from gpuaudit.probes import kernel as k
from gpuaudit.probes.core.judge.checks import judge_checks
from gpuaudit.probes.core.models import CommandRecord, Finding

FX = Path(__file__).parents[1] / "fixtures/system"

ZEN5 = dict(
    cpu_vendor="AMD",
    cpu_family=26,
    cpu_model=2,
    cpu_model_name="AMD EPYC 9375F 32-Core Processor",
)
GENOA = dict(
    cpu_vendor="AMD",
    cpu_family=25,
    cpu_model=17,
    cpu_model_name="AMD EPYC 9374F 32-Core Processor",
)
INTEL = dict(
    cpu_vendor="Intel",
    cpu_family=6,
    cpu_model=143,
    cpu_model_name="Intel(R) Xeon(R) Platinum 8480+",
)
NOARGS = [("BOOT_IMAGE", "/boot/vmlinuz"), ("ro", None), ("quiet", None)]


def facts(**kw) -> k.KernelFacts:
    return k.KernelFacts(**kw)


def judged(
    host: k.KernelFacts, container: k.KernelFacts | None = None, vm: bool = False, **records
) -> dict[str, Finding]:
    """Every kernel check over these facts, each source answering (exit 0) unless given in `records`."""

    def outs(role):
        o = {c.id: rec(c.id, "", 0) for c in k.COMMANDS if role in c.on}
        o["cpu_hypervisor_flag"] = rec(
            "cpu_hypervisor_flag", "hypervisor\n" if vm else "", 0 if vm else 1
        )
        return o | records

    facts_ = {"host": host} | ({"container": container} if container is not None else {})
    outputs = {"host": outs("host")} | (
        {"container": outs("container")} if container is not None else {}
    )
    return {f.id: f for f in judge_checks(k.CHECKS, facts_, outputs)}


def one(fid: str, f: k.KernelFacts, **kw) -> Finding:
    return judged(f, **kw)[f"kernel.{fid}"]


@pytest.mark.parametrize(
    "kw,severity,needle",
    [
        (dict(release="6.8.12-9-pve", cmdline=NOARGS, **ZEN5), "warning", "acpi-cpufreq"),
        (
            dict(release="6.12.9-1-pve", cmdline=NOARGS, **ZEN5),
            "warning",
            "6.13",
        ),  # boundary: last kernel without the default
        (
            dict(release="6.13.0", cmdline=NOARGS, **ZEN5),
            "info",
            "",
        ),  # boundary: first kernel with it
        (dict(release="6.14.11-2-pve", cmdline=NOARGS, **ZEN5), "info", ""),
        (
            dict(release="6.8.12-9-pve", cmdline=NOARGS + [("amd_pstate", "active")], **ZEN5),
            "info",
            "amd_pstate=active",
        ),
        (
            dict(release="6.14.11-2-pve", cmdline=NOARGS + [("amd_pstate", "disable")], **ZEN5),
            "warning",
            "disable",
        ),
        (
            dict(release="6.14.11-2-pve", cmdline=NOARGS, **GENOA),
            "warning",
            "never gets amd-pstate",
        ),
        (
            dict(release="6.8.12-9-pve", cmdline=NOARGS, **INTEL),
            "info",
            "",
        ),  # precondition (AMD server) not met
        (
            dict(
                release="6.8.12-9-pve",
                cmdline=NOARGS,
                cpu_vendor="AMD",
                cpu_family=26,
                cpu_model_name="AMD Ryzen 9 9950X 16-Core Processor",
            ),
            "info",
            "",
        ),  # client part: not the server rule
    ],
)
def test_version(kw, severity, needle):
    f = one("version", facts(**kw))
    assert f.id == "kernel.version" and f.severity.value == severity
    assert needle in f.observed + f.title + f.why
    if severity == "warning":
        assert "acpi-cpufreq" in f.why and f.fix  # the consequence, not "old kernel"


@pytest.mark.parametrize(
    "bal,nodes,severity",
    [
        (1, 2, "warning"),
        (2, 8, "warning"),
        (0, 2, "ok"),
        (1, 1, "n/a"),
        (None, 2, "unknown"),
    ],
)
def test_numa_balancing(bal, nodes, severity):
    f = one("numa_balancing", facts(numa_balancing=bal, numa_nodes=nodes))
    assert f.severity.value == severity
    if nodes == 1:
        assert f.severity.value == "n/a"


@pytest.mark.parametrize(
    "zr,nodes,severity",
    [(1, 2, "warning"), (0, 2, "ok"), (1, 1, "n/a"), (None, 2, "unknown"), (1, None, "unknown")],
)  # node_list unreadable: not "not applicable"
def test_zone_reclaim(zr, nodes, severity):
    problems = {"node_list": "exit 2"} if nodes is None else {}
    assert (
        one(
            "zone_reclaim", facts(zone_reclaim=zr, numa_nodes=nodes, problems=problems)
        ).severity.value
        == severity
    )


@pytest.mark.parametrize(
    "en,de,severity",
    [
        ("always", "always", "warning"),
        ("always", "madvise", "info"),
        ("madvise", "madvise", "info"),
    ],
)
def test_thp(en, de, severity):
    assert one("thp", facts(thp_enabled=en, thp_defrag=de)).severity.value == severity


@pytest.mark.parametrize(
    "cs,severity",
    [("tsc", "ok"), ("hpet", "warning"), ("acpi_pm", "warning"), ("kvm-clock", "info")],
)
def test_clocksource(cs, severity):
    assert one("clocksource", facts(clocksource=cs)).severity.value == severity


def test_swap_tuned_hmm_mitigations():
    assert one("swap", facts(swap_devices=0)).severity.value == "ok"
    assert one("swap", facts(swap_devices=1)).severity.value == "info"
    assert one("tuned_profile", facts(tuned_profile="balanced")).severity.value == "warning"
    assert (
        one("tuned_profile", facts(tuned_profile="accelerator-performance")).severity.value == "ok"
    )
    # absence is an answer the source rows declare (absent_without_tool, absent_text), not a problem text
    not_installed = rec("tuned_active", "", 127, "sh: 1: tuned-adm: not found\n")
    assert one("tuned_profile", facts(), tuned_active=not_installed).severity.value == "info"
    hung = CommandRecord(**(rec("tuned_active").model_dump() | {"timed_out": True}))
    assert one("tuned_profile", facts(), tuned_active=hung).severity.value == "unknown"
    assert one("uvm_hmm", facts(uvm_disable_hmm="Y")).severity.value == "info"
    no_param = rec(
        "uvm_disable_hmm",
        "",
        1,
        "cat: /sys/module/nvidia_uvm/parameters/uvm_disable_hmm: No such file or directory\n",
    )
    assert one("uvm_hmm", facts(), uvm_disable_hmm=no_param).severity.value == "n/a"
    denied = rec("uvm_disable_hmm", "", 1, "cat: x: Permission denied\n")
    assert one("uvm_hmm", facts(), uvm_disable_hmm=denied).severity.value == "unknown"
    m = one(
        "cpu_vulnerability_mitigations",
        facts(
            vulnerabilities={"meltdown": "Not affected", "mds": "Vulnerable"},
            cmdline=[("mitigations", "off")],
        ),
    )
    assert m.severity.value == "info" and "mitigations=off" in m.observed and "mds" in m.observed


def test_cmdline_inventory_and_unapplied():
    f = one(
        "cmdline", facts(cmdline=[("amd_iommu", "on"), ("iommu", "pt"), ("pci", "pcie_bus_perf")])
    )
    assert f.severity.value == "info" and "MaxReadReq" in f.observed
    f = one(
        "cmdline", facts(cmdline=[("quiet", None)], grub_cmdline=["quiet", "amd_pstate=active"])
    )
    assert (
        f.severity.value == "warning"
        and "amd_pstate=active" in f.observed
        and "/etc/default/grub" in f.observed
    )
    # /etc/kernel/cmdline (systemd-boot) rules over grub when present
    f = one(
        "cmdline",
        facts(
            cmdline=[("root", "ZFS=rpool"), ("iommu", "pt")],
            grub_cmdline=["amd_pstate=active"],
            etc_kernel_cmdline=["root=ZFS=rpool", "iommu=pt"],
        ),
    )
    assert f.severity.value == "info"


def test_journal_faults():
    ok = one("dmesg_faults", facts(journal_read=True, journal_lines=[]))
    assert ok.severity.value == "ok"
    crit = one(
        "dmesg_faults",
        facts(
            journal_read=True,
            journal_lines=["AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x0012 address=0x0]"],
        ),
    )
    assert crit.severity.value == "critical"
    warn = one(
        "dmesg_faults",
        facts(
            journal_read=True,
            journal_lines=["pcieport 0000:00:01.1: AER: Corrected error received"],
        ),
    )
    assert warn.severity.value == "warning"
    assert (
        one(
            "dmesg_faults",
            facts(
                journal_read=False,
                journal_lines=[],
                problems={"journal_kernel_faults": "no 'Linux version'"},
            ),
        ).severity.value
        == "unknown"
    )
    assert (
        one(
            "dmesg_faults",
            facts(),
            journal_kernel_faults=rec("journal_kernel_faults", error="needs root (x)"),
        ).severity.value
        == "unknown"
    )


def test_host_knobs_visible():
    host = facts(release="6.8.12-9-pve", numa_balancing=1)
    same = judged(host, facts(release="6.8.12-9-pve", numa_balancing=1))[
        "kernel.host_knobs_visible"
    ]
    assert same.severity.value == "info" and "host and in container" in same.observed
    other = judged(host, facts(release="5.15.0-46-generic", numa_balancing=0))[
        "kernel.host_knobs_visible"
    ]
    assert "6.8.12-9-pve" in other.observed and "5.15.0-46-generic" in other.observed
    diff = judged(host, facts(release="6.8.12-9-pve", numa_balancing=0))[
        "kernel.host_knobs_visible"
    ]
    assert "host kernel.numa_balancing=1" in diff.observed and "container sees 0" in diff.observed
    assert "kernel.host_knobs_visible" not in judged(
        host
    )  # a host-only audit: the cross-target check has no pair
    assert (
        judged(host, facts(release="6.8.12-9-pve"))["kernel.host_knobs_visible"].severity.value
        == "unknown"
    )


def rec(
    cid: str,
    stdout: str = "",
    exit_status: int | None = 0,
    stderr: str = "",
    error: str | None = None,
) -> CommandRecord:
    return CommandRecord(
        target="host",
        probe_id="kernel",
        command_id=cid,
        command="x",
        exit_status=exit_status,
        stdout=stdout,
        stderr=stderr,
        error=error,
    )


def test_extract_odd_outputs():
    f = k.extract(
        {
            "uname_r": rec("uname_r", "6.8.12-9-pve\n"),
            "numa_balancing": rec("numa_balancing", "garbage"),
            "journal_kernel_faults": rec("journal_kernel_faults", "", 1),
            "tuned_active": rec("tuned_active", "", 127, "sh: tuned-adm: not found"),
            "zone_reclaim": rec("zone_reclaim", error="needs root (x)"),
        },
        "host",
    )
    assert f.release == "6.8.12-9-pve" and f.numa_balancing is None
    assert f.journal_lines == [] and not f.journal_read
    assert f.problems["tuned_active"] == "tool not installed" and f.problems[
        "zone_reclaim"
    ].startswith("needs root")


async def run(phase, roles=("host", "container")):
    return await run_case_study(k.PROBE, phase, roles)


async def test_case_study_before():
    f = await run("before")
    assert (
        f["kernel.version"].severity.value == "warning"
        and "6.8.12-9-pve" in f["kernel.version"].observed
    )
    assert f["kernel.numa_balancing"].severity.value == "warning"
    assert f["kernel.host_knobs_visible"].severity.value == "info"
    assert all(x.severity.value != "unknown" for x in f.values()), [
        x.id for x in f.values() if x.severity.value == "unknown"
    ]


async def test_case_study_after():
    f = await run("after")
    assert (
        f["kernel.version"].severity.value == "info" and "6.14.11" in f["kernel.version"].observed
    )
    assert f["kernel.numa_balancing"].severity.value == "ok"
    assert all(x.severity.rank < 3 for x in f.values()), [
        x.id for x in f.values() if x.severity.rank >= 3
    ]


async def test_case_study_host_only():
    f = await run("before", ("host",))
    assert "kernel.host_knobs_visible" not in f and len(f) == 11
