"""The long-lived remote session: a small program that runs a target's command lines, so the login shell's rc
files (conda/pyenv init) and a container wrapper (`pct exec` is a Perl program) are paid once per session, not
once per command.

Pure: the program's source, the line that starts it, and the parser of what it sends back. The asyncio side is
probes/core/collect/worker_transport.py.

The program (Python 3.4+, standard library only, run as `python3 -I -S -B`: no site-packages or .pth files, no
user site, no PYTHON* variables, no __pycache__ written) reads one JSON request per line on stdin:

* `{"i": ID, "c": LINE, "t": SECONDS, "m": BYTES}` runs LINE with `/bin/sh -c` in a new session (its own process
  group), stdin /dev/null, with the environment of the login that started the worker; with `"r": RANK, "n": N` it
  waits in the worker's queue while N commands run, and the lowest RANK waiting starts first whenever one ends
  (then in arrival order): the client sends a host's requests in a few writes instead of one per freed slot, and
  the next command starts without a round trip (issue 30); with `"g": POOL, "gn": CAP` as well it also waits
  while CAP commands of that pool run (a hang-prone tool's calls: `nvidia-smi`), and the commands behind it in
  the queue that are not of that pool start meanwhile: the tool's next call starts the moment one ends, not a
  round trip later when the client hears of it (issue 30: one round trip per wave of calls);
* `{"k": ID}` stops that command's whole process group (TERM, KILL 0.3 s later); a command still in the queue
  leaves it, never started, and its end frame says `"queued": true`. `{"k": ID, "h": 1}` also holds the queue: no
  queued command starts until `{"u": ID}` (the client's hung-tool gate acts before the freed slot is taken, see
  below); the worker holds it the same way when it stops a queued-mode command at its own deadline.

A timed-out command may be a tool that hangs (a wedged driver): the client's runner then refuses that tool's
other calls, but a call already queued in the worker would start the moment the hung one is stopped and wait out
its own timeout too. So a timeout holds the queue until the client has asked the queued commands' gates again
(and stopped those refused), then it releases it (collect/worker_transport.py `WorkerSession.regate`).

Whenever a command ends, however it ends, its process group is KILLed: a background child that closed its pipes, or
a pipeline stage that ignores TERM, never outlives it (issue 29). A command the worker stopped (deadline, cap, kill)
has its whole session swept too (anything that left the group but not the session).

The worker makes itself non-dumpable (prctl PR_SET_DUMPABLE 0) before its ready line: its /proc/PID/fd then
belongs to root, so another process of the audit user cannot open its stdout and inject frames (issue 29).

Anything else (`{"p": 1}`, the client's keepalive) is answered with `0 P 0` (the worker is there too).

It answers with frames `ID O LEN\\n<bytes>` (stdout), `ID E LEN\\n<bytes>` (stderr) and one `ID X LEN\\n<json>` when
the command is done (`rc`: the exit status, negative for a signal; `trunc`: a stream passed BYTES and the command
was stopped; `why`: "deadline" | "cap" | "kill" when the worker stopped it; `run_s`: the command's run time on the
target's monotonic clock, from just before its spawn to the moment the worker ends it, exited with its pipes closed
(or stopped): the client's clock would count from its start marker's arrival, late by the frames held and the
client's own loop, issue 30). Every output byte is forwarded as it
is: stdout and stderr stay separate and byte-exact. The frames of one pass of its loop go out in one write (one
SSH packet instead of one per frame: issue 30, the client's CPU per packet); output frames wait at most HOLD_S
(2 ms) or HOLD_BYTES for company (a command's start marker, its output and its end then usually travel together),
an end frame or a keepalive answer goes at once, with whatever is held.

Its own limits hold without the client: a command runs at most SECONDS (the client's deadline + a margin, the
backstop for a client that stalls); a command that exited but left a child holding its pipes is stopped 0.5 s
later; end of stdin (the client closed the session, the connection died, the wrapper died), a write that fails,
SIGTERM or SIGHUP stop every running command's process group, TERM then KILL, and end the worker; so does a client silent for IDLE_EXIT_S (a cut network that sshd has not noticed: the
client sends a keepalive every KEEPALIVE_S), even while a write to the gone client blocks. Nothing it runs
outlives it. It writes nothing anywhere but its own stdout.
"""

