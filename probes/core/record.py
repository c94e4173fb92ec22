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
declared, an enum's value, an int for a float, text for a number, a list for a tuple), from converters built
once per class, and refuses what pydantic refused with one ValueError naming the field; a value of the
declared type is kept as it is. `check_records(True)` (the test suite turns it on) validates each
record built against its declared types with pydantic (once per shape of its values) and fails on any value
pydantic would have changed that the record did not.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import sys
from collections.abc import Iterator
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
        got = _NAMES[cls] = tuple(_fields_of(cls))
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
            try:
                converted = convert(value)
            except (TypeError, ValueError) as exc:
                # what pydantic refused: one line naming the field
                raise ValueError(f"{type(self).__name__}.{name}: {exc}") from None
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
        datetimes into ISO 8601 text (`Z` for UTC) and tuples into lists, as pydantic's model_dump did.
        `include` / `exclude` / `exclude_none` apply to this record's own fields (the program's one use)."""
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


_fast_encoder: list[Any] = []
"""pydantic_core's `to_json` while a fleet runs (fast_json)."""


@contextlib.contextmanager
def fast_json() -> Iterator[None]:
    """Within it, records' JSON is written by pydantic_core's encoder (~4x the standard library's on a snapshot):
    a fleet imports it once for all its hosts (tui/cli/fleet_hosts.py). The document is the same but for a float
    below 1e-4, written `0.00001` there and `1e-05` by the standard library (the same number)."""
    from pydantic_core import to_json

    _fast_encoder.append(to_json)
    try:
        yield
    finally:
        _fast_encoder.pop()


def json_bytes(data: Any, indent: int | None = None) -> bytes:
    """Plain data (a record's json-mode dump) as UTF-8 JSON bytes; see Record.to_json and fast_json. A value
    JSON has no type for (a path, bytes, a set: what a reader might leave in an `Any` field) is written as
    pydantic wrote it, never a traceback."""
    import json

    if _fast_encoder:
        try:
            return _fast_encoder[-1](data, indent=indent, inf_nan_mode="null")  # type: ignore[no-any-return]
        except Exception:  # noqa: BLE001 - a lone surrogate: the standard library's path below replaces it
            pass
    separators = (",", ":") if indent is None else (",", ": ")
    options: dict[str, Any] = dict(
        indent=indent, separators=separators, ensure_ascii=False, default=_json_default
    )
    try:
        text = json.dumps(data, allow_nan=False, **options)
    except ValueError:  # an infinity or a NaN: JSON has none (pydantic wrote null)
        text = json.dumps(_finite(data), **options)
    # a lone surrogate (an undecodable file name) becomes "?"
    return text.encode("utf-8", "replace")


def _json_default(value: Any) -> Any:
    """What the standard library's encoder has no type for, as pydantic's serializer wrote it."""
    if isinstance(value, Record | Enum | datetime | date | time | timedelta):
        return _plain(value, True)
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, set | frozenset) or hasattr(value, "__iter__"):
        return list(value)
    return str(value)


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
            convert = _from_text(f.type) if isinstance(f.type, str) else _EVAL
            if convert is _EVAL:
                convert = _converter(_evaluated(f.type, cls))
            if convert is not None:
                out.append((f.name, convert))
        got = _CONVERTERS[cls] = tuple(out)
    return got


_EVAL = object()
"""_from_text's answer for an annotation it leaves to eval (one naming a record, an enum, a datetime, a tuple)."""


def _evaluated(annotation: Any, cls: type) -> Any:
    if not isinstance(annotation, str):
        return annotation
    module = sys.modules.get(cls.__module__)
    # the CLI's code cache serves this name (tui/cli/code_cache.py)
    code = compile(annotation, "<annotation>", "eval")
    return eval(code, vars(module) if module else {}, {})  # noqa: S307 - the class's own annotation


def _from_text(text: str) -> Any:  # noqa: PLR0911 - one case per shape
    """The converter of a plain annotation read from its text, without eval (most fields: `str`, `int | None`,
    `list[str]`, `dict[str, str]`, a Literal of strings), or _EVAL."""
    text = text.strip()
    parts = _split(text, "|")
    if len(parts) > 1:
        inner = [p for p in parts if p != "None"]
        if len(inner) != 1 or len(parts) != 2:
            return _EVAL
        convert = _from_text(inner[0])
        return convert if convert is None or convert is _EVAL else _optional(convert)
    if text.startswith("Literal[") and text.endswith("]"):
        values = _split(text[8:-1], ",")
        return _to_str if all(v[:1] in "'\"" and v[-1:] == v[:1] for v in values) else _EVAL
    if text.startswith("list[") and text.endswith("]"):
        convert = _from_text(text[5:-1])
        return convert if convert is _EVAL else _list_of(convert)
    if text.startswith("dict[") and text.endswith("]"):
        kv = _split(text[5:-1], ",")
        convert = _from_text(kv[1]) if len(kv) == 2 else _EVAL
        return convert if convert is _EVAL else _dict_of(convert)
    return _SCALAR_TEXT.get(text, _EVAL)


