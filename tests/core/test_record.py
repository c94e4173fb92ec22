"""probes/core/record.py: the engine's records behave as the pydantic models they replace did (issue 30).

Construction converts what pydantic converted for the shapes the records declare; the plain data and the JSON
bytes are pydantic's; reading untrusted data still goes through pydantic; the suite's check catches a value
pydantic would have changed and the record did not.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from datetime import UTC, datetime, timedelta, timezone
from enum import Enum
from pathlib import Path
from typing import Any, Literal

import pytest
from gpuaudit.probes.core import record
from gpuaudit.probes.core.models import EvidenceRef, Finding, ProbeResult, Severity
from gpuaudit.probes.core.record import Record, field
from gpuaudit.snapshots import store
from pydantic import TypeAdapter, ValidationError

pytestmark = pytest.mark.fast


class Colour(str, Enum):
    RED = "red"
    BLUE = "blue"


class Leaf(Record, frozen=True):
    """A nested record."""

    name: str
    weight: float = 0.0


class Tree(Record):
    """Every shape the engine's records declare."""

    kind: Literal["a", "b"] = "a"
    colour: Colour = Colour.RED
    ratio: float | None = None
    leaves: list[Leaf] = []
    by_name: dict[str, Leaf] = field(default_factory=dict)
    pair: tuple[int, float] | None = None
    links: list[tuple[int, bool, float | None]] = []
    top: Leaf | None = None
    when: datetime | None = None
    extra: dict[str, Any] = {}


