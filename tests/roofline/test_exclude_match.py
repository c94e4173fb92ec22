"""The roofline's exclude-list matcher (probes/core/roofline/model.py `_excluded`): literal names looked up in a set,
`NAME*` as prefixes, the rest compiled (issue 30: the single alternation of hundreds of names cost ~60 ms of CPU per
audit on GLM-5-NVFP4). It must answer exactly as that alternation did, kept here as the reference, for every
exclude list of the real configs in tests/fixtures/models and for crafted and random lists."""

from __future__ import annotations

import fnmatch
import functools
import json
import random
import re
from pathlib import Path

import pytest
from gpuaudit.probes.core.roofline import model as M

pytestmark = pytest.mark.fast

MODELS = Path(__file__).resolve().parents[1] / "fixtures" / "models"
KEYS = ("exclude_modules", "ignore", "modules_to_not_convert")


def reference(patterns: tuple[str, ...], module: str) -> bool:
    """The previous matcher, word for word: one alternation of every pattern."""
    return _alternation(patterns).match(module) is not None


@functools.cache
def _alternation(patterns: tuple[str, ...]) -> re.Pattern[str]:
    alts = []
    for p in patterns:
        if p.startswith("re:"):
            alts.append(f"(?:{p[3:]}).*")
        else:
            t = fnmatch.translate(p)[4:-3]
            alts.append(f"(?:{t})(?:\\..*)?")
    return re.compile("(?s:" + "|".join(alts) + ")\\Z") if alts else re.compile("(?!)")


def real_lists() -> list[tuple[str, tuple[str, ...]]]:
    found = []
    for path in sorted(MODELS.rglob("*.json")):
        stack = [json.loads(path.read_text())]
        while stack:
            x = stack.pop()
            if isinstance(x, dict):
                for k, v in x.items():
                    if k in KEYS and isinstance(v, list) and v:
                        found.append((f"{path.parent.name}/{path.name}:{k}", tuple(map(str, v))))
                    else:
                        stack.append(v)
            elif isinstance(x, list):
                stack.extend(x)
    return found


def names_for(patterns: tuple[str, ...]) -> list[str]:
    """Module names near each pattern: itself, wildcards filled, a suffix, its prefixes, the multimodal wrappers."""
    out: set[str] = set()
    for p in patterns:
        base = p[3:] if p.startswith("re:") else p
        for fill in ("", "0", "x", ".", "7.mlp"):
            filled = re.sub(r"\[[^]]*\]|[*?]", fill, base)
            for n in (filled, filled + ".weight", filled + "x", filled[:-1]):
                out.update(M.candidates(n))
        parts = base.split(".")
        out.update(".".join(parts[:i]) for i in range(len(parts) + 1))
    return sorted(out)


def check(patterns: tuple[str, ...], names: list[str]) -> None:
    wrong = [n for n in names if M._excluded(patterns, n) != reference(patterns, n)]
    assert not wrong, wrong[:10]


REAL = real_lists()


def test_the_real_configs_have_exclude_lists():
    assert len(REAL) >= 5, [n for n, _ in REAL]
    assert any(len(p) > 400 for _, p in REAL)  # GLM-5-NVFP4: 471 names


@pytest.mark.parametrize("patterns", [p for _, p in REAL], ids=[n for n, _ in REAL])
def test_real_exclude_lists_answer_as_the_single_alternation(patterns):
    check(patterns, names_for(patterns))


CRAFTED = [
    ("",),
    ("a.",),
    ("ab*", "ab?"),  # a prefix and a wildcard sharing its text
    ("ab?", "ab*"),
    ("a[bc]d", "a[b", "x]y", "q*r*"),
    ("re:.*self_attn.*", "lm_head"),
    ("re:model\\.layers\\.[0-2]\\.", "model.embed_tokens"),
    ("model.layers.*.mlp.router", "model.layers.1*", "model.layers.10.mlp"),
    ("*",),
    ("lm_head", "lm_head"),
]


@pytest.mark.parametrize("patterns", CRAFTED, ids=[",".join(p) or "empty" for p in CRAFTED])
def test_crafted_lists_answer_as_the_single_alternation(patterns):
    names = names_for(patterns) + [
        "",
        ".",
        "a",
        "ab",
        "abc",
        "ab.c",
        "a.b",
        "abd",
        "acd",
        "a[b",
        "x]y",
    ]
    check(patterns, names + ["qzr", "qr", "q.r.s", "model.layers.12.mlp.router.w", "lm_headx"])


def test_random_lists_answer_as_the_single_alternation():
    rng = random.Random(30)
    alphabet = "ab.0*?[]"
    for _ in range(300):
        patterns = tuple(
            "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
            for _ in range(rng.randint(1, 6))
        )
        try:
            reference(patterns, "")
        except re.error:
            continue  # fnmatch leaves some bracket texts that re cannot compile: not a config's list
        names = ["".join(rng.choice("ab.0") for _ in range(rng.randint(0, 7))) for _ in range(40)]
        check(patterns, names + names_for(patterns))
