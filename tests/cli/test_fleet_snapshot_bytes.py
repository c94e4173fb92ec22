"""--hosts keeps each host's snapshot as the bytes pydantic writes (issue 30: no decode to str and encode back,
~1 ms per host): the spool, the --json document and the fleet screen's rows read the same JSON as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gpuaudit.probes.core.fleet.inventory import FleetHost
from gpuaudit.snapshots import store
from gpuaudit.snapshots.schema import Snapshot
from gpuaudit.tui.cli.fleet_hosts import HostResult, Spool, fleet_document, fleet_document_parts

pytestmark = pytest.mark.fast

CASE = Path(__file__).resolve().parents[2] / "snapshots" / "examples" / "case-study-after.json"


def test_bytes_are_model_dump_json_and_the_document_is_unchanged() -> None:
    snap = Snapshot.from_run(store.load(CASE).to_run())
    text = snap.model_dump_json()
    data = snap.to_json()
    assert data == text.encode("utf-8")
    hosts = [FleetHost(spec=f"root@10.0.0.{i}", name=f"gpu{i}") for i in (1, 2, 3)]
    as_text = [HostResult(hosts[0], 0, 1.0, text), HostResult(hosts[1], 3, 2.0, None, error="x")]
    as_bytes = [HostResult(hosts[0], 0, 1.0, data), HostResult(hosts[1], 3, 2.0, None, error="x")]
    doc = fleet_document(as_text, 3.0, 8)
    assert fleet_document(as_bytes, 3.0, 8) == doc
    spool = Spool()
    for r in as_bytes:
        spool.keep(r)
    assert as_bytes[0].snapshot_json == "" and spool.text(as_bytes[0]) == text
    assert "".join(fleet_document_parts(as_bytes, 3.0, 8, spool.text)) == doc
    assert Snapshot.model_validate_json(data) == Snapshot.model_validate_json(text)
    assert json.loads(doc)["fleet"][0]["snapshot"]["schema_version"] == 3
