"""SSH set-up messages say what is wrong in one line (issue 14 item 5): known_hosts files, revoked keys, hints."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpuaudit.probes.core.collect.targets import known_hosts_problem
from gpuaudit.tui.cli.entry import main
from reliability.faultkit import home, run_cli  # noqa: F401


def _usage_line(args: list[str], capsys) -> str:
    code = main(args)
    out, err = capsys.readouterr()
    assert (
        code == 2 and out == "" and "Traceback" not in err and len(err.strip().splitlines()) == 1
    ), err
    return err.strip()


def test_missing_known_hosts_file_says_so(capsys):
    line = _usage_line(
        ["--json", "--host", "root@127.0.0.1:1", "--known-hosts", "/nonexistent/kh"], capsys
    )
    assert "--known-hosts /nonexistent/kh: no such file" in line and "cannot connect" not in line


def test_missing_known_hosts_is_fine_when_accept_new_may_start_it(tmp_path):
    assert known_hosts_problem(str(tmp_path / "new_kh"), accept_new=True) is None
    assert known_hosts_problem(None) is None or Path.home().joinpath(".ssh/known_hosts").exists()


def test_a_0xff_byte_in_known_hosts_is_one_clear_line(tmp_path, capsys):
    kh = tmp_path / "known_hosts"
    kh.write_bytes(b"# ok\n[127.0.0.1]:22 ssh-ed25519 AAAA\xffBBBB\n")
    line = _usage_line(["--json", "--host", "root@127.0.0.1:1", "--known-hosts", str(kh)], capsys)
    assert (
        "line 2 is not text (byte 0xff at column 32)" in line and "UnicodeDecodeError" not in line
    )


@pytest.mark.parametrize("special", ["/dev/zero", "/"])
def test_a_special_known_hosts_is_refused(special, capsys):
    assert "not a regular file" in _usage_line(
        ["--json", "--host", "root@127.0.0.1:1", "--known-hosts", special], capsys
    )


def test_replay_needs_no_known_hosts(capsys):
    assert main(["--json", "--demo", "--known-hosts", "/nonexistent/kh"]) in (0, 1)
    capsys.readouterr()


@pytest.mark.sshd
@pytest.mark.parametrize("accept_new", [False, True])
def test_revoked_key_is_refused_and_never_suggests_accept_new(sshd, home, tmp_path, accept_new):
    kh = tmp_path / "known_hosts"
    kh.write_text(
        "".join(
            f"@revoked {line}\n"
            for line in Path(sshd.known_hosts).read_text().splitlines()
            if line.strip()
        )
    )
    before = kh.read_text()
    args = [
        "--json",
        "--host",
        sshd.spec,
        "--probes",
        "kernel",
        "--known-hosts",
        str(kh),
        "--identity",
        sshd.client_key,
    ]
    res = run_cli(args + (["--accept-new-host-keys"] if accept_new else []), home)
    assert res.returncode == 3 and "Traceback" not in res.stderr, res.stderr
    assert "revoked" in res.stderr and "accept-new" not in res.stderr, res.stderr
    assert kh.read_text() == before  # a revoked key is never trusted on first use


@pytest.mark.sshd
def test_changed_key_with_accept_new_does_not_suggest_the_flag_given(sshd, home, tmp_path):
    from sshd_server import keygen

    keygen(tmp_path / "impostor", "impostor")
    kh = tmp_path / "known_hosts"
    kh.write_text(
        f"[127.0.0.1]:{sshd.port} "
        + " ".join((tmp_path / "impostor.pub").read_text().split()[:2])
        + "\n"
    )
    res = run_cli(
        [
            "--json",
            "--host",
            sshd.spec,
            "--probes",
            "kernel",
            "--known-hosts",
            str(kh),
            "--identity",
            sshd.client_key,
            "--accept-new-host-keys",
        ],
        home,
    )
    assert res.returncode == 3
    assert "use --accept-new-host-keys" not in res.stderr and "never accepted" in res.stderr, (
        res.stderr
    )
