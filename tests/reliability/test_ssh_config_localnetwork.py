"""`Match localnetwork` in ~/.ssh/config without ifaddr: treated as not matching, one warning, targets still audited."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpuaudit.probes.core.collect.ssh_config import ifaddr_available, rewrite_localnetwork
from reliability.faultkit import home, run_cli  # noqa: F401

CONFIG = """# synthetic user config (input, not a recorded output)
Include config.d/*
Match localnetwork 10.99.0.0/16 host 127.0.0.1
    User nobody-from-the-office
    Port 1
Match !localnetwork 10.98.0.0/16
    ServerAliveInterval 30
Host *
    ServerAliveCountMax 3
"""


def test_rewrite_treats_localnetwork_as_not_matching():
    text, n = rewrite_localnetwork(CONFIG, Path("/home/u/.ssh"))
    assert n == 2
    assert "Match '!all' host 127.0.0.1" in text
    assert (
        "Match all\n" in text
    )  # `!localnetwork X` (true when not matching) dropped, nothing else left
    assert "Include '/home/u/.ssh/config.d/*'" in text
    assert "localnetwork" not in text


@pytest.mark.sshd
@pytest.mark.skipif(
    ifaddr_available(), reason="ifaddr installed: asyncssh evaluates localnetwork itself"
)
def test_every_target_is_still_audited_with_one_warning(sshd, home):
    (home / ".ssh").mkdir(mode=0o700)
    (home / ".ssh" / "config").write_text(CONFIG)
    res = run_cli(
        [
            "--json",
            "--host",
            sshd.spec,
            "--container",
            sshd.spec,
            "--probes",
            "kernel",
            "--fail-on",
            "never",
            *sshd.cli_args(),
        ],
        home,
    )
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr and "ConfigParseError" not in res.stderr
    assert res.stderr.count("Match localnetwork") == 1 and "treated as not matching" in res.stderr
