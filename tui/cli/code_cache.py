"""Compile once per installation what the standard library recompiles in every process (issue 30).

Three compilers run on every start of the CLI, on inputs that never change between runs:

* `@dataclass` writes the source of each class's `__init__`, `__repr__`, `__eq__` (frozen: `__setattr__`,
  `__delattr__`, `__hash__`) and compiles it with `exec` at import: ~650 compilations for the ~150 dataclasses
  of a headless audit, ~70 ms of its client CPU (more than any other part of the tool's imports);
* `re.compile` parses each pattern and generates its matcher code in Python: ~270 patterns, ~25 ms;
* string annotations are compiled where they are evaluated (`from __future__ import annotations` makes every
  annotation one): `typing.ForwardRef` for pydantic where a document is read (~1,300 small compilations,
  ~12 ms), and the engine's records for the field types their converters need (probes/core/record.py, ~100).

The CLI keeps their results the way Python keeps a module's bytecode: beside the package's .pyc files, in
`__pycache__` (or under `-X pycache_prefix`), tagged with the interpreter (`cpython-311`) and checked against its
bytecode and regex-engine magic numbers. Reading the file costs ~3 ms.

* Dataclasses and annotations: `install()` gives the `dataclasses` module its own `exec` and the `typing` module
  its own `compile`, globals that shadow the builtins for those modules only. They look the source text up (the
  whole text, filename and mode are the key: no collision is possible) and use the cached code object with the
  globals and namespace the builtin would have been given. A miss compiles exactly what the builtin compiles
  there (same filename and mode, no inherited __future__ flags).
* Regular expressions: `re`'s compiler step (`re._compiler.compile`) is wrapped. A miss is compiled by the
  original; when the file is written (at exit, or once the TUI's start-up is over: `checkpoint`), the arguments
  the original hands `_sre.compile` (the regex engine's constructor: pattern, flags, matcher code, groups) are
  rebuilt and kept only when the pattern they build is equal to the original's (`Pattern.__eq__` compares the
  pattern, flags and code), so a future interpreter whose compiler differs is never served a wrong pattern, only
  an uncached one. A hit calls `_sre.compile` with them, which checks the code again. Only the program's own
  patterns are kept (`_program_text`): one built at run time from what the audit read (--share's map of serials
  and host names, a search typed in the TUI) is compiled as usual and never written to the file.

Nothing else changes: the classes, the patterns and their behaviour are the ones the standard library builds.
Like Python's bytecode cache, the file is written only when `-B` / PYTHONDONTWRITEBYTECODE is not set,
atomically, and never fails the program: an unwritable directory or a corrupt, truncated or foreign file is
ignored and everything is compiled as usual. The CLI process installs it (tui/cli/entry.py main); the engine,
used as a library, does not; nor do --help and --version, which end before it is installed.
"""

from __future__ import annotations

import _sre
import atexit
import builtins
import dataclasses
import functools
import marshal
import os
import re._compiler as re_compiler
import re._parser as re_parser
import sys
import threading
import typing
import zlib
from importlib.util import MAGIC_NUMBER
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

from gpuaudit.probes.core import record

HEADER = b"GACC2\n"
"""The file's own format tag; then the interpreter's bytecode magic, the regex engine's, the payload's CRC-32
and length."""
MAGIC = MAGIC_NUMBER + int(_sre.MAGIC).to_bytes(4, "little")
MAX_ENTRIES = 6000
"""Past this many entries (an editable install whose classes keep changing), only this process's are kept."""

CodeKey = tuple[str, str, str]
"""(source, filename, mode): what `compile` is given."""
RegexKey = tuple[str | bytes, int]
RegexArgs = tuple[Any, ...]


