"""`fleet DIR` at scale reads only what the comparison needs (probes/core/fleet/documents.py light documents):
the same nodes, the same findings summary and the same document keys as a whole parse, on every snapshot in the
repository, in both stored shapes, both indents the tool writes, and with whatever the fast path does not know
parsed whole. The 1,000-snapshot timing is tests/bench/bench_fleet_compare.py (figures in docs/deploy/README.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gpuaudit.probes.core.fleet.documents import (
    LightDocument,
    comparison_command_ids,
    light_document,
    load_document,
    node_name,
)
from gpuaudit.probes.core.fleet.model import findings_summary
from gpuaudit.probes.core.fleet.peers import node_from_document
from gpuaudit.snapshots.compact import unpack

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = sorted(
    p
    for d in ("snapshots/examples", "tests/fixtures/snapshots", "tests/fixtures/releases")
    for p in (ROOT / d).rglob("*.json")
)


def same(path: str, full: dict, light: dict) -> None:
    assert node_from_document(node_name(full, path), path, full) == node_from_document(
        node_name(light, path), path, light
    )
    assert findings_summary(full) == findings_summary(light)
    assert set(light) == set(full)


@pytest.mark.parametrize("path", SNAPSHOTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_light_document_compares_like_the_whole_one(path, tmp_path):
    full = json.loads(path.read_bytes())
    if not isinstance(full, dict) or "probes" not in full:
        pytest.skip("not a snapshot")
    variants = {"as stored": path.read_bytes()}
    for indent in (1, 2):  # the store writes indent=1, --json indent=2
        variants[f"indent {indent}"] = json.dumps(full, indent=indent, ensure_ascii=False).encode()
    if full.get("records") is not None:  # the stored shape, and its expanded (schema 2) form
        variants["expanded"] = json.dumps(unpack(full), indent=1).encode()
    for name, data in variants.items():
        light = light_document(data)
        assert isinstance(light, LightDocument), name
        same(str(path), json.loads(data), light)
        f = tmp_path / f"{name}.json"
        f.write_bytes(data)
        same(str(path), json.loads(data), load_document(f))


def test_what_the_fast_path_does_not_know_is_parsed_whole(tmp_path):
    doc = json.loads((ROOT / "snapshots/examples/case-study-before.json").read_bytes())
    compact = json.dumps(doc).encode()  # no newlines: not the layout the fast path reads
    assert light_document(compact) is None
    unknown = json.dumps({**doc, "future_field": {"x": 1}}, indent=1).encode()
    assert light_document(unknown) is None  # an unknown top-level key: never swallowed
    truncated = json.dumps(doc, indent=1).encode()[:-50]
    assert light_document(truncated) is None
    f = tmp_path / "t.json"
    f.write_bytes(truncated)
    with pytest.raises(ValueError):
        load_document(f)
    f.write_bytes(compact)
    assert type(load_document(f)) is dict and "records" in load_document(f)


def test_the_comparisons_command_ids_are_asked_of_its_readers():
    ids = comparison_command_ids()
    assert {"smi_gpu_ids", "dmidecode_bios", "lspci_vvv", "uname_r", "pyenv"} <= ids
    assert "dmesg" not in ids and "lspci_tv" not in ids


def test_load_nodes_on_many_processes_is_the_same_as_in_one(tmp_path):
    from gpuaudit.probes.core.fleet.documents import load_nodes

    doc = json.loads((ROOT / "snapshots/examples/case-study-after.json").read_bytes())
    paths = []
    for i in range(70):  # over the in-process threshold
        doc["target_states"]["host"]["hostname"] = f"gpu{i:02d}"
        p = tmp_path / f"gpu{i:02d}.json"
        p.write_text(json.dumps(doc, indent=1))
        paths.append(p)
    (tmp_path / "broken.json").write_text("{not json")
    paths.append(tmp_path / "broken.json")
    one, two = load_nodes(paths, workers=1), load_nodes(paths, workers=2)
    assert one == two
    assert [p.name for p, node, why in one if node is None] == ["broken.json"]
    assert one[0][1] is not None and one[0][1].name == "gpu00"