def test_keyword_only_frozen_and_own_defaults():
    with pytest.raises(TypeError):
        Leaf("x")  # type: ignore[misc]
    leaf = Leaf(name="x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        leaf.name = "y"  # type: ignore[misc]
    a, b = Tree(), Tree()
    a.leaves.append(leaf)
    assert (
        b.leaves == [] and a.extra is not b.extra
    )  # `= []` / `= {}`: each record its own, as in pydantic
    assert hash(Leaf(name="x")) == hash(Leaf(name="x"))
    assert Tree.__doc__ == "Every shape the engine's records declare."
    assert EvidenceRef.__doc__ and "(*" not in EvidenceRef.__doc__


def test_construction_converts_what_pydantic_converted():
    t = Tree(
        colour="blue",  # type: ignore[arg-type]
        ratio=2,
        leaves=[{"name": "a", "weight": 1}],  # type: ignore[list-item]
        by_name={"b": {"name": "b"}},  # type: ignore[dict-item]
        pair=[1, 2],  # type: ignore[arg-type]
        links=[[0, True, 3]],  # type: ignore[list-item]
        top={"name": "t", "unknown": 1},  # type: ignore[arg-type]
    )
    assert t.colour is Colour.BLUE and type(t.ratio) is float
    assert t.leaves == [Leaf(name="a", weight=1.0)] and type(t.leaves[0].weight) is float
    assert t.by_name == {"b": Leaf(name="b")}
    assert t.pair == (1, 2.0) and type(t.pair[1]) is float
    assert t.links == [(0, True, 3.0)]
    assert t.top == Leaf(name="t")  # an unknown key is left out, as pydantic ignored it
    reference = TypeAdapter(Tree).validate_python(
        {"colour": "blue", "ratio": 2, "leaves": [{"name": "a", "weight": 1}], "by_name": {"b": {"name": "b"}},
         "pair": [1, 2], "links": [[0, True, 3]], "top": {"name": "t"}}
    )  # fmt: skip
    assert t == reference


def test_values_of_the_declared_types_are_kept_as_they_are():
    leaves = [Leaf(name="a")]
    findings = [Finding(id="x.y", severity=Severity.OK, probe="x", title="t")]
    t = Tree(leaves=leaves)
    p = ProbeResult(probe_id="x", title="X", findings=findings)
    assert (
        t.leaves is leaves and p.findings is findings
    )  # the snapshot finds its findings by identity
    assert p.model_copy(update={"summary": "s"}).findings is findings


def test_of_leaves_out_what_is_not_a_field():
    assert Leaf.of({"name": "n", "_scratch": {1: 2}}, weight=2.0) == Leaf(name="n", weight=2.0)


@pytest.mark.parametrize("encoder", ["standard library", "pydantic_core"])
def test_plain_data_and_json_bytes_are_pydantics(encoder):
    fast = (
        record.fast_json() if encoder == "pydantic_core" else contextlib.nullcontext()
    )  # a fleet's
    when = datetime(2026, 12, 4, 20, 1, 2, 345, tzinfo=UTC)
    t = Tree(
        colour=Colour.BLUE, ratio=float("inf"), leaves=[Leaf(name="é", weight=1e-5)], pair=(1, 2.5),
        when=when, by_name={"k": Leaf(name="k")}, extra={"d": [1, "x"], "t": when},
    )  # fmt: skip
    plain = Tree(leaves=[Leaf(name="é", weight=0.25)], when=when, pair=(1, 2.5), top=Leaf(name="t"))
    with fast:
        encoded = {i: (t.to_json(indent=i), plain.to_json(indent=i)) for i in (None, 1, 2)}
    adapter = TypeAdapter(Tree)
    assert t.model_dump(mode="json") == adapter.dump_python(t, mode="json")
    assert t.model_dump() == adapter.dump_python(t)
    for indent, (got, got_plain) in encoded.items():
        assert json.loads(got) == json.loads(adapter.dump_json(t, indent=indent))
        assert got_plain == adapter.dump_json(
            plain, indent=indent
        )  # the same layout, byte for byte
    # a float below 1e-4: Python's text from the standard library's encoder (the same number)
    tiny = b"1e-05" if encoder == "standard library" else b"0.00001"
    assert tiny in encoded[None][0] and b"0.00001" in adapter.dump_json(t)
    assert b'"ratio":null' in encoded[None][0]  # JSON has no infinity: null, as pydantic wrote it
    dumped = t.model_dump(mode="json")
    assert dumped["when"] == "2026-12-04T20:01:02.000345Z" and dumped["colour"] == "blue"
    assert dumped["pair"] == [1, 2.5] and dumped["ratio"] == float("inf")
    assert t.model_dump(include={"kind", "top"}, exclude_none=True) == {"kind": "a"}
    keys = Tree(
        extra={"k": {0: 1, 1.5: 2, True: 3, None: 4, Colour.RED: 5, datetime(2026, 1, 1): 6}}
    )
    assert keys.model_dump(mode="json") == adapter.dump_python(keys, mode="json")
    other = Tree(when=datetime(2026, 1, 1, tzinfo=timezone(timedelta(hours=2))))
    assert other.model_dump(mode="json")["when"] == adapter.dump_python(other, mode="json")["when"]


def test_the_case_study_writes_the_bytes_pydantic_wrote():
    for name in ("case-study-before", "case-study-after"):
        path = store.resolve(name)
        snapshot = store.load(path)
        assert snapshot.to_json(indent=1) + b"\n" == path.read_bytes()


def test_reading_validates_with_pydantic():
    assert Leaf.model_validate({"name": "a", "weight": "2"}) == Leaf(name="a", weight=2.0)
    assert Tree.model_validate_json(b'{"colour": "blue"}').colour is Colour.BLUE
    with pytest.raises(ValidationError) as caught:
        Tree.model_validate({"colour": "green"})
    assert isinstance(caught.value, ValueError)  # store.load's fast path catches ValueError
    assert Tree.model_json_schema()["properties"]["colour"] == {
        "$ref": "#/$defs/Colour",
        "default": "red",
    }


class Loose(Record):
    """A shape no converter handles: a set declared, a list given."""

    ids: set[int] = field(default_factory=set)


def test_the_check_fails_on_a_value_pydantic_would_have_changed():
    assert record._checking, "tests/conftest.py turns the check on"
    with pytest.raises(TypeError, match=r"Loose\.ids: list .* makes set"):
        Loose(ids=[1, 2])  # type: ignore[arg-type]
    Loose(ids={1, 2})


def test_plain_fields_cost_no_eval():
    assert record._from_text("list[str]") is not record._EVAL
    assert record._from_text("dict[str, Any] | None") is not record._EVAL
    assert record._from_text("Literal['pending', 'running']") is record._to_str
    assert record._from_text("str | None") is not record._EVAL
    assert record._from_text("list[EvidenceRef]") is record._EVAL  # a record: evaluated
    assert record._from_text("datetime | None") is record._EVAL


@pytest.mark.parametrize("encoder", ["standard library", "pydantic_core"])
def test_an_undecodable_name_never_fails_the_json(encoder):
    """A lone surrogate (a file name read with surrogateescape) becomes "?": the document is still UTF-8."""
    with record.fast_json() if encoder == "pydantic_core" else contextlib.nullcontext():
        assert record.json_bytes({"path": "/x/\udcff"}) == b'{"path":"/x/?"}'


def test_a_value_json_has_no_type_for_is_written_as_pydantic_wrote_it():
    """What a reader might leave in an `Any` field (a path, bytes, a set, a plain dataclass) never fails --json."""
    t = Tree(
        extra={
            "p": Path("/dev/nvidia0"),
            "b": b"ok",
            "s": {3},
            "d": Leaf(name="x"),
            "e": Colour.RED,
        }
    )
    assert json.loads(t.to_json()) == json.loads(TypeAdapter(Tree).dump_json(t))


class Scalars(Record):
    """Every plain field shape, for the conversions and refusals pydantic made."""

    i: int = 0
    f: float = 0.0
    b: bool = False
    s: str = ""
    o: int | None = None
    names: list[str] = []
    counts: dict[str, int] = {}
    pair: tuple[int, float] | None = None
    when: datetime | None = None
    state: Literal["a", "b"] = "a"


LAX = [
    *(("i", v) for v in (True, "3", " 3 ", 3.0, 3.5, "3.0", b"3", None, "x", [1])),
    *(("f", v) for v in (True, "8.0", " 8 ", 3, "x", None)),
    *(("b", v) for v in (1, 0, 2, "yes", "off", "t", 1.0, None, "maybe")),
    *(("s", v) for v in (1, True, b"x", 1.5, None)),
    *(("o", v) for v in (None, "4", "four")),
    *(("names", v) for v in (("a",), {"a"}, "ab", {"a": 1}, [1])),
    *(("counts", v) for v in ({"a": "1"}, [("a", 1)], {"a": "x"})),
    *(("pair", v) for v in ([1, 2], (1, "2.5"), [1, 2, 3], [1], "12")),
    *(("when", v) for v in ("2026-01-01T00:00:00Z", "2026-01-01T02:00:00+02:00", "soon", 5)),
    *(("state", v) for v in ("b", 1)),
]


@pytest.mark.parametrize(("name", "value"), LAX, ids=[f"{n}={v!r}" for n, v in LAX])
def test_construction_accepts_and_refuses_what_pydantic_did(name, value, monkeypatch):
    """A reader's value of another type (a target's JSON, a regex group): converted where pydantic converted it,
    refused (one ValueError naming the field) where pydantic refused it."""
    monkeypatch.setattr(record, "_checking", False)  # compared with pydantic here, value by value
    try:
        expected: Scalars | None = TypeAdapter(Scalars).validate_python({name: value})
    except ValidationError:
        expected = None
    if expected is None:
        with pytest.raises(ValueError, match=rf"Scalars\.{name}: "):
            Scalars(**{name: value})
    else:
        got = Scalars(**{name: value})
        assert record._differs(got, expected, "Scalars") is None


def test_a_generator_becomes_a_list():
    assert Scalars(names=(n for n in "ab")).names == ["a", "b"]  # type: ignore[arg-type]
