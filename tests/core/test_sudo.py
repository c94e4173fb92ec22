"""--sudo over real SSH: root-only commands go through `sudo -n`; a refusal is "needs root", never a prompt or a hang."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from gpuaudit.probes.core.collect.targets import parse_host_spec
from gpuaudit.probes.core.run.events import ProbeFinished
from gpuaudit.probes.core.run.runner import Audit, AuditOptions
from gpuaudit.probes.core.run.session import live_bindings
from gpuaudit.probes.core.spec import Command, Probe

pytestmark = [
    pytest.mark.sshd,
    pytest.mark.skipif(shutil.which("sudo") is None, reason="sudo not installed"),
]
SUDOERS = Path("/etc/sudoers.d/gpuaudit-test-sudo")


def probe() -> Probe:
    from pydantic import BaseModel

    class F(BaseModel):
        pass

    return Probe(
        id="p",
        title="p",
        commands=(Command("whoami_root", "id -u", needs_root=True), Command("plain", "id -u")),
        extract=lambda outputs, role: F(),
    )


async def records(server, sudo: bool) -> dict:
    audit = Audit(
        live_bindings(parse_host_spec(server.spec), None, server.options()),
        [probe()],
        AuditOptions(sudo=sudo, timeout_s=10),
    )
    events = [e async for e in audit.events()]
    await audit.aclose()
    result = next(e.result for e in events if isinstance(e, ProbeFinished))
    return {r.command_id: r for r in result.records}


async def test_without_sudo_root_only_commands_are_skipped(sshd):
    recs = await records(sshd, sudo=False)
    assert (
        recs["whoami_root"].error.startswith("needs root")
        and recs["whoami_root"].exit_status is None
    )
    assert recs["plain"].stdout.strip() != "0"


async def test_sudo_refused_is_needs_root_not_a_prompt(sshd):
    SUDOERS.unlink(missing_ok=True)
    recs = await records(sshd, sudo=True)
    rec = recs["whoami_root"]
    assert (
        "exec timeout -s TERM -k 1" in rec.executed and "sudo -n id -u" in rec.executed
    )  # no sh -c under sudo
    assert rec.error and rec.error.startswith("needs root (sudo -n refused")
    assert "sudo" not in recs["plain"].executed


async def test_sudo_allowed_runs_as_root(sshd):
    SUDOERS.write_text(f"{sshd.user} ALL=(root) NOPASSWD: ALL\n")
    SUDOERS.chmod(0o440)
    try:
        recs = await records(sshd, sudo=True)
    finally:
        SUDOERS.unlink(missing_ok=True)
    assert recs["whoami_root"].stdout.strip() == "0" and recs["whoami_root"].error is None
    assert recs["plain"].stdout.strip() != "0"


def test_only_a_plain_first_stage_runs_as_sudo_tool():
    from gpuaudit.probes.core.collect.remote_line import sudo_first_stage

    assert sudo_first_stage("dmidecode -t bios -t system") == "sudo -n dmidecode -t bios -t system"
    assert (
        sudo_first_stage("dmesg | grep -E 'NVRM|nvidia' || test $? -eq 1")
        == "sudo -n dmesg | grep -E 'NVRM|nvidia' || test $? -eq 1"
    )
    assert (
        sudo_first_stage("lspci -vvv 2>/dev/null | grep -E '^[0-9a-f]|ACSCtl'")
        == "sudo -n lspci -vvv 2>/dev/null | grep -E '^[0-9a-f]|ACSCtl'"
    )
    assert (
        sudo_first_stage("grep -H . /etc/pve/lxc/*.conf") is None
    )  # root expands the glob: sudo sh -c
    assert sudo_first_stage("id -u; id -u") is None and sudo_first_stage("a || b") is None
    assert sudo_first_stage('cat "$HOME/x"') is None
