"""ansible-core's `ansible-inventory` is the oracle for `--hosts` inventories.

For every inventory here (the real ones in tests/fixtures/inventory and constructed ones covering ranges, host:port
naming and precedence, parent groups, old variable spellings, comments, quoting, YAML, group_vars/), `--hosts`
either agrees with ansible-core host by host (name, SSH address, user, port, key file) or refuses the file with
one line pointing at the JSON path; and the JSON of `ansible-inventory --list` (and `--export`) read by `--hosts`
is exactly what ansible-core resolved.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from gpuaudit.probes.core.errors import UsageError
from gpuaudit.probes.core.fleet.ansible_inventory import load_any_inventory, read_ansible_json

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "inventory"

CONSTRUCTED: dict[str, str] = {
    "ranges.ini": "[gpu]\ngpu[01:20] ansible_user=ops\n",
    "host-port-precedence.ini": (
        "10.0.0.6:2222\n[g]\n10.0.0.7:2222 ansible_port=2200\ngpu08:2208\n"
        "[g:vars]\nansible_port=2022\n[all:vars]\nansible_user=root\n"
    ),
    "children-depth.ini": (
        "[a:children]\nb\n[b]\nh1\nh2 ansible_user=x\n"
        "[a:vars]\nansible_user=top\nansible_port=2201\n[b:vars]\nansible_port=2202\n"
    ),
    "old-ssh-names.ini": (
        "h1 ansible_ssh_host=10.0.0.9 ansible_ssh_user=u ansible_ssh_port=2200 "
        "ansible_ssh_private_key_file=/k/id\n"
    ),
    "same-host-two-groups.ini": "[a]\nh1:2201\n[b]\nh1:2202\n",
    "comments.ini": "; top\n[g] # comment\nh1 # trailing\nh2 ansible_host=10.0.0.2 # note\n",
    "semicolon-mid-line.ini": "[g]\nh2 ansible_host=10.0.0.2 ; note\n",  # ansible-core refuses it
    "quoted.ini": "h1 ansible_host=\"10.0.0.5\" ansible_user='root'\n",
    "plain-list.ini": "10.0.0.1\n10.0.0.2:2222\n",
    # tests/cli/test_fleet.py's precedence inventory
    "vars-groups-precedence.ini": (
        "[gpu]\nnode1 ansible_host=10.0.0.5 ansible_user=root ansible_port=2200 # comment\n"
        "node2 ansible_host=10.0.0.6\n[infer]\nnode2\nnode3 ansible_host=10.0.0.7 ansible_user=ops\n"
        "[gpu:vars]\nansible_port = 2222\n[all:vars]\nansible_user=admin\n[dc:children]\ngpu\ninfer\n"
    ),
    # tests/reliability/test_inventory.py's cycle of parent groups
    "children-cycle.ini": (
        "[a:children]\nb\n[b:children]\nc\n[c:children]\na\n[c]\nh1\n[a:vars]\nansible_user=top\n"
    ),
    "ipv6.ini": "[v6]\n2001:db8::1\n[2001:db8::2]:2222 ansible_user=ops\n",
    "yaml-inventory.yml": (
        "all:\n  hosts:\n    h1:\n      ansible_host: 10.0.0.1\n  children:\n    gpu:\n      hosts:\n"
        "        h2:\n          ansible_port: 2222\n"
    ),
}
GROUP_VARS = {"group_vars/gpu.yml": "ansible_user: ops\n"}  # beside group-vars.ini
CONSTRUCTED["group-vars.ini"] = "[gpu]\nh1\nh2 ansible_host=10.0.0.2\n"


def ansible_inventory() -> str:
    path = shutil.which("ansible-inventory")
    if path is None:
        if os.environ.get("GPUAUDIT_REQUIRE_SSHD") == "1":
            pytest.fail("ansible-inventory missing (pip install -e '.[test]': ansible-core)")
        pytest.skip("ansible-inventory missing (ansible-core, in the test extra)")
    return path


def inventories(tmp: Path) -> list[Path]:
    paths = sorted(FIXTURES.glob("*.ini"))
    for name, text in CONSTRUCTED.items():
        folder = tmp / name.rsplit(".", 1)[0]
        folder.mkdir()
        (folder / name).write_text(text)
        if name == "group-vars.ini":
            for rel, body in GROUP_VARS.items():
                (folder / rel).parent.mkdir()
                (folder / rel).write_text(body)
        paths.append(folder / name)
    return paths


def oracle(tool: str, path: Path, *extra: str) -> str | None:
    """ansible-inventory's JSON, or None when ansible-core could not parse the file."""
    proc = subprocess.run(
        [tool, "-i", str(path), "--list", *extra],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "ANSIBLE_HOST_KEY_CHECKING": "False", "ANSIBLE_NOCOLOR": "1"},
        cwd=path.parent,
    )
    assert proc.returncode == 0, proc.stderr
    if "Unable to parse" in proc.stderr:
        return None
    return proc.stdout


