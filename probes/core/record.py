"""Plain records: the engine's data model, without pydantic on an audit's path (issue 30).

A `Record` subclass is a keyword-only dataclass (`class Finding(Record, frozen=True)`), built by the standard
library: no core schema, validator or serializer is built at import, and constructing one runs the generated
`__init__` only. pydantic is imported on first use of what needs it, never by an audit: `model_validate` /
`model_validate_json` (reading a snapshot, a diff or a fleet file: untrusted input, validated and coerced
exactly as before) and `model_json_schema` (the published schemas) go through a `TypeAdapter` of the class.

The methods keep pydantic's names and meaning for what the program uses: `model_dump` (python or json mode,
`include` / `exclude` / `exclude_none`), `model_dump_json` / `to_json` (the layout pydantic wrote, by the standard
library's encoder), `model_copy(update=...)` (no validation, as in pydantic) and `model_fields`.

Construction makes the conversions pydantic made for the shapes the records declare (a dict where a record is
declared, an enum's value, an int for a float, a list for a tuple), from converters built once per class; a
value of the declared type is kept as it is. `check_records(True)` (the test suite turns it on) validates each
record built against its declared types with pydantic (once per shape of its values) and fails on any value
pydantic would have changed that the record did not.
"""

from __future__ import annotations

import dataclasses
import math
import re
import sys
from datetime import date, datetime, time, timedelta
from enum import Enum
from typing import Any, ClassVar, TypeVar, dataclass_transform

field = dataclasses.field
R = TypeVar("R", bound="Record")

_checking = False


def check_records(on: bool) -> None:
    """Validate every record built against its declared types (tests: a value pydantic would coerce fails)."""
    global _checking
    _checking = on


class _FieldsOf:
    """`Model.model_fields`: the class's fields by name, in order (a class-level property)."""

    def __get__(self, obj: object, owner: type) -> dict[str, dataclasses.Field[Any]]:
        return _fields_of(owner)


def _copier(default: list[Any] | dict[Any, Any] | set[Any]) -> Any:
    if not default:
        return type(default)
    import copy

    return lambda: copy.deepcopy(default)


# Per class, built once (plain dicts: a class is its own key)
_FIELDS: dict[type, dict[str, dataclasses.Field[Any]]] = {}
_NAMES: dict[type, tuple[str, ...]] = {}
_CONVERTERS: dict[type, tuple[tuple[str, Any], ...]] = {}
_ADAPTERS: dict[type, Any] = {}


def _fields_of(cls: type) -> dict[str, dataclasses.Field[Any]]:
    got = _FIELDS.get(cls)
    if got is None:
        got = _FIELDS[cls] = {f.name: f for f in dataclasses.fields(cls)}
    return got


def _names_of(cls: type) -> tuple[str, ...]:
    got = _NAMES.get(cls)
    if got is None:
        got = _NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return got


