# @@pyenv: the engine's Python environment, read as DATA (never executed). Runs on the target as
# `python3 -I -S -B -c "<this file>" {python}` (isolated: no site-packages, no .pth, no sitecustomize,
# no PYTHON* variables, no bytecode). Stdlib only. Prints the same JSON line the old snippet printed.
#
# Trust boundary (issue 29): the engine process may belong to any local user. Nothing it names (argv[0],
# /proc/PID/exe) is run. Its files are read after dropping to the engine's own uid/gid in a forked child
# when the audit runs as root (the kernel then refuses whatever that user cannot read: a symlink to a
# root-only file fails); as any other user a file is read only when owned by the engine's user or root.
# Every read is size-capped. The embedded text must pass the read-only lint: no greater-than sign, no
# ampersand, no single quote, no file-changing or process-control words.
# Types (mypy --strict): each function signature is a type comment on the line after its def (a return
# annotation would need a greater-than sign; comment lines are dropped from the embedded text), and so
# is PACKAGES (pyenv.py rewrites its line); the rest are annotations of local variables, which Python
# never evaluates, and checker-only names under TYPE_CHECKING: any python3 (3.6 on) runs this as before.
import json
import os
import re
import stat
import sys
from typing import TYPE_CHECKING

from gpuaudit.probes.core.parsers.engine_choice import choose_engine

if TYPE_CHECKING:
    from typing import Any, NotRequired, TypedDict

    class Facts(TypedDict):
        """What /proc says about the engine process (proc_facts), or the reader itself (own)."""

        uid: int | None
        gid: int | None
        exe: str
        maps: list[str]
        env: dict[str, str]
        own: NotRequired[bool]
        foreign_root: NotRequired[bool]


PROC = "/proc"
MARKS = ("@@p", "@@gpuaudit-", "export LC_ALL")
ENGINES = (
    "sglang.launch_server",
    "vllm.entrypoints",
    "vllm serve",
    "sglang serve",
    "text-generation-server",
)
PACKAGES = ()  # type: tuple[str, ...]
SMALL = 1 << 20
BIG = 1 << 28
ARCH = re.compile(rb"(?:sm|compute)_[0-9]+[a-z]?(?: (?:sm|compute)_[0-9]+[a-z]?)+")
QUOTE = "[\x22\x27]"
PYVER = re.compile(r"python(3\.[0-9]+)")


def norm(name):
    # type: (str) -> str
    return re.sub(r"[-_.]+", "-", name).lower()