def entries(inv) -> dict[str, tuple[str, str | None]]:
    return {h.name: (h.spec, h.identity) for h in inv.hosts}


def test_native_reader_agrees_with_ansible_core_or_refuses(tmp_path):
    tool = ansible_inventory()
    paths = inventories(tmp_path)
    with ThreadPoolExecutor(4) as pool:
        resolved = list(pool.map(lambda p: oracle(tool, p), paths))
    disagree, refused, agreed_hosts = [], [], 0
    for path, text in zip(paths, resolved, strict=True):
        if text is None:  # ansible-core refuses the file: so must we
            with pytest.raises(UsageError):
                load_any_inventory(str(path))
            continue
        truth = entries(read_ansible_json(text, str(path)))
        assert truth, f"{path.name}: ansible-core found no host"
        try:
            ours = entries(load_any_inventory(str(path)))
        except UsageError as exc:
            line = str(exc)
            assert "\n" not in line and "ansible-inventory -i FILE --list" in line, line
            refused.append(f"{path.name}: {line}")
            continue
        for name in sorted(set(truth) | set(ours)):
            if truth.get(name) != ours.get(name):
                disagree.append(
                    f"{path.name}: {name}: ansible {truth.get(name)} ours {ours.get(name)}"
                )
            else:
                agreed_hosts += 1
    print(
        f"\n{len(paths)} inventories: {agreed_hosts} host entries agree with ansible-core, "
        f"{len(disagree)} disagree, {len(refused)} refused with one line:"
    )
    for r in refused:
        print("  " + r)
    assert disagree == []
    assert {Path(r.split(":")[0]).name for r in refused} == {
        "ranges.ini",
        "yaml-inventory.yml",
        "group-vars.ini",
    }


def test_the_json_path_reads_what_ansible_resolved(tmp_path):
    tool = ansible_inventory()
    folder = tmp_path / "inv"
    folder.mkdir()
    (folder / "hosts.ini").write_text(
        "[gpu]\ngpu[01:03] ansible_user=ops\n[gpu:children]\nh100\n[h100]\nbig:2222\n"
        "[h100:vars]\nansible_private_key_file=/keys/h100\n"
    )
    (folder / "group_vars").mkdir()
    (folder / "group_vars" / "gpu.yml").write_text("ansible_port: 2200\nansible_become: true\n")
    for extra in ((), ("--export",)):
        out = folder / f"hosts{'-export' if extra else ''}.json"
        out.write_text(oracle(tool, folder / "hosts.ini", *extra) or "")
        inv = load_any_inventory(str(out))
        assert [(h.name, h.spec, h.identity) for h in inv.hosts] == [
            ("gpu01", "ops@gpu01:2200", None),
            ("gpu02", "ops@gpu02:2200", None),
            ("gpu03", "ops@gpu03:2200", None),
            ("big", "big:2222", "/keys/h100"),
        ], extra
        assert inv.ignored == ("ansible_become",)
        assert dict((h.name, h.groups) for h in inv.hosts)["big"] == ("h100",)


def test_a_vaulted_ssh_variable_is_refused_in_one_line(tmp_path):
    f = tmp_path / "v.json"
    f.write_text(
        '{"_meta": {"hostvars": {"h1": {"ansible_host": {"__ansible_vault": "$ANSIBLE_VAULT;1.1"}}}},'
        ' "all": {"children": ["ungrouped"]}, "ungrouped": {"hosts": ["h1"]}}'
    )
    with pytest.raises(UsageError, match="vault-encrypted") as exc:
        load_any_inventory(str(f))
    assert "\n" not in str(exc.value)


def test_hosts_json_over_real_ssh_with_a_fleet_prom(sshd, tmp_path, capsys):
    """A range only Ansible expands -> `ansible-inventory --list` JSON -> `--hosts hosts.json --json --prom` over
    a real sshd on 127.0.0.1: the node is named as Ansible names it, in the JSON and in the fleet textfile."""
    from gpuaudit.tui.cli import entry as cli

    tool = ansible_inventory()
    ini = tmp_path / "hosts.ini"
    ini.write_text(
        f"[gpu]\nup[1:1] ansible_host=127.0.0.1 ansible_port={sshd.port} ansible_user={sshd.user}\n"
    )
    hosts = tmp_path / "hosts.json"
    hosts.write_text(oracle(tool, ini) or "")
    prom = tmp_path / "fleet.prom"
    code = cli.main(
        [
            "--hosts",
            str(hosts),
            "--json",
            "--prom",
            str(prom),
            "--probes",
            "kernel",
            "--fail-on",
            "never",
            *sshd.cli_args(),
        ]
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    (node,) = json.loads(out.out)["fleet"]
    assert node["name"] == "up1" and node["target"] == sshd.spec and node["groups"] == ["gpu"]
    text = prom.read_text()
    assert 'gpuaudit_target_up{gpuaudit_node="up1",target="host"} 1' in text
    assert 'node="' not in text.replace('gpuaudit_node="', "")
