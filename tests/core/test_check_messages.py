"""Issue 23 item 7: messages as data. A verdict never writes its own title/why/fix: it picks a named variant
of its row (`Check.variants`, `Message` templates with `{placeholders}`) and the framework renders it.

Held three ways:

* statically: no `ok/info/warning/critical/unknown/not_applicable/Verdict(...)` call in probes/ passes
  `title=`/`why=`/`fix=`; every variant name a row's verdict (and every function it calls) can pick is declared on
  that row, every declared variant can be picked, and each pick passes the params its templates name;
* by running: every verdict over the case-study recordings, the real no-GPU host and a live audit of this machine
  (the recordings of the read-tracking and partial-failure tests), each also with every command failed one at a
  time for the case study, says only its row's own text or a rendering of one of its declared variants;
* the framework: an undeclared variant or a missing param is this check's "rule error", never free text.
"""

from __future__ import annotations

import ast
import dis
import functools
import json
import re
import string
import types
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from gpuaudit.probes.catalogue import DERIVED, REGISTRY
from gpuaudit.probes.core.judge.checks import (
    HOST,
    Check,
    Message,
    Verdict,
    judge_checks,
    ok,
    render,
    warning,
)
from gpuaudit.probes.core.models import CommandRecord, Severity
from gpuaudit.tui.cli.list_checks import as_dict
from test_partial_failure_matrix import RECORDINGS, failing_one, judge_all

ROOT = Path(__file__).resolve().parents[2]
CHECKS: dict[str, Check] = {c.id: c for p in REGISTRY for c in p.checks}
ALL_ROWS: dict[str, Check] = {**CHECKS, **{c.id: c for c in DERIVED}}
"""The probes' rows and the derived ones (regression.*, judged against a baseline) for the catalogue test."""
HELPERS = {"ok", "info", "warning", "critical", "unknown", "not_applicable", "Verdict"}
FREE = ("title", "why", "fix")
NOT_PARAMS = {"observed", "expected", "reason", "variant", "evidence", "severity", "params"}


# --------------------------------------------------------------------------------------------------
# Static: no free text, every pick declared


def free_text_calls(source: str, name: str = "<src>") -> list[str]:
    """`file:line helper(title=...)` for each verdict-helper call that passes free title/why/fix text."""
    out = []
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in HELPERS:
            bad = [k.arg for k in n.keywords if k.arg in FREE]
            if bad:
                out.append(f"{name}:{n.lineno} {n.func.id}({', '.join(bad)}=...)")
    return out


def test_no_verdict_passes_free_text() -> None:
    assert not set(FREE) & set(Verdict.__dataclass_fields__), "Verdict carries no free text fields"
    bad = [
        hit
        for path in sorted((ROOT / "probes").rglob("*.py"))
        for hit in free_text_calls(path.read_text(), str(path.relative_to(ROOT)))
    ]
    assert not bad, "\n".join(bad)


def test_the_free_text_scan_can_fail() -> None:
    src = 'def v(ctx):\n    return warning("obs", title=f"GPU {n} hot")\n'
    assert free_text_calls(src) == ["<src>:2 warning(title=...)"]


def _globals_loaded(code: types.CodeType) -> set[str]:
    names = {
        i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")
    }
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _globals_loaded(c)
    return names


