"""The target-side python3 readers as command lines: the engine's environment (pyenv), its /metrics page and the
--active decode request.

Text only (each an isolated `python3 -I -S -B` script with this folder's engine_choice.py embedded): declaring the
commands (probes/core/sources.py) loads no parsing code, so an audit's first commands leave before the parsers load
(issue 30). engine_metrics.py and pyenv.py parse what these print and re-export them.
"""

from __future__ import annotations

import shlex

from gpuaudit.probes.core.parsers.engine_lines import choice_source, embedded_lines

MAX_BYTES = 4_000_000
FETCH_DEADLINE_S = 5
"""The whole GET (connect, headers, body), not each socket operation: a page that drips in stays bounded."""

# The engine's API server, chosen the way the python probe's reader chooses (issue 26 review): a process of THIS
# network namespace (a container's engine seen from its host is skipped: the host's 127.0.0.1 is not the
# container's) whose command line names an API server; its owner read from /proc. Under a root audit a
# root-owned engine is preferred over any other user's look-alike (a user can start a process named like an
# engine, never one owned by root); when candidates of different owners or ports remain, nothing is fetched and
# `@@ambiguous` names them. Processes of one owner on one port (forked workers) are one engine: the lowest pid
# speaks for it and `@@pids` lists them all, so the roofline can check it is the engine the python probe judged.
# Read-only: /proc reads and one GET of the engine's own loopback page; isolated python3 (-I -S -B).
# The text passes the read-only lint: no greater-than sign, no ampersand, no tool names. The choice itself is
# `choose_engine` (engine_choice.py, embedded): the same rule as the python probe's (parsers.engine.choose_main),
# keyed by port too, since one page is fetched. The GET goes straight to the loopback page: no proxy from
# the login's environment (http_proxy would carry it to the proxy's own 127.0.0.1), no redirect followed.
_FINDER = (
    """
import os, sys, time, signal
"""
    + "\n".join(choice_source())
    + """
MARKS = ("@@p", "@@gpuaudit-", "export LC_ALL")
API = ("sglang.launch_server", "sglang.srt.entrypoints", "sglang serve", "vllm.entrypoints",
       "vllm serve")
def rd(path):
    try:
        with open(path, "rb") as f:
            return f.read(65536)
    except OSError:
        return None
def link(path):
    try:
        return os.readlink(path)
    except OSError:
        return None
def flag(argv, name):
    for i, a in enumerate(argv):
        if a == name and i + 1 in range(len(argv)):
            return argv[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None
def engine(suffix):
    net = link("/proc/self/ns/net")
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        raw = rd("/proc/" + d + "/cmdline")
        if not raw:
            continue
        argv = [a.decode("utf-8", "replace") for a in raw.split(b"\\0") if a]
        c = " ".join(argv)
        if any(m in c for m in MARKS) or not any(a in c for a in API):
            continue
        t = link("/proc/" + d + "/ns/net")
        if t and net and t != net:
            continue
        uid = None
        for line in (rd("/proc/" + d + "/status") or b"").decode("utf-8", "replace").splitlines():
            if line.startswith("Uid:") and len(line.split()) == 5:
                uid = int(line.split()[2])
        if uid is None:
            continue
        port = flag(argv, "--port") or ("30000" if "sglang" in c else "8000")
        host = flag(argv, "--host") or "127.0.0.1"
        parts = host.split(".")
        if len(parts) != 4 or not all(p.isdigit() for p in parts) or host == "0.0.0.0":
            host = "127.0.0.1"
        if not port.isdigit():
            continue
        found.append((int(d), uid, "http://%s:%s" % (host, port)))
    if not found:
        print("@@none")
        sys.exit(0)
    found, ambiguous = choose_engine(found, os.geteuid())
    if ambiguous:
        print("@@ambiguous " + "; ".join(
            "pid %d uid %d %s" % f for f in sorted(ambiguous)[:8]))
        sys.exit(0)
    pids = sorted(f[0] for f in found)
    print("@@pid %d %s" % (pids[0], found[0][2] + suffix))
    print("@@pids " + ",".join(str(p) for p in pids))
    sys.stdout.flush()
    return found[0][2]
import urllib.request as r
class Here(r.HTTPRedirectHandler):
    def redirect_request(self, *a):
        return None
fetch = r.build_opener(r.ProxyHandler({}), Here).open
class Late(Exception):
    pass
def late(*a):
    raise Late()
"""
)

