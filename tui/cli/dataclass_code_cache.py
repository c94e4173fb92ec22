"""Compile the methods that `dataclasses` generates once per installation, not once per process (issue 30).

`@dataclass` writes the source of each class's `__init__`, `__repr__`, `__eq__` (and, frozen, `__setattr__`,
`__delattr__`, `__hash__`) and compiles it with `exec` every time the module is imported: ~650 compilations for
the ~140 dataclasses a headless audit imports, ~70 ms of its client CPU, more than any other part of the tool's
imports. The compiled code of a given source never changes for a given interpreter, so the CLI keeps it the way
Python keeps a module's bytecode: beside the package's .pyc files, in `__pycache__`, tagged with the interpreter
(`cpython-311`) and checked against its bytecode magic number. Loading it costs ~3 ms.

How: `install()` gives the `dataclasses` module its own `exec`, a global that shadows the builtin for that module
only. It looks the source text up (the whole text is the key: no collision is possible) and runs the cached code
object with the same globals and namespace the builtin would have been given; on a miss it compiles exactly what
`exec` would have compiled (filename "<string>", no inherited __future__ flags). Nothing else changes: the classes, their methods and their
behaviour are the ones `dataclasses` builds.

Like Python's bytecode cache it is written only when `-B` / PYTHONDONTWRITEBYTECODE is not set, atomically, and
never fails the program: an unwritable directory, a corrupt, truncated or foreign file is ignored (the methods are
compiled as usual). The CLI process installs it (tui/cli/entry.py main); the engine, used as a library, does not.
"""

from __future__ import annotations

import atexit
import builtins
import dataclasses
import marshal
import os
import sys
import zlib
from importlib.util import MAGIC_NUMBER
from pathlib import Path
from types import CodeType

HEADER = b"GADC1\n"
"""The file's own format tag; then the interpreter's bytecode magic number, the payload's CRC-32 and length."""
MAX_ENTRIES = 4000
"""Past this many sources (an editable install whose classes keep changing), only this process's are kept."""


class DataclassCodeCache:
    """Source text -> code object, read from `path` on first use and written back at exit when it grew."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.codes: dict[str, CodeType] | None = (
            None  # loaded on the first exec: --help never pays for it
        )
        self.used: dict[str, CodeType] = {}
        self.misses = 0

    def exec(self, source: object, globals_: dict | None = None, locals_: object = None) -> None:
        """What `dataclasses` calls instead of the builtin `exec`."""
        if not isinstance(source, str):
            return builtins.exec(source, globals_, locals_)  # type: ignore[arg-type]
        if self.codes is None:
            self.codes = read(self.path) if self.path is not None else {}
        code = self.codes.get(source)
        if code is None:
            # what the builtin compiles from a string in `dataclasses`, which has no __future__ import: not this
            # module's `annotations` (inherited by default, it would turn __init__'s annotations into strings)
            code = compile(source, "<string>", "exec", dont_inherit=True)
            self.codes[source] = code
            self.misses += 1
        self.used[source] = code
        return builtins.exec(code, globals_, locals_)  # type: ignore[arg-type]

    def save(self) -> None:
        """Write the file when this process compiled something new (never under -B); never raises."""
        if not self.misses or self.path is None or self.codes is None or sys.dont_write_bytecode:
            return
        codes = self.codes if len(self.codes) <= MAX_ENTRIES else self.used
        try:
            write(self.path, codes)
        except (
            OSError,
            ValueError,
        ):  # read-only install, full disk, an unmarshallable object: run uncached
            pass


def read(path: Path) -> dict[str, CodeType]:
    """The cached codes at `path`, or {} when the file is missing, corrupt, truncated or another interpreter's."""
    try:
        data = path.read_bytes()
    except OSError:
        return {}
    head = len(HEADER) + len(MAGIC_NUMBER) + 8
    if len(data) < head or not data.startswith(HEADER):
        return {}
    magic = data[len(HEADER) : len(HEADER) + len(MAGIC_NUMBER)]
    crc = int.from_bytes(data[head - 8 : head - 4], "little")
    size = int.from_bytes(data[head - 4 : head], "little")
    payload = data[head:]
    if magic != MAGIC_NUMBER or size != len(payload) or zlib.crc32(payload) != crc:
        return {}
    try:
        codes = marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return {}
    if not isinstance(codes, dict):
        return {}
    return {k: v for k, v in codes.items() if isinstance(k, str) and isinstance(v, CodeType)}


def write(path: Path, codes: dict[str, CodeType]) -> None:
    """Write `codes` to `path` atomically (a reader sees the old file or the new one, never half of one)."""
    payload = marshal.dumps(codes)
    head = (
        HEADER
        + MAGIC_NUMBER
        + zlib.crc32(payload).to_bytes(4, "little")
        + len(payload).to_bytes(4, "little")
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(head + payload)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def default_path() -> Path | None:
    """This package's `__pycache__`, tagged with the interpreter (None where Python keeps no bytecode cache)."""
    tag = sys.implementation.cache_tag
    if tag is None:
        return None
    return Path(__file__).resolve().parent / "__pycache__" / f"dataclass-methods.{tag}.bin"


def install(path: Path | None = None) -> DataclassCodeCache | None:
    """Give `dataclasses` the cached `exec` for the rest of this process, saved at exit; None if already done."""
    if isinstance(getattr(dataclasses, "exec", None), _Bound):
        return None
    cache = DataclassCodeCache(path if path is not None else default_path())
    dataclasses.exec = _Bound(cache)  # type: ignore[attr-defined]
    atexit.register(cache.save)
    return cache


class _Bound:
    """The callable placed in `dataclasses` (a class, so that install() recognises its own)."""

    __slots__ = ("cache",)

    def __init__(self, cache: DataclassCodeCache) -> None:
        self.cache = cache

    def __call__(
        self, source: object, globals_: dict | None = None, locals_: object = None
    ) -> None:
        return self.cache.exec(source, globals_, locals_)
