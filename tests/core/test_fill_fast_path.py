"""A variant's text is filled by str.format_map (issue 30), exactly as string.Formatter().vformat(text, (), params)
filled it: the same text for every template the catalogue declares and for odd ones, and the same error (type and
words, a check's "rule error") when a template cannot be filled."""

from __future__ import annotations

import string
from typing import Any

import pytest
from gpuaudit.probes.catalogue import REGISTRY
from gpuaudit.probes.core.judge.checks import fill

pytestmark = pytest.mark.fast

FORMATTER = string.Formatter()


def outcome(how: Any, text: str, params: dict[str, Any]) -> tuple[str, str]:
    try:
        return "ok", how(text, params)
    except Exception as exc:  # noqa: BLE001 - compared below
        return exc.__class__.__name__, str(exc)


def reference(text: str, params: dict[str, Any]) -> str:
    return FORMATTER.vformat(text, (), params)


class Box:
    attr = "in a box"

    def __format__(self, spec: str) -> str:
        return f"<box {spec}>"


PARAMS: dict[str, Any] = {
    "n": 8,
    "f": 2.5,
    "s": "zen5",
    "lst": ["a", "b"],
    "d": {"k": "v", "0": "zero"},
    "box": Box(),
    "w": 6,
    "none": None,
}
ODD = [
    "",
    "plain text",
    "{n} GPUs on {s}",
    "{f:.1f} GB/s, {n:>4}, {n:#x}, {s!r}, {s!a}, {s!s:^9}",
    "{{literal}} and {{{n}}}",
    "{lst[0]}{lst[1]} {d[k]} {d[0]}",
    "{box} {box:spec} {box.attr} {box!s}",
    "{n:{w}} {f:{w}.{n}f}",
    "{none}",
    "{missing}",
    "{0}",
    "{}",
    "{n!x}",
    "{n:q}",
    "{s:{w}{w}{w:{w}}}",
    "{lst[9]}",
    "{box.nothing}",
    "{",
    "}",
    "{n",
    "{d[k}",
    "{n:{w:{w:{w}}}}",
    "{ n }",
    "{n}}",
]


@pytest.mark.parametrize("text", ODD)
def test_odd_templates_fill_or_fail_as_the_formatter_does(text: str) -> None:
    assert outcome(fill, text, PARAMS) == outcome(reference, text, PARAMS)


def test_every_declared_variant_fills_as_before() -> None:
    texts = 0
    for probe in REGISTRY:
        for check in probe.checks:
            for msg in check.variants.values():
                names = msg.fields()
                for values in ("x", 3, 2.75, None):
                    params = dict.fromkeys(names, values)
                    for text in (msg.title, msg.why, msg.fix):
                        assert outcome(fill, text, params) == outcome(reference, text, params)
                        texts += 1
                # a param missing: the same KeyError
                if names:
                    params = dict.fromkeys(names[1:], "x")
                    assert outcome(fill, msg.title + msg.why + msg.fix, params) == outcome(
                        reference, msg.title + msg.why + msg.fix, params
                    )
    assert texts > 100
