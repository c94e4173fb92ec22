"""--active single-stream measurement against a local OpenAI-compatible stand-in that streams at a known rate:
measured within 5 %, time to first token excluded; refused (nothing sent) when the engine is busy."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from gpuaudit.probes.core.parsers.engine_metrics import (
    DECODE_PROBE_SHELL,
    DECODE_TOKENS,
    parse_decode_probe,
)
from gpuaudit.probes.core.readonly import write_risks
from gpuaudit.probes.core.sources import SOURCES

pytestmark = pytest.mark.slow  # a stand-in server process and the probe's shell: not the fast lane

STAND_IN = Path(__file__).resolve().parent / "openai_stand_in.py"
DT = 0.01  # 100 tok/s
TTFT = 0.4


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _engine(tmp_path: Path, running: int | str):
    port = _free_port()
    log = tmp_path / f"requests-{str(running).replace(',', '-')}.jsonl"
    proc = subprocess.Popen(
        [sys.executable, str(STAND_IN), str(port), str(running), str(DT), str(TTFT), str(log)]
        + ["vllm", "serve", "stand-in", "--port", str(port)]
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    return proc, port, log


def _probe() -> str:
    return subprocess.run(
        ["sh", "-c", DECODE_PROBE_SHELL], capture_output=True, text=True, timeout=120
    ).stdout


def test_the_decode_probe_is_an_active_source():
    src = SOURCES["engine_decode_probe"]
    assert src.active and write_risks(src.shell) == []
    assert "load" in src.description.lower()


def test_idle_engine_is_measured_within_5_percent(tmp_path):
    proc, port, log = _engine(tmp_path, running=0)
    try:
        d = parse_decode_probe(_probe())
    finally:
        proc.terminate()
        proc.wait(timeout=5)
    assert d is not None and d.refused is None, d
    assert d.url == f"http://127.0.0.1:{port}" and d.tokens == DECODE_TOKENS
    assert d.tok_s == pytest.approx(1 / DT, rel=0.05)  # 100 tok/s streamed
    assert d.ttft_s == pytest.approx(TTFT, abs=0.2)  # measured apart, not in the per-token figure
    (request,) = log.read_text().splitlines()
    assert '"stream": true' in request and '"temperature": 0' in request


def test_a_busy_engine_is_refused_and_nothing_is_sent(tmp_path):
    proc, _, log = _engine(tmp_path, running=1)
    try:
        d = parse_decode_probe(_probe())
    finally:
        proc.terminate()
        proc.wait(timeout=5)
    assert d is not None and d.tok_s is None
    assert d.refused is not None and d.refused.startswith("engine busy: 1 running request")
    assert not log.exists()  # no completion request reached the engine


def test_another_request_during_the_measurement_discards_the_figure(tmp_path):
    proc, _, log = _engine(tmp_path, running="0,2")  # idle at first, 2 running mid-stream
    try:
        d = parse_decode_probe(_probe())
    finally:
        proc.terminate()
        proc.wait(timeout=5)
    assert d is not None and d.tok_s is None
    assert d.refused is not None and d.refused.startswith(
        "another request ran during the measurement"
    )
    assert len(log.read_text().splitlines()) == 1  # one request was sent, its figure not used
