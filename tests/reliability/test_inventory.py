"""Fleet inventories (issue 14 item 4): Ansible's SSH variables and parent groups, IPv6, size caps, special files."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from gpuaudit.probes.core.errors import UsageError
from gpuaudit.probes.core.fleet import inventory as inv
from gpuaudit.probes.core.fleet.inventory import (
    FleetHost,
    load_inventory,
    parse_inventory,
    read_inventory,
)
from gpuaudit.tui.cli.entry import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "inventory"


def test_parent_group_vars_reach_the_children_hosts_real_okd_inventory():
    """[OSEv3:children] + [OSEv3:vars] ansible_ssh_user=root: the host logs in as root (it was the default user)."""
    got = read_inventory((FIXTURES / "okd-aio-osev3-children.ini").read_text(), "okd.ini")
    assert got.hosts == [
        FleetHost("root@okd.i3datacenter.com", "okd.i3datacenter.com", ("masters", "etcd", "nodes"))
    ]
    assert got.ignored == ()


def test_ssh_variables_and_key_file_real_vagrant_inventory():
    got = read_inventory((FIXTURES / "vagrant-targets-children-ssh-key.ini").read_text())
    assert [(h.spec, h.name, h.identity) for h in got.hosts] == [
        ("vagrant@192.168.0.128:22", "master", ".vagrant/machines/master/virtualbox/private_key"),
        ("vagrant@192.168.0.126:22", "node1", ".vagrant/machines/node1/virtualbox/private_key"),
        ("vagrant@192.168.0.6:22", "node2", ".vagrant/machines/node2/virtualbox/private_key"),
    ]
    assert got.ignored == ("ansible_connection",)
    assert "ansible_connection" in (got.ignored_note() or "")


def test_old_ansible_ssh_names_in_group_vars_real_jenkins_inventory():
    (h,) = parse_inventory((FIXTURES / "jenkins-group-vars-old-ssh-names.ini").read_text())
    assert (h.spec, h.identity) == ("root@java-server1:22", "/root/.ssh/id_rsa")


def test_precedence_all_parent_child_host():
    text = """
[all:vars]
ansible_user=everyone
ansible_port=2000
[dc:vars]
ansible_user=dcuser
ansible_port=2100
[gpu:vars]
ansible_port=2200
[dc:children]
gpu
[gpu]
a ansible_ssh_host=10.0.0.1
b ansible_host=10.0.0.2 ansible_ssh_port=2300
c ansible_host=10.0.0.3 ansible_port=2400 ansible_ssh_user=me
[other]
d ansible_host=10.0.0.4
"""
    assert [h.spec for h in parse_inventory(text)] == [
        "dcuser@10.0.0.1:2200",
        "dcuser@10.0.0.2:2300",
        "me@10.0.0.3:2400",
        "everyone@10.0.0.4:2000",
    ]


def test_nested_children_and_a_cycle_do_not_hang():
    text = (
        "[a:children]\nb\n[b:children]\nc\n[c:children]\na\n[c]\nh1\n[a:vars]\nansible_user=top\n"
    )
    with pytest.raises(
        UsageError, match="loop"
    ):  # refused in one line, as ansible-core does (issue 25)
        parse_inventory(text)


@pytest.mark.parametrize(
    "line, spec",
    [
        ("user@[::1]:2428", "user@[::1]:2428"),
        ("[::1]", "[::1]"),
        ("v6 ansible_host=::1 ansible_port=2428", "[::1]:2428"),
        ("v6b ansible_host=2001:db8::7", "[2001:db8::7]"),
    ],
)
def test_ipv6_addresses_are_hosts_not_ranges(line, spec):
    assert [h.spec for h in parse_inventory(line + "\n")] == [spec]


def test_ranges_are_still_refused():
    for text in ("node[01:10].example\n", "db-[a:f]\n", "n[1:9:2]\n"):
        with pytest.raises(UsageError, match="host ranges"):
            parse_inventory(text)


def test_quoted_host_variables():
    (h,) = parse_inventory(
        "n1 ansible_host=10.0.0.9 ansible_ssh_common_args='-o ProxyJump=x' ansible_become=true\n"
    )
    assert h.spec == "10.0.0.9"
    assert read_inventory(
        "n1 ansible_ssh_common_args='-o ProxyJump=x' ansible_become=true\n"
    ).ignored == ("ansible_become", "ansible_ssh_common_args")


def _one_line_exit_2(args, capsys) -> str:
    code = main(args)
    out, err = capsys.readouterr()
    assert (
        code == 2 and out == "" and "Traceback" not in err and len(err.strip().splitlines()) == 1
    ), err
    return err


def test_dev_zero_is_refused_before_reading(capsys):
    t0 = time.monotonic()
    err = _one_line_exit_2(["--hosts", "/dev/zero", "--json"], capsys)
    assert "a device, not a regular inventory file" in err and time.monotonic() - t0 < 5


def test_fifo_is_refused_without_blocking(tmp_path, capsys):
    fifo = tmp_path / "hosts.fifo"
    os.mkfifo(fifo)
    done = threading.Event()
    result: list[str] = []

    def run() -> None:
        result.append(_one_line_exit_2(["--hosts", str(fifo), "--json"], capsys))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    if not done.wait(10):
        with open(fifo, "wb"):  # unblock the reader so the thread ends
            pass
        pytest.fail("--hosts FIFO blocked")
    assert "a FIFO, not a regular inventory file" in result[0]


def test_directory_and_oversized_inventory(tmp_path, capsys, monkeypatch):
    assert "a directory" in _one_line_exit_2(["--hosts", str(tmp_path), "--json"], capsys)
    big = tmp_path / "big"
    big.write_text("10.0.0.1\n" * 100)
    monkeypatch.setattr(inv, "MAX_INVENTORY_BYTES", 64)
    assert "too large" in _one_line_exit_2(["--hosts", str(big), "--json"], capsys)


def test_too_many_hosts(monkeypatch):
    monkeypatch.setattr(inv, "MAX_HOSTS", 3)
    with pytest.raises(UsageError, match="more than 3 hosts"):
        parse_inventory("".join(f"10.0.0.{i}\n" for i in range(1, 6)))


def test_load_inventory_returns_hosts_and_ignored(tmp_path):
    f = tmp_path / "hosts.ini"
    f.write_text("[g]\nn1 ansible_host=10.0.0.1 ansible_become=yes\n")
    got = load_inventory(str(f))
    assert [h.spec for h in got.hosts] == ["10.0.0.1"] and got.ignored == ("ansible_become",)


def test_fleet_names_the_ignored_variables_once(tmp_path, capsys):
    from reliability.faultkit import free_port

    f = tmp_path / "hosts.ini"
    f.write_text(
        f"[g]\nn1 ansible_host=127.0.0.1 ansible_port={free_port()} ansible_become=yes\n[g:vars]\nansible_connection=ssh\n"
    )
    code = main(
        [
            "--hosts",
            str(f),
            "--probes",
            "kernel",
            "--known-hosts",
            str(tmp_path / "kh"),
            "--accept-new-host-keys",
        ]
    )
    err = capsys.readouterr().err
    assert code == 3
    assert err.count("ignored variable(s) ansible_become, ansible_connection") == 1, err