def _attrs(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _attrs(c)
    return names


def _ours(v: object) -> bool:
    return (
        isinstance(v, types.FunctionType)
        and v.__module__.startswith("gpuaudit.probes")
        and v.__module__ != "gpuaudit.probes.core.judge.checks"
    )


def reached(fn: types.FunctionType, seen: set[types.FunctionType] | None = None) -> set:
    """The verdict and every project function it can call (through globals, tables of functions, modules)."""
    seen = set() if seen is None else seen
    if fn in seen:
        return seen
    seen.add(fn)
    for name in _globals_loaded(fn.__code__):
        v = fn.__globals__.get(name)
        if _ours(v):
            found = [v]
        elif isinstance(v, tuple | list):
            found = [x for x in v if _ours(x)]
        elif isinstance(v, dict):
            found = [x for x in v.values() if _ours(x)]
        elif isinstance(v, types.ModuleType) and v.__name__.startswith("gpuaudit.probes."):
            found = [getattr(v, a) for a in _attrs(fn.__code__) if _ours(getattr(v, a, None))]
        else:
            found = []
        for f in found:
            reached(f, seen)
    return seen


@functools.cache
def _module_tree(filename: str) -> ast.Module:
    return ast.parse(Path(filename).read_text())


def _node_of(fn: types.FunctionType) -> ast.AST | None:
    """The def (or lambda) whose code is `fn`'s, in its module's syntax tree."""
    tree, line = _module_tree(fn.__code__.co_filename), fn.__code__.co_firstlineno
    for n in ast.walk(tree):
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
            first = n.decorator_list[0].lineno if n.decorator_list else n.lineno
            if first == line and n.name == fn.__name__:
                return n
        elif isinstance(n, ast.Lambda) and fn.__name__ == "<lambda>" and n.lineno == line:
            return n
    return None


def _strings(e: ast.AST, assigned: dict[str, list[ast.AST]]) -> set[str] | None:
    """The variant names an expression can give: constants, both arms of a conditional, a local assigned
    constants; None when it is computed (the run-time test covers those)."""
    if isinstance(e, ast.Constant) and isinstance(e.value, str):
        return {e.value}
    if isinstance(e, ast.IfExp):
        a, b = _strings(e.body, assigned), _strings(e.orelse, assigned)
        return None if a is None or b is None else a | b
    if isinstance(e, ast.Name) and e.id in assigned:
        out: set[str] = set()
        for v in assigned[e.id]:
            s = _strings(v, assigned)
            if s is None:
                return None
            out |= s
        return out
    return None


def _assignments(fn_node: ast.AST) -> dict[str, list[ast.AST]]:
    """Local name -> the values assigned to it (tuple unpacking included)."""
    out: dict[str, list[ast.AST]] = {}
    for a in ast.walk(fn_node):
        if isinstance(a, ast.Assign):
            for t in a.targets:
                if isinstance(t, ast.Name):
                    out.setdefault(t.id, []).append(a.value)
                elif isinstance(t, ast.Tuple):
                    values = (
                        a.value.elts if isinstance(a.value, ast.Tuple) else [a.value] * len(t.elts)
                    )
                    for x, v in zip(t.elts, values, strict=False):
                        if isinstance(x, ast.Name):
                            out.setdefault(x.id, []).append(v)  # a computed value: None below
        elif isinstance(a, ast.AugAssign | ast.AnnAssign | ast.For | ast.NamedExpr) and isinstance(
            a.target, ast.Name
        ):
            out.setdefault(a.target.id, []).append(a.target)  # not a constant: computed
    return out


def picks(check: Check) -> Iterator[tuple[str, int, set[str] | None, set[str] | None]]:
    """(file, line, variant names or None when computed, params passed or None when unknown) per pick."""
    for fn in reached(check.verdict):
        node = _node_of(fn)
        if node is None:
            continue
        assigned = _assignments(node)
        for n in ast.walk(node):
            if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Name)):
                continue
            if n.func.id not in HELPERS:
                continue
            kw = {k.arg: k.value for k in n.keywords}
            var = kw.get("variant")
            if var is None and n.func.id == "Verdict" and len(n.args) >= 4:
                var = n.args[3]
            if var is None:
                continue
            params: set[str] | None = {k for k in kw if k and k not in NOT_PARAMS}
            if None in kw:  # **kwargs passed on
                params = None
            if n.func.id == "Verdict":
                p = kw.get("params") or (n.args[4] if len(n.args) >= 5 else None)
                if isinstance(p, ast.Dict) and all(isinstance(k, ast.Constant) for k in p.keys):
                    params = {k.value for k in p.keys}  # type: ignore[union-attr]
                elif p is not None:
                    params = None
            yield fn.__code__.co_filename, n.lineno, _strings(var, assigned), params


def test_every_picked_variant_is_declared_on_its_row() -> None:
    bad = []
    for (
        check
    ) in CHECKS.values():  # (the derived rows' verdicts are picked in snapshots/baseline.py)
        seen: set[str] = set()
        computed = False
        for file, line, names, params in picks(check):
            where = f"{'/'.join(Path(file).parts[-3:])}:{line}"
            if names is None:
                computed = True
                continue
            seen |= names
            for name in sorted(names):
                if (msg := check.variants.get(name)) is None:
                    bad.append(f"{check.id}: {where} picks undeclared variant {name!r}")
                elif params is not None and (missing := set(msg.fields()) - params):
                    bad.append(f"{check.id}: {where} variant {name!r} without {sorted(missing)}")
        if not computed and (dead := set(check.variants) - seen):
            bad.append(f"{check.id}: declared variants no verdict picks: {sorted(dead)}")
    assert not bad, "\n".join(bad)


def test_the_static_check_sees_a_variant_the_row_lacks() -> None:
    row = CHECKS["power.cpu_scaling_driver"]
    names = {n for _f, _l, ns, _p in picks(row) for n in ns or ()}
    assert {"acpi_cpufreq_zen5", "cpu_frequency_driver"} <= names <= set(row.variants)
    stripped = replace(
        row, variants={k: v for k, v in row.variants.items() if k != "acpi_cpufreq_zen5"}
    )
    CHECKS[row.id] = stripped
    try:
        with pytest.raises(AssertionError, match="undeclared variant 'acpi_cpufreq_zen5'"):
            test_every_picked_variant_is_declared_on_its_row()
    finally:
        CHECKS[row.id] = row


# --------------------------------------------------------------------------------------------------
# By running every verdict


def _pattern(template: str) -> str:
    """A regular expression a rendering of the template matches: its literal text, anything per field."""
    return "".join(
        re.escape(lit) + ("(?s:.*?)" if field is not None else "")
        for lit, field, _spec, _conv in string.Formatter().parse(template)
    )


