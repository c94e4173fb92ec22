"""The exact line sent to a target for one command: output markers, sudo, container wrapper, remote deadlines.

Why each piece is there:
* A start marker printed (on stdout and stderr) right before `exec`: whatever the login shell's rc files
  print (`Welcome to gpu01`, `bash: warning: setlocale...`) comes before it and is cut off, and after
  `exec` the login shell is gone, so nothing can follow the command's own output.
* `timeout` on the remote side is the backstop that also holds when the client is gone (a cut network, a
  killed audit): it fires one second after the client's own deadline.
* Root commands run under sudo are not reachable by the user's signals (sudo runs them in their own
  session with use_pty). Every one carries a root-side deadline: a simple first stage runs as
  `sudo -n timeout -s KILL N TOOL ARGS` where sudo allows timeout(1) (else, a restricted sudoers entry
  listing only the tool, as `sudo -n TOOL ARGS`: sudo relays TERM to it); anything else runs as
  `sudo -n timeout -s KILL N sh -c` so a root-owned timeout kills the root-owned tree. `-k 1`: the TERM sudo
  relays when the audit stops early (cancel, Ctrl-C, SIGTERM) makes that root timeout KILL the tree 1 s later,
  though the user's KILL reaches only sudo. The outer timeout then sends TERM first (relayed by
  sudo), KILL one second later.
* A container wrapper (pct exec / lxc-attach / docker exec) gets a timeout inside the container as well:
  killing the wrapper on the host does not kill what it started inside.
"""

from __future__ import annotations

import math
import re
import secrets
import shlex

LOCALE = "LC_ALL=C; export LC_ALL; "
WRAPPER_SLACK_S = 10
"""The host-side backstop of a wrapped command allows for the wrapper's start-up; the timeout inside the
container (whose clock starts with the command) is the one that fires first."""
_SIMPLE_STAGE = re.compile(
    r"^\s*(?P<cmd>[A-Za-z0-9_./-]+(?:\s+[A-Za-z0-9_./=:,@%+-]+)*)(?P<err>\s+2>/dev/null)?\s*$"
)
"""A tool and plain words: no quotes, globs or expansions (a glob must be expanded by root, e.g. /etc/pve/lxc/*)."""
_SUDO_REFUSALS = (
    "a password is required",
    "a terminal is required",
    "is not allowed to execute",
    "not in the sudoers",
    "may not run sudo",
    "no tty present",
    "is not in the sudoers",
)


def new_marker() -> str:
    """A per-audit random start marker: nothing a login shell prints can contain it by chance."""
    return f"@@gpuaudit-{secrets.token_hex(8)}@@"


def _first_pipe(shell: str) -> int:
    """Index of the first unquoted single `|` (not `||`), or -1."""
    quote = None
    i = 0
    while i < len(shell):
        ch = shell[i]
        if quote:
            if ch == quote:
                quote = None
            elif ch == "\\" and quote == '"':
                i += 1
        elif ch in "'\"":
            quote = ch
        elif ch == "\\":
            i += 1
        elif ch == "|":
            if shell[i + 1 : i + 2] == "|":
                return -1  # `a || b` first: not a plain pipeline stage
            return i
        i += 1
    return -1


def sudo_first_stage(shell: str, secs: int | None = None) -> str | None:
    """`dmesg | grep x` -> `sudo -n dmesg | grep x` when the first stage is a plain tool call, else None.

    Only the stage that reads root-only data runs as root, as `sudo -n TOOL ARGS` with no shell in
    between, so a sudoers entry that lists just the tools (journalctl, dmesg, dmidecode, lspci) works.
    A glob is not simple: the user may not list the directory it names (/etc/pve/lxc/*.conf), root must expand it.
    """
    cut = _first_pipe(shell)
    head, tail = (shell, "") if cut < 0 else (shell[:cut], shell[cut:])
    m = _SIMPLE_STAGE.match(head)
    if not m:
        return None
    rest = f"{m['err'] or ''}{' ' + tail.lstrip() if tail else ''}"
    if secs is None:
        return f"sudo -n {m['cmd']}{rest}"
    # a root-side deadline wherever sudo allows timeout(1): a root tool that ignores TERM cannot outlive it
    # (the user's KILL reaches only sudo); a sudoers entry listing just the tool still runs it, TERM-relayed
    return (
        f"{{ if sudo -n -l timeout 1>/dev/null 2>&1; then sudo -n timeout -k 1 -s KILL {secs} {m['cmd']}; "
        f"else sudo -n {m['cmd']}; fi; }}{rest}"
    )


