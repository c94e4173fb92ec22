"""compact.pack's in-order fast path for findings (issue 30) gives the same document as keying every finding.

The reference below is pack's finding step as it was before the fast path (each flat finding keyed, each probe
finding takes the first free slot with its key): both must agree on every fixture snapshot and on documents where
the fast path must step aside (a finding changed, moved, duplicated, typed differently, a NaN, not plain data).
"""

from __future__ import annotations

import copy
import json
import math
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from gpuaudit.snapshots import store
from gpuaudit.snapshots.compact import pack, unpack

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = sorted((ROOT / "snapshots" / "examples").glob("case-study-*.json")) + sorted(
    (ROOT / "tests" / "fixtures" / "snapshots").glob("v*/*.json")
)


def reference_key(value: Mapping[str, Any]) -> object:
    """compact._key as it was before issue 30 (kept here: a reference that called the new _key would share its
    bugs)."""
    try:
        key = tuple(value.items())
        hash(key)
        return key
    except TypeError:
        return json.dumps(dict(value), sort_keys=True, default=str)


def reference_pack(doc: dict[str, Any]) -> dict[str, Any]:
    """pack as it was before the fast path (every finding keyed, with the key as it was)."""
    records: list[Any] = []
    where: dict[object, int] = {}
    flat = doc.get("findings") if isinstance(doc.get("findings"), list) else None
    slots: dict[object, list[int]] = {}
    flat_keys: list[object] = []
    for i, f in enumerate(flat or []):
        flat_keys.append(reference_key(f) if isinstance(f, Mapping) else None)
        if isinstance(f, Mapping):
            slots.setdefault(flat_keys[i], []).append(i)
    probes: list[Any] = []
    for probe in doc["probes"]:
        if not isinstance(probe, Mapping):
            probes.append(probe)
            continue
        out = dict(probe)
        refs: list[int] = []
        for rec in probe.get("records") or []:
            rec = dict(rec)
            rec.pop("probe_id", None)
            k = reference_key(rec)
            if k not in where:
                where[k] = len(records)
                records.append(rec)
            refs.append(where[k])
        out.pop("records", None)
        out["record_refs"] = refs
        findings = probe.get("findings")
        if flat is not None and isinstance(findings, list):
            taken: list[int] = []
            for f in findings:
                free = slots.get(reference_key(f)) if isinstance(f, Mapping) else None
                if not free:
                    break
                taken.append(free.pop(0))
            if len(taken) == len(findings):
                out["findings"], out["finding_refs"] = None, taken
            else:
                for i in taken:
                    slots.setdefault(flat_keys[i], []).insert(0, i)
                out["finding_refs"] = None
        probes.append(out)
    packed = dict(doc)
    packed["probes"] = probes
    packed["records"] = records
    return packed


def expanded(path: Path) -> dict[str, Any]:
    snap = store.load(path)
    return unpack(json.loads(snap.to_json()))


def plain(
    value: object,
) -> str:  # JSON of a value that is not plain data (a deep copy has another address)
    return value.__class__.__name__


def same(doc: dict[str, Any]) -> None:
    want = reference_pack(copy.deepcopy(doc))
    got = pack(copy.deepcopy(doc))
    refs = [p.get("finding_refs") for p in got["probes"]]
    assert refs == [p.get("finding_refs") for p in want["probes"]]
    same_json = json.dumps(got, default=plain) == json.dumps(want, default=plain)
    assert same_json, "pack differs from the reference"  # (a 600 kB diff would take pytest minutes)


