"""The engine's own Prometheus page: a real SGLang page parsed; single-stream speed only when the requests it
counts ran one at a time; the declared source line run against a stand-in engine process on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
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
from sshd_server import free_port

PAGES = Path(__file__).resolve().parents[1] / "fixtures" / "engine_metrics"
BUSY = (PAGES / "sglang-llama31-8b-busy.prom").read_text()
ONE = (PAGES / "sglang-llama31-8b-one-request.prom").read_text()
MEAN = (
    866964.5791549598 / 7.400757e06
)  # sum / count of the busy page's time-per-output-token histogram
ONE_TPOT = 0.0381757915019989  # the one-request page's histogram: one observation


def test_the_real_sglang_page_is_read():
    m = parse_prometheus(BUSY)
    assert m.engine == "sglang" and m.running == 162 and m.waiting == 2826
    assert m.tpot is not None and m.tpot.name == "sglang:time_per_output_token_seconds"
    assert m.tpot.mean == pytest.approx(MEAN)  # 117.1 ms per token
    assert m.tpot.at(0.1) == 4.950195e06 and m.generation_tokens == 7.557572e06


def test_a_busy_page_is_not_a_single_stream_figure():
    ss = single_stream(parse_prometheus(BUSY), log_running=[1, 1])
    assert ss.tok_s is None and "162 running / 2826 waiting" in ss.provenance


def test_an_untouched_page_after_one_request_is_a_single_stream_figure():
    """The real page an SGLang server served after its first request (SGLang's own docs): one finished request,
    none running or queued — nothing can have run beside it, so its time per output token is single stream."""
    m = parse_prometheus(ONE)
    assert (m.engine, m.running, m.waiting, m.finished) == ("sglang", 0, 0, 1)
    assert m.finished_name == "sglang:e2e_request_latency_seconds" and m.generation_tokens == 8
    ss = single_stream(m)
    assert ss.tok_s == pytest.approx(1 / ONE_TPOT)  # 26.19 tok/s
    assert "finished one request since it started" in ss.provenance
    assert "38.18 ms over 1 observation(s)" in ss.provenance
    # a log that shows requests side by side refutes it
    assert single_stream(m, log_running=[1, 3]).tok_s is None


def test_several_finished_requests_need_other_evidence_of_one_at_a_time():
    """The same real histogram read as if the engine had finished five requests (a model value, not a page):
    the log's decode lines must then show one running request each."""
    m = replace(parse_prometheus(ONE), finished=5.0)
    ss = single_stream(m, log_running=[1, 1, 1])
    assert ss.tok_s == pytest.approx(1 / ONE_TPOT)
    assert "3 decode log line(s) shows one running request" in ss.provenance
    ss = single_stream(m, log_running=[])
    assert ss.tok_s is None and "5 finished requests" in ss.provenance
    assert single_stream(m, log_running=[1, 4]).tok_s is None


def wrapped(page: str, url: str = "http://127.0.0.1:30000/metrics") -> str:
    return f"@@pid 2417 {url}\n{page}\n@@end\n"


def test_the_source_output_is_parsed_and_failures_are_named():
    m = parse_engine_metrics(wrapped(ONE))
    assert m is not None and m.url.endswith(":30000/metrics") and m.running == 0
    assert m.pids == (2417,)
    m = parse_engine_metrics(wrapped(ONE).replace("\n", "\n@@pids 2417,2950\n", 1))
    assert m is not None and m.pids == (2417, 2950) and m.finished == 1
    assert parse_engine_metrics("@@none\n") is None
    with pytest.raises(ParseError, match="several engine API servers.*pid 7 uid 1000"):
        parse_engine_metrics("@@ambiguous pid 7 uid 1000 http://127.0.0.1:1; pid 9 uid 0 x\n")
    with pytest.raises(ParseError, match="no complete page within 5 s"):
        parse_engine_metrics(
            wrapped("@@late no complete page within 5 s (the whole GET is bounded)")
        )
    with pytest.raises(ParseError, match="404"):
        parse_engine_metrics(wrapped("urllib.error.HTTPError: HTTP Error 404: Not Found"))
    with pytest.raises(ParseError, match="incomplete"):
        parse_engine_metrics("@@pid 1 http://127.0.0.1:1/metrics\nvllm:x 1\n")


def test_the_source_is_declared_read_only_on_both_roles():
    src = SOURCES["engine_metrics"]
    assert src.on == frozenset({"host", "container"}) and write_risks(src.shell) == []
    assert "127.0.0.1" in src.shell and "-I -S -B" in src.shell


SERVER = textwrap.dedent(
    """
    import sys, time, http.server
    page = open(sys.argv[1], "rb").read()
    drip = sys.argv[2] == "drip"
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = page if self.path == "/metrics" else b"not found"
            self.send_response(200 if self.path == "/metrics" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            for i in range(0, len(body), 1 if drip else len(body)):
                self.wfile.write(body[i : i + (1 if drip else len(body))])
                self.wfile.flush()
                if drip:
                    time.sleep(0.2)  # a byte every 0.2 s: no single socket read ever waits 5 s
        def log_message(self, *a):
            pass
    http.server.HTTPServer(("127.0.0.1", int(sys.argv[5])), H).serve_forever()
    """
)


def _serve(tmp_path: Path, mode: str = "page") -> tuple[subprocess.Popen[bytes], int]:
    """A process whose command line reads like SGLang's (`sglang.launch_server --port N`) serving the real
    page (or dripping it a byte at a time)."""
    page = tmp_path / "page.prom"
    page.write_text(ONE)
    server = tmp_path / "server.py"
    server.write_text(SERVER)
    return serve_like_sglang(server, str(page), mode)


def serve_like_sglang(script: Path, *args: str) -> tuple[subprocess.Popen[bytes], int]:
    """`python3 SCRIPT ARGS... sglang.launch_server --port N` (N a free port, the last argument), once it accepts
    connections on 127.0.0.1:N (10 s at most)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(script), *args, "sglang.launch_server", "--port", str(port)]
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    return proc, port


def _stop(*procs: subprocess.Popen[bytes]) -> None:
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=5)


@pytest.fixture
def stand_in_engine(tmp_path):
    proc, port = _serve(tmp_path)
    yield port
    _stop(proc)


def _look_alike(uid: int, port: int) -> subprocess.Popen[bytes]:
    """Another user's process named like an engine API server (it serves nothing)."""
    return subprocess.Popen(
        ["sh", "-c", "sleep 60; :", "sglang.launch_server", "--port", str(port)],
        user=uid,
        group=uid,
        cwd="/",
    )


def _read_line() -> tuple[str, float]:
    t0 = time.monotonic()
    out = subprocess.run(
        ["sh", "-c", ENGINE_METRICS_SHELL], capture_output=True, text=True, timeout=40
    ).stdout
    return out, time.monotonic() - t0


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="a root audit with another user's look-alike")
def test_a_root_audit_reads_the_root_engine_not_a_user_planted_look_alike(tmp_path):
    """Under a root audit a user's process named like an engine (started first, so it is the first in /proc
    order — what the old reader took) is not read: the root-owned engine is."""
    planted = _look_alike(65534, free_port())
    proc, port = _serve(tmp_path)
    try:
        assert str(planted.pid) < str(proc.pid)  # the old reader's `for d in /proc/[0-9]*` order
        m = parse_engine_metrics(_read_line()[0])
        assert m is not None and m.url == f"http://127.0.0.1:{port}/metrics"
        assert planted.pid not in m.pids and proc.pid in m.pids
    finally:
        _stop(planted, proc)


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="two other users' processes")
def test_engines_of_two_other_owners_are_ambiguous_and_nothing_is_read():
    one, two = _look_alike(65534, free_port()), _look_alike(65533, free_port())
    try:
        out, _ = _read_line()
        assert out.startswith("@@ambiguous ") and "@@end" not in out
        with pytest.raises(ParseError, match=f"pid {one.pid} uid 65534.*pid {two.pid} uid 65533"):
            parse_engine_metrics(out)
    finally:
        _stop(one, two)