def remote_line(
    shell: str,
    *,
    marker: str | None = None,
    wrap_prefix: str | None = None,
    sudo: bool = False,
    wrap_sudo: bool = False,
    timeout_s: float | None = None,
    inner_timeout: bool = True,
) -> str:
    """The line for one declared shell command.

    `timeout_s` None: the target has no timeout(1); `inner_timeout` False: the container has none.
    `sudo`: the command needs root on a non-root login; `wrap_sudo`: the container wrapper needs it.
    """
    body = LOCALE + shell
    secs = max(1, math.ceil(timeout_s)) + 1 if timeout_s is not None else None
    term_first = False
    outer_secs = secs
    if wrap_prefix:
        # the marker is printed inside the container: the wrapper's own start-up (pct exec is a Perl program) is
        # not the command's time, and what the wrapper prints before it is cut like a banner
        inner_body = (_mark(marker) if marker else "") + body
        inner = f"sh -c {shlex.quote(inner_body)}"
        if secs is not None and inner_timeout:
            inner = f"timeout -s KILL {secs} {inner}"
        inner = f"sh -c {shlex.quote(GUARD)} {GUARD_NAME} {shlex.quote('exec ' + inner)}"
        cmd = f"{wrap_prefix} {inner}"
        if sudo or wrap_sudo:
            cmd = "sudo -n " + cmd
        term_first = True  # lets the wrapper (and sudo) pass the signal on before the KILL
        outer_secs = secs + WRAPPER_SLACK_S if secs is not None else None
    elif sudo:
        staged = sudo_first_stage(shell, secs)
        if staged is not None:
            cmd = f"sh -c {shlex.quote(LOCALE + staged)}"
        elif secs is not None:
            cmd = f"sudo -n timeout -k 1 -s KILL {secs} sh -c {shlex.quote(body)}"
        else:
            cmd = f"sudo -n sh -c {shlex.quote(body)}"
        term_first = True
    else:
        cmd = f"sh -c {shlex.quote(body)}"
    if outer_secs is not None:
        cmd = (
            f"timeout -s TERM -k 1 {outer_secs} "
            if term_first
            else f"timeout -s KILL {outer_secs} "
        ) + cmd
    # exec: the login shell is replaced (nothing it runs can print after the command); timeout(1) stays the
    # session leader, so a signal the client sends over the channel reaches the whole process group.
    line = f"exec {cmd}"
    if marker and not wrap_prefix:
        line = _mark(marker) + line
    return line