@pytest.mark.parametrize("path", SNAPSHOTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_fixture_snapshots_pack_as_before(path: Path) -> None:
    doc = expanded(path)
    same(doc)
    assert all(p["finding_refs"] is not None for p in pack(doc)["probes"])


def _mutations(doc: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    probe = next(i for i, p in enumerate(doc["probes"]) if len(p["findings"]) >= 2)

    def variant(edit: Any) -> None:
        d = copy.deepcopy(doc)
        edit(d)
        out.append(d)

    variant(lambda d: d["findings"].reverse())  # flat list in another order: slot search
    variant(lambda d: d["findings"].pop())  # one finding missing from the flat list
    variant(
        lambda d: d["findings"].append(copy.deepcopy(d["findings"][0]))
    )  # a duplicate at the end
    variant(
        lambda d: d["findings"].insert(0, copy.deepcopy(d["findings"][-1]))
    )  # a duplicate first
    variant(lambda d: d["probes"][probe]["findings"].reverse())  # a probe's own order differs
    variant(lambda d: d["probes"][probe]["findings"][0].update(observed="changed"))
    variant(lambda d: d["probes"][probe]["findings"].append({"not": "in the flat list"}))
    variant(lambda d: d["probes"][probe].update(findings=None))
    variant(lambda d: d.update(findings=None))
    variant(lambda d: d.update(findings=[]))
    variant(lambda d: d["findings"].__setitem__(0, "not a mapping"))

    def key_order(d: dict[str, Any]) -> None:  # same items, another key order: tuple keys differ
        f = d["findings"][0]
        d["findings"][0] = dict(reversed(list(f.items())))

    variant(key_order)

    def typed(value: object) -> Any:
        def edit(d: dict[str, Any]) -> None:
            for f in (d["findings"][0], d["probes"][probe]["findings"][0]):
                f.clear()
            d["findings"][0].update(check_id="x", observed=1)
            d["probes"][probe]["findings"][0].update(check_id="x", observed=value)
            first = next(i for i, p in enumerate(d["probes"]) if p["findings"])
            d["probes"][first]["findings"][0].update(check_id="x", observed=value)

        return edit

    for value in (True, 1.0, 1, math.nan, [1], {"a": 1}, object()):
        variant(typed(value))

    def nan_both(d: dict[str, Any]) -> None:  # a NaN on both sides: equal JSON, unequal tuple keys
        first = next(i for i, p in enumerate(d["probes"]) if p["findings"])
        d["findings"][0] = {"check_id": "nan", "observed": math.nan}
        d["probes"][first]["findings"][0] = {"check_id": "nan", "observed": float("nan")}

    variant(nan_both)

    def nan_nested(d: dict[str, Any]) -> None:
        first = next(i for i, p in enumerate(d["probes"]) if p["findings"])
        d["findings"][0] = {"check_id": "nan", "evidence": [math.nan]}
        d["probes"][first]["findings"][0] = {"check_id": "nan", "evidence": [float("nan")]}

    variant(nan_nested)

    def pair(flat: dict[str, Any], own: dict[str, Any]) -> Any:
        def edit(d: dict[str, Any]) -> None:
            first = next(i for i, p in enumerate(d["probes"]) if p["findings"])
            d["findings"][0], d["probes"][first]["findings"][0] = flat, own

        return edit

    # equal to ==, not to _key: JSON tells 1 from true and 1.0; tuple keys keep the key order
    variant(pair({"id": "x", "evidence": [1]}, {"id": "x", "evidence": [True]}))
    variant(pair({"id": "x", "evidence": [1]}, {"id": "x", "evidence": [1.0]}))
    variant(pair({"id": "x", "observed": "a"}, {"observed": "a", "id": "x"}))
    return out


@pytest.mark.parametrize("path", SNAPSHOTS[:2], ids=lambda p: p.name)
def test_documents_off_the_fast_path_pack_as_before(path: Path) -> None:
    for doc in _mutations(expanded(path)):
        same(doc)


def test_random_shuffles_pack_as_before() -> None:
    doc = expanded(SNAPSHOTS[0])
    rng = random.Random(30)
    for _ in range(40):
        d = copy.deepcopy(doc)
        i, j = rng.randrange(len(d["findings"])), rng.randrange(len(d["findings"]))
        d["findings"][i], d["findings"][j] = d["findings"][j], d["findings"][i]
        same(d)