from __future__ import annotations

import json
import re
import secrets
import shlex
from dataclasses import dataclass, field

WORKER_SOURCE = r"""
import heapq, json, os, select, signal, subprocess, sys, time
jobs, fds, poller = {}, {}, select.poll()
queue, seq, holds = [], [0], set()
out = {"parts": [], "size": 0, "since": None, "now": False}
def put(b):
    while b:
        b = b[os.write(1, b):]
def frame(i, kind, data):
    q = out
    q["parts"].append(("%d %s %d\n" % (i, kind, len(data))).encode())
    q["parts"].append(data)
    q["size"] += len(data)
    if q["since"] is None:
        q["since"] = time.monotonic()
    if kind not in "OE" or q["size"] >= HOLD_BYTES:
        q["now"] = True
def flush():
    q = out
    if q["parts"] and (q["now"] or time.monotonic() - q["since"] >= HOLD_S):
        data = b"".join(q["parts"])
        q["parts"], q["size"], q["since"], q["now"] = [], 0, None, False
        put(data)
def held():
    q = out
    return 0 if q["since"] is None else max(0, int((q["since"] + HOLD_S - time.monotonic()) * 1000) + 1)
def group(job, sig):
    try:
        os.killpg(job["p"].pid, sig)
    except OSError:
        pass
def session(sid):
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/" + d + "/stat", "rb") as f:
                    st = f.read()
                if int(st[st.rindex(b")") + 2:].split()[3]) == sid:
                    os.kill(int(d), signal.SIGKILL)
            except (OSError, ValueError, IndexError):
                pass
def stop(job, why):
    if job["why"] is None:
        job["why"] = why
    if job["term"] is None:
        job["term"] = time.monotonic()
        group(job, signal.SIGTERM)
def start(req):
    i = int(req["i"])
    t0 = time.monotonic()
    try:
        p = subprocess.Popen([b"/bin/sh", b"-c", req["c"].encode("utf-8", "surrogateescape")], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, close_fds=True)
    except Exception as e:
        frame(i, "X", json.dumps({"e": "cannot start /bin/sh: %s" % e}).encode())
        return
    job = {"i": i, "p": p, "cap": int(req.get("m", 8 << 20)), "n": {"O": 0, "E": 0}, "open": 2, "trunc": False,
           "why": None, "term": None, "end": time.monotonic() + float(req.get("t", 60)), "exit": None,
           "t0": t0, "q": "n" in req, "g": req.get("g")}
    jobs[i] = job
    for f, k in ((p.stdout, "O"), (p.stderr, "E")):
        fds[f.fileno()] = (job, k, f)
        poller.register(f.fileno(), select.POLLIN)
def close(fd):
    job, k, f = fds.pop(fd)
    poller.unregister(fd)
    f.close()
    job["open"] -= 1
def pump(fd):
    job, k = fds[fd][0], fds[fd][1]
    data = os.read(fd, 65536)
    if not data:
        close(fd)
        return
    room = job["cap"] - job["n"][k]
    if len(data) > room:
        data = data[:max(room, 0)]
        job["trunc"] = True
        stop(job, "cap")
    if data:
        job["n"][k] += len(data)
        frame(job["i"], k, data)
def finish(job):
    run = time.monotonic() - job["t0"]
    group(job, signal.SIGKILL)
    if job["why"] is not None:
        session(job["p"].pid)
    for fd in [fd for fd, v in fds.items() if v[0] is job]:
        close(fd)
    del jobs[job["i"]]
    frame(job["i"], "X", json.dumps({"rc": job["p"].returncode, "trunc": job["trunc"], "why": job["why"],
                                     "run_s": round(run, 4)}).encode())
def launch():
    kept = []
    while queue and not holds and len(jobs) < int(queue[0][2]["n"]):
        e = heapq.heappop(queue)
        g = e[2].get("g")
        if g is not None and sum(1 for j in jobs.values() if j["g"] == g) >= int(e[2]["gn"]):
            kept.append(e)
        else:
            start(e[2])
    for e in kept:
        heapq.heappush(queue, e)
def unqueue(i):
    for e in queue:
        if int(e[2]["i"]) == i:
            queue.remove(e)
            heapq.heapify(queue)
            frame(i, "X", json.dumps({"rc": None, "trunc": False, "why": "kill", "run_s": 0, "queued": True}).encode())
            return
def tick():
    now = time.monotonic()
    for job in list(jobs.values()):
        if job["exit"] is None and job["p"].poll() is not None:
            job["exit"] = now
        if job["term"] is not None and now - job["term"] > 0.3:
            group(job, signal.SIGKILL)
        elif job["exit"] is None and now > job["end"] and job["why"] is None:
            stop(job, "deadline")
            if job["q"]:
                holds.add(job["i"])
        if job["exit"] is not None and (job["open"] == 0 or now - job["exit"] > 0.5):
            if job["open"]:
                group(job, signal.SIGKILL)
            finish(job)
    launch()
def private():
    try:
        import ctypes
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
    except Exception:
        pass
def serve():
    private()
    put(("@@gpuaudit-worker-%s@@\n" % sys.argv[1]).encode())
    poller.register(0, select.POLLIN)
    buf = b""
    while True:
        busy = any(j["exit"] is not None or j["open"] == 0 or j["term"] is not None for j in jobs.values())
        wait = 10 if busy else 100
        if out["parts"]:
            wait = min(wait, held())
        for fd, ev in poller.poll(wait):
            if fd == 0:
                data = os.read(0, 65536)
                if not data:
                    return
                signal.alarm(IDLE)
                buf += data
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    try:
                        req = json.loads(line.decode("utf-8", "surrogateescape"))
                    except ValueError:
                        continue
                    if "k" in req:
                        if req.get("h"):
                            holds.add(int(req["k"]))
                        if int(req["k"]) in jobs:
                            stop(jobs[int(req["k"])], "kill")
                        else:
                            unqueue(int(req["k"]))
                    elif "u" in req:
                        holds.discard(int(req["u"]))
                    elif "i" in req and "n" in req:
                        seq[0] += 1
                        heapq.heappush(queue, (int(req.get("r", 0)), seq[0], req))
                    elif "i" in req:
                        start(req)
                    else:
                        frame(0, "P", b"")
                launch()
            elif fd in fds:
                pump(fd)
        tick()
        flush()
def leave(*_):
    raise SystemExit(0)
IDLE = int(sys.argv[2])
HOLD_S, HOLD_BYTES = 0.002, 65536
for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGALRM):
    signal.signal(s, leave)
signal.alarm(IDLE)
try:
    serve()
except (OSError, SystemExit):
    pass
finally:
    for job in jobs.values():
        group(job, signal.SIGTERM)
    t = time.monotonic()
    while time.monotonic() - t < 0.3 and any(j["p"].poll() is None for j in jobs.values()):
        time.sleep(0.02)
    for job in jobs.values():
        group(job, signal.SIGKILL)
        session(job["p"].pid)
"""

