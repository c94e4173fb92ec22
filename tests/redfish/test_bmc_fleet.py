"""--hosts with a BMC per host (inventory `gpuaudit_bmc=ADDRESS`): each host's audit reads its own BMC; the shared
--bmc-ca / credentials apply to all; --bmc itself is refused with --hosts (one address cannot serve a fleet)."""

from __future__ import annotations

import json

import pytest
from gpuaudit.probes.core.errors import UsageError
from gpuaudit.probes.core.fleet.inventory import parse_inventory
from gpuaudit.tui.cli import entry as cli
from redfish_server import records_by_id

PASSWORD = "Fleet-Pl4nted-S3cret"


def test_inventory_carries_a_bmc_per_host_and_checks_it():
    hosts = parse_inventory(
        "[gpu]\nn1 ansible_host=10.0.0.5 gpuaudit_bmc=10.0.1.5\nn2 ansible_host=10.0.0.6\n"
        "[gpu:vars]\nansible_user=root\n"
    )
    assert [(h.name, h.bmc) for h in hosts] == [("n1", "10.0.1.5"), ("n2", None)]
    with pytest.raises(UsageError, match="inv.ini:2: gpuaudit_bmc"):
        parse_inventory("[gpu]\nn1 ansible_host=10.0.0.5 gpuaudit_bmc=http://10.0.1.5\n", "inv.ini")


def test_bmc_with_hosts_is_refused(tmp_path, capsys):
    inv = tmp_path / "hosts"
    inv.write_text("10.0.0.5\n")
    assert cli.main(["--hosts", str(inv), "--bmc", "10.0.1.5", "--json"]) == 2
    assert "gpuaudit_bmc" in capsys.readouterr().err


def test_fleet_reads_each_hosts_bmc(sshd, mockup, tmp_path, capsys, monkeypatch):
    m = mockup("supermicro-sys-821ge-tnhr")
    monkeypatch.setenv("GPUAUDIT_BMC_USER", "fleet")
    monkeypatch.setenv("GPUAUDIT_BMC_PASSWORD", PASSWORD)
    inv = tmp_path / "hosts.ini"
    inv.write_text(
        f"[gpu]\nup ansible_host=127.0.0.1 ansible_port={sshd.port} ansible_user={sshd.user} "
        f"gpuaudit_bmc={m.address}\n"
    )
    code = cli.main(
        [
            "--hosts",
            str(inv),
            "--json",
            "--probes",
            "firmware",
            "--fail-on",
            "never",
            "--bmc-ca",
            str(m.cert.cert),
            *sshd.cli_args(),
        ]
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    assert PASSWORD not in out.out and PASSWORD not in out.err
    (node,) = json.loads(out.out)["fleet"]
    recs = records_by_id(node["snapshot"])
    assert (
        recs["redfish_bios"]["exit_status"] == 0
        and "Above4GDecoding_0041" in recs["redfish_bios"]["stdout"]
    )
    assert (
        all('"GET /redfish/v1/' in ln for ln in m.access_lines()) and len(m.access_lines()) == 4
    )  # + Bios/SD: 404