@dataclass_transform(kw_only_default=True, field_specifiers=(dataclasses.field,))
class Record:
    """Base of the engine's records: every subclass becomes a keyword-only dataclass (frozen when asked)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]
    model_fields: ClassVar[Any] = _FieldsOf()

    def __init_subclass__(cls, frozen: bool = False, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        for name in cls.__dict__.get("__annotations__", {}):
            default = cls.__dict__.get(name)
            # `x: list[str] = []`: each record gets its own copy, as in pydantic
            if isinstance(default, list | dict | set):
                setattr(cls, name, field(default_factory=_copier(default)))
        doc = cls.__doc__
        # no generated signature text for a class without a docstring (it costs inspect.signature at import)
        cls.__doc__ = doc or " "
        dataclasses.dataclass(cls, frozen=frozen, kw_only=True)
        cls.__doc__ = doc

    def __post_init__(self) -> None:
        for name, convert in _converters(type(self)):
            value = getattr(self, name)
            converted = convert(value)
            if converted is not value:
                object.__setattr__(self, name, converted)
        if _checking:
            _check(self)

    @classmethod
    def of(cls: type[R], fields: dict[str, Any], **more: Any) -> R:
        """A record from a mapping that may hold more than its fields (a reader's scratch keys, such as
        firmware's `_bios_raw`): those are left out, as pydantic ignored them."""
        names = _fields_of(cls)
        return cls(**{k: v for k, v in fields.items() if k in names}, **more)

    # --- what the program reads and writes ---------------------------------------------------------------

    def model_copy(self: R, *, update: dict[str, Any] | None = None, deep: bool = False) -> R:
        """A copy with `update`'s fields replaced, shallow unless `deep`; as pydantic's model_copy, a name that is
        not a field changes nothing (a property keeps answering)."""
        changes = {k: v for k, v in (update or {}).items() if k in _fields_of(type(self))}
        if deep:
            import copy

            return dataclasses.replace(copy.deepcopy(self), **changes)
        return dataclasses.replace(self, **changes)

    def model_dump(
        self,
        *,
        mode: str = "python",
        include: set[str] | None = None,
        exclude: set[str] | None = None,
        exclude_none: bool = False,
    ) -> dict[str, Any]:
        """The record as plain data: nested records as dicts; `json` mode also turns enums into their values,
        datetimes into ISO 8601 text (`Z` for UTC) and tuples into lists, as pydantic's model_dump did."""
        data = self._plain(mode == "json")
        if include is not None or exclude is not None or exclude_none:
            data = {
                k: v
                for k, v in data.items()
                if (include is None or k in include)
                and (exclude is None or k not in exclude)
                and not (exclude_none and v is None)
            }
        return data

    def to_json(self, *, indent: int | None = None) -> bytes:
        """The record as UTF-8 JSON, laid out as pydantic's model_dump_json wrote it (compact, or `indent`
        spaces, non-ASCII as is, an infinity or NaN as null), by the standard library's encoder: importing
        pydantic_core cost an audit ~20 ms. A float is written as Python writes it (`1e-05` where pydantic
        wrote `0.00001`: the same number)."""
        return json_bytes(self._plain(True), indent)

    def model_dump_json(self, *, indent: int | None = None) -> str:
        return self.to_json(indent=indent).decode()

    def _plain(self, json: bool) -> dict[str, Any]:
        """This record's fields as plain data (a subclass may override: the snapshot's packed shape)."""
        out = {}
        for name in _names_of(type(self)):
            value = getattr(self, name)
            out[name] = value if type(value) in _SCALARS else _plain(value, json)
        return out

    # --- pydantic, on first use only (reading untrusted documents, the JSON Schemas) ---------------------

    @classmethod
    def model_validate(cls: type[R], obj: Any) -> R:
        return _adapter(cls).validate_python(obj)  # type: ignore[no-any-return]

    @classmethod
    def model_validate_json(cls: type[R], data: str | bytes) -> R:
        return _adapter(cls).validate_json(data)  # type: ignore[no-any-return]

    @classmethod
    def model_json_schema(
        cls, *, mode: str = "validation", by_alias: bool = True
    ) -> dict[str, Any]:
        schema: dict[str, Any] = _adapter(cls).json_schema(mode=mode, by_alias=by_alias)
        return schema

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        """The dataclass's schema, behind the class's own `_before_validate` when it has one (the snapshot's
        packed document is expanded before its fields are validated)."""
        schema = handler(source)
        before = cls.__dict__.get("_before_validate")
        if before is None:
            return schema
        from pydantic_core import core_schema

        return core_schema.no_info_before_validator_function(before.__get__(None, cls), schema)


def json_bytes(data: Any, indent: int | None = None) -> bytes:
    """Plain data (a record's json-mode dump) as UTF-8 JSON bytes; see Record.to_json.

    Where pydantic_core is loaded already (a fleet loads it once for all its hosts: tui/cli/fleet_hosts.py; a
    replay validated with pydantic), its encoder writes them, ~4x faster than the standard library's on a
    snapshot; the document is the same but for a float below 1e-4, written `0.00001` there (the same number)."""
    import json

    encoder = sys.modules.get("pydantic_core")
    if encoder is not None:
        try:
            return encoder.to_json(data, indent=indent, inf_nan_mode="null")  # type: ignore[no-any-return]
        except Exception:  # noqa: BLE001 - a lone surrogate: the standard library's path below replaces it
            pass
    separators = (",", ":") if indent is None else (",", ": ")
    try:
        text = json.dumps(
            data, indent=indent, separators=separators, ensure_ascii=False, allow_nan=False
        )
    except ValueError:  # an infinity or a NaN: JSON has none (pydantic wrote null)
        text = json.dumps(_finite(data), indent=indent, separators=separators, ensure_ascii=False)
    return text.encode(
        "utf-8", "replace"
    )  # a lone surrogate (an undecodable file name) becomes "?"


def _finite(value: Any) -> Any:
    if type(value) is float:
        return value if math.isfinite(value) else None
    if type(value) is list:
        return [_finite(v) for v in value]
    if type(value) is dict:
        return {k: _finite(v) for k, v in value.items()}
    return value


def _adapter(cls: type) -> Any:
    got = _ADAPTERS.get(cls)
    if got is None:
        from pydantic import TypeAdapter

        got = _ADAPTERS[cls] = TypeAdapter(cls)
    return got


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _plain(value: Any, json: bool) -> Any:
    kind = type(value)
    if kind in _SCALARS:
        return value
    if isinstance(value, Record):
        return value._plain(json)
    if kind is list:
        return [v if type(v) in _SCALARS else _plain(v, json) for v in value]
    if kind is dict:
        return {
            k if type(k) is str else _key(k, json): v if type(v) in _SCALARS else _plain(v, json)
            for k, v in value.items()
        }
    if isinstance(value, Enum):
        return value.value if json else value
    if isinstance(value, tuple):
        items = [_plain(v, json) for v in value]
        return items if json else tuple(items)
    if isinstance(value, datetime | date | time | timedelta):
        return _iso(value) if json else value
    if isinstance(value, set | frozenset):
        return [_plain(v, json) for v in value] if json else {_plain(v, json) for v in value}
    if isinstance(value, list):
        return [_plain(v, json) for v in value]
    if isinstance(value, dict):
        return {_key(k, json): _plain(v, json) for k, v in value.items()}
    return value


def _key(key: Any, json: bool) -> Any:
    """A dict key; in json mode always text, as pydantic wrote it (`{0: ..}` -> `{"0": ..}`, True -> "true")."""
    if not json or type(key) is str:
        return key
    if isinstance(key, Enum):
        key = key.value
        if type(key) is str:
            return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, datetime | date | time | timedelta):
        return _iso(key)
    return str(key)


