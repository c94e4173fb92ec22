"""Fleet mode (--hosts FILE): inventory parsing, and a real two-host run where one host is down."""

from __future__ import annotations

import json

import pytest
from gpuaudit.probes.core.errors import UsageError
from gpuaudit.tui.cli import entry as cli
from gpuaudit.tui.cli.fleet_hosts import FleetHost, parse_inventory
from sshd_server import free_port


def specs(text: str) -> list[str]:
    return [h.spec for h in parse_inventory(text)]


def test_plain_list_with_comments_and_duplicates():
    text = "# fleet\n\nroot@10.0.0.1:22\n10.0.0.2   # rack 2\n[::1]:2222\nroot@10.0.0.1:22\n"
    assert specs(text) == ["root@10.0.0.1:22", "10.0.0.2", "[::1]:2222"]


def test_ansible_ini_vars_groups_and_precedence():
    text = """
[gpu]
node1 ansible_host=10.0.0.5 ansible_user=root ansible_port=2200 # comment (ansible-core refuses `;` here)
node2 ansible_host=10.0.0.6
[infer]
node2
node3 ansible_host=10.0.0.7 ansible_user=ops
[gpu:vars]
ansible_port = 2222
[all:vars]
ansible_user=admin
[dc:children]
gpu
infer
"""
    hosts = parse_inventory(text)
    assert hosts == [
        FleetHost("root@10.0.0.5:2200", "node1", ("gpu",)),  # host vars beat group vars
        FleetHost("admin@10.0.0.6:2222", "node2", ("gpu", "infer")),  # one host, both groups
        FleetHost("ops@10.0.0.7", "node3", ("infer",)),
    ]


@pytest.mark.parametrize(
    "text, message",
    [
        ("node[01:10].example ansible_user=x\n", "host ranges"),
        ("10.0.0.1 ansible_user\n", "key=value"),
        ("bad!host ansible_user=x\n", "malformed"),
        ("10.0.0.1 ansible_port=99999\n", "port"),
    ],
)
def test_malformed_inventory_lines_name_the_line(text, message):
    with pytest.raises(UsageError, match=message) as info:
        parse_inventory(text, source="inv.ini")
    assert "inv.ini:1" in str(info.value)


def test_empty_or_missing_inventory_is_a_usage_error(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.write_text("# nothing\n")
    assert cli.main(["--hosts", str(empty), "--json"]) == 2
    assert "no hosts" in capsys.readouterr().err
    assert cli.main(["--hosts", str(tmp_path / "missing"), "--json"]) == 2
    assert cli.main(["--hosts", str(empty), "--host", "10.0.0.1"]) == 2


def test_fleet_json_over_real_ssh_one_host_down(sshd, tmp_path, capsys):
    down = f"{sshd.user}@127.0.0.1:{free_port()}"  # nothing listens: refused at once
    inv = tmp_path / "hosts.ini"
    inv.write_text(
        f"[gpu]\nup ansible_host=127.0.0.1 ansible_port={sshd.port} ansible_user={sshd.user}\n{down}\n"
    )
    code = cli.main(
        [
            "--hosts",
            str(inv),
            "--json",
            "--probes",
            "kernel,power",
            "--fail-on",
            "never",
            "--max-connections",
            "1",
            *sshd.cli_args(),
        ]
    )
    out = capsys.readouterr()
    doc = json.loads(out.out)
    assert code == 3  # the worst host: could not be audited
    first, second = doc["fleet"]
    assert first["target"] == sshd.spec and first["name"] == "up" and first["groups"] == ["gpu"]
    assert first["exit_status"] == 0 and first["error"] is None
    assert [p["probe_id"] for p in first["snapshot"]["probes"]] == ["kernel", "power"]
    assert (
        second["target"] == down and second["exit_status"] == 3 and second["snapshot"] is not None
    )
    assert "refused" in second["error"]
    assert (
        doc["summary"]["targets"] == 2
        and doc["summary"]["failed"] == 1
        and doc["summary"]["exit_status"] == 3
    )
    assert doc["summary"]["max_connections"] == 1
    assert f"{down} failed" in out.err


def test_fleet_table_without_json(sshd, tmp_path, capsys):
    inv = tmp_path / "hosts"
    inv.write_text(f"{sshd.spec}\n")
    code = cli.main(
        ["--hosts", str(inv), "--probes", "kernel", "--fail-on", "never", *sshd.cli_args()]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[0].split()[:3] == ["target", "exit", "crit"]
    assert sshd.spec in out and "1 host(s), 0 unreachable, exit 0" in out