_METRICS_SCRIPT = (
    _FINDER
    + """
import urllib.request as r
base = engine("/metrics")
signal.signal(signal.SIGALRM, late)
signal.setitimer(signal.ITIMER_REAL, DEADLINE)
try:
    try:
        body = fetch(base + "/metrics", timeout=DEADLINE).read(CAP)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    sys.stdout.write(body.decode("utf-8", "replace"))
except Late:
    print("@@late no complete page within %g s (the whole GET is bounded)" % DEADLINE)
except Exception as e:
    print("%s: %s" % (type(e).__name__, str(e)[:200]))
print()
print("@@end")
""".replace("DEADLINE", str(FETCH_DEADLINE_S)).replace("CAP", str(MAX_BYTES))
)

ENGINE_METRICS_SHELL = "python3 -I -S -B -c " + shlex.quote(_METRICS_SCRIPT)

# --active only (probes/core/sources.py engine_decode_probe): ONE streamed completion on the engine's
# OpenAI-compatible endpoint while it is idle — load on a production server, refused when any request runs.
DECODE_TOKENS = 256
DECODE_PROMPT = "Count from one to one thousand in words, separated by commas:"
_DECODE_SCRIPT = (
    _FINDER
    + """
import json, urllib.request as r
base, n = engine(""), int(sys.argv[1])
def get(path):
    signal.signal(signal.SIGALRM, late)
    signal.setitimer(signal.ITIMER_REAL, 5)
    try:
        return fetch(base + path, timeout=5).read(4000000).decode("utf-8", "replace")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
def running_now():
    running = None
    try:
        for line in get("/metrics").splitlines():
            if line.startswith(("vllm:num_requests_running", "sglang:num_running_reqs")):
                running = (running or 0) + float(line.rsplit(None, 1)[1])
    except Exception as e:
        print("@@metrics-unreadable", type(e).__name__, str(e)[:200])
    return running
running = running_now()
if running is None:
    print("@@refused engine load unknown (no running-requests gauge on /metrics): nothing sent")
    sys.exit(0)
if 0 < running:
    print("@@refused engine busy: %d running request(s): nothing sent" % running)
    sys.exit(0)
model = json.loads(get("/v1/models"))["data"][0]["id"]
body = json.dumps({"model": model, "prompt": PROMPT, "max_tokens": n, "temperature": 0,
                   "ignore_eos": True, "stream": True,
                   "stream_options": {"include_usage": True}}).encode()
req = r.Request(base + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
t0, times, usage, during = time.monotonic(), [], None, None
with fetch(req, timeout=120) as resp:
    for raw in resp:
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            break
        obj = json.loads(data)
        if obj.get("usage"):
            usage = obj["usage"].get("completion_tokens")
        ch = obj.get("choices") or []
        if ch and ch[0].get("text"):
            times.append(time.monotonic())
            if len(times) == 8:  # mid-stream: ours should be the only request running
                during = running_now()
if len(times) < 2:
    print("@@failed fewer than two streamed chunks")
    sys.exit(0)
print("@@decode model=%s tokens=%d chunks=%d ttft_s=%.6f span_s=%.6f running_during=%s"
      % (json.dumps(model), usage or len(times), len(times), times[0] - t0, times[-1] - times[0],
         "?" if during is None else "%d" % during))
""".replace("PROMPT", repr(DECODE_PROMPT))
)

DECODE_PROBE_SHELL = (
    "python3 -I -S -B -c "
    + shlex.quote(_DECODE_SCRIPT)
    + f" {DECODE_TOKENS} 2>&1 | head -c 100000; echo; echo '@@end'"
)


