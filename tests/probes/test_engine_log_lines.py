"""Decode throughput and speculative acceptance from real SGLang/vLLM log lines (fixtures/engine/logs/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpuaudit.probes.core.parsers.engine import (
    ENGINE_LOGS_SHELL,
    parse_throughput_lines,
)

LOGS = Path(__file__).resolve().parents[1] / "fixtures/engine/logs"


@pytest.mark.parametrize(
    "name,samples",
    [
        (
            "sglang-decode-batch-accept-len.log",
            [(239.06, 24, 3.05), (631.96, 23, 2.63), (648.87, 22, 2.83)],
        ),
        ("sglang-decode-batch-dot-accept-len.log", [(6138.60, 48, 1.00)]),
        (
            "sglang-decode-batch-cuda-graph.log",
            [(1635.11, 32, None)],
        ),  # the prefill line is not a decode sample
        ("vllm-single-stream-spec-decoding.log", [(249.5, 1, 4.00), (249.7, 1, 4.00)]),
        ("vllm-single-stream-cpu.log", [(1.2, 1, None), (1.2, 1, None), (1.3, 1, None)]),
    ],
)
def test_samples_with_acceptance(name, samples):
    got = parse_throughput_lines((LOGS / name).read_text().splitlines())
    assert [(s.tok_s, s.running, s.accept_len) for s in got] == samples


def test_log_scan_keeps_vllm_acceptance_lines():
    assert "Mean acceptance length" in ENGINE_LOGS_SHELL
