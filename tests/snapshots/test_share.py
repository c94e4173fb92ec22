"""--share (issue 28): identifiers mapped consistently to placeholders; no original survives.

The identifiers are harvested here with the test's own patterns from the ORIGINAL texts (the case study and
every real recorded output under tests/fixtures), then looked for in the shared result.
"""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pytest
from gpuaudit.snapshots.share import (
    Sharer,
    share_snapshot_dict,
    share_texts,
    write_mapping,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "snapshots" / "examples"
CASE_STUDY = [EXAMPLES / "case-study-before.json", EXAMPLES / "case-study-after.json"]
FIXTURES = ROOT / "tests" / "fixtures"
TEXT_FIXTURES = sorted(
    p
    for p in FIXTURES.rglob("*")
    if p.is_file()
    and "models" not in p.relative_to(FIXTURES).parts
    and p.suffix not in (".py", ".md", ".json")
)
JSON_FIXTURES = sorted(
    p for p in FIXTURES.rglob("*.json") if "models" not in p.relative_to(FIXTURES).parts
)

IPV4 = re.compile(r"(?<![0-9.])(?:\d{1,3}\.){3}\d{1,3}(?![0-9]|\.\d)")
MAC = re.compile(r"(?i)(?<![0-9a-f:])(?:[0-9a-f]{2}:){5}[0-9a-f]{2}(?![0-9a-f:])")
UUID = re.compile(r"(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
SERIAL = re.compile(r"(?i)serial ?number\"?\s*:\s*\"?([A-Z0-9][A-Z0-9-]{5,})")
HOME = re.compile(r"/home/([a-z_][a-z0-9_-]+)")
VERSIONISH = re.compile(r"(?i)version|firmware|bundle|registry|==|\brev")


def identifiers(text: str) -> set[str]:
    """Addresses, MACs, UUIDs, serials and home users of a text, by the test's own patterns.

    Left out, on purpose: loopback/0.0.0.0/netmasks, all-zero UUIDs and MACs, and dotted numbers on a line
    about a version (`FirmwareVersion: 7.2.2.0`, `==12.8.4.1`) or glued to a letter (`C225M6.4.2.2b`)."""
    found: set[str] = set()
    for line in text.splitlines():
        for m in IPV4.finditer(line):
            v = m.group(0)
            if v.startswith(("0.", "127.", "255.")) or VERSIONISH.search(line[: m.start()]):
                continue
            if max(int(o) for o in v.split(".")) > 255:
                continue
            glued = (
                line[m.start() - 1 : m.start()].isalpha() or line[m.end() : m.end() + 1].isalpha()
            )
            if not glued:
                found.add(v)
        found |= {m.group(0) for m in MAC.finditer(line) if set(m.group(0)) - set("0:")}
    found |= {m.group(0) for m in UUID.finditer(text) if set(m.group(0)) - set("0-")}
    found |= {m.group(1) for m in SERIAL.finditer(text) if len(set(m.group(1))) > 2}
    found |= {m.group(1) for m in HOME.finditer(text)}
    return found


def survivors(found: set[str], shared: str) -> list[str]:
    low = shared.lower()
    return sorted(v for v in found if v.lower() in low)


@pytest.mark.parametrize("path", CASE_STUDY, ids=lambda p: p.name)
def test_case_study_no_identifier_survives(path: Path) -> None:
    original = path.read_text(encoding="utf-8")
    doc = json.loads(original)
    shared, sharer = share_snapshot_dict(doc)
    text = json.dumps(shared, ensure_ascii=False)
    found = identifiers(json.loads(original) and _all_strings(doc))
    hostnames = {s["hostname"] for s in doc["target_states"].values() if s.get("hostname")}
    assert found and hostnames, "the case study has identifiers to hide"
    assert survivors(found, text) == []
    for h in hostnames:  # pve-gpu01, sglang-ct101: whole words nowhere
        assert not re.search(rf"(?i)(?<![\w-]){re.escape(h)}(?![\w-])", text), h
    # the container's hostname is `sglang`, also the engine's name: gone wherever it names the host
    assert '"hostname": "sglang"' not in text and "hostname: sglang" not in text
    assert "python3 -m sglang.launch_server" in text, "the engine's name is not a host"
    assert {s["hostname"] for s in shared["target_states"].values()} <= {
        "host-1",
        "host-2",
        "host-3",
    }
    assert "root@host-1" in text
    # consistent: every GPU UUID maps the same way in smi_gpu_ids, nvlink and the engine's process status
    gpu0 = sharer.maps["uuid"]["5e0c0a21-6c1d-4f3e-9b7a-00d4c8e2f100"]
    assert text.count(f"GPU-{gpu0}") == original.count("GPU-5e0c0a21-6c1d-4f3e-9b7a-00d4c8e2f100")


def _all_strings(obj: object) -> str:
    out: list[str] = []

    def walk(o: object) -> None:
        if isinstance(o, str):
            out.append(o)
        elif isinstance(o, dict):
            for k, v in o.items():
                out.append(str(k))
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk(obj)
    return "\n".join(out)


def test_shared_case_study_judges_the_same() -> None:
    """Placeholders keep their formats (UUIDs, documentation-range IPs): re-judging gives the same verdicts."""
    from gpuaudit.probes.core.run.request import AuditRequest
    from gpuaudit.probes.core.run.runner import Audit
    from gpuaudit.probes.core.run.session import replay_bindings, run_sync, run_to_end
    from gpuaudit.snapshots.schema import Snapshot
    from gpuaudit.snapshots.store import load
    from gpuaudit.tui.cli.session_setup import selected_probes

    def verdicts(snap: Snapshot) -> dict[tuple[str, str], str]:
        audit = Audit(
            replay_bindings(snap.targets, snap.records, states=snap.target_states),
            selected_probes(AuditRequest()),
            None,
        )
        run = run_sync(run_to_end(audit))
        return {(f.id, ",".join(f.targets)): f.severity.value for f in run.findings}

    original = load(CASE_STUDY[0])
    shared, _ = share_snapshot_dict(original.model_dump(mode="json"))
    assert verdicts(Snapshot.model_validate(shared)) == verdicts(original)


@pytest.mark.parametrize("path", TEXT_FIXTURES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_recorded_output_no_identifier_survives(path: Path) -> None:
    text = path.read_text(encoding="utf-8", errors="replace")
    [shared], _ = share_texts([text])
    assert survivors(identifiers(text), shared) == []


@pytest.mark.parametrize("path", JSON_FIXTURES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_json_fixture_no_identifier_survives(path: Path) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(doc, dict) and "probes" in doc:
        shared, _ = share_snapshot_dict(doc)
    else:
        sharer = Sharer()
        for s in _all_strings(doc).splitlines():
            sharer.learn_text(s)
        shared = sharer.document(doc)
    assert survivors(identifiers(_all_strings(doc)), _all_strings(shared)) == []


def test_fixtures_hold_identifiers() -> None:
    """The corpus is not empty of what --share hides (else the tests above prove nothing)."""
    found: set[str] = set()
    for p in TEXT_FIXTURES:
        found |= identifiers(p.read_text(encoding="utf-8", errors="replace"))
    assert len(found) >= 20, found


def test_consistent_placeholders_and_kept_values() -> None:
    text = (
        "inet 10.93.75.30/24 brd 10.93.75.255\n--dist-init-addr 10.93.75.30:1235\n"
        "link/ether bc:24:11:3a:6e:21 brd ff:ff:ff:ff:ff:ff\n"
        "nvidia-cublas-cu12==12.8.4.1\nVBIOS Version : 95.06.34.00\n"
        "netmask 255.255.255.0 lo 127.0.0.1 any 0.0.0.0\n"
        "inet6 2a01:4f8:c17:1::2/64 fe80::be24:11ff:fe3a:6e21/64 ::1/128\n"
        "cwd /home/alice/models uid=1000(alice) gid=1000(alice)\n"
        "0000:01:00.0 10de:2bb5 0::/init.scope\n"
    )
    [out], sharer = share_texts([text])
    assert out.count("192.0.2.1") == 2 and "10.93.75.30" not in out
    assert "192.0.2.2" in out  # the broadcast address is another address
    assert "02:00:00:00:00:01" in out and "ff:ff:ff:ff:ff:ff" in out
    for kept in ("12.8.4.1", "95.06.34.00", "255.255.255.0", "127.0.0.1", "0.0.0.0", "::1/128"):
        assert kept in out
    assert "2001:db8::" in out and "2a01:4f8" not in out and "fe80::be24" not in out
    assert "/home/user-1/models" in out and "uid=1000(user-1)" in out and "alice" not in out
    assert "0000:01:00.0 10de:2bb5 0::/init.scope" in out
    assert sharer.maps["ip"]["10.93.75.30"] == "192.0.2.1"


def test_mapping_file_is_private(tmp_path: Path) -> None:
    _, sharer = share_texts(["host 10.1.2.3 serial number: ABC12345XYZ"])
    path = write_mapping(sharer, tmp_path / "maps" / "m.json")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    data = json.loads(path.read_text())
    assert data["ip"] == {"10.1.2.3": "192.0.2.1"} and data["serial"] == {"ABC12345XYZ": "serial-1"}
