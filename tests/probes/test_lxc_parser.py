"""probes.core.parsers.lxc on real Proxmox container configs (tests/fixtures/system/pve-lxc-conf)."""

from __future__ import annotations

from pathlib import Path

from gpuaudit.probes.core.parsers.lxc import parse_conf_dump, parse_lxc_conf

FIX = Path(__file__).parent.parent / "fixtures" / "system" / "pve-lxc-conf"


def conf(name: str):
    return parse_lxc_conf((FIX / name).read_text())


def test_unprivileged_no_nvidia_idmap():
    c = conf("100-unprivileged-dri-render-idmap-no-nvidia.conf.txt")
    assert c.unprivileged and c.hostname == "ubuntu2204" and c.cores == 4 and c.memory_mb == 8192
    assert not c.has_nvidia and not c.allow_all
    assert [r.label() for r in c.allow][:2] == ["c 226:0", "c 226:128"]
    assert len(c.idmap) == 12 and c.idmap[0] == "u 0 100000 65536"
    assert c.mounts[1].source == "/dev/dri" and c.mounts[1].optional


def test_unprivileged_nvidia_allow_all():
    c = conf("116-xtts-unprivileged-nvidia-plus-allow-all-unconfined.conf.txt")
    assert c.unprivileged and c.has_nvidia and c.allow_all
    assert [r.major for r in c.allow if r.type == "c"] == [195, 511, 236]
    assert "/dev/nvidia-uvm" in c.nvidia_paths and len(c.nvidia_paths) == 5
    assert c.keys["lxc.cap.drop"] == ""


def test_privileged_caps_comments_and_cgroup_v1_init():
    c = conf("6006-gpuaas-privileged-nvidia-caps-cgroup-allow-all.conf.txt")
    assert not c.unprivileged and c.hostname == "gpuaas-6" and c.cores == 46
    assert {r.major for r in c.allow if r.type == "c"} >= {195, 235, 510}
    assert "/dev/nvidia-caps/nvidia-cap2" in c.nvidia_paths
    assert c.allow[0].covers(195, 3) and not c.allow[0].covers(510)
    assert c.keys["lxc.init.cmd"] == "/sbin/init systemd.unified_cgroup_hierarchy=0"


def test_devn_v1_keys_and_snapshot_sections():
    # Synthetic (labelled): PVE 8.1+ devN syntax, a legacy v1 key, and a snapshot section that must be ignored.
    c = parse_lxc_conf(
        "hostname: ct\ndev0: /dev/nvidia0,gid=44,mode=0666\ndev1: path=/dev/nvidia-uvm\n"
        "lxc.cgroup.devices.allow: c 195:* rwm\ncpulimit: 2.5\n[snap1]\nhostname: old\ncores: 99\n"
    )
    assert [(d.index, d.path) for d in c.devs] == [(0, "/dev/nvidia0"), (1, "/dev/nvidia-uvm")]
    assert c.devs[0].options == {"gid": "44", "mode": "0666"}
    assert c.allow[0].cgroup_v1 and c.hostname == "ct" and c.cores is None and c.cpulimit == 2.5


def test_conf_dump_from_grep():
    text = "".join(
        f"/etc/pve/lxc/116.conf:{ln}\n"
        for ln in (FIX / "116-xtts-unprivileged-nvidia-plus-allow-all-unconfined.conf.txt")
        .read_text()
        .splitlines()
        if ln.strip()
    )
    text += "/etc/pve/lxc/100.conf:hostname: other\n"
    d = parse_conf_dump(text)
    assert (
        sorted(d) == ["100", "116"]
        and d["116"].vmid == "116"
        and d["116"].has_nvidia
        and d["100"].hostname == "other"
    )
    assert parse_conf_dump("") == {}


def test_allow_list_by_minor_and_nodes_from_a_host_folder():
    """Real frigate #8652 config: only c 195:0 and c 195:1; nodes bind-mounted from /lxc/102010/devices."""
    c = conf("2051-frigate-unprivileged-nvidia-minors-195-0-1.conf.txt")
    nv = [r for r in c.allow if r.major == 195]
    assert [r.label() for r in nv] == ["c 195:0", "c 195:1"]
    assert nv[0].covers(195, 0) and not any(
        r.covers(195, 255) for r in nv
    )  # nvidiactl stays blocked
    assert c.nvidia_paths == ["/dev/nvidia0", "/dev/nvidia1"] and c.has_nvidia and c.unprivileged
