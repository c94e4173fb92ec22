"""One exit rule for every mode (issue 14 item 2): 3 when a requested target could not be audited.

0 audited and nothing reached --fail-on; 1 a finding reached --fail-on; 2 bad usage/input; 3 a requested
target could not be audited, whatever the findings (an incomplete audit never passes).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from gpuaudit.tui.cli.entry import EXIT_RULE, main
from reliability.faultkit import REPO, cli_env, free_port, home, run_cli  # noqa: F401


def _failed_line(stderr: str, role: str) -> None:
    assert "Traceback" not in stderr, stderr
    assert f"target {role} failed" in stderr, stderr


@pytest.mark.skipif(shutil.which("lxc-attach") is None, reason="lxc-attach not installed")
def test_missing_lxc_container_exits_3(home):
    res = run_cli(
        ["--json", "--container", "lxc:nope-gpuaudit", "--probes", "kernel", "--fail-on", "never"],
        home,
    )
    assert res.returncode == 3, res.stderr
    _failed_line(res.stderr, "container")
    assert json.loads(res.stdout)["target_states"]["container"]["state"] == "failed"


@pytest.mark.sshd
def test_container_on_a_closed_port_exits_3(sshd, home):
    res = run_cli(
        [
            "--json",
            "--container",
            f"{sshd.user}@127.0.0.1:{free_port()}",
            "--probes",
            "kernel",
            "--fail-on",
            "never",
            *sshd.cli_args(),
        ],
        home,
    )
    assert res.returncode == 3, res.stderr
    _failed_line(res.stderr, "container")


@pytest.mark.sshd
def test_plan_mode_follows_the_same_rule(sshd, home):
    res = run_cli(
        [
            "--plan",
            "--host",
            f"{sshd.user}@127.0.0.1:{free_port()}",
            "--probes",
            "kernel",
            *sshd.cli_args(),
        ],
        home,
    )
    assert res.returncode == 3, res.stderr
    _failed_line(res.stderr, "host")


@pytest.mark.sshd
def test_fleet_with_only_dead_hosts_exits_3(sshd, home, tmp_path):
    inv = tmp_path / "hosts"
    first = free_port()
    second = next(p for p in iter(free_port, None) if p != first)  # two hosts, never one port twice
    inv.write_text(f"{sshd.user}@127.0.0.1:{first}\n{sshd.user}@127.0.0.1:{second}\n")
    res = run_cli(["--hosts", str(inv), "--probes", "kernel", *sshd.cli_args()], home)
    assert res.returncode == 3, res.stderr
    assert "2 host(s), 2 unreachable, exit 3" in res.stdout and "Traceback" not in res.stderr


def test_the_rule_is_in_help(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert (
        "3 a requested target could not be audited" in text and " ".join(EXIT_RULE.split()) in text
    )


def test_empty_container_spec_is_a_usage_error(capsys):
    assert main(["--json", "--container", ""]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--container is empty" in err


def test_json_into_a_closed_pipe_prints_no_traceback(tmp_path):
    """`gpuaudit-tui --demo --json | head -c 100`: the reader leaves early; no BrokenPipeError traceback."""
    err = tmp_path / "err"
    cmd = f"{sys.executable} -m gpuaudit.tui --demo --json 2>{err} | head -c 100 >/dev/null"
    subprocess.run(["bash", "-c", cmd], cwd=REPO, env=cli_env(tmp_path), timeout=60, check=False)
    text = err.read_text()
    assert (
        "Traceback" not in text and "BrokenPipe" not in text and "Exception ignored" not in text
    ), text
