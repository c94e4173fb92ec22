"""--bmc against a real Redfish service on 127.0.0.1 (sushy-static serving the captures of tests/fixtures/redfish
over HTTPS): a full audit sends GETs only (the server's access log), the BIOS settings come back judged, the
credentials planted in the environment or a 0600 file appear in no output; and the faults: a BMC that refuses,
hangs, has no Attributes, a non-compliant @Redfish.Settings, a certificate we do not trust."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import ssl
import subprocess
import sys
from pathlib import Path

from gpuaudit.probes.core.collect.redfish import (
    BMC_BIOS_ID,
    BMC_PENDING_ID,
    BMC_SYSTEM_ID,
    BmcConfig,
    BmcCredentials,
    BmcReader,
    bmc_config,
)
from redfish_server import FIXTURES, free_port, make_cert, records_by_id, serve

USER, PASSWORD = "bmc-auditor", "Pl4nted-S3cret!bmc"
TOKEN = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()


def read_all(config: BmcConfig) -> dict:
    async def go():
        reader = BmcReader(config)
        return {cid: await reader.read(cid) for cid in (BMC_SYSTEM_ID, BMC_BIOS_ID, BMC_PENDING_ID)}

    return asyncio.run(go())


def cli(*args: str, env: dict | None = None, timeout: int = 180) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from gpuaudit.tui.cli.entry import main; sys.exit(main())",
            *args,
        ],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )


def test_full_audit_reads_the_bios_with_gets_only_and_leaks_no_secret(mockup, tmp_path):
    m = mockup("dell-r750")
    env = {"GPUAUDIT_BMC_USER": USER, "GPUAUDIT_BMC_PASSWORD": PASSWORD}
    snaps = tmp_path / "snaps"
    prom = tmp_path / "node.prom"
    common = ("--probes", "firmware", "--bmc", m.address, "--bmc-ca", str(m.cert.cert))
    out = cli(*common, "--json", "--save", "bmc", "--snapshot-dir", str(snaps), env=env)
    assert out.returncode in (0, 1), out.stderr
    snap = json.loads(out.stdout)
    recs = records_by_id(snap)
    assert (
        recs["redfish_bios"]["exit_status"] == 0
        and '"Attributes"' in recs["redfish_bios"]["stdout"]
    )
    assert recs["redfish_bios"]["executed"].startswith(
        f"GET https://{m.address}/redfish/v1/Systems/"
    )
    assert recs["redfish_bios_pending"]["exit_status"] == 0  # Bios/Settings is in the capture
    findings = {f["id"]: f for f in snap["findings"]}
    assert findings["firmware.bios_settings"]["severity"] == "info"
    assert "ProcCStates" in findings["firmware.bios_settings"]["observed"]
    assert findings["firmware.bios_pending"]["severity"] in ("ok", "warning")
    plan = cli(*common, "--plan", env=env)
    promrun = cli(*common, "--prom", str(prom), env=env)
    access = m.access_lines()
    assert access and all('"GET /redfish/v1/' in ln for ln in access), access
    assert len(access) == 3 * 4  # Systems, the system, Bios, Bios/Settings; three audits
    texts = [out.stdout, out.stderr, plan.stdout, plan.stderr, promrun.stdout, promrun.stderr]
    texts += [p.read_text(errors="replace") for p in snaps.rglob("*") if p.is_file()]
    texts += [prom.read_text()] if prom.exists() else []
    assert any(p.is_file() for p in snaps.rglob("*")), "no snapshot written"
    for text in texts:
        assert PASSWORD not in text and TOKEN not in text


def test_credentials_from_a_0600_file_and_refusals(mockup, tmp_path):
    m = mockup("lenovo-sr670-v2")
    cred = tmp_path / "bmc.cred"
    cred.write_text(f"{USER}\n{PASSWORD}\n")
    cred.chmod(0o644)
    bad = cli("--probes", "firmware", "--bmc", m.address, "--bmc-credentials", str(cred), "--json")
    assert bad.returncode == 2 and "chmod 600" in bad.stderr and "Traceback" not in bad.stderr
    assert [ln for ln in bad.stderr.splitlines() if ln.startswith("gpuaudit-tui")] == [
        bad.stderr.strip().splitlines()[-1]
    ]
    cred.chmod(0o600)
    out = cli(
        "--probes",
        "firmware",
        "--bmc",
        m.address,
        "--bmc-credentials",
        str(cred),
        "--bmc-ca",
        str(m.cert.cert),
        "--json",
    )
    assert out.returncode in (0, 1), out.stderr
    assert PASSWORD not in out.stdout and TOKEN not in out.stdout
    snap = json.loads(out.stdout)
    recs = records_by_id(snap)
    assert recs["redfish_bios_pending"]["executed"].endswith(
        "/redfish/v1/Systems/1/Bios/Pending" + f" (TLS verified with --bmc-ca {m.cert.cert})"
    )
    # never on the command line: no such option, and no user:password@ address
    for argv in (("--bmc-password", "x"), ("--bmc", f"{USER}:{PASSWORD}@127.0.0.1")):
        r = cli("--probes", "firmware", *argv, "--json")
        assert r.returncode == 2 and "Traceback" not in r.stderr and PASSWORD not in r.stderr


def test_hpe_lower_case_links_and_judged_manual_checks(mockup):
    m = mockup("hpe-dl385-gen10plus-v2")
    res = read_all(bmc_config(m.address, ca_file=m.cert.cert, env={}))
    assert (
        res[BMC_BIOS_ID].exit_status == 0 and b"PerformanceDeterminism" in res[BMC_BIOS_ID].stdout
    )
    # the capture links /redfish/v1/systems/1/bios/settings/ but holds no such file: a 404 is an answer
    assert res[BMC_PENDING_ID].exit_status == 404 and "HTTP 404" in res[BMC_PENDING_ID].error


def test_a_bmc_that_refuses():
    res = read_all(BmcConfig(address=f"127.0.0.1:{free_port()}", timeout_s=5))
    assert "connection refused" in res[BMC_SYSTEM_ID].error
    assert res[BMC_BIOS_ID].error.startswith("not run:")


def test_a_bmc_that_hangs():
    async def go():
        async def silent(reader, writer):
            await asyncio.sleep(30)

        server = await asyncio.start_server(silent, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            reader = BmcReader(BmcConfig(address=f"127.0.0.1:{port}", timeout_s=1.0))
            return await reader.read(BMC_SYSTEM_ID)
        finally:
            server.close()

    raw = asyncio.run(go())
    assert raw.timed_out and "no answer within 1 s" in raw.error and raw.duration_s < 5


def _variant(tmp_path: Path, edit) -> Path:
    root = tmp_path / "variant"
    shutil.copytree(FIXTURES / "dell-r750", root)
    bios = root / "Systems/System.Embedded.1/Bios/index.json"
    doc = json.loads(bios.read_text())
    edit(doc)
    bios.write_text(json.dumps(doc))
    return root


def test_no_attributes_and_non_compliant_settings(tmp_path):
    cert = make_cert(tmp_path)

    def strip(
        doc,
    ):  # a factory-default BMC (Redfish-Tacklebox #185) + AMI's bare-string Settings link (#55)
        doc.pop("Attributes")
        doc["@Redfish.Settings"] = {"SettingsObject": {"Uri": "Bios/Settings"}}

    m = serve(tmp_path, _variant(tmp_path, strip), cert)
    try:
        res = read_all(BmcConfig(address=m.address, ca_file=str(cert.cert)))
    finally:
        m.proc.terminate()
    assert res[BMC_BIOS_ID].exit_status == 0
    assert "non-compliant @Redfish.Settings" in res[BMC_PENDING_ID].error
    from gpuaudit.probes import firmware
    from gpuaudit.probes.core.judge.checks import judge_checks
    from gpuaudit.probes.core.models import CommandRecord

    outs = {
        cid: CommandRecord(
            target="host",
            probe_id="firmware",
            command_id=cid,
            command=cid,
            stdout=raw.stdout.decode(),
            exit_status=raw.exit_status,
            error=raw.error,
        )
        for cid, raw in res.items()
    }
    facts = firmware.extract(outs, "host")
    found = {f.id: f for f in judge_checks(firmware.CHECKS, {"host": facts}, {"host": outs})}
    assert found["firmware.bios_settings"].severity.value == "unknown"
    assert "no Attributes" in found["firmware.bios_settings"].observed
    assert found["firmware.bios_pending"].severity.value == "unknown"
    assert "non-compliant" in found["firmware.bios_pending"].observed


def test_a_certificate_we_do_not_trust(mockup, tmp_path):
    m = mockup("dmtf-public-rackmount1")
    other = make_cert(tmp_path, name="other-ca")
    res = read_all(BmcConfig(address=m.address, ca_file=str(other.cert)))
    assert "TLS certificate not trusted" in res[BMC_SYSTEM_ID].error
    assert "--bmc-ca" in res[BMC_SYSTEM_ID].error
    res = read_all(BmcConfig(address=m.address))  # the system's CAs do not know a self-signed BMC
    assert "TLS certificate not trusted" in res[BMC_SYSTEM_ID].error
    res = read_all(BmcConfig(address=m.address, insecure=True))
    assert res[BMC_BIOS_ID].exit_status == 0
    assert res[BMC_BIOS_ID].executed.endswith("(TLS not verified: --bmc-insecure)")


def test_credentials_are_sent_but_never_echoed(tmp_path):
    """A BMC that echoes the Authorization header in its body: the record holds the redaction, not the secret."""

    cert = make_cert(tmp_path)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert.cert, cert.key)

    async def go():
        seen = []

        async def echo(reader, writer):
            head = await reader.readuntil(b"\r\n\r\n")
            seen.append(head.decode())
            auth = [
                ln for ln in head.decode().split("\r\n") if ln.lower().startswith("authorization")
            ]
            body = json.dumps({"Members": [], "Echo": auth, "Pw": PASSWORD}).encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(echo, "127.0.0.1", 0, ssl=ctx)
        port = server.sockets[0].getsockname()[1]
        try:
            cfg = BmcConfig(
                address=f"127.0.0.1:{port}",
                credentials=BmcCredentials(USER, PASSWORD),
                ca_file=str(cert.cert),
            )
            return await BmcReader(cfg).read(BMC_SYSTEM_ID), seen

        finally:
            server.close()

    raw, seen = asyncio.run(go())
    assert seen and seen[0].startswith("GET /redfish/v1/Systems HTTP/1.1") and TOKEN in seen[0]
    assert PASSWORD.encode() not in raw.stdout and TOKEN.encode() not in raw.stdout
    assert b"[redacted:bmc-credential]" in raw.stdout
    assert "lists no system" in raw.error
    assert PASSWORD not in repr(BmcCredentials(USER, PASSWORD))


def test_a_short_password_does_not_shred_the_answer():
    reader = BmcReader(BmcConfig(address="127.0.0.1", credentials=BmcCredentials("a", "b")))
    body = b'{"Members": [{"@odata.id": "/redfish/v1/Systems/1"}], "Name": "bios"}'
    token = base64.b64encode(b"a:b")
    assert reader._clean(body) == body
    assert reader._clean(body + token) == body + b"[redacted:bmc-credential]"


def test_a_one_line_answer_is_stored_one_member_per_line_and_stays_json(tmp_path):
    """iDRAC answers on one line: the generic redaction of `..Password": ...` must not eat the rest of it."""
    cert = make_cert(tmp_path)
    root = tmp_path / "oneline"
    shutil.copytree(FIXTURES / "dell-r750", root)
    for p in root.rglob("index.json"):
        p.write_text(json.dumps(json.loads(p.read_text())))
    m = serve(tmp_path, root, cert)
    try:
        res = read_all(BmcConfig(address=m.address, ca_file=str(cert.cert)))
    finally:
        m.proc.terminate()
    from gpuaudit.probes.core.redact import redact_text

    text = redact_text(res[BMC_BIOS_ID].stdout.decode())
    doc = json.loads(text)
    assert doc["Attributes"]["SHA256SetupPassword"] == "<redacted>"
    assert doc["Attributes"]["ProcCStates"] == "Disabled"


def test_a_bmc_that_refuses_the_credentials(tmp_path):
    cert = make_cert(tmp_path)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert.cert, cert.key)

    async def go():
        async def deny(reader, writer):
            await reader.readuntil(b"\r\n\r\n")
            body = b'{"error": {"code": "Base.1.8.NoValidSession"}}'
            writer.write(
                b"HTTP/1.1 401 Unauthorized\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
            )
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(deny, "127.0.0.1", 0, ssl=ctx)
        port = server.sockets[0].getsockname()[1]
        try:
            cfg = BmcConfig(
                address=f"127.0.0.1:{port}",
                credentials=BmcCredentials(USER, "wrong-password"),
                ca_file=str(cert.cert),
            )
            reader = BmcReader(cfg)
            return [await reader.read(c) for c in (BMC_SYSTEM_ID, BMC_BIOS_ID, BMC_PENDING_ID)]
        finally:
            server.close()

    system, bios, pending = asyncio.run(go())
    assert system.exit_status == 401 and "credentials refused or missing" in system.error
    assert bios.error.startswith("not run:") and pending.error.startswith("not run:")