def text_is_declared(check: Check, title: str, why: str, fix: str) -> bool:
    """Whether a finding's title/why/fix is the row's own or a rendering of one of its variants."""
    if (title, why, fix) == (check.title, check.why, check.fix):
        return True
    got, own = (title, why, fix), (check.title, check.why, check.fix)
    return any(
        all(
            g == o if not w else re.fullmatch(_pattern(w), g, re.S) is not None
            for g, w, o in zip(got, (m.title, m.why, m.fix), own, strict=True)
        )
        for m in check.variants.values()
    )


def _undeclared(records: dict, label: str) -> list[str]:
    out = []
    for (fid, targets), f in judge_all(records).items():
        check = CHECKS.get(fid)
        if check is not None and not text_is_declared(check, f.title, f.why, f.fix):
            out.append(
                f"{label}: {fid} {targets} says {f.title!r} / {f.why[:60]!r} / {f.fix[:60]!r}"
            )
    return out


@pytest.mark.parametrize("name", list(RECORDINGS))
def test_every_finding_says_its_rows_text_or_a_declared_variant(name: str) -> None:
    records = RECORDINGS[name]()  # type: ignore[operator]
    bad = _undeclared(records, name)
    if name.startswith(
        "case-study"
    ):  # every command failed one at a time: the unknown/other branches
        cids = sorted(
            {(r, x.command_id) for by in records.values() for r, xs in by.items() for x in xs}
        )
        for role, cid in cids:
            bad += _undeclared(failing_one(records, role, cid), f"{name} without {role}:{cid}")
    assert not bad, "\n".join(bad[:40])


def test_the_run_check_can_fail() -> None:
    check = CHECKS["power.cpu_scaling_driver"]
    assert text_is_declared(check, check.title, check.why, check.fix)
    assert text_is_declared(check, "CPU frequency driver amd-pstate-epp", check.why, check.fix)
    assert not text_is_declared(check, "CPU frequency driver", check.why, "some other fix")
    assert not text_is_declared(check, "Something else entirely", check.why, check.fix)


# --------------------------------------------------------------------------------------------------
# The framework renders


def _one(verdict, variants) -> object:
    check = Check(
        id="test.row",
        title="Row title",
        owner="host",
        why="Row why.",
        fix="Row fix.",
        verdict=verdict,
        sources=("uname_r",),
        roles=HOST,
        variants=variants,
    )
    rec = CommandRecord(
        target="host",
        probe_id="test",
        command_id="uname_r",
        command="uname -r",
        exit_status=0,
        stdout="6.8.0\n",
    )
    (finding,) = judge_checks([check], {"host": None}, {"host": {"uname_r": rec}})
    return finding


def test_a_variant_is_rendered_and_empty_fields_keep_the_rows_text() -> None:
    f = _one(
        lambda ctx: warning("obs", variant="hot", n=3, t=81.25),
        {"hot": Message(title="{n} GPU(s) at {t:.1f} C", fix="Cool {{them}}.")},
    )
    assert (f.severity, f.title, f.why, f.fix) == (
        Severity.WARNING,
        "3 GPU(s) at 81.2 C",
        "Row why.",
        "Cool {them}.",
    )
    f = _one(lambda ctx: ok("obs"), {"hot": Message(title="x")})
    assert (f.title, f.why, f.fix) == ("Row title", "Row why.", "Row fix.")


def test_an_undeclared_variant_or_a_missing_param_is_a_rule_error() -> None:
    f = _one(lambda ctx: warning("obs", variant="nope"), {"hot": Message(title="x")})
    assert f.severity == Severity.UNKNOWN and "undeclared message variant 'nope'" in f.observed
    assert f.title == "Row title"
    f = _one(lambda ctx: warning("obs", variant="hot"), {"hot": Message(title="{n} hot")})
    assert f.severity == Severity.UNKNOWN and f.observed.startswith("rule error: KeyError")


def test_render_and_fields() -> None:
    m = Message(title="{a} and {b:.2f}", why="{a!r}", fix="{{literal}}")
    assert m.fields() == ("a", "b")
    check = CHECKS["power.cpu_scaling_driver"]
    v = Verdict("info", "obs", variant="cpu_frequency_driver", params={"driver": "amd-pstate-epp"})
    assert render(check, v) == ("CPU frequency driver amd-pstate-epp", check.why, check.fix)


# --------------------------------------------------------------------------------------------------
# The catalogue shows them


def test_list_checks_json_lists_every_variant_with_its_params() -> None:
    total = 0
    for check in ALL_ROWS.values():
        d = as_dict(check)
        assert set(d["variants"]) == set(check.variants)  # type: ignore[arg-type]
        for name, m in check.variants.items():
            v = d["variants"][name]  # type: ignore[index]
            assert v["params"] == list(m.fields())
            assert all(v.get(k, "") == getattr(m, k) for k in FREE)
            total += 1
    assert total > 300
    json.dumps([as_dict(c) for c in CHECKS.values()])
