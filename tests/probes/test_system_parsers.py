"""probes.core.parsers.system on the real corpus captures in tests/fixtures/system (see each SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpuaudit.probes.core.parsers import system as s

FIX = Path(__file__).parent.parent / "fixtures" / "system"


def read(folder: str, name: str) -> str:
    return (FIX / folder / name).read_text()


def all_txt(folder: str) -> list[str]:
    return sorted(p.name for p in (FIX / folder).glob("*.txt"))


# ---------------------------------------------------------------- uname


@pytest.mark.parametrize(
    "name,release,host,flavour",
    [
        ("csit-skx-4.15.0-72-generic-uname-a.txt", "4.15.0-72-generic", "s3-t21-sut1", "generic"),
        ("csit-zn2-5.15.0-46-generic-uname-a.txt", "5.15.0-46-generic", "s60-t210-sut1", "generic"),
        ("pve-5.15-inside-ubuntu-lxc-uname-a.txt", "5.15.35-3-pve", "Ubuntu22CT", "pve"),
        ("pve-5.3-debian-host-uname-a.txt", "5.3.13-1-pve", "ansible", "pve"),
        ("pve-6.5-inside-debian-lxc-ct200-motd-uname-snrvm.txt", "6.5.13-5-pve", "CT200", "pve"),
        ("pve-6.8-host-motd-uname-snrvm.txt", "6.8.4-2-pve", "yangz", "pve"),
        (
            "rhel8-4.18-rhcos-uname-a.txt",
            "4.18.0-80.11.2.el8_0.x86_64",
            "localhost.localdomain",
            "el8_0",
        ),
    ],
)
def test_uname_corpus(name, release, host, flavour):
    u = s.parse_uname(read("uname", name))
    assert (u.release, u.hostname, u.flavour) == (release, host, flavour)


def test_uname_r_and_garbage():
    assert s.parse_uname("6.8.12-9-pve\n").release == "6.8.12-9-pve"
    assert s.parse_uname("").release is None
    assert s.parse_uname("uname: extra operand\n").release is None


def test_every_uname_sample_parses():
    for name in all_txt("uname"):
        assert s.parse_uname(read("uname", name)).release, name


# ---------------------------------------------------------------- cmdline


def test_cmdline_amd_iommu_numa_balancing():
    pairs = s.parse_cmdline(
        read("proc-cmdline", "csit-epyc7532-amd-iommu-on-pt-max-cstate0-hugepages.txt")
    )
    assert s.cmdline_value(pairs, "amd_iommu") == "on"
    assert s.cmdline_value(pairs, "numa_balancing") == "disable"
    assert s.cmdline_value(pairs, "processor.max_cstate") == "0"
    assert s.cmdline_value(pairs, "hugepagesz") == "2M"  # repeated: the last wins
    assert s.cmdline_value(pairs, "ro") == ""
    assert s.cmdline_value(pairs, "amd_pstate") is None


def test_cmdline_intel_and_rhcos():
    pairs = s.parse_cmdline(
        read("proc-cmdline", "csit-xeon-icx-intel-iommu-pstate-disable-idle-cstate1.txt")
    )
    assert s.cmdline_value(pairs, "intel_pstate") == "disable"
    assert s.cmdline_value(pairs, "intel_idle.max_cstate") == "1"
    pairs = s.parse_cmdline(read("proc-cmdline", "rhcos-4.18-ostree-hyperv-vm.txt"))
    assert s.cmdline_value(pairs, "console") == "ttyS0,115200n8"
    assert s.cmdline_value(pairs, "iommu") is None


def test_every_cmdline_sample_parses():
    for name in all_txt("proc-cmdline"):
        assert s.cmdline_value(s.parse_cmdline(read("proc-cmdline", name)), "BOOT_IMAGE"), name


def test_cpuinfo_id():
    # Synthetic (labelled): the four lines `grep -m4` returns on a Zen 5 EPYC.
    cpu = s.parse_cpuinfo_id(
        "vendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\nmodel name\t: AMD EPYC 9375F 32-Core Processor\n"
    )
    assert (cpu.vendor, cpu.family, cpu.model, cpu.model_name) == (
        "AuthenticAMD",
        26,
        2,
        "AMD EPYC 9375F 32-Core Processor",
    )
    assert s.parse_cpuinfo_id("") == s.CpuId()


def test_sysctl_and_selectors():
    assert s.parse_sysctl("kernel.numa_balancing = 1\nvm.zone_reclaim_mode = 0\n") == {
        "kernel.numa_balancing": "1",
        "vm.zone_reclaim_mode": "0",
    }
    assert s.parse_int("1\n") == 1 and s.parse_int("N\n") is None
    assert s.parse_bracketed_choice(read("sysfs-thp", "ubuntu-default-madvise.txt")) == "madvise"
    assert s.parse_bracketed_choice(read("sysfs-thp", "defrag-always-tidb-host.txt")) == "always"
    assert s.parse_bracketed_choice(read("sysfs-thp", "after-echo-never-disabled.txt")) == "never"


# ---------------------------------------------------------------- NUMA


def test_numactl_proxmox_2x_9375f():
    t = s.parse_numactl_h(read("numactl-hardware", "proxmox-2x-epyc-9375f-smt-off-1.5tb.txt"))
    assert sorted(t.nodes) == [0, 1]
    assert t.nodes[0].cpus == tuple(range(32)) and t.nodes[1].cpus == tuple(range(32, 64))
    assert t.nodes[1].size_mb == 774028 and t.nodes[1].free_mb == 684984
    assert t.distances == {0: {0: 10, 1: 32}, 1: {0: 32, 1: 10}}


def test_numactl_nps4_trailing_spaces():
    t = s.parse_numactl_h(
        read("numactl-hardware", "epyc-2s-nps4-8nodes-mi210-host-trailing-spaces.txt")
    )
    assert len(t.nodes) == 8
    assert t.nodes[7].cpus[-1] == 255 and len(t.nodes[0].cpus) == 32
    assert t.distances[0][1] == 12 and t.distances[0][4] == 32 and t.distances[7][7] == 10


def test_numactl_quoted_memoryless():
    t = s.parse_numactl_h(
        read("numactl-hardware", "epyc-7401-dell-r7425-8nodes-memoryless-QUOTED.txt")
    )
    assert len(t.nodes) == 8
    assert [n for n, v in t.nodes.items() if v.size_mb == 0] == [0, 2, 3, 4, 6, 7]
    assert t.distances == {}


def test_numactl_single_node_low_free():
    t = s.parse_numactl_h(read("numactl-hardware", "puget-tr-pro-7965wx-1node-low-free.txt"))
    assert list(t.nodes) == [0] and t.nodes[0].free_mb == 1724 and t.distances == {0: {0: 10}}


def test_numactl_asus_and_all_samples_parse():
    t = s.parse_numactl_h(read("numactl-hardware", "asus-esc8000a-e12-epyc9374f-2s-smt-off.txt"))
    assert t.nodes[0].size_mb == 193129
    for name in all_txt("numactl-hardware"):
        assert s.parse_numactl_h(read("numactl-hardware", name)).nodes, name


def test_node_list_cpulists_pci_numa():
    assert s.parse_node_list(
        "/sys/devices/system/node/node0\n/sys/devices/system/node/node1\n"
    ) == [0, 1]
    assert s.parse_node_cpulists(
        "/sys/devices/system/node/node1/cpulist:32-63\n/sys/devices/system/node/node0/cpulist:0-31\n"
    ) == {1: list(range(32, 64)), 0: list(range(32))}
    pci = s.parse_pci_numa(
        "/sys/bus/pci/drivers/nvidia/0000:81:00.0/numa_node:1\n"
        "/sys/bus/pci/drivers/nvidia/0000:81:00.0/local_cpulist:32-63\n"
        "/sys/bus/pci/drivers/nvidia/0000:01:00.0/numa_node:-1\n"
    )
    assert pci["0000:81:00.0"].numa_node == 1 and pci["0000:81:00.0"].local_cpus == tuple(
        range(32, 64)
    )
    assert pci["0000:01:00.0"].numa_node == -1
    assert s.normalize_bdf("00000000:A1:00.0") == "0000:a1:00.0"


def test_grep_h_values_with_colons_and_slashes():
    out = s.parse_grep_h(
        "/sys/devices/system/cpu/vulnerabilities/spectre_v2:Mitigation: Enhanced / Automatic IBRS\n"
        "/sys/fs/cgroup/cpu.stat:nr_periods 5\n"
    )
    assert out["/sys/devices/system/cpu/vulnerabilities/spectre_v2"] == [
        "Mitigation: Enhanced / Automatic IBRS"
    ]
    assert out["/sys/fs/cgroup/cpu.stat"] == ["nr_periods 5"]


# ---------------------------------------------------------------- cgroups


def test_proc_self_cgroup_corpus():
    d = s.parse_proc_self_cgroup(read("proc-self-cgroup", "docker-cgroupns-host-v2.txt"))
    assert (
        d.version == "v2"
        and d.docker_id
        and d.docker_id.startswith("70a2e438")
        and d.lxc_id is None
    )
    h = s.parse_proc_self_cgroup(read("proc-self-cgroup", "host-v2-user-session-scope.txt"))
    assert h.version == "v2" and h.unified_path == "/user.slice/user-1000.slice/session-7.scope"
    p = s.parse_proc_self_cgroup(
        read("proc-self-cgroup", "proxmox63-lxc-proc1-cgroup-hybrid-v1v2-init-scope.txt")
    )
    assert (
        p.version == "hybrid" and p.unified_path == "/init.scope" and p.lxc_id is None
    )  # namespace hides /lxc/<id>


def test_proc_self_cgroup_host_view_of_lxc():
    # Synthetic (labelled): how the host sees a PVE container's process.
    assert s.parse_proc_self_cgroup("0::/lxc/101/ns/init.scope\n").lxc_id == "101"


def test_cgroup_files_and_cpu_max():
    # Synthetic (labelled) `grep -H .` over the cgroup v2 files.
    lim = s.parse_cgroup_files(
        "/sys/fs/cgroup/cpuset.cpus.effective:0-15\n/sys/fs/cgroup/cpuset.mems.effective:1\n"
        "/sys/fs/cgroup/cpu.max:400000 100000\n/sys/fs/cgroup/memory.max:68719476736\n"
        "/sys/fs/cgroup/cpu.stat:nr_periods 1000\n/sys/fs/cgroup/cpu.stat:nr_throttled 250\n"
        "/sys/fs/cgroup/memory.events:oom_kill 2\n"
    )
    assert lim.cpuset_cpus == tuple(range(16)) and lim.cpuset_mems == (1,)
    assert (lim.cpu_quota_us, lim.cpu_period_us, lim.memory_max) == (400000, 100000, 64 * 1024**3)
    assert lim.cpu_stat == {"nr_periods": 1000, "nr_throttled": 250} and lim.memory_events == {
        "oom_kill": 2
    }
    assert s.parse_cpu_max("max 100000") == (None, 100000)
    empty = s.parse_cgroup_files("")
    assert empty.cpuset_cpus is None and not empty.cpu_max_read and not empty.memory_max_read


def test_status_allowed_and_uid_map():
    assert s.parse_status_allowed("Cpus_allowed_list:\t0-3,8\nMems_allowed_list:\t0\n") == (
        (0, 1, 2, 3, 8),
        (0,),
    )
    assert s.parse_uid_map("         0     100000      65536\n") == [(0, 100000, 65536)]


# ---------------------------------------------------------------- df / ulimit


@pytest.mark.parametrize(
    "name,fs,size",
    [
        ("docker-default-64m-shm.txt", "shm", 64 * 1024**2),
        ("host-tmpfs-63g.txt", "tmpfs", 63 * 1024**3),
        ("oracle-rac-node-tmpfs-16g.txt", "tmpfs", 16 * 1024**3),
    ],
)
def test_df_shm_corpus(name, fs, size):
    rows = s.parse_df(read("df-h-dev-shm", name))
    assert (
        len(rows) == 1
        and rows[0].filesystem == fs
        and rows[0].size_bytes == size
        and rows[0].mounted_on == "/dev/shm"
    )


@pytest.mark.parametrize(
    "name,memlock,nofile",
    [
        ("bigmem-host-memlock-33gb-nproc-500.txt", "33009433", "1024"),
        ("memlock-64-legacy-default.txt", "64", "1024"),
        ("memlock-8192-core-unlimited.txt", "8192", "1024"),
        ("soft-limits-memlock-unlimited-no-R-line.txt", "unlimited", "65535"),
    ],
)
def test_ulimit_corpus(name, memlock, nofile):
    lim = s.parse_ulimit_a(read("ulimit-a", name))
    assert lim["l"] == memlock and lim["n"] == nofile


def test_ulimit_dash_format_and_kb():
    # Synthetic (labelled): dash's `ulimit -a` layout (what `sh -c` runs on Debian).
    lim = s.parse_ulimit_a(
        "time(seconds)        unlimited\nlocked memory(kbytes) 8192\nnofiles              1024\n"
    )
    assert lim["l"] == "8192" and lim["n"] == "1024"
    assert s.ulimit_kb("unlimited") == -1 and s.ulimit_kb("64") == 64 and s.ulimit_kb("x") is None


# ---------------------------------------------------------------- /proc/devices, ls, virt


def test_proc_devices_corpus():
    pd = s.parse_proc_devices(
        read("proc-devices", "gpu-vm-nvswitch-gdrdrv-ib-ibm-test-fixture.txt")
    )
    assert pd.char_major("nvidia-frontend") == 195
    assert pd.char_major("nvidia-uvm") == 510 and pd.char_major("nvidia-caps") == 235
    assert pd.char_major("nvidia-nvswitch") == 511 and pd.char_major("gdrdrv") == 509
    assert pd.char["infiniband_verbs"] == [231, 240]
    assert pd.block["virtblk"] == [252] and pd.char_name(510) == "nvidia-uvm"


def test_ls_dev_with_caps_directory():
    # Synthetic (labelled): `ls -l /dev/nvidia*` layout with the nvidia-caps directory section.
    nodes = s.parse_ls_dev(
        "crw-rw-rw- 1 root root 195,   0 Jan 13 09:58 /dev/nvidia0\n"
        "crw-rw---- 1 nobody nogroup 510,   0 Jan 13 09:58 /dev/nvidia-uvm\n\n"
        "/dev/nvidia-caps:\ntotal 0\ncr-------- 1 root root 235, 1 Jan 13 09:58 nvidia-cap1\n"
    )
    by = {n.path: n for n in nodes}
    assert by["/dev/nvidia0"].major == 195 and by["/dev/nvidia0"].world_rw
    assert by["/dev/nvidia-uvm"].major == 510 and not by["/dev/nvidia-uvm"].world_rw
    assert by["/dev/nvidia-caps/nvidia-cap1"].minor == 1
    assert s.parse_ls_dev("") == []


def test_detect_virt_corpus():
    assert s.parse_detect_virt(read("systemd-detect-virt", "proxmox-lxc-rockylinux86.txt")) == "lxc"
    assert (
        s.parse_detect_virt(read("systemd-detect-virt", "transip-vps-ubuntu2004-kvm.txt")) == "kvm"
    )
    assert s.parse_detect_virt("") is None


def test_shared_gpu_id_and_cgroup_commands_and_helpers():
    from gpuaudit.probes import container, numa
    from gpuaudit.probes.core.models import CommandRecord
    from gpuaudit.probes.core.parsers.nvidia_smi import SMI_GPU_IDS, SmiGpuId, parse_smi_gpu_ids
    from gpuaudit.probes.core.parsers.system import CGROUP_FILES
    from gpuaudit.probes.core.spec import partial_grep_ok, problem_text

    for probe in (
        numa.PROBE,
        container.PROBE,
    ):  # one string each: the runner runs it once, replay keys on the id
        shells = {c.id: c.shell for c in probe.commands}
        assert shells["smi_gpu_ids"] == SMI_GPU_IDS and shells["cgroup_limits"] == CGROUP_FILES
    assert parse_smi_gpu_ids("0, GPU-5a1e, 00000000:01:00.0, NVIDIA H200\n") == [
        SmiGpuId(0, "GPU-5a1e", "0000:01:00.0", "NVIDIA H200")
    ]

    def rec(exit_status, stdout, **kw):
        return {
            "g": CommandRecord(
                target="host",
                probe_id="numa",
                command_id="g",
                command="x",
                exit_status=exit_status,
                stdout=stdout,
                **kw,
            )
        }

    assert partial_grep_ok(rec(2, "/sys/fs/cgroup/cpu.max:max 100000\n"), "g")
    assert (
        not partial_grep_ok(rec(2, ""), "g")
        and not partial_grep_ok(rec(0, "x\n"), "g")
        and not partial_grep_ok({}, "g")
    )
    assert not partial_grep_ok(rec(2, "x\n", error="boom"), "g")
    assert (
        problem_text({"a": "exit 2", "b": "timed out"}, "b", "c", "a") == "b: timed out; a: exit 2"
    )
    assert problem_text({}, "a") == "not collected"


# --------------------------------------------------------------------------- dmidecode: socket and channel of a slot

from gpuaudit.probes.core.parsers.dmi import (  # noqa: E402
    is_system_dimm,
    memory_devices,
    parse_dmidecode,
    slot_place,
)

DMI = Path(__file__).parents[1] / "fixtures/system/dmidecode"


@pytest.mark.parametrize(
    "name,sockets,channels_per_socket",
    [
        (
            "supermicro-sys-4029gp-trt-full.txt",
            ["1", "2"],
            6,
        ),  # P1-DIMMA1; bank locator only on populated slots
        ("supermicro-sys-620u-tnr-6of32-uneven.txt", ["1", "2"], 8),
        ("supermicro-x8dtn-3of18-uneven.txt", ["1", "2"], 3),  # P1-DIMM2B: channel 2, slot B
        ("hpe-cray-xd665-full.txt", ["1", "2"], 12),  # CPU1_DIMM_A1 + bank "P1 CHANNEL A"
        (
            "gigabyte-g482-z54-full.txt",
            ["0", "1"],
            8,
        ),  # DIMM_P0_A0 (P is the socket, not a channel)
        ("intel-m50cyp2sb-8of32-half-channels.txt", ["0", "1"], 8),  # CPU0_DIMM_A1
        ("asrockrack-ep2c622d16-12of16-all-channels.txt", ["1", "2"], 6),
        ("dell-r7625-full.txt", ["A", "B"], None),  # Dell: the letter is the socket, no channel
        ("hpe-dl380-gen11-full.txt", ["1", "2"], None),  # PROC 1 DIMM 3: no channel in the strings
    ],
)
def test_slot_place_on_real_dmidecode(name, sockets, channels_per_socket):
    places = [
        slot_place(d.locator, d.bank)
        for d in memory_devices(parse_dmidecode((DMI / name).read_text()))
    ]
    assert sorted({p.socket for p in places}, key=str) == sockets
    for sock in sockets:
        chans = {p.channel for p in places if p.socket == sock}
        assert (len(chans) if None not in chans else None) == channels_per_socket, (sock, chans)


def test_bios_flash_is_not_a_dimm():
    devices = memory_devices(
        parse_dmidecode((DMI / "supermicro-x8dtl-bios-flash-as-type17.txt").read_text())
    )
    flash = [d for d in devices if not is_system_dimm(d)]
    assert [(d.locator, d.type, d.size_mb) for d in flash] == [("BIOS", "Flash", 4)]
    assert len([d for d in devices if is_system_dimm(d)]) == 6
