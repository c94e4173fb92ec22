"""The CLI's cache of the code dataclasses generate (tui/cli/dataclass_code_cache.py, issue 30).

Each case runs in a fresh interpreter: installing the cache changes the `dataclasses` module for the rest of a
process, and what is measured is what a second process finds on disk.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gpuaudit.tui.cli import dataclass_code_cache as dcc

ROOT = Path(__file__).resolve().parents[2]

# Classes of every shape the generated methods take; the script prints what each does, then the cache's counts.
SCRIPT = r"""
import dataclasses, json, sys
from dataclasses import InitVar, KW_ONLY, dataclass, field
from pathlib import Path
from gpuaudit.tui.cli import dataclass_code_cache as dcc
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
if cache is not None:
    out["cache"] = {"misses": cache.misses, "used": len(cache.used)}
print(json.dumps(out))
"""


def _run(path: str, *extra: str, env: dict[str, str] | None = None) -> dict:
    base = dict(os.environ) if env is None else env
    base.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run(
        [sys.executable, *extra, "-c", SCRIPT, path],
        capture_output=True,
        text=True,
        env=base,
        check=True,
        timeout=60,
    )
    return json.loads(done.stdout)


def test_classes_built_from_the_cache_behave_as_the_compiled_ones(tmp_path: Path) -> None:
    cache = tmp_path / "dc.bin"
    plain = _run("-")
    first = _run(str(cache))
    assert cache.is_file()
    second = _run(str(cache))
    assert (
        first["cache"]["misses"] == first["cache"]["used"] > 10
    )  # every method compiled once, then written
    assert second["cache"] == {
        "misses": 0,
        "used": first["cache"]["used"],
    }  # all of them from the file
    for got in (first, second):
        got.pop("cache")
        assert got == plain


def test_a_damaged_or_foreign_file_is_ignored_and_replaced(tmp_path: Path) -> None:
    cache = tmp_path / "dc.bin"
    _run(str(cache))
    good = cache.read_bytes()
    codes = dcc.read(cache)
    assert codes and all(isinstance(k, str) for k in codes)
    head = len(dcc.HEADER) + len(dcc.MAGIC_NUMBER) + 8
    foreign = (
        dcc.HEADER + b"\x00\x00\r\n" + good[len(dcc.HEADER) + 4 :]
    )  # another interpreter's magic
    flipped = bytearray(good)
    flipped[head + 100] ^= 0xFF
    not_a_dict = dcc.marshal.dumps([1, 2])
    wrong_type = (
        dcc.HEADER
        + dcc.MAGIC_NUMBER
        + dcc.zlib.crc32(not_a_dict).to_bytes(4, "little")
        + len(not_a_dict).to_bytes(4, "little")
        + not_a_dict
    )
    for bad in (b"", b"garbage", good[: len(good) // 2], foreign, bytes(flipped), wrong_type):
        cache.write_bytes(bad)
        assert dcc.read(cache) == {}
        again = _run(str(cache))
        assert (
            again["cache"]["misses"] == again["cache"]["used"]
        )  # compiled as if there were no file
        assert dcc.read(cache).keys() == codes.keys()  # and written back whole


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


def test_the_cache_keeps_this_process_sources_past_its_bound(tmp_path: Path, monkeypatch) -> None:
    cache = dcc.DataclassCodeCache(tmp_path / "dc.bin")
    cache.codes = {
        f"x = {i}\n": compile(f"x = {i}\n", "<string>", "exec") for i in range(dcc.MAX_ENTRIES + 1)
    }
    ns: dict = {}
    cache.exec("y = 1\n", {}, ns)
    assert ns == {"y": 1}
    monkeypatch.setattr(dcc.sys, "dont_write_bytecode", False)
    cache.save()
    assert list(dcc.read(tmp_path / "dc.bin")) == ["y = 1\n"]


@pytest.mark.slow
def test_the_cli_compiles_its_dataclasses_from_the_install_cache(tmp_path: Path) -> None:
    """The console script installs it: a second run finds every method in the file and writes nothing."""
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
