"""Snapshot's serializer writes each probe's findings once when they are the flat list's own objects (issue 30):
the same document, byte for byte, as serialising them twice and letting compact.pack compare the dicts.

The reference is the serializer with the fast path switched off (`_finding_refs` answering None: the code as it
was, `pack(handler(self))`), on every loadable snapshot and on snapshots where the fast path must step aside.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from gpuaudit.snapshots import schema, store
from gpuaudit.snapshots.schema import Snapshot

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = sorted((ROOT / "snapshots" / "examples").glob("*.json")) + sorted(
    p for p in (ROOT / "tests" / "fixtures").glob("**/*.json") if "models" not in p.parts
)

WAYS: dict[str, Any] = {
    "to_json": lambda s: s.to_json(),
    "model_dump_json": lambda s: s.model_dump_json(),
    "indent": lambda s: s.model_dump_json(indent=2),
    "exclude": lambda s: s.model_dump(mode="json", exclude={"roofline"}),
    "python": lambda s: s.model_dump(),
    "python_json": lambda s: s.model_dump(mode="json"),
}


def loadable() -> list[Snapshot]:
    out = []
    for path in SNAPSHOTS:
        try:
            out.append(store.load(path))
        except Exception:  # noqa: BLE001, S112 - not a snapshot (a fleet document, a broken fixture)
            continue
    return out


def both(snap: Snapshot, way: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """(with the fast path, without it)."""
    fast = WAYS[way](snap)
    with monkeypatch.context() as m:
        m.setattr(schema, "_finding_refs", lambda snapshot: None)
        slow = WAYS[way](snap)
    return fast, slow


def same(fast: Any, slow: Any, what: str) -> None:
    """fast == slow, failing with a short message (pytest's diff of two 0.5 MB documents takes minutes)."""
    if fast != slow:
        pytest.fail(f"{what}: the fast path wrote another document")


def from_run(snap: Snapshot) -> Snapshot:
    """What --json, --save and a fleet host serialise: the flat list holds the probes' own finding objects."""
    return Snapshot.from_run(snap.to_run(), name=snap.name, created_at=snap.created_at)


def test_there_are_snapshots_with_findings() -> None:
    snaps = loadable()
    assert len(snaps) >= 8
    assert sum(len(s.findings) > 50 for s in snaps) >= 4


@pytest.mark.parametrize("way", sorted(WAYS))
def test_every_snapshot_made_by_from_run_writes_the_same_document(
    way: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for snap in map(from_run, loadable()):
        assert schema._finding_refs(snap) is not None  # the fast path is the one taken
        fast, slow = both(snap, way, monkeypatch)
        same(fast, slow, f"{snap.name} {way}")


def test_the_fast_path_leaves_probes_findings_out_of_the_document() -> None:
    snap = from_run(store.load(ROOT / "snapshots" / "examples" / "case-study-after.json"))
    doc = snap.model_dump(mode="json")
    refs = [p["finding_refs"] for p in doc["probes"]]
    assert all(p["findings"] is None for p in doc["probes"])
    assert [i for r in refs for i in r] == list(range(len(doc["findings"])))
    assert [doc["findings"][i]["id"] for i in refs[2]] == [f.id for f in snap.probes[2].findings]
    back = Snapshot.model_validate_json(snap.model_dump_json())
    assert [p.findings for p in back.probes] == [p.findings for p in snap.probes]


def _off_path(snap: Snapshot) -> list[Snapshot]:
    """Snapshots whose probes' findings are not the flat list's objects in its order: each must step aside."""
    probes = [p for p in snap.probes if len(p.findings) >= 2]
    assert len(probes) >= 2
    first = probes[0]
    flat = list(snap.findings)
    swapped = [first.model_copy(update={"findings": first.findings[::-1]})]
    out = [
        # the flat list in another order
        snap.model_copy(update={"findings": flat[::-1]}),
        # a probe finding missing from the flat list
        snap.model_copy(update={"findings": flat[1:]}),
        # one finding twice in the flat list
        snap.model_copy(update={"findings": [flat[0], *flat]}),
        # a probe's findings in another order
        snap.model_copy(update={"probes": [*swapped, *(p for p in snap.probes if p is not first)]}),
        # equal findings that are other objects (a loaded snapshot)
        snap.model_copy(update={"findings": [f.model_copy() for f in flat]}),
        # one finding changed in the flat list only
        snap.model_copy(
            update={"findings": [flat[0].model_copy(update={"observed": "changed"}), *flat[1:]]}
        ),
    ]
    return out


def test_extra_flat_findings_after_the_probes_keep_the_fast_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The flat list may hold more than the probes' findings (compact.pack's in-order rule asks no more)."""
    snap = from_run(store.load(ROOT / "snapshots" / "examples" / "case-study-before.json"))
    longer = snap.model_copy(update={"findings": [*snap.findings, snap.findings[0]]})
    assert schema._finding_refs(longer) is not None
    for way in ("to_json", "python"):
        same(*both(longer, way, monkeypatch), way)


@pytest.mark.parametrize("way", ["to_json", "python", "exclude"])
def test_snapshots_off_the_fast_path_write_the_same_document(
    way: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    snap = from_run(store.load(ROOT / "snapshots" / "examples" / "case-study-before.json"))
    for odd in _off_path(snap):
        assert schema._finding_refs(odd) is None
        same(*both(odd, way, monkeypatch), way)


def test_a_loaded_snapshot_writes_what_it_read() -> None:
    path = ROOT / "snapshots" / "examples" / "case-study-after.json"
    snap = store.load(path)
    again = Snapshot.model_validate_json(from_run(snap).model_dump_json())
    same(again.model_dump_json(), snap.model_dump_json(), "read back")
    same(from_run(snap).model_dump_json(), snap.model_dump_json(), "from_run")