def _iso(value: datetime | date | time | timedelta) -> Any:
    """pydantic's ISO 8601 text: a UTC offset of zero is written `Z`."""
    if isinstance(value, timedelta):
        from pydantic_core import to_jsonable_python

        return to_jsonable_python(value)
    text = value.isoformat()
    if text.endswith("+00:00"):
        text = text[:-6] + "Z"
    return text


# --- the conversions pydantic made on construction, for the shapes the records declare --------------------
# A reader may hand over a dict where a record is declared, a list for a tuple, an int for a float or an enum's
# value for the enum: each field whose declared type needs it gets a converter, built once per class from its
# annotations. A value already of the declared type is returned as it is (the same object: the snapshot finds
# its findings by identity).


def _converters(cls: type) -> tuple[tuple[str, Any], ...]:
    got = _CONVERTERS.get(cls)
    if got is None:
        out = []
        for f in dataclasses.fields(cls):
            tp = _resolved(f.type, cls)
            convert = None if tp is None else _converter(tp)
            if convert is not None:
                out.append((f.name, convert))
        got = _CONVERTERS[cls] = tuple(out)
    return got


_NO_CONVERSION = frozenset(
    {"str", "int", "bool", "None", "Any", "Literal", "Role", "ProbeStatus", "object"}
)
_NAME = re.compile(r"[A-Za-z_]\w*")


def _resolved(annotation: Any, cls: type) -> Any:
    """The field's type, evaluated only when its text names something that may need converting (a record, an
    enum, float, tuple): most fields are `str`, `int | None`, `list[str]`, ... and cost no eval at all."""
    if not isinstance(annotation, str):
        return annotation
    if all(
        name in _NO_CONVERSION or name in ("list", "dict")
        for name in _NAME.findall(_unquoted(annotation))
    ):
        return None
    module = sys.modules.get(cls.__module__)
    code = compile(
        annotation, "<annotation>", "eval"
    )  # the CLI's code cache serves this name (tui/cli/code_cache.py)
    return eval(code, vars(module) if module else {}, {})  # noqa: S307 - the class's own annotation


