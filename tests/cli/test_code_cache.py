"""The CLI's cache of what dataclasses and re compile (tui/cli/code_cache.py, issue 30).

Each case runs in a fresh interpreter: installing the cache changes the `dataclasses` module for the rest of a
process, and what is measured is what a second process finds on disk.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from gpuaudit.tui.cli import code_cache as dcc

ROOT = Path(__file__).resolve().parents[2]

# Classes of every shape the generated methods take; the script prints what each does, then the cache's counts.
SCRIPT = r"""
import dataclasses, json, re, sys
from dataclasses import InitVar, KW_ONLY, dataclass, field
from pathlib import Path
from gpuaudit.tui.cli import code_cache as dcc
cache = dcc.install(Path(sys.argv[1])) if sys.argv[1] != "-" else None

@dataclass(frozen=True, slots=True)
class Frozen:
    a: int
    b: str = "x"
    c: tuple = ()

@dataclass(order=True)
class Ordered:
    n: int
    tags: list = field(default_factory=list)
    hidden: int = field(default=0, repr=False, compare=False)

@dataclass
class WithPost:
    base: int
    scale: InitVar[int] = 2
    _: KW_ONLY
    label: str = "l"
    total: int = field(init=False, default=0)
    def __post_init__(self, scale):
        self.total = self.base * scale

@dataclass(frozen=True, eq=False)
class NoEq:
    v: int

out = {}
f = Frozen(1)
out["frozen"] = [repr(f), f == Frozen(1), f == Frozen(2), hash(f) == hash(Frozen(1)), f.__slots__]
try:
    f.a = 3
    out["frozen_set"] = "allowed"
except dataclasses.FrozenInstanceError as exc:
    out["frozen_set"] = type(exc).__name__
o = Ordered(2, [1])
out["ordered"] = [repr(o), Ordered(1) < o, o == Ordered(2, [1], hidden=9), dataclasses.asdict(o)]
w = WithPost(3, 5, label="z")
out["post"] = [repr(w), w.total, [x.name for x in dataclasses.fields(w)], repr(dataclasses.replace(w, base=4, scale=1))]
n = NoEq(1)
out["noeq"] = [n == NoEq(1), n == n, repr(n)]
out["init_sig"] = str(__import__("inspect").signature(WithPost))
# patterns of every kind: named groups, flags inline and passed, bytes, lookarounds, a verbose one
PATTERNS = [
    (r"(?P<bus>[0-9a-f]{4}):(?P<dev>[0-9a-f]{2})\.(\d)", 0),
    (r"^\s*Link (Status|Capabilities):\s+Speed (?P<gts>[\d.]+)GT/s", re.M | re.I),
    (r"(?i)persistence mode\s*:\s*(enabled|disabled)", 0),
    (rb"\x00+(?=end)", 0),
    (r"(?<![\w-])token=[^\s]+", re.S),
    ("(?P<key>\\w+)  # a key\n \\s*=\\s* (?P<value>\\S*)  # its value", re.X),
]
out["regex"] = []
for text, flags in PATTERNS:
    pat = re.compile(text, flags)
    sample = b"aa\x00\x00end" if isinstance(text, bytes) else "0000:3b:00.0 LnkSta: Link Status: Speed 16GT/s x=1 token=abc Persistence Mode : Enabled"
    out["regex"].append([pat.pattern if isinstance(text, str) else pat.pattern.decode(), pat.flags, pat.groups,
                         sorted(pat.groupindex.items()), [repr(m) for m in pat.finditer(sample)]])
try:
    re.compile("(unclosed")
except re.error as exc:
    out["regex_error"] = str(exc)
# string annotations, as pydantic evaluates them (typing.ForwardRef compiles each)
import typing
class Annotated_:
    a: "dict[str, int] | None"
    b: "list[Frozen]"
out["hints"] = {k: str(v) for k, v in typing.get_type_hints(Annotated_).items()}
ref = typing.ForwardRef("tuple[int, ...]")
out["ref"] = [repr(ref), str(ref.__forward_code__.co_filename), ref.__forward_code__.co_flags]
try:
    typing.ForwardRef("not an expression(")
except SyntaxError as exc:
    out["ref_error"] = str(exc)
