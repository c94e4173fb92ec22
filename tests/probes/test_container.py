"""Container probe: host config vs container view (agreeing and disagreeing), every rule, end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuaudit.probes import container as c
from gpuaudit.probes.core.models import CommandRecord

from case_study import CASE, run_case_study

BEFORE = CASE / "before"
FIX = Path(__file__).parent.parent / "fixtures" / "system"


def rec(role, cid, stdout="", exit_status=0, stderr="", error=None):
    return CommandRecord(target=role, probe_id="container", command_id=cid, command="x", exit_status=exit_status,
                         stdout=stdout, stderr=stderr, error=error)


def load(role: str, overrides: dict[str, str | None] | None = None) -> c.ContainerFacts:
    """Facts from the case-study recordings of one role, with some outputs replaced (None = command absent)."""
    outs = {}
    d = BEFORE / role
    for cmd in c.PROBE.commands_for(role):  # type: ignore[arg-type]
        p = d / f"{cmd.id}.out"
        if p.exists():
            code = d / f"{cmd.id}.exit"
            err = d / f"{cmd.id}.err"
            outs[cmd.id] = rec(role, cmd.id, p.read_text(), int(code.read_text()) if code.exists() else 0,
                               err.read_text() if err.exists() else "")
    for cid, text in (overrides or {}).items():
        if text is None:
            outs.pop(cid, None)
        else:
            outs[cid] = rec(role, cid, text)
    return c.extract(outs, role)  # type: ignore[arg-type]


HOST = load("host")
CTR = load("container")


def without_lines(role: str, cid: str, needle: str) -> str:
    return "".join(ln for ln in (BEFORE / role / f"{cid}.out").read_text().splitlines(keepends=True) if needle not in ln)


def test_case_study_facts():
    assert HOST.is_pve and sorted(HOST.configs) == ["101", "102"] and HOST.majors["nvidia-uvm"] == 510
    assert CTR.virt == "lxc" and CTR.hostname == "sglang" and len(CTR.gpus) == 8 and CTR.memlock_kb == -1
    assert HOST.virt == "none"  # systemd-detect-virt exits 1 with "none": an answer
    assert c.match_config(HOST, CTR)[0].vmid == "101"


# ---------------------------------------------------------------- device_cgroup / device_major_match


def test_device_cgroup_agree():
    f = c.judge_device_cgroup(HOST, CTR)
    assert f.severity.value == "ok" and "c 510:*" in f.observed and "nvidia-uvm 510" in f.observed


def test_device_cgroup_missing_uvm_major_names_both_sides():
    host = load("host", {"pve_lxc_confs": without_lines("host", "pve_lxc_confs", "c 510:*")})
    f = c.judge_device_cgroup(host, CTR)
    assert f.severity.value == "critical"
    assert "nvidia-uvm major 510 not allowed" in f.observed and "c 195:*, c 235:*" in f.observed
    assert "host /proc/devices" in f.observed and "nvidia-uvm 510" in f.observed


def test_device_cgroup_stale_uvm_major_is_a_major_mismatch():
    conf = (BEFORE / "host" / "pve_lxc_confs.out").read_text().replace("c 510:* rwm", "c 511:* rwm")
    host = load("host", {"pve_lxc_confs": conf})
    assert c.judge_device_cgroup(host, CTR).severity.value == "critical"
    m = c.judge_device_major_match(host, CTR)
    assert m.severity.value == "critical" and "c 511:*" in m.observed and "nvidia-uvm 510" in m.observed


def test_device_cgroup_caps_missing_warns_v1_only_crit_allow_all_info():
    host = load("host", {"pve_lxc_confs": without_lines("host", "pve_lxc_confs", "c 235:*")})
    assert c.judge_device_cgroup(host, CTR).severity.value == "warning"
    v1 = (BEFORE / "host" / "pve_lxc_confs.out").read_text().replace("lxc.cgroup2.devices.allow", "lxc.cgroup.devices.allow")
    f = c.judge_device_cgroup(load("host", {"pve_lxc_confs": v1}), CTR)
    assert f.severity.value == "critical" and "cgroup v1" in f.observed
    allow_all = without_lines("host", "pve_lxc_confs", "devices.allow") + "/etc/pve/lxc/101.conf:lxc.cgroup2.devices.allow: a\n"
    assert c.judge_device_cgroup(load("host", {"pve_lxc_confs": allow_all}), CTR).severity.value == "info"  # trap: 'a'


def test_device_cgroup_devn_entries_cover_majors():
    devn = without_lines("host", "pve_lxc_confs", "lxc.") + "".join(
        f"/etc/pve/lxc/101.conf:dev{i}: {p}\n" for i, p in enumerate(
            [f"/dev/nvidia{j}" for j in range(8)] + ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-caps/nvidia-cap1"]))
    assert c.judge_device_cgroup(load("host", {"pve_lxc_confs": devn}), CTR).severity.value == "ok"


def test_device_cgroup_preconditions():
    not_pve = load("host", {"pve_lxc_confs": None})
    assert c.judge_device_cgroup(not_pve, None).severity.value == "unknown"  # not collected
    no_pve = c.extract({"pve_lxc_confs": rec("host", "pve_lxc_confs", "", 2, "grep: /etc/pve/lxc/*.conf: No such file or directory")}, "host")
    f = c.judge_device_cgroup(no_pve, None)
    assert f.severity.value == "ok" and "not a Proxmox host" in f.observed
    root = c.extract({"pve_lxc_confs": rec("host", "pve_lxc_confs", error="needs root (not root and no --sudo)")}, "host")
    assert c.judge_device_cgroup(root, None).severity.value == "unknown"
    # corpus config with allow-all and uvm 511 on a host whose uvm is 510: passes through 'a' (info) but the major is stale
    corpus = "".join(f"/etc/pve/lxc/116.conf:{ln}\n" for ln in
                     (FIX / "pve-lxc-conf" / "116-xtts-unprivileged-nvidia-plus-allow-all-unconfined.conf.txt").read_text().splitlines())
    h = load("host", {"pve_lxc_confs": corpus})
    assert c.judge_device_cgroup(h, None).severity.value == "info"
    m = c.judge_device_major_match(h, None)
    assert m.severity.value == "warning" and "c 511:*" in m.observed


def test_device_major_match_container_node_stale():
    ls = (BEFORE / "container" / "dev_nvidia.out").read_text().replace("510,   0", "508,   0")
    f = c.judge_device_major_match(HOST, load("container", {"dev_nvidia": ls}))
    assert f.severity.value == "critical" and "container /dev/nvidia-uvm is 508:0" in f.observed and "major is 510" in f.observed
    assert c.judge_device_major_match(HOST, CTR).severity.value == "ok"
    assert c.judge_device_major_match(load("host", {"proc_devices": None}), CTR).severity.value == "unknown"


def test_device_major_match_unknown_when_a_side_is_unread():
    no_nodes = c.judge_device_major_match(HOST, load("container", {"dev_nvidia": None}))
    assert no_nodes.severity.value == "unknown" and "container device nodes" in no_nodes.observed
    failed = CTR.model_copy(update={"nodes": None, "problems": {"dev_nvidia": "exit 2: ls: cannot access"}})
    assert "exit 2" in c.judge_device_major_match(HOST, failed).observed
    no_cfg = c.judge_device_major_match(load("host", {"pve_lxc_confs": None}), CTR)
    assert no_cfg.severity.value == "unknown" and "host container configs" in no_cfg.observed
    # a positive "not Proxmox" reading still lets the check pass on the container's nodes alone
    not_pve = HOST.model_copy(update={"configs": {}, "is_pve": False})
    assert c.judge_device_major_match(not_pve, CTR).severity.value == "ok"


# ---------------------------------------------------------------- device_nodes


def test_device_nodes_agree_and_missing_uvm():
    assert c.judge_device_nodes(HOST, CTR).severity.value == "ok"
    ctr = load("container", {"dev_nvidia": without_lines("container", "dev_nvidia", "/dev/nvidia-uvm\n")})
    f = c.judge_device_nodes(HOST, ctr)
    assert f.severity.value == "critical" and "missing in container: /dev/nvidia-uvm" in f.observed
    assert "passed by CT 101" in f.observed  # names the host config side


def test_device_nodes_missing_gpu_and_tools_and_perms():
    ctr = load("container", {"dev_nvidia": without_lines("container", "dev_nvidia", "/dev/nvidia7")})
    assert "/dev/nvidia7" in c.judge_device_nodes(HOST, ctr).observed
    tools = load("container", {"dev_nvidia": without_lines("container", "dev_nvidia", "uvm-tools")})
    assert c.judge_device_nodes(HOST, tools).severity.value == "info"
    closed = (BEFORE / "container" / "dev_nvidia.out").read_text().replace("crw-rw-rw- 1 root root 510,   0", "crw-rw---- 1 nobody nogroup 510,   0")
    unpriv = load("container", {"dev_nvidia": closed, "uid_map": "         0     100000      65536\n"})
    f = c.judge_device_nodes(HOST, unpriv)
    assert f.severity.value == "warning" and "/dev/nvidia-uvm" in f.observed
    assert c.judge_device_nodes(HOST, load("container", {"dev_nvidia": None})).severity.value == "unknown"


def test_device_nodes_without_container():
    assert c.judge_device_nodes(HOST, None).observed == "not applicable: no container target"
    host = load("host", {"dev_nvidia": without_lines("host", "dev_nvidia", "/dev/nvidia-uvm\n")})
    f = c.judge_device_nodes(host, None)
    assert f.severity.value == "warning" and "CT 101: /dev/nvidia-uvm" in f.observed


# ---------------------------------------------------------------- GPUs


def test_gpu_inventory_agree_fewer_and_broken():
    assert c.judge_gpu_inventory_match(HOST, CTR).severity.value == "ok"
    four = "".join((BEFORE / "container" / "smi_gpu_ids.out").read_text().splitlines(keepends=True)[:4])
    f = c.judge_gpu_inventory_match(HOST, load("container", {"smi_gpu_ids": four}))
    assert f.severity.value == "critical" and "container sees 4 GPU(s); host has 8" in f.observed
    broken = load("container", {"smi_gpu_ids": "Failed to initialize NVML: Unknown Error\n"})
    assert c.judge_gpu_inventory_match(HOST, broken).severity.value == "critical"
    assert c.judge_gpu_inventory_match(HOST, load("container", {"smi_gpu_ids": None})).severity.value == "unknown"
    assert c.judge_gpu_inventory_match(HOST, None).observed == "not applicable: no container target"


def test_gpu_inventory_config_passes_fewer_is_intended():
    conf = without_lines("host", "pve_lxc_confs", "/dev/nvidia4 ")
    for i in (5, 6, 7):
        conf = "".join(ln for ln in conf.splitlines(keepends=True) if f"/dev/nvidia{i} " not in ln)
    four = "".join((BEFORE / "container" / "smi_gpu_ids.out").read_text().splitlines(keepends=True)[:4])
    f = c.judge_gpu_inventory_match(load("host", {"pve_lxc_confs": conf}), load("container", {"smi_gpu_ids": four}))
    assert f.severity.value == "ok" and "expected 4 passed by CT 101" in f.observed


def test_gpu_visibility():
    assert c.judge_gpu_visibility(HOST, CTR).severity.value == "ok"
    lines = (BEFORE / "container" / "smi_gpu_ids.out").read_text().splitlines()
    swapped = "\n".join([lines[4].replace("4,", "0,", 1), lines[0].replace("0,", "1,", 1)]) + "\n"
    assert c.judge_gpu_visibility(HOST, load("container", {"smi_gpu_ids": swapped})).severity.value == "info"
    alien = lines[0].replace("GPU-5e0c0a21", "GPU-deadbeef") + "\n"
    assert c.judge_gpu_visibility(HOST, load("container", {"smi_gpu_ids": alien})).severity.value == "warning"


# ---------------------------------------------------------------- shm / memlock / quota / limits


@pytest.mark.parametrize("df,severity", [
    ((FIX / "df-h-dev-shm" / "docker-default-64m-shm.txt").read_text(), "critical"),
    ("Filesystem      Size  Used Avail Use% Mounted on\ntmpfs           512M     0  512M   0% /dev/shm\n", "warning"),
    ((FIX / "df-h-dev-shm" / "oracle-rac-node-tmpfs-16g.txt").read_text(), "ok"),
    ("Filesystem      Size  Used Avail Use% Mounted on\ntmpfs           1.0G     0  1.0G   0% /dev/shm\n", "ok"),  # boundary
])
def test_shm(df, severity):
    f = c.judge_shm(HOST, load("container", {"df_shm": df}))
    assert f.severity.value == severity and "host /dev/shm 756 GiB" in f.observed


def test_shm_single_gpu_and_docker_ipc():
    one = (BEFORE / "container" / "smi_gpu_ids.out").read_text().splitlines()[0] + "\n"
    small = (FIX / "df-h-dev-shm" / "docker-default-64m-shm.txt").read_text()
    assert c.judge_shm(HOST, load("container", {"smi_gpu_ids": one, "df_shm": small})).severity.value == "info"
    assert c.judge_shm(HOST, load("container", {"df_shm": None})).severity.value == "unknown"
    assert c.judge_shm_ipc(HOST, CTR).observed.startswith("not applicable")
    same = load("container", {"virt": "docker\n", "df_shm": (BEFORE / "host" / "df_shm.out").read_text()})
    assert "IPC host" in c.judge_shm_ipc(HOST, same).title
    own = load("container", {"virt": "docker\n", "df_shm": small})
    assert c.judge_shm_ipc(HOST, own).severity.value == "info"


def test_docker_checks_unknown_when_virt_unread():
    no_virt = CTR.model_copy(update={"virt": None, "problems": {"virt": "timed out"}})
    for f in (c.judge_shm_ipc(HOST, no_virt), c.judge_docker_gpu_runtime(no_virt)):
        assert f.severity.value == "unknown" and "timed out" in f.observed, f


@pytest.mark.parametrize("ulimit,ib,severity", [
    ("soft-limits-memlock-unlimited-no-R-line.txt", False, "ok"),
    ("memlock-8192-core-unlimited.txt", False, "info"),
    ("memlock-8192-core-unlimited.txt", True, "warning"),
])
def test_memlock(ulimit, ib, severity):
    over = {"ulimit_a": (FIX / "ulimit-a" / ulimit).read_text()}
    if ib:
        over["dev_infiniband"] = "issm0\numad0\nuverbs0\n"
    assert c.judge_memlock(HOST, load("container", over)).severity.value == severity


def test_nofile_and_memlock_unknown():
    low = load("container", {"ulimit_a": (FIX / "ulimit-a" / "memlock-64-legacy-default.txt").read_text()})
    assert c.judge_nofile(low).severity.value == "info" and c.judge_nofile(CTR).severity.value == "ok"
    assert c.judge_memlock(HOST, load("container", {"ulimit_a": None})).severity.value == "unknown"


CG = "/sys/fs/cgroup/cpuset.cpus.effective:{cpus}\n/sys/fs/cgroup/cpu.max:{max}\n/sys/fs/cgroup/memory.max:max\n" \
     "/sys/fs/cgroup/cpu.stat:nr_periods {p}\n/sys/fs/cgroup/cpu.stat:nr_throttled {t}\n/sys/fs/cgroup/memory.events:oom_kill {o}\n"


@pytest.mark.parametrize("cpumax,p,t,severity", [
    ("max 100000", 0, 0, "ok"), ("800000 100000", 10000, 5000, "warning"), ("800000 100000", 10000, 10, "info"),
])
def test_cpu_quota(cpumax, p, t, severity):
    ctr = load("container", {"cgroup_limits": CG.format(cpus="0-63", max=cpumax, p=p, t=t, o=0)})
    assert c.judge_cpu_quota(HOST, ctr).severity.value == severity


def test_cpu_quota_pve_cpulimit_visible_only_in_config():
    conf = (BEFORE / "host" / "pve_lxc_confs.out").read_text() + "/etc/pve/lxc/101.conf:cpulimit: 4\n"
    f = c.judge_cpu_quota(load("host", {"pve_lxc_confs": conf}), CTR)
    assert f.severity.value == "info" and "cpulimit 4" in f.observed and "cpu.max max" in f.observed
    lim = c.judge_limits_vs_model(load("host", {"pve_lxc_confs": conf}), CTR)
    assert lim.severity.value == "warning" and "8 GPU rank(s)" in lim.observed and "cpulimit: 4" in lim.observed


def test_limits_and_memory():
    assert c.judge_limits_vs_model(HOST, CTR).severity.value == "ok"
    few = load("container", {"cgroup_limits": CG.format(cpus="0-7", max="max 100000", p=0, t=0, o=0)})
    f = c.judge_limits_vs_model(HOST, few)
    assert f.severity.value == "warning" and ">= 9 CPUs" in f.expected
    oom = load("container", {"cgroup_limits": CG.format(cpus="0-63", max="max 100000", p=0, t=0, o=3)})
    assert c.judge_memory_limit(HOST, oom).severity.value == "warning"
    assert c.judge_memory_limit(HOST, CTR).severity.value == "info"
    no_cg = load("container", {"cgroup_limits": None})
    assert c.judge_limits_vs_model(HOST, no_cg).severity.value == "unknown"
    cores = load("host", {"pve_lxc_confs": (BEFORE / "host" / "pve_lxc_confs.out").read_text() + "/etc/pve/lxc/101.conf:cores: 16\n"})
    filled = c.judge_limits_vs_model(cores, no_cg)
    assert filled.severity.value == "ok" and "PVE cores: 16" in filled.observed  # the host config fills the gap


def test_userspace_docker_privilege_detect():
    assert c.judge_userspace_driver(CTR).severity.value == "info" and "590.48.01" in c.judge_userspace_driver(CTR).title
    none = c.extract({"libcuda_files": rec("container", "libcuda_files", "", 2, "ls: cannot access ...: No such file or directory")}, "container")
    assert c.judge_userspace_driver(none).severity.value == "warning"
    assert c.judge_docker_gpu_runtime(CTR).observed.startswith("not applicable")
    dock = load("container", {"virt": "docker\n", "smi_gpu_ids": "No devices were found\n"})
    assert c.judge_docker_gpu_runtime(dock).severity.value == "critical"
    p = c.judge_privilege(HOST, CTR)
    assert "privileged" in p.observed and "0 -> 0" in p.observed
    assert "matched CT 101" in c.judge_detect(HOST, CTR).observed


def test_match_config_by_cgroup_id_and_ambiguous():
    ctr = CTR.model_copy(update={"hostname": "nomatch", "cgroup_lxc_id": "101"})
    assert c.match_config(HOST, ctr)[0].vmid == "101"
    two = (BEFORE / "host" / "pve_lxc_confs.out").read_text().replace("/etc/pve/lxc/102.conf:hostname: pihole",
                                                                       "/etc/pve/lxc/102.conf:lxc.cgroup2.devices.allow: c 195:* rwm")
    assert c.match_config(load("host", {"pve_lxc_confs": two}), CTR.model_copy(update={"hostname": "x"}))[0] is None


def test_every_rule_yields_once_without_container():
    ids = [f.id for f in c.judge({"host": HOST})]
    assert len(ids) == len(set(ids)) == 16


async def run(phase, roles=("host", "container")):
    return await run_case_study(c.PROBE, phase, roles)


@pytest.mark.parametrize("phase", ["before", "after"])
async def test_case_study(phase):
    f = await run(phase)
    assert len(f) == 16
    assert all(x.severity.value in ("ok", "info") for x in f.values()), {x.id: x.observed for x in f.values() if x.severity.value not in ("ok", "info")}
    for cid in ("container.device_cgroup", "container.device_nodes", "container.device_major_match", "container.gpu_inventory_match",
                "container.shm", "container.memlock", "container.cpu_quota"):
        assert f[cid].severity.value == "ok", cid
    h = await run(phase, ("host",))
    assert h["container.shm"].observed == "not applicable: no container target"
    assert h["container.device_cgroup"].severity.value == "ok"  # host checks still run over the GPU containers' configs


def test_gpu_less_host_makes_passthrough_checks_not_applicable():
    """A host with no NVIDIA driver (a CI box, a VM) must not read as a broken GPU passthrough."""
    from gpuaudit.probes.container import ContainerFacts, judge

    host = ContainerFacts(majors={}, all_majors=[1, 4, 5], nodes=[], gpus=None)
    ctr = ContainerFacts(virt="docker", nodes=[], gpus=None, problems={"smi_gpu_ids": "tool not installed"})
    found = {f.id: f for f in judge({"host": host, "container": ctr})}
    for slug in ("device_nodes", "docker_gpu_runtime", "device_major_match", "gpu_inventory_match"):
        f = found[f"container.{slug}"]
        assert f.severity.value == "ok" and "no NVIDIA driver loaded" in f.observed, f
    # the same container facts next to a host WITH the driver: the broken passthrough is reported
    gpu_host = host.model_copy(update={"majors": {"nvidia-frontend": 195}})
    found = {f.id: f for f in judge({"host": gpu_host, "container": ctr})}
    assert found["container.docker_gpu_runtime"].severity.value == "critical"


def test_rules_table_slugs_match_ids_and_passthrough_checks_are_not_run(monkeypatch):
    from gpuaudit.probes.container import ContainerFacts, rules

    assert [f.id for f in c.judge({"host": HOST, "container": CTR})] == [f"container.{r.slug}" for r in rules.RULES]

    def boom(host, ctr):
        raise AssertionError("a passthrough check ran on a host without the NVIDIA driver")

    monkeypatch.setattr(rules, "RULES", tuple(r._replace(run=boom) if r.passthrough else r for r in rules.RULES))
    host = ContainerFacts(majors={}, all_majors=[1, 4, 5], nodes=[])
    found = list(c.judge({"host": host, "container": ContainerFacts(virt="lxc", nodes=[])}))
    assert len(found) == 16 and sum("passthrough check not applicable" in f.title for f in found) == 7