_TERM_SUDO = (
    'for d in /proc/[0-9]*; do read -r l <"$d/stat" || continue; c=${l#*"("}; c=${c%%")"*}; '
    'l=${l##*) }; set -- $l; [ "$4" = $s ] && [ "$c" = sudo ] && kill -TERM ${d#/proc/}; done 2>/dev/null; '
)
"""TERM to every sudo of the job's session `$s` (sudo relays it to its root command). Not to the whole group: sudo
ignores a signal sent from its command's own process group (GNU timeout relays one), and two TERMs arriving at
once are one; the root-side `timeout -k 1 -s KILL` then KILLs what ignores TERM."""
GUARD = (
    "i=; { [ -p /proc/self/fd/0 ] || [ -S /proc/self/fd/0 ]; } && i=1; exec 3<&0 </dev/null; "
    'command -v setsid >/dev/null 2>&1 || { exec 3<&-; eval "$1"; exit; }; '
    "m=$2 x=; trap x=1 TERM HUP INT; "
    'if [ "$2" = w ]; then setsid sh -c \'eval "$1"\' gpuaudit-job "$1" <&3 & p=$!; '
    'else setsid sh -c \'eval "$1"\' gpuaudit-job "$1" & p=$!; fi; '
    'w=; [ -n "$i" ] && { sh -c \'while read -r _; do :; done; s=$2; [ -n "$1" ] && { '
    + _TERM_SUDO.replace("'", "'\\''")
    + 'sleep 1; }; kill -KILL -$s\' gpuaudit-watch "$2" $p <&3 >/dev/null 2>&1 & w=$!; }; '
    "exec 3<&-; wait $p 2>/dev/null; r=$?; s=$p; "
    '[ -n "$x" ] && [ -n "$m" ] && { ' + _TERM_SUDO + "sleep 1; }; kill -KILL -$p 2>/dev/null; "
    'for d in /proc/[0-9]*; do read -r l <"$d/stat" || continue; l=${l##*) }; set -- $l; '
    '[ "$4" = $p ] && kill -KILL ${d#/proc/}; done 2>/dev/null; '
    '[ -n "$w" ] && kill -KILL $w 2>/dev/null; exit $r'
)
"""The remote guard of a --no-sessions channel (issue 29): sshd signals only the session's main process group
and drops signals once that process exits, and nothing on the target notices a client that died. The guard
(POSIX sh: dash, bash, busybox ash; no tool but setsid) stays the session's main process and runs the line in
a session of its own (setsid), so it can stop all of it:

* the command ends (or its own timeout(1) fires): its group is KILLed and every process left in its session
  (a background child, a TERM-ignoring pipeline stage, one that changed its group as GNU timeout does);
* the channel's stdin reaches its end (the client stops the command by sending EOF, closes the channel, or is
  gone: a killed client's connection closes and sshd closes the pipe): a watcher (one sh, reading with the
  `read` builtin) sends TERM first to the job's sudo processes where a relay stands in between (modes `1` and
  `w`: sudo relays it, its root-side `timeout -k 1 -s KILL` then KILLs what ignores it; _TERM_SUDO), KILLs
  the group one second later; the guard then sweeps as above;
* the guard gets TERM, HUP or INT (a client's signal over the channel; the host-side group kill of a container
  entered from this machine, which reaches the guard inside but not the job's own session): the same stop,
  TERM first in mode `1`/`w`;
* the command never reads the channel's stdin (/dev/null), except a container wrapper's line (mode `w`): the
  wrapper passes it on to the same guard inside the container (lxc-attach and pct exec do; `docker exec`
  without -i does not, and there stdin is not a pipe, so no watch): that guard stops the job inside when the
  client goes, since neither lxc-attach nor sudo passes a signal into the container, and busybox timeout(1)
  there signals only its child.

A guard whose stdin is not a pipe or socket watches nothing. Without setsid(1) the line runs as before."""
GUARD_NAME = "gpuaudit-guard"


def guarded(line: str, *, term_first: bool) -> str:
    """The line as a --no-sessions channel runs it: under GUARD, which owns the job's process group."""
    mode = ("w" if _WRAPPERS.search(line) else "1") if term_first else ""
    return f"exec sh -c {shlex.quote(GUARD)} {GUARD_NAME} {shlex.quote(line)}" + (
        f" {mode}" if mode else ""
    )


def unguarded(executed: str) -> str | None:
    """The line a guarded channel ran (what the record names), or None when `executed` is not guarded."""
    try:
        words = shlex.split(executed)
    except ValueError:
        return None
    if words[:5] != ["exec", "sh", "-c", GUARD, GUARD_NAME] or len(words) not in (6, 7):
        return None
    return words[5] if len(words) == 6 or words[6] in ("1", "w") else None


_RELAYS = re.compile(r"\bsudo -n |\bpct exec |\blxc-attach |\bdocker exec ")
_WRAPPERS = re.compile(r"\bpct exec |\blxc-attach |\bdocker exec ")


def needs_term_first(line: str) -> bool:
    """Does stopping this line need TERM before KILL? Only where a relay stands between the user and the
    command (sudo, a container wrapper): it passes TERM on. A user's own command is KILLed at once."""
    return _RELAYS.search(line) is not None


def _mark(marker: str) -> str:
    return f"printf '%s\\n' {marker}; printf '%s\\n' {marker} >&2; "


def cut_at_marker(data: bytes | bytearray, marker: str) -> tuple[bytes | bytearray, bool]:
    """What follows the marker line (the command's own output) and whether the marker was there."""
    tag = marker.encode() + b"\n"
    at = data.find(tag)
    if at < 0:
        return data, False
    return data[at + len(tag) :], True


def sudo_refusal(stderr: str) -> str | None:
    """The `sudo: ...` line when sudo refused to run the command (wherever it sits in stderr)."""
    for ln in stderr.splitlines():
        s = ln.strip()
        if s.startswith("sudo:") and any(r in s for r in _SUDO_REFUSALS):
            return s
    return None


def strip_marker_prefix(line: str) -> str:
    """The line without the marker printfs (for logs and lints that compare lines)."""
    return re.sub(
        r"printf '%s\\n' @@gpuaudit-[0-9a-f]+@@; printf '%s\\n' @@gpuaudit-[0-9a-f]+@@ >&2; ",
        "",
        line,
    )