def slurp(path, cap, uid):
    # type: (str, int, int | None) -> bytes | None
    """Bytes of a regular file, at most cap; None when absent, refused or unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        if uid is not None and os.geteuid() not in (0, uid) and st.st_uid not in (0, uid):
            return None
        out: list[bytes] = []
        left = cap
        while 0 < left:
            b = os.read(fd, min(left, 1 << 22))
            if not b:
                break
            out.append(b)
            left -= len(b)
        return b"".join(out)
    except OSError:
        return None
    finally:
        os.close(fd)


def text(path, uid, cap=SMALL):
    # type: (str, int | None, int) -> str | None
    b = slurp(path, cap, uid)
    return None if b is None else b.decode("utf-8", "replace")


def owner(pid):
    # type: (int) -> int | None
    """The effective uid of a process (/proc/PID/status), None when unreadable."""
    for line in (text(PROC + "/" + str(pid) + "/status", None) or "").splitlines():
        parts = line.split()
        if parts[:1] == ["Uid:"] and 2 in range(len(parts)) and parts[2].isdigit():
            return int(parts[2])
    return None


def find_engine():
    # type: () -> tuple[int, list[str]] | str | None
    """The engine (pid, argv) by the shared rule (choose_engine), a text naming the candidates when
    which one is ambiguous, or None."""
    found: list[tuple[int, int | None, str]] = []
    argvs: dict[int, list[str]] = {}
    for d in sorted(os.listdir(PROC)):
        if not d.isdigit():
            continue
        try:
            with open(PROC + "/" + d + "/cmdline", "rb") as f:
                raw = f.read(65536)
        except OSError:
            continue
        c = raw.replace(b"\0", b" ").decode("utf-8", "replace")
        if any(m in c for m in MARKS):
            continue
        if any(e in c for e in ENGINES):
            argvs[int(d)] = [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]
            found.append((int(d), owner(int(d)), ""))
    engine, ambiguous = choose_engine(found, os.geteuid())
    if ambiguous:
        return "; ".join(
            "pid " + str(f[0]) + " uid " + ("unknown" if f[1] is None else str(f[1]))
            for f in ambiguous[:8]
        )
    return (engine[0][0], argvs[engine[0][0]]) if engine else None


def proc_facts(pid):
    # type: (int) -> Facts
    """What /proc says about the engine (read as the audit user): uid, gid, exe, mapped files, environment."""
    o: Facts = {"uid": None, "gid": None, "exe": "", "maps": [], "env": {}}
    st = text(PROC + "/" + str(pid) + "/status", None) or ""
    for line in st.splitlines():
        parts = line.split()
        if parts[:1] == ["Uid:"] and 2 in range(len(parts)):
            o["uid"] = int(parts[2])
        if parts[:1] == ["Gid:"] and 2 in range(len(parts)):
            o["gid"] = int(parts[2])
    try:
        o["exe"] = os.readlink(PROC + "/" + str(pid) + "/exe")
    except OSError:
        pass
    # an engine in a container names paths of its own root: read on the host they are other files
    try:
        r, h = os.stat(PROC + "/" + str(pid) + "/root"), os.stat("/")
        o["foreign_root"] = (r.st_dev, r.st_ino) != (h.st_dev, h.st_ino)
    except OSError:
        pass
    maps = text(PROC + "/" + str(pid) + "/maps", None, 1 << 24) or ""
    seen: list[str] = []
    for line in maps.splitlines():
        p = line.split(None, 5)[5:6]
        if p and p[0].startswith("/") and p[0] not in seen:
            seen.append(p[0])
    o["maps"] = seen
    env = slurp(PROC + "/" + str(pid) + "/environ", SMALL, None) or b""
    for kv in env.split(b"\0"):
        k, _, v = kv.decode("utf-8", "replace").partition("=")
        if k in ("PYTHONPATH", "HOME", "VIRTUAL_ENV"):
            o["env"][k] = v
    return o


def version_of(dist_dir, uid):
    # type: (str, int | None) -> str | None
    for name in ("METADATA", "PKG-INFO"):
        t = text(os.path.join(dist_dir, name), uid, 65536)
        if t:
            m = re.search(r"^Version:\s*(\S+)", t, re.M)
            if m:
                return m.group(1)
    return None


def site_dirs(interp, facts, uid):
    # type: (str, Facts, int | None) -> tuple[list[str], str | None, str | None]
    """Where the interpreter looks for packages, in import order, from files only."""
    dirs: list[str] = []
    torch_lib = [p for p in facts["maps"] if re.search(r"/torch/lib/lib(torch|c10)[^/]*[.]so", p)]
    for p in torch_lib[:1]:
        dirs.append(os.path.dirname(os.path.dirname(os.path.dirname(p))))
    for p in facts["env"].get("PYTHONPATH", "").split(":"):
        if p.startswith("/"):
            dirs.append(p)
    prefix = os.path.dirname(os.path.dirname(interp)) if interp.startswith("/") else ""
    cfg = text(os.path.join(prefix, "pyvenv.cfg"), uid, 65536) if prefix else None
    vers: list[str] = []
    m = (
        PYVER.search(os.path.basename(interp))
        or PYVER.search(os.path.basename(os.path.realpath(interp)))
        or PYVER.search(facts["exe"])
    )
    if m:
        vers.append(m.group(1))
    if facts.get("own"):
        vers.append(".".join(str(x) for x in sys.version_info[:2]))
    if cfg:
        m = re.search(r"^version(?:_info)?\s*=\s*(3\.[0-9]+)", cfg, re.M)
        if m:
            vers.append(m.group(1))
    for p in facts["maps"]:
        m = re.search(r"/lib/python(3\.[0-9]+)/", p) or re.search(r"libpython(3\.[0-9]+)", p)
        if m:
            vers.append(m.group(1))
    home = facts["env"].get("HOME", "")
    prefixes = [prefix] if prefix else []
    if cfg:
        m = re.search(r"^home\s*=\s*(\S+)", cfg, re.M)
        inc = re.search(r"^include-system-site-packages\s*=\s*true", cfg, re.M | re.I)
        if m and inc:
            prefixes.append(os.path.dirname(m.group(1)))
    elif facts["exe"].startswith("/"):
        prefixes.append(os.path.dirname(os.path.dirname(facts["exe"])))
    for v in vers[:1] or ["3"]:
        for pre in prefixes:
            dirs.append(pre + "/lib/python" + v + "/site-packages")
            if pre == "/usr":
                if home:
                    dirs.append(home + "/.local/lib/python" + v + "/site-packages")
                dirs.append("/usr/local/lib/python" + v + "/dist-packages")
                dirs.append("/usr/lib/python3/dist-packages")
    if facts.get("own"):
        import site

        dirs = site.getsitepackages() + [site.getusersitepackages()] + dirs
    out: list[str] = []
    for d in dirs:
        if d not in out and os.path.isdir(d):
            out.append(d)
    return out, (vers[0] if vers else None), cfg


def read_env(interp, facts, uid):
    # type: (str, Facts, int | None) -> dict[str, Any]
    """Everything the JSON line carries, read from files as the current user."""
    o: dict[str, Any] = {"executable": interp, "packages": {}, "read_as": "data"}
    if facts.get("foreign_root"):
        o["torch_error"] = "the engine runs in another root filesystem (a container): not read"
        return o
    sites, minor, cfg = site_dirs(interp, facts, uid)
    o["site_packages"] = sites
    full: str | None = None
    if cfg:
        m = re.search(r"^version(?:_info)?\s*=\s*(3\.[0-9]+\.[0-9]+)", cfg, re.M)
        full = m.group(1) if m else None
    exe = facts["exe"] or (interp if interp.startswith("/") else "")
    b: bytes | None
    if full is None and minor and exe:
        b = slurp(exe, 1 << 26, uid) or b""
        mb = re.search(rb"\x00(" + minor.encode().replace(b".", rb"\.") + rb"\.[0-9]+)[ \x00]", b)
        full = mb.group(1).decode() if mb else None
    if facts.get("own"):
        full = ".".join(str(x) for x in sys.version_info[:3])
    o["python"] = full or minor
    wanted = {norm(p): p for p in PACKAGES}
    for d in sites:
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        for n in names:
            m = re.match(r"(.+?)-[^-]+[.](?:dist-info|egg-info)$", n)
            if not m or norm(m.group(1)) not in wanted:
                continue
            key = wanted[norm(m.group(1))]
            if key in o["packages"]:
                continue
            v = version_of(os.path.join(d, n), uid)
            if v:
                o["packages"][key] = v
    torch_dir = next((os.path.join(d, "torch") for d in sites if os.path.isdir(d + "/torch")), None)
    if torch_dir is None:
        o["torch_error"] = "torch not found in " + (", ".join(sites) or "no site-packages")
        return o
    vt = text(torch_dir + "/version.py", uid, 65536)
    if vt is None:
        o["torch_error"] = "unreadable: " + torch_dir + "/version.py"
        return o
    m = re.search(r"^__version__\s*(?::[^=\n]*)?=\s*" + QUOTE + r"([^\x22\x27]+)", vt, re.M)
    o["torch"] = m.group(1) if m else o["packages"].get("torch")
    m = re.search(r"^cuda\s*(?::[^=\n]*)?=\s*(?:" + QUOTE + r"([^\x22\x27]+)|None)", vt, re.M)
    o["torch_cuda"] = m.group(1) if m else None
    arch: list[str] | None = None
    for lib in ("libtorch_python.so", "libtorch_cuda.so"):
        b = slurp(torch_dir + "/lib/" + lib, BIG, uid)
        if b is None:
            continue
        runs = ARCH.findall(b)
        if runs:
            arch = max(runs, key=len).decode().split()
            o["arch_from"] = torch_dir + "/lib/" + lib
            break
    if arch is not None:
        o["arch_list"] = arch
    elif o["torch_cuda"]:
        o["arch_error"] = "no arch flags string found in torch/lib/libtorch_python.so"
    nccl = o["packages"].get("nvidia-nccl-cu13") or o["packages"].get("nvidia-nccl-cu12")
    if nccl is None:
        for p in facts["maps"] + sorted(os.listdir(torch_dir + "/lib")):
            m = re.search(r"libnccl[.]so[.]([0-9]+\.[0-9]+\.[0-9]+)", p)
            if m:
                nccl = m.group(1)
                break
    if nccl:
        o["nccl"] = nccl
    elif o["torch_cuda"]:
        o["nccl_error"] = "no nvidia-nccl package and no versioned libnccl file"
    return o


def main():
    # type: () -> None
    want = sys.argv[1] if 1 in range(len(sys.argv)) else "python3"
    facts: Facts = {"uid": None, "gid": None, "exe": "", "maps": [], "env": {}}
    interp = want
    if want == "python3":
        hit = find_engine()
        if isinstance(hit, str):
            print("@@ambiguous " + hit)
            return
        if hit:
            pid, argv = hit
            facts = proc_facts(pid)
            a0 = argv[0] if argv else ""
            interp = a0 if a0.startswith("/") else (facts["exe"] or a0)
        else:
            interp = sys.executable
            facts["exe"] = sys.executable
            facts["own"] = True
    uid, gid = facts["uid"], facts["gid"]
    print("@@python " + interp)
    sys.stdout.flush()
    if uid is None and not facts.get("own"):
        # the process left before its owner was read: its paths are not read with the audit rights
        print(json.dumps({"executable": interp, "torch_error": "engine owner unknown: not read"}))
        return
    if uid is not None and os.geteuid() == 0 and uid != 0:
        r, w = os.pipe()
        child = os.fork()
        if child == 0:
            os.close(r)
            try:
                os.setgroups([])
                os.setgid(gid if gid is not None else uid)
                os.setuid(uid)
                o = read_env(interp, facts, uid)
                o["read_as_uid"] = uid
            except Exception as e:
                o = {"executable": interp, "torch_error": "reader failed: " + repr(e)[:200]}
            os.write(w, json.dumps(o).encode())
            os._exit(0)
        os.close(w)
        chunks: list[bytes] = []
        while True:
            b = os.read(r, 1 << 16)
            if not b:
                break
            chunks.append(b)
        os.waitpid(child, 0)
        print(b"".join(chunks).decode("utf-8", "replace"))
        return
    try:
        o = read_env(interp, facts, uid)
    except Exception as e:
        o = {"executable": interp, "torch_error": "reader failed: " + repr(e)[:200]}
    print(json.dumps(o))


main()
