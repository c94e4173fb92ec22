"""The stored shape of a snapshot (schema 3): each record once per target, each finding once.

In memory a `Snapshot` keeps every probe's own `records` and `findings` (what the TUI, diff and the runner use).
Written out (`--json`, `--save`, fleets) the document is packed:

* `records` (top level): every distinct command record once, without `probe_id` (the runner runs a line once per
  target and gives every probe that declared it the same record; schema 2 wrote it once per probe);
* `probes[i].record_refs`: the positions in `records` of that probe's records, in its order;
* `findings` (top level, as before): every probe's findings in probe order; `probes[i].finding_refs`: the
  positions of that probe's findings there, and `probes[i].findings` null (schema 2 wrote each finding twice).
  A probe whose findings are not all in the flat list keeps them inline (`findings`, `finding_refs` null).

`pack` and `unpack` are pure dict -> dict and exact inverses (unpack(pack(d)) == d). Readers of plain
documents (fleet, share) use `records_of` / `probe_records`, which read either shape.
"""

from __future__ import annotations

import json
import marshal
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from gpuaudit.snapshots.plain import is_packed as is_packed
from gpuaudit.snapshots.plain import records_of as records_of

Document = dict[str, Any]


# json.dumps(..., sort_keys=True, default=str) without building an encoder per finding
_JSON_KEY = json.JSONEncoder(sort_keys=True, default=str)


def _key(value: Mapping[str, Any], drop: str | None = None) -> object:
    """A hashable identity of a record/finding dict (its fields, `drop` left out)."""
    kept = (
        value
        if drop is None or drop not in value
        else {k: v for k, v in value.items() if k != drop}
    )
    if not any(type(v) is list or type(v) is dict for v in kept.values()):
        try:
            key = tuple(kept.items())
            hash(key)
            return key
        except TypeError:
            pass
    # a list or dict inside (findings' evidence): compare by JSON
    return _JSON_KEY.encode(kept)


def _same(a: Any, b: Any) -> bool:
    """a and b are the same plain data, types and key order included (so `_key` gives both one key): equal
    marshal bytes (types, order, float bits) and equal values (a NaN is not equal to another NaN, as in `_key`'s
    tuples). False is only "not proven": the caller then keys them."""
    if a is b:
        return True
    try:
        return marshal.dumps(a, 2) == marshal.dumps(b, 2) and a == b
    except ValueError:  # not plain data (a model, a datetime): only `_key` can say
        return False


def refs_in_order(
    groups: Iterable[Sequence[Any]], flat: Sequence[Any], same: Callable[[Any, Any], bool]
) -> list[list[int]] | None:
    """The finding_refs of every group (a probe's findings) when the flat list is the groups' findings in order
    (what Snapshot.from_run writes): position j of the flat list is the j-th finding overall, so it is the first
    free slot with its key, what the slot search below would take, without keying each finding twice. None when
    any finding is not `same` as its place in the flat list (the slot search decides)."""
    refs: list[list[int]] = []
    j = 0
    for group in groups:
        taken = list(range(j, j + len(group)))
        if len(flat) < j + len(group) or not all(map(same, group, flat[j : j + len(group)])):
            return None
        refs.append(taken)
        j += len(group)
    return refs


def _findings_of(probe: Any) -> list[Any]:
    findings = probe.get("findings") if isinstance(probe, Mapping) else None
    return findings if isinstance(findings, list) else []


def _same_finding(f: Any, g: Any) -> bool:
    return isinstance(f, Mapping) and _same(f, g)


def pack(doc: Document, finding_refs: list[list[int]] | None = None) -> Document:
    """An expanded document (probes with their own records and findings) -> the stored shape.

    `finding_refs`: each probe's finding_refs when the caller already knows them (Snapshot's serializer: each
    probe's findings are the very objects at those places of the flat list, so their dicts would be equal); its
    probes' own `findings` may then be left out of `doc` (serialised once, in the flat list, issue 30)."""
    if is_packed(doc) or not isinstance(doc.get("probes"), list):
        return doc
    records: list[Any] = []
    where: dict[object, int] = {}
    flat = doc.get("findings") if isinstance(doc.get("findings"), list) else None
    if finding_refs is not None:
        in_order: list[list[int]] | None = finding_refs
    else:
        in_order = (
            None
            if flat is None
            else refs_in_order(map(_findings_of, doc["probes"]), flat, _same_finding)
        )
    slots: dict[object, list[int]] = {}
    flat_keys: list[object] = []
    for i, f in enumerate(flat if in_order is None and flat is not None else []):
        flat_keys.append(_key(f) if isinstance(f, Mapping) else None)
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
            k = _key(rec)
            if k not in where:
                where[k] = len(records)
                records.append(rec)
            refs.append(where[k])
        out.pop("records", None)
        out["record_refs"] = refs
        findings = probe.get("findings")
        if in_order is not None and isinstance(findings, list):
            out["findings"], out["finding_refs"] = None, in_order[len(probes)]
        elif flat is not None and isinstance(findings, list):
            taken: list[int] = []
            for f in findings:
                free = slots.get(_key(f)) if isinstance(f, Mapping) else None
                if not free:
                    break
                taken.append(free.pop(0))
            if len(taken) == len(findings):
                out["findings"], out["finding_refs"] = None, taken
            else:  # not in the flat list: keep them inline, give the slots back
                for i in taken:
                    slots.setdefault(flat_keys[i], []).insert(0, i)
                out["finding_refs"] = None
        probes.append(out)
    packed = dict(doc)
    packed["probes"] = probes
    packed["records"] = records
    return packed


def _pick(items: list[Any], refs: object, what: str) -> list[Any]:
    if not isinstance(refs, list):
        raise ValueError(f"{what} is not a list")
    try:
        return [items[i] for i in refs if isinstance(i, int) and i >= 0]
    except IndexError:
        raise ValueError(f"{what} points past the end of the document's list") from None


def _with_probe_id(record: Mapping[str, Any], probe_id: object) -> dict[str, Any]:
    """The record with its probe's id, keys in schema 2's order (target, probe_id, command_id, ...)."""
    out: dict[str, Any] = {"target": record["target"]} if "target" in record else {}
    out["probe_id"] = probe_id
    out.update(record)
    return out


def unpack(doc: Document) -> Document:
    """The stored shape -> the expanded one (probes with their own records and findings)."""
    if not is_packed(doc):
        return doc
    records = doc["records"]
    found = doc.get("findings")
    flat: list[Any] = found if isinstance(found, list) else []
    probes: list[Any] = []
    for probe in doc.get("probes") or []:
        if not isinstance(probe, Mapping):
            probes.append(probe)
            continue
        out = dict(probe)
        pid = out.get("probe_id")
        refs = out.pop("record_refs", [])
        out["records"] = [
            _with_probe_id(r, pid) if isinstance(r, Mapping) else r
            for r in _pick(records, refs, "record_refs")
        ]
        refs = out.pop("finding_refs", None)
        if refs is not None:
            out["findings"] = _pick(flat, refs, "finding_refs")
        elif out.get("findings") is None:
            out.pop("findings", None)
        probes.append(out)
    expanded = {k: v for k, v in doc.items() if k != "records"}
    expanded["probes"] = probes
    return expanded


def probe_records(doc: Mapping[str, Any], probe: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """One probe's record dicts, stored or expanded shape."""
    if "record_refs" in probe and is_packed(doc):
        return [r for r in _pick(doc["records"], probe["record_refs"], "record_refs")]
    return [r for r in probe.get("records") or [] if isinstance(r, Mapping)]