PACKAGES = (
    "torch",
    "triton",
    "flashinfer-python",
    "flashinfer-cubin",
    "flashinfer-jit-cache",
    "sglang",
    "sgl-kernel",
    "sglang-kernel",
    "vllm",
    "xformers",
    "text-generation-server",
    "nvidia-nccl-cu12",
    "nvidia-nccl-cu13",
    "nvidia-cuda-runtime-cu12",
    "nvidia-cuda-runtime-cu13",
    "nvidia-cuda-runtime",
    "nvidia-cublas-cu12",
    "nvidia-cublas-cu13",
    "nvidia-cudnn-cu12",
    "nvidia-cudnn-cu13",
    "deep-gemm",
    "flash-attn",
)


def _reader_source() -> str:
    """pyenv_reader.py as embedded text: comments, one-line docstrings and blank lines dropped, the package
    list filled in. It sits inside single quotes, so it must hold none (and pass the read-only lint)."""
    pkgs = "(" + ", ".join(f'"{p}"' for p in PACKAGES) + ",)"
    lines: list[str] = []
    for line in embedded_lines("pyenv_reader.py"):
        if line.startswith("from gpuaudit.probes.core.parsers.engine_choice import "):
            lines.extend(choice_source())  # the one rule of which process is the engine (issue 29)
            continue
        lines.append(pkgs.join(line.split("()", 1)) if line.startswith("PACKAGES = ") else line)
    text = (
        "# @@pyenv (marker: the engine discovery skips its own probes)\n" + "\n".join(lines) + "\n"
    )
    if "'" in text:
        raise AssertionError("pyenv_reader.py must not contain a single quote")
    return text


READER = _reader_source()

# The environment is READ AS DATA by a stdlib-only reader (pyenv_reader.py) that the target's own python3
# runs isolated (-I -S -B: no site-packages, .pth, sitecustomize, PYTHON* variables or bytecode). Nothing the
# engine process names (argv[0], /proc/PID/exe) is executed: any local user can start a process that looks
# like an engine (issue 29). As root the reader interpreter must be root-owned and not group/other-writable.
# `{python}` (--python) names the interpreter whose environment is read; python3 = the running engine's.
PYENV_SHELL = (
    # the reader's interpreter: python3 on PATH, else the engine's own binary (/proc/PID/exe, already resolved)
    'r=$(command -v python3); if [ -z "$r" ]; then for d in /proc/[0-9]*; do '
    "c=$(tr '\\0' ' ' 2>/dev/null < $d/cmdline); case \"$c\" in *@@p*|*@@gpuaudit-*|*'export LC_ALL'*) continue;; "
    "*sglang.launch_server*|*vllm.entrypoints*|*'vllm serve'*|*'sglang serve'*|*text-generation-server*) "
    # only an interpreter: a look-alike's exe may be any root-owned binary (sh, perl) the user exec'd
    'r=$(readlink $d/exe 2>/dev/null); case "${r##*/}" in python3|python3.[0-9]*) break;; esac; r=;; '
    "esac; done; fi; "
    '[ -n "$r" ] || { echo \'python3: command not found (the reader of the engine environment is a '
    "stdlib-only python3 -I -S)' 1>&2; exit 127; }; "
    # run the resolved file (a pyvenv.cfg beside a symlink would choose the stdlib); it, its folder and the
    # folder above (where pyvenv.cfg is looked for) belong to root or to us and nobody else may write them
    'r=$(readlink -f "$r"); for p in "$r" "${r%/*}" "${r%/*/*}"; do '
    '[ -n "$(find "$p" -maxdepth 0 \\( -user 0 -o -user "$(id -u)" \\) ! -perm -020 ! -perm -002 '
    '2>/dev/null)" ] || { echo "refused: ${p:-/} is not owned by root (or the audit user) or is writable by '
    'others" 1>&2; exit 126; }; done; echo "@@reader $r"; "$r" -I -S -B -c \''
    + READER
    + "' {python}"
)
"""The command (id `pyenv`): the reader's `@@python` line and one JSON line, as `parse_pyenv_json` reads."""
