"""A stand-in OpenAI-compatible engine on 127.0.0.1 for the --active decode probe's tests.

argv: PORT RUNNING DT_S TTFT_S LOG vllm serve stand-in --port PORT  (the tail makes its command line read like
vLLM's, so the probe's /proc scan finds it). Streams completion tokens on an absolute schedule (token k at
start + TTFT + k x DT), so the rate is known regardless of sleep jitter; /metrics reports RUNNING requests
("0,2": 0 at the first read, 2 at every later one — another client arriving mid-measurement); every completion
request is appended to LOG.
"""

import http.server
import json
import sys
import time

PORT, RUNNING, DT, TTFT, LOG = (
    int(sys.argv[1]),
    [int(x) for x in sys.argv[2].split(",")],
    float(sys.argv[3]),
    float(sys.argv[4]),
    sys.argv[5],
)


READS: list[int] = []


class Handler(http.server.BaseHTTPRequestHandler):
    def _send(self, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/metrics":
            running = RUNNING[0] if len(RUNNING) == 1 or not READS else RUNNING[1]
            READS.append(running)
            self._send(
                (
                    "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
                    "# TYPE vllm:num_requests_running gauge\n"
                    f'vllm:num_requests_running{{model_name="stand-in"}} {running}.0\n'
                ).encode(),
                "text/plain",
            )
        elif self.path == "/v1/models":
            self._send(json.dumps({"object": "list", "data": [{"id": "stand-in"}]}).encode())
        else:
            self.send_error(404)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with open(LOG, "a") as f:
            f.write(json.dumps(body) + "\n")
        n = int(body["max_tokens"])
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        start = time.monotonic()
        for k in range(n):
            delay = start + TTFT + k * DT - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            chunk = {"choices": [{"index": 0, "text": f" t{k}"}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
        usage = {"choices": [], "usage": {"completion_tokens": n}}
        self.wfile.write(f"data: {json.dumps(usage)}\n\ndata: [DONE]\n\n".encode())
        self.wfile.flush()

    def log_message(self, *args) -> None:
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
