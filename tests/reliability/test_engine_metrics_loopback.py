"""The engine-metrics reader GETs the engine's own loopback page and nothing else: an http_proxy in the
login's environment does not carry the GET to a proxy (whose 127.0.0.1 is another machine's), and a redirect
from whatever answers on the engine's port is not followed."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest
from gpuaudit.probes.core.parsers.engine_metrics import ENGINE_METRICS_SHELL
from roofline.test_engine_metrics import serve_like_sglang
from sshd_server import free_port

PAGE = "sglang:num_running_reqs 0\n"
SERVER = textwrap.dedent(
    """
    import sys, http.server
    mode, port = sys.argv[1], int(sys.argv[4])
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/metrics" and mode == "redirect":
                self.send_response(302)
                self.send_header("Location", "http://127.0.0.1:" + str(port) + "/elsewhere")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = b"FOLLOWED-A-REDIRECT\\n" if self.path == "/elsewhere" else PAGE.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *a):
            pass
    PAGE = "PAGE_TEXT"
    http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
    """
).replace("PAGE_TEXT", PAGE.replace("\n", "\\n"))


def _serve(tmp_path: Path, mode: str) -> tuple[subprocess.Popen[bytes], int]:
    server = tmp_path / "server.py"
    server.write_text(SERVER)
    return serve_like_sglang(server, mode)


def _read(**env: str) -> str:
    return subprocess.run(
        ["sh", "-c", ENGINE_METRICS_SHELL],
        capture_output=True,
        text=True,
        timeout=40,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env},
    ).stdout


@pytest.mark.slow
def test_an_http_proxy_in_the_environment_is_not_used(tmp_path):
    proc, port = _serve(tmp_path, "page")
    try:
        dead = f"http://127.0.0.1:{free_port()}"
        out = _read(http_proxy=dead, HTTP_PROXY=dead)
        if out.startswith("@@ambiguous"):
            pytest.skip("other engine-like processes run on this machine")
        assert f"@@pid {proc.pid} http://127.0.0.1:{port}/metrics" in out, out
        assert PAGE in out, out
    finally:
        proc.terminate()
        proc.wait(timeout=5)


@pytest.mark.slow
def test_a_redirect_from_the_engine_port_is_not_followed(tmp_path):
    proc, port = _serve(tmp_path, "redirect")
    try:
        out = _read()
        if out.startswith("@@ambiguous"):
            pytest.skip("other engine-like processes run on this machine")
        assert f"@@pid {proc.pid} http://127.0.0.1:{port}/metrics" in out, out
        assert "FOLLOWED-A-REDIRECT" not in out and "HTTPError" in out, out
    finally:
        proc.terminate()
        proc.wait(timeout=5)
