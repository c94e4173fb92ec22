"""Shared pure parsing helpers: csv rows, key/value lines, sizes, versions, cpu lists; the parse-once cache."""

from __future__ import annotations

import functools
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar, cast


def kv_lines(text: str, sep: str = ":") -> dict[str, str]:
    """`Key: value` lines -> dict (first occurrence wins, keys and values stripped)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if sep in line:
            k, v = line.split(sep, 1)
            out.setdefault(k.strip(), v.strip())
    return out


def version_tuple(text: str) -> tuple[int, ...]:
    """ "6.8.12-9-pve" -> (6, 8, 12); "590.48.01" -> (590, 48, 1); garbage -> ()."""
    m = re.match(r"\s*v?(\d+(?:\.\d+)*)", text)
    if not m:
        return ()
    return tuple(int(p) for p in m.group(1).split("."))


def cpu_list(text: str) -> list[int]:
    """ "0-3,8,10-11" -> [0,1,2,3,8,10,11]; empty -> []."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-", 1)
            cpus.extend(range(int(a), int(b) + 1))
        else:
            cpus.append(int(part))
    return cpus


_SIZE_UNITS = {
    "": 1,
    "B": 1,
    "K": 1024,
    "KB": 1024,
    "KIB": 1024,
    "M": 1024**2,
    "MB": 1024**2,
    "MIB": 1024**2,
    "G": 1024**3,
    "GB": 1024**3,
    "GIB": 1024**3,
    "T": 1024**4,
    "TB": 1024**4,
    "TIB": 1024**4,
}


def size_bytes(text: str) -> int | None:
    """ "64M", "63G", "4096 MiB", "512 bytes" -> bytes; None when unparsable."""
    m = re.match(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)", text)
    if not m:
        return None
    unit = m.group(2).upper().replace("BYTES", "B")
    if unit not in _SIZE_UNITS:
        return None
    return int(float(m.group(1)) * _SIZE_UNITS[unit])


def one_value(text: str) -> tuple[str, str | None]:
    """A single-value output (`uname -r`, a sysfs file): (the value, None), or ("", why) when it holds more than
    one non-blank line: malformed, never half-read (a second line must not end up in a label; issue 29)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if len(lines) > 1:
        return "", f"malformed: {len(lines)} lines where one value is expected"
    return (lines[0] if lines else ""), None


def first_line(text: str) -> str:
    """First non-blank line, stripped ("" if none)."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


# --- parse once: every output parser runs once per distinct text ---------------------------------------------

P = ParamSpec("P")
R = TypeVar("R")

PARSE_CACHE_ENTRIES = 4096
"""Parsed values kept (least recently used dropped first): one audit of a host and a container parses ~150 outputs."""
PARSE_CACHE_CHARS = 64 * 1024 * 1024
"""Characters of parsed text a cache keeps alive at most (the records usually hold the same strings anyway)."""

PARSERS: dict[str, Callable[..., Any]] = {}
"""Every output parser under the cache, by `module.name` (a test instruments their real bodies: `__wrapped__`)."""


@dataclass(slots=True)
class _Parsed:
    """One cached parse: the value or the exception, and the output size."""

    value: Any
    error: BaseException | None
    size: int
    tb: TracebackType | None = None
    """The error's own traceback: every raise again starts from it (a re-raise prepends the raiser's frames)."""


class ParseCache:
    """The framework's parse cache: (parser, output text, other arguments) -> the parsed value or the exception.

    Keyed by the text itself, so each probe's extract, the combiners, the roofline, the fleet comparison and the
    engine metrics reading the same output get one parsed value, for a live audit, a replay or a re-judged old
    snapshot alike (parsers are pure: equal text, equal answer). An exception is cached too, and raised again
    to every consumer (the framework's extract loop turns it into a problem of that source).
    Consumers only read what they get (the same objects are shared)."""

    def __init__(self, entries: int = PARSE_CACHE_ENTRIES, chars: int = PARSE_CACHE_CHARS) -> None:
        self._max_entries, self._max_chars = entries, chars
        self._items: OrderedDict[tuple[Any, ...], _Parsed] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()
        self.runs = 0
        """Parser bodies run (misses) and answers served from the cache (hits) since creation."""
        self.hits = 0

    def call(self, fn: Callable[..., R], text: str, args: tuple[Any, ...], kw: dict[str, Any]) -> R:
        if not args and not kw:  # the usual call: the text alone (a function and a str always hash)
            key: tuple[Any, ...] = (fn, text)
        else:
            try:
                key = (
                    fn,
                    text,
                    *map(_frozen, args),
                    *sorted((k, _frozen(v)) for k, v in kw.items()),
                )
                hash(key)
            except TypeError:  # an unhashable extra argument: parse without the cache
                return fn(text, *args, **kw)
        with self._lock:
            got = self._items.get(key)
            if got is not None:
                self._items.move_to_end(key)
                self.hits += 1
        if got is None:
            try:
                got = _Parsed(fn(text, *args, **kw), None, len(text))
            except Exception as exc:  # noqa: BLE001 - cached and raised again to every consumer
                got = _Parsed(None, exc, len(text), exc.__traceback__)
            self._store(key, got)
        if got.error is not None:
            raise got.error.with_traceback(got.tb)
        value = got.value
        if (
            type(value) is list
        ):  # a consumer may sort or extend its list: the cached one stays as parsed
            return cast(R, list(value))
        if type(value) is dict:
            return cast(R, dict(value))
        return cast(R, value)

    def _store(self, key: tuple[Any, ...], got: _Parsed) -> None:
        with self._lock:
            self.runs += 1
            if key in self._items:
                return
            self._items[key] = got
            self._chars += got.size
            while self._items and (
                len(self._items) > self._max_entries or self._chars > self._max_chars
            ):
                _, old = self._items.popitem(last=False)
                self._chars -= old.size

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._chars = 0


def _frozen(value: Any) -> Any:
    """A list argument (field names) keys the cache as the tuple it equals."""
    return tuple(value) if isinstance(value, list) else value


PARSE_CACHE = ParseCache()
"""The process's parse cache: every audit, replay and re-judgement outside a `parse_scope` shares it (one audit
per process, or the TUI's latest ones, bounded)."""

_SCOPE: ContextVar[ParseCache | None] = ContextVar("gpuaudit_parse_scope", default=None)


@contextmanager
def parse_scope() -> Iterator[ParseCache]:
    """A parse cache of its own for the block (and the asyncio tasks it starts), dropped at its end: a fleet's
    audit of one host shares parses between its probes, roofline and snapshot, and frees them when the host is
    done, so many hosts' parsed outputs never stay alive together."""
    cache = ParseCache()
    token = _SCOPE.set(cache)
    try:
        yield cache
    finally:
        _SCOPE.reset(token)


def parse_once(fn: Callable[Concatenate[str, P], R]) -> Callable[Concatenate[str, P], R]:
    """Decorator of an output parser (text first): each distinct (text, arguments) is parsed once, the value
    shared with every consumer (see ParseCache). The parser's own body stays `__wrapped__`."""

    @functools.wraps(fn)
    def parsed(text: str, /, *args: P.args, **kw: P.kwargs) -> R:
        if not isinstance(text, str):
            return fn(text, *args, **kw)
        return (_SCOPE.get() or PARSE_CACHE).call(fn, text, args, kw)

    PARSERS[f"{fn.__module__}.{fn.__qualname__}"] = parsed
    return parsed