class CodeCache:
    """Compiled code for the three compilers, read from `path` on first use, written back (`save`) when it grew."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.loaded = False  # read on the first compilation
        self.codes: dict[CodeKey, CodeType] = {}
        self.regexes: dict[RegexKey, RegexArgs] = {}
        self.used_codes: dict[CodeKey, CodeType] = {}
        self.used_regexes: dict[RegexKey, RegexArgs] = {}
        self.pending: dict[RegexKey, Any] = {}
        """Patterns compiled by `re` in this process, checked and stored by `save` (off the start-up's path)."""
        self.misses = 0
        self.hits = 0
        self.unsaved = 0  # entries added since the file was last written
        self._saving = threading.Lock()

    def _load(self) -> None:
        self.loaded = True
        if self.path is not None:
            self.codes, self.regexes = read(self.path)

    def code(self, source: str, filename: str, mode: str) -> CodeType:
        """The code `compile(source, filename, mode)` makes in a module without __future__ imports (dataclasses,
        typing): not this module's `annotations` (inherited by default, it would turn annotations into strings)."""
        if not self.loaded:
            self._load()
        key = (source, filename, mode)
        code = self.codes.get(key)
        if code is None:
            # a SyntaxError propagates as the caller's own compile would raise it
            code = compile(source, filename, mode, dont_inherit=True)
            self.codes[key] = code
            self.misses += 1
            self.unsaved += 1
        else:
            self.hits += 1
        self.used_codes[key] = code
        return code

    def exec(self, source: object, globals_: dict | None = None, locals_: object = None) -> None:
        """What `dataclasses` calls instead of the builtin `exec`."""
        if isinstance(source, str):
            source = self.code(source, "<string>", "exec")  # what exec compiles a string to
        return builtins.exec(source, globals_, locals_)  # type: ignore[arg-type]

    def compile_source(
        self, source: Any, filename: Any, mode: Any, *args: Any, **kwargs: Any
    ) -> Any:
        """What `typing` and the records call instead of the builtin `compile` (each string annotation pydantic
        evaluates is a ForwardRef, compiled in __init__; a record's field type, once per class). Only the plain
        form is cached."""
        if (
            args
            or kwargs
            or not (isinstance(source, str) and isinstance(filename, str) and isinstance(mode, str))
        ):
            return builtins.compile(source, filename, mode, *args, **kwargs)
        return self.code(source, filename, mode)

    def compile_regex(self, original: Any, p: Any, flags: Any = 0) -> Any:
        """What `re` calls instead of `re._compiler.compile` (`original`)."""
        if not isinstance(p, (str, bytes)) or flags & re_compiler.SRE_FLAG_DEBUG:
            return original(p, flags)  # a parsed pattern (re.Scanner), or DEBUG's printout
        if not self.loaded:
            self._load()
        key = (p, int(flags))
        args = self.regexes.get(key)
        if args is not None:
            try:
                pattern = _sre.compile(*args)
            except Exception:  # noqa: BLE001 - refused by the engine: compiled as usual below, and replaced
                self.regexes.pop(key, None)
            else:
                self.hits += 1
                self.used_regexes[key] = args
                return pattern
        pattern = original(p, flags)  # the authority (and its errors for a bad pattern)
        if _program_text(p):
            self.pending[key] = pattern
        self.misses += 1
        return pattern

    def _settle(self) -> None:
        """Store the pending patterns whose rebuilt arguments make the same pattern as `re` made."""
        for key in list(self.pending):
            pattern = self.pending.pop(key, None)
            if pattern is None:
                continue
            args = _sre_arguments(*key)
            if args is not None and _builds(args, pattern):
                self.regexes[key] = self.used_regexes[key] = args
                self.unsaved += 1

    def save(self) -> None:
        """Write the file when entries were added since it was last written (never under -B); never raises.
        At exit, and where a front end's start-up is over (checkpoint())."""
        if self.path is None or sys.dont_write_bytecode:
            return
        with self._saving:  # a TUI worker's checkpoint and the exit's save, one at a time
            self._save(self.path)

    def _save(self, path: Path) -> None:
        try:
            self._settle()
            if not self.unsaved:
                return
            # copies: another thread (a Textual worker) may be compiling while this one writes
            codes, regexes = dict(self.codes), dict(self.regexes)
            if len(codes) + len(regexes) > MAX_ENTRIES:
                codes, regexes = dict(self.used_codes), dict(self.used_regexes)
            write(path, codes, regexes)
            self.unsaved = 0
        except (OSError, ValueError, RuntimeError):  # read-only install, full disk: run uncached
            pass


def _program_text(p: str | bytes) -> bool:
    """Whether pattern `p` is the program's own text rather than built from data: a literal of the code that
    compiles it (or in a literal table of that code), or compiled while a module is imported. Only those are kept: a pattern built at run time may
    hold what the audit read (--share's map of host names and serials, a search typed in the TUI) and must not
    land in a world-readable file; nor would it repeat in the next process."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and _in_re_or_here(frame.f_globals.get("__name__", "")):
        frame = frame.f_back  # re's own layers (compile, search, sub, ...) and this module's
    if frame is not None and _holds(frame.f_code.co_consts, p):
        return True
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib._bootstrap"):
            return True  # a module's top level (or what it calls) while it is imported
        frame = frame.f_back
    return False


def _holds(consts: tuple[object, ...], p: str | bytes) -> bool:
    """Whether `p` is one of a code object's constants, or inside one of its constant tuples (a literal table)."""
    return any(
        c == p or (isinstance(c, (tuple, frozenset)) and _holds(tuple(c), p)) for c in consts
    )


def _in_re_or_here(module: str) -> bool:
    return module == "re" or module.startswith("re.") or module == __name__


def _sre_arguments(p: str | bytes, flags: int) -> RegexArgs | None:
    """The arguments `re._compiler.compile` hands `_sre.compile` for `p` (its own steps), or None."""
    try:
        parsed = re_parser.parse(p, flags)
        code = re_compiler._code(parsed, flags)
        groupindex = dict(parsed.state.groupdict)
        indexgroup: list[str | None] = [None] * parsed.state.groups
        for name, index in groupindex.items():
            indexgroup[index] = name
        ops = [
            int(op) for op in code
        ]  # plain ints: the opcodes are an int subclass marshal cannot store
        return (
            p,
            int(flags | parsed.state.flags),
            ops,
            parsed.state.groups - 1,
            groupindex,
            tuple(indexgroup),
        )
    except Exception:  # noqa: BLE001 - another interpreter's compiler: leave this pattern uncached
        return None


def _builds(args: RegexArgs, pattern: Any) -> bool:
    """Whether `args` build a pattern equal to the original's (same pattern, flags and matcher code) and can be
    stored (marshal takes them)."""
    try:
        marshal.dumps(args)
        return bool(_sre.compile(*args) == pattern)
    except Exception:  # noqa: BLE001 - refused, or not storable: not cached
        return False


def read(path: Path) -> tuple[dict[CodeKey, CodeType], dict[RegexKey, RegexArgs]]:
    """The cached entries at `path`; empty when the file is missing, corrupt, truncated or another interpreter's."""
    empty: tuple[dict[CodeKey, CodeType], dict[RegexKey, RegexArgs]] = ({}, {})
    try:
        data = path.read_bytes()
    except OSError:
        return empty
    head = len(HEADER) + len(MAGIC) + 8
    if len(data) < head or not data.startswith(HEADER):
        return empty
    magic = data[len(HEADER) : len(HEADER) + len(MAGIC)]
    crc = int.from_bytes(data[head - 8 : head - 4], "little")
    size = int.from_bytes(data[head - 4 : head], "little")
    payload = data[head:]
    if magic != MAGIC or size != len(payload) or zlib.crc32(payload) != crc:
        return empty
    try:
        loaded = marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return empty
    if not (
        isinstance(loaded, tuple) and len(loaded) == 2 and all(isinstance(d, dict) for d in loaded)
    ):
        return empty
    codes = {
        k: v
        for k, v in loaded[0].items()
        if isinstance(k, tuple)
        and len(k) == 3
        and all(isinstance(x, str) for x in k)
        and isinstance(v, CodeType)
    }
    regexes = {
        k: v
        for k, v in loaded[1].items()
        if isinstance(k, tuple)
        and len(k) == 2
        and isinstance(v, tuple)
        and len(v) == 6
        and v[0] == k[0]
    }
    return codes, regexes


def write(path: Path, codes: dict[CodeKey, CodeType], regexes: dict[RegexKey, RegexArgs]) -> None:
    """Write the entries to `path` atomically (a reader sees the old file or the new one, never half of one)."""
    payload = marshal.dumps((codes, regexes))
    head = (
        HEADER
        + MAGIC
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
    """Where this package's .pyc files are: its `__pycache__`, or the mirror of its folder under
    `-X pycache_prefix` / PYTHONPYCACHEPREFIX; tagged with the interpreter (None where Python keeps no bytecode
    cache)."""
    tag = sys.implementation.cache_tag
    if tag is None:
        return None
    name = f"compiled-stdlib.{tag}.bin"
    here = Path(__file__).resolve().parent
    if sys.pycache_prefix:
        return Path(sys.pycache_prefix) / here.relative_to(here.anchor) / name
    return here / "__pycache__" / name


_installed: list[CodeCache] = []


def install(path: Path | None = None) -> CodeCache | None:
    """Serve `dataclasses`, `typing` and `re` from the cache for the rest of this process, saved at exit; None if
    already installed."""
    if _installed:
        return None
    cache = CodeCache(path if path is not None else default_path())
    dataclasses.exec = cache.exec  # type: ignore[attr-defined]
    typing.compile = cache.compile_source  # type: ignore[attr-defined]
    record.compile = cache.compile_source  # type: ignore[attr-defined]  # the records' field types
    re_compiler.compile = functools.partial(cache.compile_regex, re_compiler.compile)
    atexit.register(cache.save)
    _installed.append(cache)
    return cache


def checkpoint() -> None:
    """Write what this process added so far, if the CLI installed the cache: the TUI calls it once its start-up
    loading is done, so that the next start finds Textual's and the screens' code even when this process is
    killed rather than quit."""
    for cache in _installed:
        cache.save()