INTERPRETER = "python3 -I -S -B"
"""-I: no user site, no PYTHON* variables; -S: no `site`, so no site-packages on the path and no .pth file's code run
(the worker is standard library only; a conda or pip-heavy interpreter's .pth files cost its start ~5-50 ms, on
the path to the audit's first command, and would run code a target user may have installed; issue 30);
-B: no __pycache__ written."""
IDLE_EXIT_S = 30
"""A worker that hears nothing from its client for this long stops everything and exits."""
KEEPALIVE_S = 10.0
"""How often the client proves it is there."""
BACKSTOP_S = 2.0
"""The worker stops a command this long after the client's deadline, if the client has not (a stalled client)."""
_FRAME = re.compile(rb"^([0-9]{1,12}) ([OEXP]) ([0-9]{1,12})$")


def new_token() -> str:
    """A per-session random token: the worker's ready line cannot be faked by anything an rc file prints."""
    return secrets.token_hex(8)


def ready_line(token: str) -> bytes:
    return f"@@gpuaudit-worker-{token}@@\n".encode()


def start_line(token: str, prefix: str | None = None) -> str:
    """The line that starts a worker: in the login shell (prefix None), or inside a container through its wrapper
    (`pct exec 101 --`, `lxc-attach -n ct --`, `docker exec -i ct`, with `sudo -n` in front when the host login
    needs it). `exec`: the login shell is replaced, nothing of it runs after the worker. The login line printed
    first tells a login that hangs (its rc files: no session, and no point in one channel per command either)
    from a python3 that hangs (killed; the commands fall back to one channel each)."""
    worker = f"{INTERPRETER} -c {shlex.quote(WORKER_SOURCE)} {token} {IDLE_EXIT_S}"
    login = f"printf '%s\\n' {login_line(token).decode().strip()}; "
    return f"{login}exec {prefix} {worker}" if prefix else f"{login}exec {worker}"