def _split(text: str, sep: str) -> list[str]:
    """`text` split at `sep` outside brackets and quotes, each part stripped."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return parts


def _converter(tp: Any) -> Any:  # noqa: PLR0911 - one case per shape
    import types
    import typing

    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp in _SCALAR_TYPES:
        return _SCALAR_TYPES[tp]
    if (
        origin is typing.Literal
    ):  # the value itself is not checked (the suite's check does, per shape)
        return _to_str if all(type(a) is str for a in args) else None
    if tp is datetime:
        return _to_datetime
    if isinstance(tp, type) and issubclass(tp, Enum):
        return lambda v, e=tp: v if type(v) is e else e(v)
    if isinstance(tp, type) and issubclass(tp, Record):
        return lambda v, r=tp: r.of(v) if type(v) is dict else v
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1:
            return None
        convert = _converter(inner[0])
        return None if convert is None else _optional(convert)
    if origin is list or tp is list:
        return _list_of(_converter(args[0]) if args else None)
    if origin is dict or tp is dict:
        return _dict_of(_converter(args[1]) if len(args) == 2 else None)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return lambda v, c=_converter(args[0]): _tuple(v, None, c)
        return lambda v, cs=[_converter(a) for a in args]: _tuple(v, cs, None)
    return None


def _optional(convert: Any) -> Any:
    return lambda v: v if v is None else convert(v)


def _list_of(convert: Any) -> Any:
    if convert is None:
        return lambda v: v if type(v) is list else _as_list(v)
    return lambda v: _each(v if type(v) is list else _as_list(v), convert)


def _dict_of(convert: Any) -> Any:
    if convert is None:
        return lambda v: v if type(v) is dict else _as_dict(v)
    return lambda v: _values(v if type(v) is dict else _as_dict(v), convert)


def _as_list(v: Any) -> list[Any]:
    """pydantic's lax list: a tuple, set or generator becomes a list; text, bytes or a mapping is refused."""
    if isinstance(v, str | bytes | bytearray | dict) or not hasattr(v, "__iter__"):
        raise ValueError(f"a list expected, got {type(v).__name__}")
    return list(v)


def _as_dict(v: Any) -> dict[Any, Any]:
    from collections.abc import Mapping

    if not isinstance(v, Mapping):
        raise ValueError(f"a mapping expected, got {type(v).__name__}")
    return dict(v)


def _tuple(v: Any, converters: list[Any] | None, each: Any) -> Any:
    if isinstance(v, str | bytes | bytearray | dict) or not hasattr(v, "__iter__"):
        raise ValueError(f"a tuple expected, got {type(v).__name__}")
    items = tuple(v)
    if converters is not None:
        if len(converters) != len(items):  # pydantic refused a fixed tuple of another length
            raise ValueError(f"{len(converters)} items expected, got {len(items)}")
        items = tuple(c(x) if c is not None else x for c, x in zip(converters, items, strict=True))
    elif each is not None:
        items = tuple(each(x) for x in items)
    if type(v) is tuple and all(a is b for a, b in zip(items, v, strict=True)):
        return v
    return items


def _text_of(v: Any) -> str:
    if isinstance(v, bytes | bytearray):
        return bytes(v).decode("utf-8")
    if isinstance(v, str):
        return v
    raise ValueError(f"a number expected, got {type(v).__name__}")


def _to_str(v: Any) -> Any:
    if type(v) is str:
        return v
    if isinstance(v, str):  # a str subclass (an enum of text): kept, as pydantic kept it
        return v
    if isinstance(v, bytes | bytearray):
        return bytes(v).decode("utf-8")
    raise ValueError(f"text expected, got {type(v).__name__}")


def _to_int(v: Any) -> Any:
    kind = type(v)
    if kind is int:
        return v
    if kind is bool:
        return int(v)
    if kind is float:
        if v.is_integer():
            return int(v)
        raise ValueError(f"a whole number expected, got {v!r}")
    text = _text_of(v).strip()
    try:
        return int(text)
    except ValueError:
        number = float(text)
        if number.is_integer():
            return int(number)
        raise ValueError(f"a whole number expected, got {text!r}") from None


def _to_float(v: Any) -> Any:
    kind = type(v)
    if kind is float:
        return v
    if kind is int or kind is bool:
        return float(v)
    return float(_text_of(v).strip())


_TRUE = frozenset({"1", "t", "true", "y", "yes", "on"})
_FALSE = frozenset({"0", "f", "false", "n", "no", "off"})


def _to_bool(v: Any) -> Any:
    if type(v) is bool:
        return v
    if type(v) in (int, float) and v in (0, 1):
        return bool(v)
    if isinstance(v, str | bytes | bytearray):
        text = _text_of(v).strip().lower()
        if text in _TRUE or text in _FALSE:
            return text in _TRUE
    raise ValueError(f"true or false expected, got {v!r:.40}")


def _to_datetime(v: Any) -> Any:
    if isinstance(v, datetime):
        return v
    if type(v) in (int, float):  # a Unix time, in milliseconds past 2e10, as pydantic read one
        from datetime import UTC

        return datetime.fromtimestamp(v / 1000 if abs(v) > 2e10 else v, UTC)
    return datetime.fromisoformat(_text_of(v).strip())


_SCALAR_TYPES: dict[Any, Any] = {str: _to_str, int: _to_int, float: _to_float, bool: _to_bool}
_SCALAR_TEXT: dict[str, Any] = {
    "str": _to_str,
    "int": _to_int,
    "float": _to_float,
    "bool": _to_bool,
    "Any": None,
    "object": None,
}


def _each(items: list[Any], convert: Any) -> list[Any]:
    return _copy_on_change(items, enumerate(items), convert)  # type: ignore[no-any-return]


def _values(mapping: dict[Any, Any], convert: Any) -> dict[Any, Any]:
    return _copy_on_change(mapping, mapping.items(), convert)  # type: ignore[no-any-return]


def _copy_on_change(container: Any, items: Any, convert: Any) -> Any:
    """`container` with `convert` applied to each (key, value) of `items`: the same object when nothing changed
    (the snapshot finds its findings by identity), else a copy holding the converted values."""
    out = None
    for key, value in items:
        converted = convert(value)
        if converted is not value:
            if out is None:
                out = container.copy()
            out[key] = converted
    return container if out is None else out


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
