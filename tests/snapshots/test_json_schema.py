"""The published JSON contract (issue 28): docs/schema/*.schema.json and docs/JSON.md are what
snapshots/json_schema.py generates from the models, and real outputs validate against them.

Real outputs: `--json` of the demo, of a local audit of this machine, and of a replay of every snapshot file
under tests/fixtures and snapshots/examples; `diff --json` of the case study; `fleet --json` over saved
snapshots; `--list-checks --json`; the `--hosts --json` document assembled by the fleet code.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from gpuaudit.snapshots import json_schema
from gpuaudit.tui.cli import entry

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
EXAMPLES = ROOT / "snapshots" / "examples"
FIXTURE_SNAPSHOTS = sorted(
    p
    for p in [
        *EXAMPLES.glob("*.json"),
        *(ROOT / "tests" / "fixtures" / "snapshots").glob("*/*.json"),
        *(ROOT / "tests" / "fixtures" / "releases").glob("*/*.json"),
        *(ROOT / "tests" / "fixtures" / "tui").glob("*.json"),
    ]
    if '"schema_version"'
    in p.read_text(encoding="utf-8")[:200]  # roofline-demo.json is no snapshot
)


def validator(name: str) -> jsonschema.Draft202012Validator:
    committed = json.loads((DOCS / "schema" / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(committed)
    return jsonschema.Draft202012Validator(
        committed, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )


def assert_valid(name: str, document: object) -> None:
    errors = sorted(validator(name).iter_errors(document), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(
        f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in errors[:5]
    )


def run_json(capsysbinary: pytest.CaptureFixture[bytes], argv: list[str]) -> object:
    rc = entry.main(argv)
    out = capsysbinary.readouterr().out
    assert rc in (0, 1, 3), rc
    return json.loads(out)


@pytest.mark.parametrize("rel", list(json_schema.expected_files()))
def test_committed_docs_equal_generated(rel: str) -> None:
    committed = (DOCS / rel).read_text(encoding="utf-8")
    assert committed == json_schema.expected_files()[rel](), (
        f"docs/{rel} is stale: run `python3 -m gpuaudit.snapshots.json_schema docs`"
    )


def test_cli_prints_the_committed_schema(capsys) -> None:
    assert entry.SCHEMA_DOCUMENTS == tuple(json_schema.DOCUMENTS)
    for name in json_schema.DOCUMENTS:
        assert entry.main(["--json-schema", name]) == 0
        assert capsys.readouterr().out == (DOCS / "schema" / f"{name}.schema.json").read_text()
    assert entry.main(["--json-schema"]) == 0
    assert json.loads(capsys.readouterr().out)["$id"].endswith("snapshot")


def test_demo_json_validates(capsysbinary) -> None:
    assert_valid("snapshot", run_json(capsysbinary, ["--demo", "--json"]))


@pytest.mark.parametrize("path", FIXTURE_SNAPSHOTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_replay_of_every_fixture_snapshot_validates(path: Path, capsysbinary) -> None:
    assert_valid("snapshot", run_json(capsysbinary, ["--replay", str(path), "--json"]))


def test_local_audit_validates(capsysbinary) -> None:
    """This machine, for real: whatever it has (no GPU here: unknown and n/a findings) fits the schema."""
    doc = run_json(capsysbinary, ["--json", "--timeout", "10"])
    assert doc["targets"][0]["kind"] == "local"
    assert_valid("snapshot", doc)


def test_diff_json_validates(capsys) -> None:
    before, after = EXAMPLES / "case-study-before.json", EXAMPLES / "case-study-after.json"
    assert entry.main(["diff", str(before), str(after), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["probes"], "the case study changes"
    assert_valid("diff", doc)


def test_fleet_json_validates(tmp_path: Path, capsys) -> None:
    for n, src in enumerate(
        [EXAMPLES / "case-study-before.json", EXAMPLES / "case-study-after.json"]
    ):
        (tmp_path / f"node{n}.json").write_bytes(src.read_bytes())
    assert entry.main(["fleet", str(tmp_path), "--json"]) in (0, 1)
    doc = json.loads(capsys.readouterr().out)
    assert doc["classes"]
    assert_valid("fleet", doc)


def test_list_checks_json_validates(capsys) -> None:
    assert entry.main(["--list-checks", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["checks"]) > 50
    assert_valid("checks", doc)


def test_fleet_hosts_document_validates() -> None:
    from gpuaudit.snapshots.store import load
    from gpuaudit.tui.cli.fleet_hosts import FleetHost, HostResult, fleet_document

    snap = load(EXAMPLES / "case-study-before.json")
    results = [
        HostResult(
            host=FleetHost(spec="root@10.0.0.5", name="gpu1"),
            exit_status=1,
            duration_s=1.5,
            snapshot_json=snap.model_dump_json(),
            counts={"critical": 2},
        ),
        HostResult(
            host=FleetHost(spec="root@10.0.0.6", name="gpu2"),
            exit_status=3,
            duration_s=0.1,
            error="unreachable",
        ),
    ]
    assert_valid("fleet-hosts", json.loads(fleet_document(results, 2.0, 32)))


def test_schema_can_fail() -> None:
    """A wrong type, a missing field and an unknown severity are all refused."""
    doc = json.loads((EXAMPLES / "case-study-before.json").read_text())
    v = validator("snapshot")
    bad = {**doc, "probes": "none"}
    assert not v.is_valid(bad)
    missing = {k: v_ for k, v_ in doc.items() if k != "findings"}
    assert not v.is_valid(missing)
    if doc["findings"]:
        f = {**doc["findings"][0], "severity": "fine"}
        assert not v.is_valid({**doc, "findings": [f]})
