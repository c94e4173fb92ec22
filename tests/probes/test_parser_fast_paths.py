"""Issue 30: the hot parsers' fast paths (str methods instead of a regex per line) give exactly what the regex
versions gave, on every real sample and on the same samples' lines bent the ways a regex and str methods could
disagree (tabs, a colon right after the indentation, non-ASCII spaces, rules, blank lines)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from gpuaudit.probes.core.parsers import nvidia_smi as ns

FIX = Path(__file__).resolve().parents[1] / "fixtures"

_Q_LINE = re.compile(r"^(?P<indent>\s*)(?P<key>[^:]+?)\s*(?::\s?(?P<value>.*))?$")


def reference_q_tree(lines: list[str]) -> dict[str, Any]:
    """_q_tree as it was before issue 30 (one _Q_LINE match per line)."""
    root: dict[str, Any] = {}
    stack: list[tuple[int, dict[str, Any]]] = [(-1, root)]
    for raw in lines:
        if not raw.strip() or raw.strip().startswith("===="):
            continue
        m = _Q_LINE.match(raw.rstrip())
        if not m:
            continue
        indent = len(m["indent"].expandtabs(4))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        key, value = m["key"].strip(), m["value"]
        node: dict[str, Any] = {}
        if value is not None and value.strip() != "":
            node[""] = value.strip()
        if key in parent:
            stack.append((indent, {}))
            continue
        parent[key] = node
        stack.append((indent, node))
    return _reference_collapse(root)  # type: ignore[return-value]


def _reference_collapse(node: dict[str, Any]) -> dict[str, Any] | str:
    if set(node) == {""}:
        return str(node[""])
    return {k: (_reference_collapse(v) if isinstance(v, dict) else v) for k, v in node.items()}


def reference_smi_q(text: str) -> list[dict[str, Any]]:
    text = ns.strip_escapes(text)
    gpus: list[dict[str, Any]] = []
    block: list[str] | None = None
    bus = ""
    for line in (text or "").splitlines():
        m = re.match(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)\s*$", line)
        if m:
            if block is not None:
                gpus.append({"_bus_id": bus, **ns._as_dict(reference_q_tree(block))})
            block, bus = [], m.group(1)
        elif block is not None:
            block.append(line)
    if block is not None:
        gpus.append({"_bus_id": bus, **ns._as_dict(reference_q_tree(block))})
    return gpus


def q_samples() -> list[Path]:
    return sorted((FIX / "nvidia" / "nvidia-smi-q").glob("*.txt"))


def bent(text: str) -> list[str]:
    """The sample's lines bent where a regex and str methods could read them differently."""
    lines = text.splitlines()
    out: list[str] = []
    for i, line in enumerate(lines):
        body = line.lstrip()
        head = line[: len(line) - len(body)]
        out.append(line)
        if i % 7 == 0:
            out.append(head.replace("    ", "\t") + body)  # tabs in the indentation
        if i % 11 == 0:
            out.append(head + ": " + body)  # a colon right after the indentation
            out.append(":" + body)  # ... and at column 0
        if i % 13 == 0:
            out.append(head + body.replace(" ", "\u00a0", 2) + "\u2003")  # non-ASCII spaces
        if i % 17 == 0:
            out.extend(["", "   ", head + "=====", head + body + " :", head + body + ":  :x"])
    return out


@pytest.mark.parametrize("path", q_samples(), ids=lambda p: p.name)
def test_q_tree_reads_every_sample_as_the_regex_did(path: Path) -> None:
    text = path.read_text()
    assert ns._q_tree(text.splitlines()) == reference_q_tree(text.splitlines())
    assert ns.parse_smi_q.__wrapped__(text) == reference_smi_q(text)  # type: ignore[attr-defined]
    lines = bent(text)
    assert ns._q_tree(lines) == reference_q_tree(lines)
    joined = "\n".join(lines)
    assert ns.parse_smi_q.__wrapped__(joined) == reference_smi_q(joined)  # type: ignore[attr-defined]


def test_the_samples_hold_what_the_fast_path_must_get_right() -> None:
    """Can fail: the samples are real -q outputs with nested sections, values and GPU blocks."""
    text = "\n".join(p.read_text() for p in q_samples())
    assert len(q_samples()) >= 5
    assert re.search(r"^GPU [0-9A-F]{8}:", text, re.M)
    tree = ns._q_tree(bent(text))
    assert any(isinstance(v, dict) for v in tree.values())


