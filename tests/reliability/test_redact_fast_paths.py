"""The redactor's fast paths (issue 30) give the same output as the plain ones they replaced.

* `_segments` finds the trigger lines with fewer passes (`_line_finders`: triggers sharing a first character are
  one regex, a trigger holding another is left out): the spans must equal one `str.find` per trigger's.
* `_possible` answers with `in` tests and free_pw's own word (`\\bpw\\b`, not any `pw`): the output must equal the
  output with the previous `_possible` (a rule left out can match nowhere in the text).

Over every real fixture, the shapes of test_redact_shapes and random texts made of triggers, secret shapes,
separators and neutral words (sparse, so that a line often holds one trigger only).
"""

from __future__ import annotations

import random
import re

import pytest
from gpuaudit.probes.core import redact
from gpuaudit.probes.core.redact import _KNOWN_PREFIXES, _TRIGGERS, redact_text
from reliability.test_redact_shapes import LOOKALIKES, SHAPES, _fixture_files

pytestmark = pytest.mark.fast

_PW_ANY = re.compile(r"(?i)pass|pw")


def segments_one_find_per_trigger(text: str) -> list[tuple[int, int]]:
    """_segments as it was: one str.find pass per trigger."""
    low = text.lower()
    n = len(text)
    spans: list[tuple[int, int]] = []
    for lit in _TRIGGERS:
        i = low.find(lit)
        while i >= 0:
            start = low.rfind("\n", 0, i) + 1
            end = low.find("\n", i)
            end = n if end < 0 else end + 1
            nxt = low.find("\n", end)
            stop = n if nxt < 0 else nxt + 1
            if lit == "private key":
                pem_end = low.find("-----end", i + 1, i + 20000)
                if pem_end >= 0:
                    e = low.find("\n", pem_end)
                    stop = max(stop, n if e < 0 else e + 1)
                k = 0
                while k < 400 and start > 0:
                    prev = low.rfind("\n", 0, start - 1) + 1
                    if not redact._BASE64_LINE.fullmatch(text, prev, start - 1):
                        break
                    start, k = prev, k + 1
            spans.append((start, stop))
            i = low.find(lit, end) if end < n else -1
    spans.sort()
    merged: list[tuple[int, int]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def possible_as_it_was(text: str) -> frozenset[str]:
    has = text.__contains__
    rules = {
        "pem": has("PRIVATE KEY"),
        "pem_tail": has("PRIVATE KEY"),
        "pve": has("#") or has("description:"),
        "url": has("://") and has("@"),
        "no_scheme": has("//") and has("@"),
        "webhook": has("hooks.") or has("discord") or has("webhook"),
        "query": (has("?") or has("&")) and has("="),
        "known": any(map(has, _KNOWN_PREFIXES)),
        "flag": has("--"),
        "assign": has("=") or has(":"),
        "header": has("Bearer") or has("Basic") or has("token"),
        "free_pw": _PW_ANY.search(text) is not None,
        "encoded": has("%"),
    }
    return frozenset(k for k, v in rules.items() if v)


SHAPE_TEXTS = [t for t, _ in SHAPES.values()] + LOOKALIKES
FRAGMENTS = [
    *SHAPE_TEXTS,
    *_TRIGGERS,
    *(t.upper() for t in _TRIGGERS),
    *_KNOWN_PREFIXES,
    *"\n\n\n  \t=:'\"#%{}[]?&.-_/@",
    *(
        "password",
        "PASSWORD",
        "Passphrase",
        "paſsword",
        "pw",
        "Pw",
        "api_key",
        "--api-key",
        "--hf-token",
    ),
    *("%3D", "%40", "://", "https://", "user:pw@host", "/etc/pve/lxc/101.conf:", "description: "),
    *(
        "-----BEGIN RSA PRIVATE KEY-----",
        "-----END RSA PRIVATE KEY-----",
        "Zm9vYmFyYmF6cXV4cXV1eA==",
    ),
    *("hf_abcdefghijklmnopqrstuv", "ghp_" + "aB1" * 12, "sk-" + "aB1" * 8, "AKIAABCDEFGHIJKLMNOP"),
    *(
        "Bearer ",
        "Basic ",
        "abc123XYZ",
        "SECRET_KEY",
        "HF_TOKEN=",
        "export ",
        "Environment=",
        "sig=",
    ),
    *(
        ".webhook.office.com/webhookb2/",
        "hooks.zapier.com/hooks/catch/",
        "discordapp.com/api/webhooks/1/",
    ),
    *("String 3: ", "AuxPwr- ", "compatible", "Hunter2!", "İ", "ß", "K", "ſ", "--", "value", "42"),
]
NEUTRAL = [
    "abc",
    "Def",
    " ",
    " ",
    "\n",
    "\n",
    "0x1F",
    "12345678",
    "Zm9vYmFyYmF6cXV4",
    "/",
    ".",
    "=",
    ":",
]


def random_texts(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        n = rng.randint(1, 40)
        if rng.random() < 0.5:
            out.append("".join(rng.choice(FRAGMENTS) for _ in range(n)))
        else:  # sparse: most lines hold one trigger or none
            pick = [rng.choice(FRAGMENTS if rng.random() < 0.15 else NEUTRAL) for _ in range(3 * n)]
            out.append("".join(pick))
    return out


def corpus() -> list[str]:
    texts = []
    for f in _fixture_files():
        try:
            texts.append(f.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, OSError):
            continue
    return texts


def test_trigger_lines_are_found_as_with_one_find_per_trigger() -> None:
    texts = corpus() + SHAPE_TEXTS + random_texts(30, 4000)
    assert len(texts) > 4400
    differ = [t[:200] for t in texts if redact._segments(t) != segments_one_find_per_trigger(t)]
    assert differ == []


def test_output_is_the_same_as_with_the_previous_possible(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = corpus() + SHAPE_TEXTS + random_texts(31, 4000)
    now = [redact_text(t) for t in texts]
    monkeypatch.setattr(redact, "_possible", possible_as_it_was)
    before = [redact_text(t) for t in texts]
    differ = [t[:200] for t, a, b in zip(texts, now, before, strict=True) if a != b]
    assert differ == []
    assert sum(a != t for t, a in zip(texts, now, strict=True)) > 1000  # the texts do hold secrets


def test_fewer_passes_than_triggers() -> None:
    assert len(redact._LINE_FINDERS) < 0.6 * len(_TRIGGERS)


def test_a_segment_repeated_in_one_output_is_scanned_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 30: identical devices' lines (8 GPUs in `lspci -vvv`) make identical trigger segments; each distinct
    one is scanned once per output, with the same result (the scan is pure). Fails when every segment is scanned.
    """
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    text = (root / "snapshots/examples/case-study/after/host/lspci_vvv.out").read_text()
    spans = redact._segments(text)
    distinct = {text[a:b] for a, b in spans}
    assert len(spans) > len(distinct) + 20  # can fail: the real output repeats its devices' lines
    want = redact_text(text)
    real_scan = redact._scan
    scans: list[str] = []

    def counting(segment: str, depth: int) -> str:
        scans.append(segment)
        return real_scan(segment, depth)

    monkeypatch.setattr(redact, "_scan", counting)
    assert redact_text(text) == want
    assert sorted(scans) == sorted(distinct)