def login_line(token: str) -> bytes:
    """Printed by the login shell right before it starts the worker (the rc files are done)."""
    return f"@@gpuaudit-login-{token}@@\n".encode()


def session_prefix(wrap_prefix: str, *, sudo: bool) -> str:
    """The wrapper that enters the container for a whole session: docker needs -i to pass stdin on."""
    prefix = re.sub(r"^docker exec ", "docker exec -i ", wrap_prefix)
    return f"sudo -n {prefix}" if sudo else prefix


def request(
    cmd_id: int,
    line: str,
    timeout_s: float,
    max_bytes: int,
    *,
    rank: int | None = None,
    parallel: int | None = None,
    pool: tuple[str, int] | None = None,
) -> bytes:
    """A command for the worker; with `parallel`, it waits in the worker's queue while that many run (lowest
    `rank` first, then in arrival order), else it starts at once; with `pool` (name, cap) too, also while cap
    commands of that pool run."""
    body: dict[str, object] = {
        "i": cmd_id,
        "c": line,
        "t": round(timeout_s + BACKSTOP_S, 3),
        "m": max_bytes,
    }
    if parallel is not None:
        body.update(r=rank or 0, n=parallel)
        if pool is not None:
            body.update(g=pool[0], gn=pool[1])
    return (json.dumps(body, separators=(",", ":")) + "\n").encode()


KEEPALIVE = b'{"p":1}\n'


def kill_request(cmd_id: int, *, hold: bool = False) -> bytes:
    """Stop a command (or take it out of the queue); `hold`: and start no queued command until `release_request`."""
    return (json.dumps({"k": cmd_id, "h": 1} if hold else {"k": cmd_id}) + "\n").encode()


def release_request(cmd_id: int) -> bytes:
    """The hold a timed-out command put on the worker's queue ends (its gates were asked again)."""
    return (json.dumps({"u": cmd_id}) + "\n").encode()


class ProtocolError(Exception):
    """The worker sent something that is not a frame: the session cannot be trusted any more."""


@dataclass(slots=True)
class Frame:
    cmd_id: int
    kind: str
    """O (stdout bytes), E (stderr bytes), X (the end, JSON) or P (the answer to a keepalive, id 0)."""
    data: bytes


@dataclass(slots=True)
class FrameReader:
    """Splits the worker's stdout into frames; feed it chunks as they arrive."""

    buf: bytearray = field(default_factory=bytearray)

    def feed(self, chunk: bytes) -> list[Frame]:
        self.buf += chunk
        frames: list[Frame] = []
        while True:
            nl = self.buf.find(b"\n", 0, 64)
            if nl < 0:
                if len(self.buf) >= 64:
                    raise ProtocolError(f"not a frame header: {bytes(self.buf[:40])!r}")
                return frames
            m = _FRAME.match(bytes(self.buf[:nl]))
            if m is None:
                raise ProtocolError(f"not a frame header: {bytes(self.buf[:nl][:40])!r}")
            size = int(m[3])
            end = nl + 1 + size
            if len(self.buf) < end:
                return frames
            frames.append(Frame(int(m[1]), m[2].decode(), bytes(self.buf[nl + 1 : end])))
            del self.buf[:end]


def end_status(data: bytes) -> dict[str, object]:
    """The X frame's JSON (an unreadable one says so instead of raising)."""
    try:
        value = json.loads(data.decode("utf-8", "replace"))
    except ValueError:
        return {"e": "unreadable end frame"}
    return value if isinstance(value, dict) else {"e": "unreadable end frame"}
