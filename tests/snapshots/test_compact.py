"""Schema 3's stored shape (snapshots/compact.py): each record once per target, each finding once; exact inverse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gpuaudit.probes.core.errors import SnapshotError
from gpuaudit.probes.core.fleet.documents import host_records
from gpuaudit.probes.core.fleet.peers import usable_records
from gpuaudit.snapshots import store
from gpuaudit.snapshots.compact import is_packed, pack, probe_records, records_of, unpack
from gpuaudit.snapshots.schema import Snapshot

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parents[2]
DEMO = sorted((ROOT / "snapshots" / "examples").glob("case-study-*.json"))
FIXTURES = sorted((ROOT / "tests" / "fixtures" / "snapshots").glob("v*/*.json")) + sorted(
    (ROOT / "tests" / "fixtures" / "releases").rglob("*.json")
)


def dumped(snap: Snapshot) -> dict:
    return json.loads(snap.to_json())


@pytest.mark.parametrize("path", DEMO + FIXTURES, ids=lambda p: str(p.relative_to(ROOT)))
def test_written_packed_and_read_back_identical(path: Path) -> None:
    snap = store.load(path)
    doc = dumped(snap)
    assert is_packed(doc) and doc["schema_version"] == 3
    assert all("records" not in p and isinstance(p["record_refs"], list) for p in doc["probes"])
    assert Snapshot.model_validate_json(json.dumps(doc)) == snap
    assert pack(unpack(doc)) == doc


@pytest.mark.parametrize("path", DEMO, ids=lambda p: p.name)
def test_demo_stores_each_record_once_and_each_finding_once(path: Path) -> None:
    snap = store.load(path)
    doc = dumped(snap)
    keys = [(r["target"], r["command_id"]) for r in doc["records"]]
    assert (
        len(keys) == len(set(keys)) < len(snap.records)
    )  # lspci_vvv & co. were stored once per probe
    assert all(p["findings"] is None for p in doc["probes"])
    assert sorted(i for p in doc["probes"] for i in p["finding_refs"]) == list(
        range(len(doc["findings"]))
    )
    expanded = unpack(doc)
    assert len(json.dumps(doc)) < 0.8 * len(json.dumps(expanded))
    for p, q in zip(doc["probes"], expanded["probes"], strict=True):
        assert [dict(r, probe_id=p["probe_id"]) for r in probe_records(doc, p)] == q["records"]


def test_findings_outside_the_flat_list_stay_inline() -> None:
    snap = store.load(DEMO[0])
    doc = unpack(dumped(snap))
    extra = {**doc["probes"][0]["findings"][0], "observed": "only in the probe"}
    doc["probes"][0]["findings"].append(extra)
    packed = pack(doc)
    assert packed["probes"][0]["finding_refs"] is None
    assert packed["probes"][0]["findings"][-1]["observed"] == "only in the probe"
    assert packed["probes"][1]["finding_refs"] is not None
    assert unpack(packed) == doc


def test_fleet_readers_see_the_same_records_in_both_shapes() -> None:
    doc = dumped(store.load(DEMO[-1]))
    expanded = unpack(doc)
    assert host_records(doc) == host_records(expanded)
    assert usable_records(doc, "container") == usable_records(expanded, "container")
    assert len(list(records_of(doc))) < len(list(records_of(expanded)))


def test_a_schema_2_file_loads_through_the_migration(tmp_path: Path) -> None:
    snap = store.load(DEMO[0])
    old = {**unpack(dumped(snap)), "schema_version": 2}
    path = tmp_path / "v2.json"
    path.write_text(json.dumps(old))
    assert store.load(path) == snap


@pytest.mark.parametrize("refs", [[10_000], "0"])
def test_a_reference_past_the_end_is_one_line_error(tmp_path: Path, refs: object) -> None:
    doc = dumped(store.load(DEMO[0]))
    doc["probes"][0]["record_refs"] = refs
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(SnapshotError) as err:
        store.load(path)
    assert "\n" not in str(err.value) and "record_refs" in str(err.value)