class _CountingPatterns:
    """_ERROR_PATTERNS that count the texts scanned (one iteration per scan)."""

    def __init__(self, patterns: tuple[Any, ...]) -> None:
        self.patterns, self.scans = patterns, 0

    def __iter__(self) -> Any:
        self.scans += 1
        return iter(self.patterns)


def test_an_output_is_scanned_for_error_banners_once_per_audit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every probe's extract asks detect_smi_error / smi_error_kind of the same nvidia-smi outputs (the driver's
    banner pass on a fresh stdout + stderr string each time): under one parse scope (an audit) each distinct
    text is scanned once (issue 30). Fails when the banner scan is not under the parse cache."""
    from gpuaudit.probes.core.parsing import parse_scope
    from gpuaudit.snapshots import store

    root = Path(__file__).resolve().parents[2]
    snap = store.load(root / "snapshots" / "examples" / "case-study-after.json")
    texts = [r.stdout + "\n" + r.stderr for r in snap.records if r.stdout]
    counting = _CountingPatterns(ns._ERROR_PATTERNS)
    monkeypatch.setattr(ns, "_ERROR_PATTERNS", counting)
    with parse_scope():
        for text in texts:
            ns.detect_smi_error(text)
        first = counting.scans
        for _ in range(3):
            for text in texts:
                again = (text + "x")[:-1]  # equal, not the same string object
                assert again is not text
                ns.detect_smi_error(again)
                ns.smi_error_kind(again)
    assert first >= len(set(texts)) > 5
    assert counting.scans == first


def reference_sys_pci(text: str) -> list[Any]:
    """parse_sys_pci as it was before issue 30 (every upstream-port line walked every function)."""
    from gpuaudit.probes.pcie.facts import SysPci
    from gpuaudit.probes.pcie.parse import _BDF_END, _SYS_LINE

    devs: dict[str, dict[str, Any]] = {}
    for line in (text or "").splitlines():
        m = _SYS_LINE.match(line.strip())
        if not m:
            continue
        base, bdf, key, val = m.group(1), m.group(2), m.group(3), m.group(4).strip()
        if key == "upstream":
            um = _BDF_END.search(val)
            devs.setdefault(bdf, {"bdf": bdf, "values": {}, "upstream_values": {}})["upstream"] = (
                um.group(1) if um else None
            )
            continue
        if key.startswith("aer_dev_") and " " in val:
            name, _, count = val.rpartition(" ")
            key, val = f"{key}/{name.strip()}", count
        if base.startswith("/sys/bus/pci/devices/"):
            devs.setdefault(bdf, {"bdf": bdf, "values": {}, "upstream_values": {}})["values"][
                key
            ] = val
        else:
            for dev in devs.values():
                if dev.get("upstream") == bdf:
                    dev["upstream_values"][key] = val
    return [SysPci(**d) for d in devs.values()]


def sys_pci_samples() -> list[Path]:
    root = Path(__file__).resolve().parents[2] / "snapshots" / "examples" / "case-study"
    return sorted(root.glob("*/host/sys_pci_nvidia.out"))


@pytest.mark.parametrize("path", sys_pci_samples(), ids=lambda p: p.parent.parent.name)
def test_sys_pci_reads_every_sample_as_before(path: Path) -> None:
    """The same functions, values and upstream ports, on the real outputs and on their lines shuffled (an
    upstream port's lines before or between the functions that name it, a function's upstream read twice)."""
    import random

    from gpuaudit.probes.pcie.parse import parse_sys_pci

    text = path.read_text()
    got = parse_sys_pci.__wrapped__(text)  # type: ignore[attr-defined]
    assert got == reference_sys_pci(text)
    assert sum(bool(d.upstream_values) for d in got) >= 2  # can fail: the sample has shared ports
    lines = text.splitlines()
    rng = random.Random(30)
    for _ in range(20):
        bent_lines = lines + rng.sample(lines, len(lines) // 3)
        rng.shuffle(bent_lines)
        bent_text = "\n".join(bent_lines)
        assert parse_sys_pci.__wrapped__(bent_text) == reference_sys_pci(bent_text)  # type: ignore[attr-defined]