def _unquoted(text: str) -> str:
    """The annotation without its string literals (a Literal's values are not names)."""
    return re.sub(r"'[^']*'|\"[^\"]*\"", "", text)


def _converter(tp: Any) -> Any:  # noqa: PLR0911 - one case per shape
    import types
    import typing

    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is float:
        return _to_float
    if isinstance(tp, type) and issubclass(tp, Enum):
        return lambda v, e=tp: v if type(v) is e else e(v)
    if isinstance(tp, type) and issubclass(tp, Record):
        return lambda v, r=tp: r.of(v) if type(v) is dict else v
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1:
            return None
        convert = _converter(inner[0])
        return None if convert is None else (lambda v, c=convert: v if v is None else c(v))
    if origin is list and args:
        convert = _converter(args[0])
        return None if convert is None else (lambda v, c=convert: _each(v, c))
    if origin is dict and len(args) == 2:
        convert = _converter(args[1])
        return None if convert is None else (lambda v, c=convert: _values(v, c))
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return lambda v, c=_converter(args[0]): _tuple(v, [c] * len(v))
        return lambda v, cs=[_converter(a) for a in args]: _tuple(v, cs)
    return None


def _tuple(v: Any, converters: list[Any]) -> Any:
    items = tuple(c(x) if c is not None else x for c, x in zip(converters, v, strict=False))
    if type(v) is tuple and all(a is b for a, b in zip(items, v, strict=True)):
        return v
    return items


def _to_float(v: Any) -> Any:
    return float(v) if type(v) is int else v


def _each(items: Any, convert: Any) -> Any:
    if type(items) is not list:
        items = list(items)
    out = None
    for i, v in enumerate(items):
        c = convert(v)
        if c is not v:
            if out is None:
                out = list(items)
            out[i] = c
    return items if out is None else out


def _values(mapping: Any, convert: Any) -> Any:
    out = None
    for k, v in mapping.items():
        c = convert(v)
        if c is not v:
            if out is None:
                out = dict(mapping)
            out[k] = c
    return mapping if out is None else out


# --- the test suite's check: nothing built relies on a conversion pydantic used to make ------------------


_SHAPES_SEEN: set[tuple[Any, ...]] = set()


def _shape(value: Any) -> Any:
    """The types a value is made of (a record inside is its type: it was checked when it was built)."""
    kind = type(value)
    if kind is list or kind is tuple or kind is set or kind is frozenset:
        return (kind, frozenset(_shape(v) for v in value))
    if kind is dict:
        return (
            kind,
            frozenset(type(k) for k in value),
            frozenset(_shape(v) for v in value.values()),
        )
    return kind


def _check(record: Record) -> None:
    """Validate once per shape of values (their types, not their text): the suite builds millions of records."""
    global _checking
    cls = type(record)
    given = {name: getattr(record, name) for name in _names_of(cls)}
    shape = (cls, *(_shape(v) for v in given.values()))
    if shape in _SHAPES_SEEN:
        return
    _checking = False  # the records pydantic builds while it validates are not checked again
    try:
        validated = _adapter(cls).validate_python(given)
    finally:
        _checking = True
    problem = _differs(record, validated, cls.__name__)
    if problem:
        raise TypeError(
            f"{problem} (a record is built from values of its declared types: probes/core/record.py)"
        )
    _SHAPES_SEEN.add(shape)


def _differs(a: Any, b: Any, where: str) -> str | None:
    if type(a) is not type(b):
        return f"{where}: {type(a).__name__} {a!r:.80} where the declared type makes {type(b).__name__}"
    if isinstance(a, Record):
        for name in _names_of(type(a)):
            p = _differs(getattr(a, name), getattr(b, name), f"{where}.{name}")
            if p:
                return p
        return None
    if isinstance(a, list | tuple):
        if len(a) != len(b):
            return f"{where}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            p = _differs(x, y, f"{where}[{i}]")
            if p:
                return p
        return None
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{where}: keys differ"
        for k in a:
            p = _differs(a[k], b[k], f"{where}[{k!r}]")
            if p:
                return p
        return None
    if a != b and not (isinstance(a, float) and math.isnan(a) and math.isnan(b)):
        return f"{where}: {a!r:.80} became {b!r:.80}"
    return None
