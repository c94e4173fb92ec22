"""Issue 23: each output is parsed once per audit, and every consumer shares the parsed value.

A full replay audit (the runner over recorded outputs: every probe's extract, the combiners, the checks), then
what reads the finished run (the roofline, the action plan's roofline, the fleet comparison of its snapshot),
with every parser's own body instrumented: the parsers are the `parse_*` functions of probes/core/parsers, of
every probe package, of the combiners and of the fleet comparison, found by name (a parser outside the cache
counts too). An input is a record's stdout or stderr; a parser run on the same text twice is a second call.

Recordings: the case study (before and after) and the real GPU-less host of tests/fixtures/engine/no-gpu-host.
Figures: `python tests/core/test_parse_once.py` (before the parse cache: 1.72 / 1.74 / 2.00 calls per
distinct input).
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import pkgutil
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import CodeType, FrameType, ModuleType
from typing import Any

import gpuaudit.probes as probes_pkg
import pytest
from gpuaudit.probes.catalogue import REGISTRY
from gpuaudit.probes.core import parsing
from gpuaudit.probes.core.fleet.peers import node_from_document
from gpuaudit.probes.core.judge.plan import roofline_markdown
from gpuaudit.probes.core.models import AuditRun
from gpuaudit.probes.core.roofline.report import roofline_for_run
from gpuaudit.probes.core.run.runner import Audit, AuditOptions
from gpuaudit.probes.core.run.session import directory_bindings, run_to_end
from gpuaudit.snapshots.schema import Snapshot

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = {
    "case-study-before": ROOT / "snapshots" / "examples" / "case-study" / "before",
    "case-study-after": ROOT / "snapshots" / "examples" / "case-study" / "after",
    "no-gpu-host": ROOT / "tests" / "fixtures" / "engine" / "no-gpu-host",
}
SKIP = {
    "gpuaudit.probes.core.parsers.pyenv_reader"
}  # runs on the target (python3 -I), not a parser here


def _modules() -> Iterator[ModuleType]:
    for info in pkgutil.walk_packages(probes_pkg.__path__, "gpuaudit.probes."):
        name = info.name
        if (
            name in SKIP
            or ".core." in name
            and not (
                name.startswith("gpuaudit.probes.core.parsers.")
                or name
                in ("gpuaudit.probes.core.judge.combiners", "gpuaudit.probes.core.fleet.peers")
            )
        ):
            continue
        yield importlib.import_module(name)


def parser_bodies() -> dict[CodeType, str]:
    """The code of every parser's own body (under the cache or not) -> its name."""
    out: dict[CodeType, str] = {}
    for module in _modules():
        for name, fn in vars(module).items():
            if name.startswith("parse_") and inspect.isfunction(fn):
                body = inspect.unwrap(fn)
                if body.__module__ == module.__name__:
                    out[body.__code__] = f"{body.__module__}.{name}"
    return out


@contextmanager
def counting(bodies: dict[CodeType, str]) -> Iterator[Counter[tuple[str, str]]]:
    """Count each parser body's runs by (parser, first argument) while the block runs."""
    calls: Counter[tuple[str, str]] = Counter()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and (name := bodies.get(frame.f_code)) is not None:
            code = frame.f_code
            text = frame.f_locals.get(code.co_varnames[0]) if code.co_argcount else None
            if isinstance(text, str):
                calls[(name, text)] += 1

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        yield calls
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]


def consume(run: AuditRun) -> None:
    """What reads a finished audit: the snapshot (its roofline), the plan's roofline, the fleet comparison."""
    snap = Snapshot.from_run(run)
    roofline_for_run(run)
    roofline_markdown(run)
    node_from_document("node", "test", snap.model_dump(mode="json"))


def per_input(root: Path) -> tuple[int, int, list[tuple[str, str, int]]]:
    """(parser runs on record outputs, distinct (parser, output) pairs, the pairs run more than once)."""
    parsing.PARSE_CACHE.clear()

    async def audit() -> AuditRun:
        return await run_to_end(Audit(directory_bindings(root), list(REGISTRY), AuditOptions()))

    with counting(parser_bodies()) as calls:
        run = asyncio.run(audit())
        consume(run)
    outputs: dict[str, str] = {}
    for p in run.probes:
        for r in p.records:
            for text in (r.stdout, r.stderr):
                if text:
                    outputs.setdefault(text, f"{r.target}:{r.command_id}")
    on_records = {k: n for k, n in calls.items() if k[1] in outputs}
    twice = sorted((parser, outputs[text], n) for (parser, text), n in on_records.items() if n > 1)
    return sum(on_records.values()), len(on_records), twice


@pytest.mark.parametrize("name", list(RECORDINGS))
def test_each_output_is_parsed_once_per_audit(name: str) -> None:
    runs, distinct, twice = per_input(RECORDINGS[name])
    assert distinct > 0, name
    assert twice == [], f"{name}: parsed more than once (parser, record, runs): {twice}"
    assert runs / distinct == 1.0


def test_the_count_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the cache the same recording has outputs parsed several times (the count sees them)."""

    def uncached(
        self: parsing.ParseCache,
        fn: Callable[..., Any],
        text: str,
        args: tuple[Any, ...],
        kw: dict[str, Any],
    ) -> Any:
        return fn(text, *args, **kw)

    monkeypatch.setattr(parsing.ParseCache, "call", uncached)
    runs, distinct, twice = per_input(RECORDINGS["case-study-before"])
    assert twice and runs / distinct > 1.3


def test_every_parser_of_the_families_is_under_the_cache() -> None:
    """The shared parsers (probes/core/parsers) all go through parse_once, so a new consumer shares too."""
    missing = [
        name
        for module in _modules()
        if module.__name__.startswith("gpuaudit.probes.core.parsers.")
        for name, fn in vars(module).items()
        if name.startswith("parse_")
        and inspect.isfunction(fn)
        and fn.__module__ == module.__name__
        and not hasattr(fn, "__wrapped__")
        and list(inspect.signature(fn).parameters)[:1] == ["text"]
    ]
    assert missing == []


if __name__ == "__main__":
    for label, path in RECORDINGS.items():
        n, d, more = per_input(path)
        print(f"{label}: {n} parser runs over {d} distinct (parser, output): {n / d:.2f} per input")
        for parser, rec, k in more:
            print(f"    {parser} on {rec}: {k}x")


def test_a_parse_scope_holds_its_own_parses_and_frees_them() -> None:
    """A fleet host's audit parses in a cache of its own (tui/cli/fleet_hosts.audit_host): shared by what runs in
    the block and the tasks it starts, dropped at its end, never mixed with another host's."""
    from gpuaudit.probes.core.parsers.system import parse_uname

    text = (RECORDINGS["case-study-before"] / "host" / "uname_r.out").read_text()
    parsing.PARSE_CACHE.clear()
    runs_before = parsing.PARSE_CACHE.runs

    async def host() -> parsing.ParseCache:
        with parsing.parse_scope() as cache:
            await asyncio.gather(*(asyncio.to_thread(parse_uname, text) for _ in range(1)))
            await asyncio.create_task(asyncio.sleep(0, parse_uname(text)))
            assert cache.runs == 1 and cache.hits >= 1
            return cache

    async def fleet() -> list[parsing.ParseCache]:
        return list(await asyncio.gather(host(), host()))

    first, second = asyncio.run(fleet())
    assert first is not second and first.runs == second.runs == 1
    assert parsing.PARSE_CACHE.runs == runs_before  # nothing leaked into the process's cache