# the records' field types (probes/core/record.py evaluates a string annotation once per class)
from gpuaudit.probes.core.record import Record
class Rec(Record, frozen=True):
    ratio: float = 0.0
    items: "list[Frozen] | None" = None
r = Rec(ratio=2, items=[Frozen(1)])
out["record"] = [repr(r), type(r.ratio).__name__]
if cache is not None:
    out["cache"] = {"misses": cache.misses, "hits": cache.hits, "codes": len(cache.used_codes),
                    "regexes": len(cache.used_regexes) + len(cache.pending)}
print(json.dumps(out))
"""


def _run(
    path: str, *extra: str, env: dict[str, str] | None = None, exe: str = sys.executable
) -> dict:
    base = dict(os.environ) if env is None else env
    base.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run(
        [exe, *extra, "-c", SCRIPT, path],
        capture_output=True,
        text=True,
        env=base,
        check=True,
        timeout=60,
    )
    return json.loads(done.stdout)


def test_classes_and_patterns_from_the_cache_are_the_compiled_ones(tmp_path: Path) -> None:
    cache = tmp_path / "dc.bin"
    plain = _run("-")
    first = _run(str(cache))
    assert cache.is_file()
    second = _run(str(cache))
    made = first["cache"]
    assert made["codes"] > 10 and made["regexes"] >= 6
    assert made["misses"] == made["codes"] + made["regexes"]  # each compiled once, then written
    assert second["cache"] == {
        **made,
        "misses": 0,
        "hits": made["misses"],
    }  # all of them from the file
    for got in (first, second):
        got.pop("cache")
        assert got == plain


def test_a_damaged_or_foreign_file_is_ignored_and_replaced(tmp_path: Path) -> None:
    cache = tmp_path / "dc.bin"
    _run(str(cache))
    good = cache.read_bytes()
    codes, regexes = dcc.read(cache)
    assert codes and regexes
    head = len(dcc.HEADER) + len(dcc.MAGIC) + 8
    foreign = dcc.HEADER + b"\x00\x00\r\n" + good[len(dcc.HEADER) + 4 :]  # another interpreter's
    flipped = bytearray(good)
    flipped[head + 100] ^= 0xFF
    not_a_pair = dcc.marshal.dumps([1, 2])
    wrong_type = (
        dcc.HEADER
        + dcc.MAGIC
        + dcc.zlib.crc32(not_a_pair).to_bytes(4, "little")
        + len(not_a_pair).to_bytes(4, "little")
        + not_a_pair
    )
    for bad in (b"", b"garbage", good[: len(good) // 2], foreign, bytes(flipped), wrong_type):
        cache.write_bytes(bad)
        assert dcc.read(cache) == ({}, {})
        again = _run(str(cache))
        assert again["cache"]["hits"] == 0  # compiled as if there were no file
        assert [d.keys() for d in dcc.read(cache)] == [
            codes.keys(),
            regexes.keys(),
        ]  # written back whole


def test_nothing_is_written_under_dont_write_bytecode(tmp_path: Path) -> None:
    cache = tmp_path / "dc.bin"
    got = _run(str(cache), "-B")
    assert got["cache"]["misses"] > 0
    assert not cache.exists()


def test_an_unwritable_place_costs_nothing_but_the_cache(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    cache = blocker / "sub" / "dc.bin"  # a folder that cannot be made
    plain = _run("-")
    got = _run(str(cache))
    got.pop("cache")
    assert got == plain
    assert not (blocker / "sub").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]  # no temporary file left behind


def test_the_cache_keeps_this_process_entries_past_its_bound(tmp_path: Path, monkeypatch) -> None:
    cache = dcc.CodeCache(tmp_path / "dc.bin")
    cache.loaded = True
    cache.codes = {
        (f"x = {i}\n", "<string>", "exec"): compile(f"x = {i}\n", "<string>", "exec")
        for i in range(dcc.MAX_ENTRIES + 1)
    }
    ns: dict = {}
    cache.exec("y = 1\n", {}, ns)
    assert ns == {"y": 1}
    got = cache.compile_regex(dcc.re_compiler.compile, r"a(?P<n>\d+)", 0)
    assert got == dcc.re_compiler.compile(r"a(?P<n>\d+)", 0) and got.groupindex == {"n": 1}
    monkeypatch.setattr(dcc.sys, "dont_write_bytecode", False)
    cache.save()
    codes, regexes = dcc.read(tmp_path / "dc.bin")
    assert list(codes) == [("y = 1\n", "<string>", "exec")]
    assert list(regexes) == [(r"a(?P<n>\d+)", 0)]


def test_a_stored_pattern_the_engine_refuses_is_compiled_as_usual(
    tmp_path: Path, monkeypatch
) -> None:
    """An entry whose code the regex engine rejects is never served; the verified arguments replace it."""
    cache = dcc.CodeCache(tmp_path / "dc.bin")
    cache.loaded = True
    bad = (r"a+b", 0, [1, 2, 3], 0, {}, ())  # not valid matcher code
    cache.regexes[(r"a+b", 0)] = bad
    got = cache.compile_regex(dcc.re_compiler.compile, r"a+b", 0)
    assert got.fullmatch("aab") and not got.fullmatch("b") and cache.hits == 0
    monkeypatch.setattr(dcc.sys, "dont_write_bytecode", False)
    cache.save()
    stored = dcc.read(tmp_path / "dc.bin")[1][(r"a+b", 0)]
    assert stored != bad and dcc._sre.compile(*stored) == got


def test_a_pattern_rebuilt_differently_is_never_stored(tmp_path: Path, monkeypatch) -> None:
    """The arguments are kept only when they build the pattern `re` built (a compiler that changed)."""
    cache = dcc.CodeCache(tmp_path / "dc.bin")
    cache.loaded = True
    real = dcc._sre_arguments

    def drifted(p, flags):  # another interpreter's steps: a flag lost on the way
        args = real(p, flags)
        return (args[0], args[1] & ~int(re.IGNORECASE), *args[2:])

    monkeypatch.setattr(dcc, "_sre_arguments", drifted)
    monkeypatch.setattr(dcc.sys, "dont_write_bytecode", False)
    cache.compile_regex(dcc.re_compiler.compile, r"gpu", re.IGNORECASE)
    cache.compile_regex(dcc.re_compiler.compile, r"cpu", 0)
    cache.save()
    assert list(dcc.read(tmp_path / "dc.bin")[1]) == [(r"cpu", 0)]


@pytest.mark.slow
def test_the_cli_compiles_its_dataclasses_from_the_install_cache(tmp_path: Path) -> None:
    """The console script installs it: a second run finds every entry in the file and writes nothing."""
    path = dcc.default_path()
    assert path is not None
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    demo = ROOT / "snapshots" / "examples" / "case-study-before.json"
    argv = [sys.executable, "-m", "gpuaudit.tui", "--replay", str(demo), "--json"]
    first = subprocess.run(argv, capture_output=True, env=env, timeout=120)
    assert first.returncode == 1, (
        first.stderr
    )  # the case study has critical findings (--fail-on critical)
    assert path.is_file()
    stamp = path.stat().st_mtime_ns
    second = subprocess.run(argv, capture_output=True, env=env, timeout=120)
    assert second.returncode == 1, second.stderr
    assert path.stat().st_mtime_ns == stamp  # no miss: nothing new to write
    a, b = json.loads(first.stdout), json.loads(second.stdout)
    assert a["findings"] == b["findings"]
    assert [p["facts"] for p in a["probes"]] == [p["facts"] for p in b["probes"]]


def test_the_file_lies_where_python_keeps_the_package_bytecode(tmp_path: Path) -> None:
    here = Path(dcc.__file__).resolve().parent
    tag = sys.implementation.cache_tag
    assert dcc.default_path() == here / "__pycache__" / f"compiled-stdlib.{tag}.bin"
    done = subprocess.run(
        [sys.executable, "-X", f"pycache_prefix={tmp_path}", "-c",
         "from gpuaudit.tui.cli import code_cache; print(code_cache.default_path())"],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    assert (
        Path(done.stdout.strip()) == tmp_path / here.relative_to("/") / f"compiled-stdlib.{tag}.bin"
    )


def _other_interpreters() -> list[str]:
    """CPython 3.12 and later installed on this machine (pyenv's versions, or on PATH), which really run."""
    found: dict[str, str] = {}
    candidates = sorted(Path("/root/.pyenv/versions").glob("3.1[2-9]*/bin/python3"))
    candidates += [
        Path(p) for name in ("python3.12", "python3.13", "python3.14") if (p := shutil.which(name))
    ]
    for exe in candidates:
        probe = subprocess.run(
            [str(exe), "-c", "import sys; print(sys.implementation.cache_tag)"],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        tag = probe.stdout.strip()
        if (
            probe.returncode == 0
            and tag.startswith("cpython-3")
            and tag != sys.implementation.cache_tag
        ):
            found.setdefault(tag, str(exe))
    return list(found.values())


def test_the_cache_serves_the_same_code_under_newer_interpreters(tmp_path: Path) -> None:
    """3.12 and 3.13 build dataclasses, patterns and annotations differently (3.13: one exec per class); from the
    cache a second process gets exactly what it compiles without it. Runs every newer CPython found here."""
    interpreters = _other_interpreters()
    if not interpreters:
        pytest.skip("no CPython 3.12+ on this machine besides the one running the tests")
    # the code_cache module and the records need nothing but the standard library
    package = tmp_path / "lay" / "gpuaudit"
    package.mkdir(parents=True)
    (package / "tui").symlink_to(ROOT / "tui")
    (package / "probes").symlink_to(ROOT / "probes")
    env = dict(os.environ, PYTHONPATH=str(package.parent))
    for exe in interpreters:
        cache = tmp_path / f"{Path(exe).parent.parent.name}.bin"
        bytecode = [
            "-X",
            f"pycache_prefix={tmp_path / 'pyc'}",
        ]  # its .pyc files out of the checkout
        plain = _run("-", *bytecode, env=dict(env), exe=exe)
        first = _run(str(cache), *bytecode, env=dict(env), exe=exe)
        second = _run(str(cache), *bytecode, env=dict(env), exe=exe)
        made = first.pop("cache")
        assert made["codes"] > 3 and made["regexes"] >= 6, exe
        assert second.pop("cache") == {**made, "misses": 0, "hits": made["misses"]}, exe
        assert first == plain and second == plain, exe


DATA_SCRIPT = """
import re, sys
from pathlib import Path
from gpuaudit.tui.cli import code_cache
code_cache.install(Path(sys.argv[1]))
serial = sys.argv[2]  # what an audit read: a pattern built from it is data, never stored
re.compile(re.escape(serial) + "|(?i:" + re.escape(serial.lower()) + ")")
re.sub("[" + re.escape(serial[:3]) + "]+", "", serial)
re.search(r"kept-(\\d+)", "kept-1")  # a literal of this code: stored
"""


def test_a_pattern_built_from_data_never_reaches_the_file(tmp_path: Path) -> None:
    """--share builds its regex from the host names and serials it hides, the TUI from a search typed in: the
    file (world-readable, beside the install) must hold only the program's own patterns."""
    cache = tmp_path / "dc.bin"
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run(
        [sys.executable, "-c", DATA_SCRIPT, str(cache), "S512539X3109946"],
        env=env, check=True, timeout=60,
    )  # fmt: skip
    assert b"S512539X3109946" not in cache.read_bytes() and b"s512539x" not in cache.read_bytes()
    assert (r"kept-(\d+)", 0) in dcc.read(cache)[1]


@pytest.mark.slow
def test_share_leaves_no_serial_or_host_name_in_the_cli_cache(tmp_path: Path) -> None:
    """The real --share of the case study: its 36 identifiers are in its mapping, none in the code cache."""
    path = dcc.default_path()
    assert path is not None
    env = dict(os.environ, HOME=str(tmp_path))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    demo = ROOT / "snapshots" / "examples" / "case-study-before.json"
    mapping = tmp_path / "map.json"
    argv = [
        sys.executable,
        "-m",
        "gpuaudit.tui",
        "--replay",
        str(demo),
        "--json",
        "--share",
        str(mapping),
    ]
    done = subprocess.run(argv, capture_output=True, env=env, timeout=120)
    assert done.returncode == 1, done.stderr  # the case study has critical findings
    doc = json.loads(mapping.read_text())
    # every original of at least 9 characters (short ones such as `sglang` are words of the program too)
    originals = [
        o for group in doc.values() if isinstance(group, dict) for o in group if len(o) >= 9
    ]
    assert originals, mapping.read_text()[:500]
    stored = path.read_bytes()
    assert [o for o in originals if o.encode() in stored] == []
