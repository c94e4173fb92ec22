"""The engine's own Prometheus page: a real SGLang page parsed; single-stream speed only when the requests it
counts ran one at a time; the declared source line run against a stand-in engine process on 127.0.0.1."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.parsers.engine_metrics import (
    ENGINE_METRICS_SHELL,
    parse_engine_metrics,
    parse_prometheus,
    single_stream,
)
from gpuaudit.probes.core.readonly import write_risks
from gpuaudit.probes.core.sources import SOURCES

PAGES = Path(__file__).resolve().parents[1] / "fixtures" / "engine_metrics"
BUSY = (PAGES / "sglang-llama31-8b-busy.prom").read_text()
ONE = (PAGES / "sglang-llama31-8b-one-running.prom").read_text()
MEAN = (
    866964.5791549598 / 7.400757e06
)  # sum / count of the real page's time-per-output-token histogram


def test_the_real_sglang_page_is_read():
    m = parse_prometheus(BUSY)
    assert m.engine == "sglang" and m.running == 162 and m.waiting == 2826
    assert m.tpot is not None and m.tpot.name == "sglang:time_per_output_token_seconds"
    assert m.tpot.mean == pytest.approx(MEAN)  # 117.1 ms per token
    assert m.tpot.at(0.1) == 4.950195e06 and m.generation_tokens == 7.557572e06


def test_a_busy_page_is_not_a_single_stream_figure():
    ss = single_stream(parse_prometheus(BUSY), log_running=[1, 1])
    assert ss.tok_s is None and "162 running / 2826 waiting" in ss.provenance


def test_one_at_a_time_gives_the_single_stream_figure_with_its_provenance():
    ss = single_stream(parse_prometheus(ONE), log_running=[1, 1, 1])
    assert ss.tok_s == pytest.approx(1 / MEAN)  # 8.54 tok/s
    assert "3 decode log line(s) shows one running request" in ss.provenance
    # without the log, nothing proves one request at a time: no figure
    assert single_stream(parse_prometheus(ONE), log_running=[]).tok_s is None
    assert single_stream(parse_prometheus(ONE), log_running=[1, 4]).tok_s is None


def wrapped(page: str, url: str = "http://127.0.0.1:30000/metrics") -> str:
    return f"@@pid 2417 {url}\n{page}\n@@end\n"


def test_the_source_output_is_parsed_and_failures_are_named():
    m = parse_engine_metrics(wrapped(ONE))
    assert m is not None and m.url.endswith(":30000/metrics") and m.running == 1
    assert parse_engine_metrics("@@none\n") is None
    with pytest.raises(ParseError, match="404"):
        parse_engine_metrics(wrapped("urllib.error.HTTPError: HTTP Error 404: Not Found"))
    with pytest.raises(ParseError, match="incomplete"):
        parse_engine_metrics("@@pid 1 http://127.0.0.1:1/metrics\nvllm:x 1\n")


def test_the_source_is_declared_read_only_on_both_roles():
    src = SOURCES["engine_metrics"]
    assert src.on == frozenset({"host", "container"}) and write_risks(src.shell) == []
    assert "127.0.0.1" in src.shell and "-I -S -B" in src.shell


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def stand_in_engine(tmp_path):
    """A process whose command line reads like SGLang's (`sglang.launch_server --port N`) serving the real page."""
    port = _free_port()
    page = tmp_path / "page.prom"
    page.write_text(ONE)
    server = tmp_path / "server.py"
    server.write_text(
        textwrap.dedent(
            """
            import sys, http.server
            page = open(sys.argv[1], "rb").read()
            class H(http.server.BaseHTTPRequestHandler):
                def do_GET(self):
                    body = page if self.path == "/metrics" else b"not found"
                    self.send_response(200 if self.path == "/metrics" else 404)
                    self.end_headers()
                    self.wfile.write(body)
                def log_message(self, *a):
                    pass
            http.server.HTTPServer(("127.0.0.1", int(sys.argv[4])), H).serve_forever()
            """
        )
    )
    proc = subprocess.Popen(
        [sys.executable, str(server), str(page), "sglang.launch_server", "--port", str(port)]
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    yield port
    proc.terminate()
    proc.wait(timeout=5)


@pytest.mark.slow  # a stand-in engine process and the declared shell line
def test_the_declared_line_reads_the_engine_page_from_its_argv_port(stand_in_engine):
    out = subprocess.run(
        ["sh", "-c", ENGINE_METRICS_SHELL], capture_output=True, text=True, timeout=30
    ).stdout
    m = parse_engine_metrics(out)
    assert m is not None and m.url == f"http://127.0.0.1:{stand_in_engine}/metrics"
    assert m.tpot is not None and m.tpot.mean == pytest.approx(MEAN)


VLLM = (PAGES / "vllm-qwen25-coder-1.5b-idle-partial.prom").read_text()


def test_a_real_vllm_page_gauges_and_its_one_request_at_a_time_evidence():
    m = parse_prometheus(VLLM)
    assert m.engine == "vllm" and m.running == 0 and m.waiting == 0
    assert m.generation_tokens == 955
    it = m.iteration_tokens
    assert it is not None and it.at(1.0) == 994 and it.at(8.0) == 994  # no step of 2-8 tokens
    # the documented page stops before any time-per-output-token histogram: no figure, and it says why
    ss = single_stream(m)
    assert ss.tok_s is None and "no time-per-output-token histogram" in ss.provenance