@pytest.mark.slow
def test_a_page_that_drips_in_is_cut_at_the_total_deadline(tmp_path):
    """urlopen's timeout bounds each socket read; a byte every 0.2 s never trips it. The reader bounds the
    whole GET (5 s)."""
    proc, port = _serve(tmp_path, "drip")
    try:
        out, took = _read_line()
        assert took < 5 + 4, took
        with pytest.raises(
            ParseError, match=f"127.0.0.1:{port}/metrics: no complete page within 5 s"
        ):
            parse_engine_metrics(out)
    finally:
        _stop(proc)


@pytest.mark.slow  # a stand-in engine process and the declared shell line
def test_the_declared_line_reads_the_engine_page_from_its_argv_port(stand_in_engine):
    out = subprocess.run(
        ["sh", "-c", ENGINE_METRICS_SHELL], capture_output=True, text=True, timeout=30
    ).stdout
    m = parse_engine_metrics(out)
    assert m is not None and m.url == f"http://127.0.0.1:{stand_in_engine}/metrics"
    assert m.tpot is not None and m.tpot.mean == pytest.approx(ONE_TPOT)


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


TINY = (PAGES / "vllm-tinyllama-1.1b-idle-nine-requests.prom").read_text()


def test_a_real_idle_vllm_page_after_nine_requests_is_refused_with_its_reason():
    """A real vLLM page (the author kept every series but cut the histograms' bucket rows): idle, nine finished
    requests — nothing on it proves they ran one at a time, so its time per output token is no single-stream
    figure, and the reason says what is missing."""
    m = parse_prometheus(TINY)
    assert (m.engine, m.running, m.waiting, m.finished) == ("vllm", 0, 0, 9)
    assert m.tpot is not None and m.tpot.name == "vllm:time_per_output_token_seconds"
    assert m.tpot.mean == pytest.approx(18.68156147003174 / 2362)  # 7.9 ms
    assert m.iteration_tokens is not None and m.iteration_tokens.buckets == ()
    ss = single_stream(m)
    assert ss.tok_s is None
    assert ss.provenance == (
        "vllm:time_per_output_token_seconds: mean 7.9 ms per token over 2362 observation(s); nothing "
        "proves the requests it counts ran one at a time (9 finished requests, vllm:iteration_tokens_total "
        "without its buckets, no decode log lines)"
    )
    # with the engine log's decode lines all at one running request, the same histogram is the figure
    assert single_stream(m, log_running=[1, 1]).tok_s == pytest.approx(2362 / 18.68156147003174)


def test_a_per_rank_acceptance_length_is_averaged_not_summed():
    """Data-parallel SGLang exports `sglang:spec_accept_length` once per rank (a gauge holding an average):
    two ranks at 2.5 and 3.5 accept 3.0 tokens per step, not 6.0 (a bound ×2 too high). The real busy page
    carries no speculative metrics, so the two rank lines are added to it in SGLang's exposition format."""
    ranks = "".join(
        f'sglang:spec_accept_length{{model_name="meta-llama/Llama-3.1-8B-Instruct",dp_rank="{r}"}} {v}\n'
        for r, v in ((0, 2.5), (1, 3.5))
    )
    assert parse_prometheus(BUSY + ranks).accept_len == pytest.approx(3.0)
    assert parse_prometheus(BUSY + ranks.splitlines(True)[0]).accept_len == pytest.approx(2.5)
