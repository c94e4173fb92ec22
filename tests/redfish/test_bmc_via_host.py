"""--bmc-via-host: the BMC reached through the audited host's SSH connection (a port forward opened by the client
over the real sshd on 127.0.0.1; nothing runs on the host for it), TLS still checked against the BMC's address."""

from __future__ import annotations

import json

from gpuaudit.probes.core.collect import redfish
from gpuaudit.tui.cli import entry as cli
from redfish_server import records_by_id


def test_bmc_through_the_hosts_ssh_connection(sshd, mockup, capsys, monkeypatch):
    m = mockup("lenovo-sr670-v2")
    monkeypatch.setenv("GPUAUDIT_BMC_USER", "via")
    monkeypatch.setenv("GPUAUDIT_BMC_PASSWORD", "Via-Host-S3cret")
    dialled = []
    real_open = redfish.asyncio.open_connection

    async def spy(host, port, **kw):
        dialled.append((host, port, kw.get("server_hostname")))
        return await real_open(host, port, **kw)

    monkeypatch.setattr(redfish.asyncio, "open_connection", spy)
    code = cli.main(
        [
            "--host",
            sshd.spec,
            *sshd.cli_args(),
            "--probes",
            "firmware",
            "--json",
            "--fail-on",
            "never",
            "--bmc",
            m.address,
            "--bmc-via-host",
            "--bmc-ca",
            str(m.cert.cert),
        ]
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    snap = json.loads(out.out)
    recs = records_by_id(snap)
    bios = recs["redfish_bios"]
    assert bios["exit_status"] == 0 and "OperatingModes_ChooseOperatingMode" in bios["stdout"]
    assert "via the host's SSH connection (TLS verified with --bmc-ca" in bios["executed"]
    assert len(m.access_lines()) == 4 and all('"GET /redfish/v1/' in ln for ln in m.access_lines())
    # every HTTPS connection went to the forward's local end, never straight to the BMC; TLS named the BMC
    assert dialled and all(p != m.port and name == "127.0.0.1" for _, p, name in dialled), dialled
    # the forward is not a command: nothing BMC-related was run on the host
    states = snap["target_states"]["host"]["executed"]
    assert not any("redfish" in line or m.address in line for line in states)
    assert "Via-Host-S3cret" not in out.out


def test_via_host_needs_an_ssh_host(capsys):
    assert cli.main(["--bmc", "127.0.0.1:1", "--bmc-via-host", "--json"]) == 2
    assert "--host" in capsys.readouterr().err
