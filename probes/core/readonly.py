"""The read-only lint: rejects any declared command line that could change a target."""

from __future__ import annotations

import re

_FORBIDDEN = [
    (r"(?<![0-9&])>(?!&)|>>", "output redirection into a file"),
    (r"\btee\b", "tee writes files"),
    (r"\bsysctl\b[^|;]*\s-(?:w|p)\b|\bsysctl\s+[\w.]+=", "sysctl write"),
    (r"\b(?:modprobe|insmod|rmmod)\b", "module load/unload"),
    (r"\bsetpci\b[^|;]*=", "setpci write"),
    (
        r"\bnvidia-smi\b[^|;]*\s(?:-pm|-pl|-lgc|-rgc|-lmc|-rmc|-ac|-rac|-r|-c|-e|-mig|--persistence-mode|--power-limit|"
        r"--lock-gpu-clocks|--reset-gpu-clocks|--gpu-reset|--compute-mode|--ecc-config|--applications-clocks|-cgi|-dgi|-cci|-dci)\b",
        "nvidia-smi setter",
    ),
    (
        r"\b(?:rm|mv|cp|dd|mkfs\w*|truncate|chmod|chown|chgrp|ln|mkdir|rmdir|touch|install|shred)\b",
        "file-changing tool",
    ),
    (
        r"\bsystemctl\s+(?:start|stop|restart|reload|enable|disable|mask|unmask|kill|isolate|set-property|daemon-reload)\b",
        "systemctl state change",
    ),
    (r"\b(?:reboot|shutdown|poweroff|halt|kill|pkill|killall|kexec)\b", "process or power control"),
    (
        r"\b(?:apt|apt-get|dpkg|yum|dnf|pip|pip3|conda|npm)\s+(?:install|remove|purge|upgrade|uninstall)\b",
        "package change",
    ),
    (
        r"\b(?:cpupower\s+(?:frequency-set|idle-set|set)|x86_energy_perf_policy\s+\S|wrmsr|ethtool\s+-[sKGAC])\b",
        "hardware setter",
    ),
    (
        r"\b(?:pct|lxc-\w+|docker)\s+(?:set|start|stop|restart|rm|create|destroy|kill|update|exec)\b",
        "container change",
    ),
    (r"\bsed\b[^|;]*\s-i\b|\bperl\b[^|;]*\s-i\b", "in-place edit"),
    (r"\bsudo\b|\bsu\s", "privilege change inside a declared command (use needs_root + --sudo)"),
    (r"\b(?:echo|printf)\b[^|;]*>\s*/(?:sys|proc)", "write into /sys or /proc"),
    (r"\bcurl\b|\bwget\b|\bnc\b|\bssh\b", "network access from the target"),
    # a background child outlives the command: after the exit status sshd refuses signals, so nothing could kill it
    (
        r"(?<![&|>0-9<])&(?![&>])|\b(?:nohup|setsid|disown|daemonize)\b",
        "background or detached process",
    ),
    # importing modules writes __pycache__ next to them unless the interpreter runs with -B
    (
        r"(?:\bpython[0-9.]*|\{python\}|\$\{?py\}?\"?)(?:\s+-[AC-Za-z]+)*?\s+-[AC-Za-z]*c\b",
        "python -c without -B (writes __pycache__)",
    ),
]
_COMPILED = [(re.compile(p), why) for p, why in _FORBIDDEN]
_HARMLESS_REDIRECTS = re.compile(r"&>\s*/dev/null|\d?>\s*/dev/null|2>&1|>&2")


def write_risks(shell: str) -> list[str]:
    """Reasons this command line could write, empty when it is read-only by our rules."""
    text = _HARMLESS_REDIRECTS.sub(" ", shell)
    return [why for rx, why in _COMPILED if rx.search(text)]
