"""Container probe: host config vs container view (agreeing and disagreeing), every check row, end to end.

Findings come from the framework (`judge_checks` over the probe's rows), exactly as the runner makes them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from case_study import CASE, run_case_study
from gpuaudit.probes import container as c
from gpuaudit.probes.container.configs import match_config
from gpuaudit.probes.core.judge.checks import judge_checks
from gpuaudit.probes.core.models import CommandRecord

BEFORE = CASE / "before"
FIX = Path(__file__).parent.parent / "fixtures" / "system"
ROLES = ("host", "container")


def rec(role, cid, stdout="", exit_status=0, stderr="", error=None, timed_out=False, executed=""):
    return CommandRecord(
        target=role,
        probe_id="container",
        command_id=cid,
        command=cid,
        exit_status=exit_status,
        stdout=stdout,
        stderr=stderr,
        error=error,
        timed_out=timed_out,
        executed=executed,
    )


def outputs(role: str, overrides: dict | None = None) -> dict[str, CommandRecord]:
    """The case-study recordings of one role; an override is a text, a CommandRecord, or None (= not collected)."""
    outs = {}
    d = BEFORE / role
    for cmd in c.PROBE.commands_for(role):  # type: ignore[arg-type]
        p = d / f"{cmd.id}.out"
        if p.exists():
            code, err = d / f"{cmd.id}.exit", d / f"{cmd.id}.err"
            outs[cmd.id] = rec(
                role,
                cmd.id,
                p.read_text(),
                int(code.read_text()) if code.exists() else 0,
                err.read_text() if err.exists() else "",
            )
    for cid, v in (overrides or {}).items():
        if v is None:
            outs.pop(cid, None)
        else:
            outs[cid] = v if isinstance(v, CommandRecord) else rec(role, cid, v)
    return outs


def judge(host: dict | None = None, ctr: dict | None = None, roles=ROLES) -> dict:
    """Findings by id for the case study with overrides per role (host=..., ctr=...)."""
    outs = {"host": outputs("host", host)}
    if "container" in roles:
        outs["container"] = outputs("container", ctr)
    facts = {r: c.extract(o, r) for r, o in outs.items()}  # type: ignore[arg-type]
    return {f.id: f for f in judge_checks(c.CHECKS, facts, outs)}


def sev(found: dict, slug: str) -> str:
    return found[f"container.{slug}"].severity.value


def without_lines(role: str, cid: str, needle: str) -> str:
    return "".join(
        ln
        for ln in (BEFORE / role / f"{cid}.out").read_text().splitlines(keepends=True)
        if needle not in ln
    )


def conf_dump(name: str, vmid: str) -> str:
    """A corpus config as `grep -H . /etc/pve/lxc/*.conf` prints it."""
    return "".join(
        f"/etc/pve/lxc/{vmid}.conf:{ln}\n"
        for ln in (FIX / "pve-lxc-conf" / name).read_text().splitlines()
        if ln
    )


BASE = judge()
HOST = c.extract(outputs("host"), "host")
CTR = c.extract(outputs("container"), "container")


def test_case_study_facts():
    assert (
        HOST.is_pve and sorted(HOST.configs) == ["101", "102"] and HOST.majors["nvidia-uvm"] == 510
    )
    assert (
        CTR.kind == "lxc"
        and CTR.hostname == "sglang"
        and len(CTR.gpus) == 8
        and CTR.memlock_kb == -1
    )
    assert HOST.virt == "none"  # systemd-detect-virt exits 1 with "none": an answer
    assert match_config(HOST, CTR)[0].vmid == "101"


def test_every_row_yields_once_and_owners_are_declared():
    assert sorted(BASE) == sorted(ch.id for ch in c.CHECKS) and len(BASE) == 16
    assert {f.owner for f in BASE.values()} <= {"host", "container"}
    assert (
        BASE["container.device_cgroup"].owner == "host"
        and BASE["container.shm"].owner == "container"
    )


# ---------------------------------------------------------------- device_cgroup / device_major_match


def test_device_cgroup_agree():
    f = BASE["container.device_cgroup"]
    assert f.severity.value == "ok" and "c 510:*" in f.observed and "nvidia-uvm 510" in f.observed


def test_device_cgroup_missing_uvm_major_names_both_sides():
    f = judge(host={"pve_lxc_confs": without_lines("host", "pve_lxc_confs", "c 510:*")})[
        "container.device_cgroup"
    ]
    assert f.severity.value == "critical"
    assert "nvidia-uvm 510:0 not allowed" in f.observed and "c 195:*, c 235:*" in f.observed
    assert "host /proc/devices" in f.observed and "nvidia-uvm 510" in f.observed


def test_device_cgroup_honours_minors_real_frigate_config():
    """Real PVE config allowing only c 195:0 and c 195:1: nvidiactl (195:255) and nvidia-uvm stay blocked."""
    conf = conf_dump("2051-frigate-unprivileged-nvidia-minors-195-0-1.conf.txt", "2051")
    found = judge(host={"pve_lxc_confs": conf})
    f = found["container.device_cgroup"]
    assert f.severity.value == "critical", f.observed
    assert (
        "nvidiactl 195:255 not allowed" in f.observed
        and "nvidia-uvm 510:0 not allowed" in f.observed
    )
    assert "nvidia0 195:0" not in f.observed  # the minors it does allow are not reported


def test_device_cgroup_mount_targets_name_the_passed_gpus():
    """The frigate config mounts /lxc/102010/devices/nvidia0 at dev/nvidia0: the container path counts."""
    conf = conf_dump("2051-frigate-unprivileged-nvidia-minors-195-0-1.conf.txt", "2051")
    cfg = c.extract({"pve_lxc_confs": rec("host", "pve_lxc_confs", conf)}, "host").configs["2051"]
    assert cfg.gpu_minors == {0, 1} and "/dev/nvidia0" in cfg.nvidia_paths


def test_device_cgroup_stale_uvm_major_is_a_major_mismatch():
    conf = (BEFORE / "host" / "pve_lxc_confs.out").read_text().replace("c 510:* rwm", "c 511:* rwm")
    found = judge(host={"pve_lxc_confs": conf})
    assert sev(found, "device_cgroup") == "critical"
    m = found["container.device_major_match"]
    assert (
        m.severity.value == "critical"
        and "c 511:*" in m.observed
        and "nvidia-uvm 510" in m.observed
    )


def test_device_cgroup_caps_missing_warns_v1_only_crit_allow_all_info():
    assert (
        sev(
            judge(host={"pve_lxc_confs": without_lines("host", "pve_lxc_confs", "c 235:*")}),
            "device_cgroup",
        )
        == "warning"
    )
    v1 = (
        (BEFORE / "host" / "pve_lxc_confs.out")
        .read_text()
        .replace("lxc.cgroup2.devices.allow", "lxc.cgroup.devices.allow")
    )
    f = judge(host={"pve_lxc_confs": v1})["container.device_cgroup"]
    assert f.severity.value == "critical" and "cgroup v1" in f.observed
    allow_all = (
        without_lines("host", "pve_lxc_confs", "devices.allow")
        + "/etc/pve/lxc/101.conf:lxc.cgroup2.devices.allow: a\n"
    )
    assert sev(judge(host={"pve_lxc_confs": allow_all}), "device_cgroup") == "info"  # trap: 'a'


def test_device_cgroup_devn_entries_cover_majors():
    devn = without_lines("host", "pve_lxc_confs", "lxc.") + "".join(
        f"/etc/pve/lxc/101.conf:dev{i}: {p}\n"
        for i, p in enumerate(
            [f"/dev/nvidia{j}" for j in range(8)]
            + ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-caps/nvidia-cap1"]
        )
    )
    assert sev(judge(host={"pve_lxc_confs": devn}), "device_cgroup") in ("ok", "warning")
    assert (
        "nvidiactl" not in judge(host={"pve_lxc_confs": devn})["container.device_cgroup"].observed
    )


def test_device_cgroup_preconditions():
    not_pve = rec(
        "host", "pve_lxc_confs", "", 2, "grep: /etc/pve/lxc/*.conf: No such file or directory"
    )
    f = judge(host={"pve_lxc_confs": not_pve})["container.device_cgroup"]
    assert f.severity.value == "n/a" and "not a Proxmox host" in f.observed
    root = rec(
        "host", "pve_lxc_confs", error="needs root (not root and no --sudo)", exit_status=None
    )
    f = judge(host={"pve_lxc_confs": root})["container.device_cgroup"]
    assert (
        f.severity.value == "unknown"
        and "needs root" in f.observed
        and "pve_lxc_confs" in f.observed
    )
    assert sev(judge(host={"pve_lxc_confs": None}), "device_cgroup") == "unknown"  # not collected
    # corpus config with allow-all and uvm 511 on a host whose uvm is 510: passes through 'a' (info), the major is stale
    h = judge(
        host={
            "pve_lxc_confs": conf_dump(
                "116-xtts-unprivileged-nvidia-plus-allow-all-unconfined.conf.txt", "116"
            )
        }
    )
    assert sev(h, "device_cgroup") == "info"
    assert (
        sev(h, "device_major_match") == "warning"
        and "c 511:*" in h["container.device_major_match"].observed
    )


def test_device_major_match_container_node_stale():
    ls = (BEFORE / "container" / "dev_nvidia.out").read_text().replace("510,   0", "508,   0")
    f = judge(ctr={"dev_nvidia": ls})["container.device_major_match"]
    assert (
        f.severity.value == "critical"
        and "container /dev/nvidia-uvm is 508:0" in f.observed
        and "major is 510" in f.observed
    )
    assert sev(BASE, "device_major_match") == "ok"
    assert sev(judge(host={"proc_devices": None}), "device_major_match") == "unknown"


def test_device_major_match_unknown_when_a_side_is_unread():
    no_nodes = judge(ctr={"dev_nvidia": None})["container.device_major_match"]
    assert (
        no_nodes.severity.value == "unknown"
        and "dev_nvidia (container): not collected" in no_nodes.observed
    )
    failed = rec(
        "container", "dev_nvidia", "", 2, "ls: cannot access '/dev/nvidia*': Permission denied"
    )
    assert (
        "Permission denied"
        in judge(ctr={"dev_nvidia": failed})["container.device_major_match"].observed
    )
    no_cfg = judge(host={"pve_lxc_confs": None})["container.device_major_match"]
    assert no_cfg.severity.value == "unknown" and "host container configs" in no_cfg.observed
    not_pve = rec(
        "host", "pve_lxc_confs", "", 2, "grep: /etc/pve/lxc/*.conf: No such file or directory"
    )
    assert (
        sev(judge(host={"pve_lxc_confs": not_pve}), "device_major_match") == "ok"
    )  # container nodes alone


# ---------------------------------------------------------------- device_nodes


def test_device_nodes_agree_and_missing_uvm():
    assert sev(BASE, "device_nodes") == "ok"
    f = judge(ctr={"dev_nvidia": without_lines("container", "dev_nvidia", "/dev/nvidia-uvm\n")})[
        "container.device_nodes"
    ]
    assert f.severity.value == "critical" and "missing in container: /dev/nvidia-uvm" in f.observed
    assert "passed by CT 101" in f.observed  # names the host config side


OLLAMA = (FIX / "ls-dev-nvidia" / "ollama-17069-lxc-docker-container-h-nodes.txt").read_text()


def placeholder_at(listing: str, name: str) -> str:
    """The listing with `name` replaced by the empty regular file `create=file` leaves (real shape: tteck #3758)."""
    shape = next(
        ln
        for ln in (FIX / "ls-dev-nvidia" / "tteck-3758-pve-create-file-placeholder-dev-dri.txt")
        .read_text()
        .splitlines()
        if ln.startswith("----------")
    )
    mode_owner = shape.split("0 Aug")[0].rstrip()  # "---------- 1 root root      "
    out = []
    for ln in listing.splitlines():
        out.append(
            f"{mode_owner} 0 Jul 21 11:50 /dev/{name}" if ln.endswith(f"/dev/{name}") else ln
        )
    return "\n".join(out) + "\n"


def test_placeholder_files_are_not_device_nodes():
    """Issue 12 item 11: `----------` empty files at /dev/nvidia-uvm count as missing, not present."""
    facts = c.extract(
        {"dev_nvidia": rec("container", "dev_nvidia", placeholder_at(OLLAMA, "nvidia-uvm"))},
        "container",
    )
    assert "/dev/nvidia-uvm" in facts.placeholders() and "/dev/nvidia-uvm" not in facts.char_nodes()
    f = judge(ctr={"dev_nvidia": placeholder_at(OLLAMA, "nvidia-uvm")})["container.device_nodes"]
    assert f.severity.value == "critical", f.observed
    assert "/dev/nvidia-uvm (an empty placeholder file, not a device)" in f.observed


def test_placeholder_modeset_is_reported_not_counted():
    f = judge(ctr={"dev_nvidia": placeholder_at(OLLAMA, "nvidia-modeset")})[
        "container.device_nodes"
    ]
    assert "placeholder files (not devices): /dev/nvidia-modeset" in f.observed
    assert (
        "/dev/nvidia-modeset" not in f.observed.split(";")[0]
    )  # not listed among the container's devices


def test_device_nodes_missing_gpu_tools_and_perms():
    assert (
        "/dev/nvidia7"
        in judge(ctr={"dev_nvidia": without_lines("container", "dev_nvidia", "/dev/nvidia7")})[
            "container.device_nodes"
        ].observed
    )
    assert (
        sev(
            judge(ctr={"dev_nvidia": without_lines("container", "dev_nvidia", "uvm-tools")}),
            "device_nodes",
        )
        == "info"
    )
    closed = (
        (BEFORE / "container" / "dev_nvidia.out")
        .read_text()
        .replace("crw-rw-rw- 1 root root 510,   0", "crw-rw---- 1 nobody nogroup 510,   0")
    )
    f = judge(ctr={"dev_nvidia": closed, "uid_map": "         0     100000      65536\n"})[
        "container.device_nodes"
    ]
    assert f.severity.value == "warning" and "/dev/nvidia-uvm" in f.observed


# ---------------------------------------------------------------- issue 12 class 1: missing data is unknown, never critical/ok


@pytest.mark.parametrize(
    "failure",
    [
        rec("host", "dev_nvidia", exit_status=None, timed_out=True),
        rec(
            "host",
            "dev_nvidia",
            exit_status=None,
            error="needs root (sudo -n refused: a password is required)",
        ),
        None,  # not run
    ],
)
def test_host_sources_failed_make_device_nodes_unknown_not_critical(failure):
    """`container.device_nodes` went CRITICAL ("lacks /dev/nvidiactl") when the host's commands failed."""
    empty_ctr = rec(
        "container",
        "dev_nvidia",
        "",
        2,
        "ls: cannot access '/dev/nvidia*': No such file or directory",
    )
    found = judge(
        host={
            "dev_nvidia": failure,
            "proc_devices": failure and failure.model_copy(update={"command_id": "proc_devices"}),
        },
        ctr={"dev_nvidia": empty_ctr},
    )
    for slug in ("device_nodes", "device_major_match"):
        f = found[f"container.{slug}"]
        assert f.severity.value == "unknown" and "dev_nvidia (host)" in f.observed, (
            slug,
            f.observed,
        )


def test_docker_smi_timeout_is_not_no_gpu():
    """`docker_gpu_runtime` said "Docker container sees no GPU" from `smi_gpu_ids: timed out`."""
    found = judge(
        ctr={
            "virt": "docker\n",
            "smi_gpu_ids": rec("container", "smi_gpu_ids", exit_status=None, timed_out=True),
        }
    )
    f = found["container.docker_gpu_runtime"]
    assert f.severity.value == "unknown" and "timed out" in f.observed
    assert sev(found, "gpu_inventory_match") == "unknown"


def test_unreached_container_gives_unknown_never_ok():
    down = {
        cid: rec(
            "container",
            cid,
            exit_status=None,
            error="target failed: ssh: connect to host 127.0.0.1 port 9: refused",
        )
        for cid in outputs("container")
    }
    found = judge(ctr=down)
    for ch in c.CHECKS:
        if "container" in ch.roles:
            f = found[ch.id]
            assert f.severity.value == "unknown" and "unreachable" in f.observed, (
                ch.id,
                f.observed,
            )
    assert sev(found, "device_cgroup") == "ok"  # host-only check, host reached


@pytest.mark.parametrize("cid", ["df_shm", "ulimit_a", "libcuda_files", "uid_map"])
def test_container_source_failures_name_the_command(cid):
    found = judge(
        ctr={
            cid: rec(
                "container", cid, exit_status=None, error="needs root (not root and no --sudo)"
            )
        }
    )
    hits = [f for f in found.values() if cid in f.observed]
    assert hits and all(f.severity.value == "unknown" and "needs root" in f.observed for f in hits)


# ---------------------------------------------------------------- issue 12 class 3: container kind


def test_kind_from_target_spec_when_detect_virt_is_missing():
    """A minimal Docker image has no systemd-detect-virt: the `docker:NAME` wrapper decides the kind."""
    missing = rec(
        "container",
        "virt",
        "",
        127,
        "sh: 1: systemd-detect-virt: not found",
        executed="docker exec ctr sh -c x",
    )
    facts = c.extract({"virt": missing}, "container")
    assert facts.virt is None and facts.kind == "docker"
    found = judge(ctr={"virt": missing})
    assert sev(found, "docker_gpu_runtime") == "ok"  # judged as Docker (nodes and GPUs present)
    assert found["container.lxc_privilege"].observed == "docker container, not LXC"
    assert found["container.device_cgroup"].observed == "docker container, not LXC"


def test_kind_unknown_is_unknown_not_guessed():
    missing = rec("container", "virt", "", 127, "sh: 1: systemd-detect-virt: not found")
    found = judge(ctr={"virt": missing})
    for slug in ("docker_gpu_runtime", "shm_ipc"):
        f = found[f"container.{slug}"]
        assert (
            f.severity.value == "unknown"
            and "container kind not determined" in f.observed
            and "systemd" in f.observed
        )


def test_lxc_privilege_never_judges_docker():
    found = judge(ctr={"virt": "docker\n"})
    assert found["container.lxc_privilege"].observed.startswith("docker container")


# ---------------------------------------------------------------- issue 12 class 13: no NVIDIA GPU


def test_gpu_less_host_makes_gpu_checks_not_applicable():
    no_module = rec(
        "host",
        "proc_driver_version",
        "",
        1,
        "cat: /proc/driver/nvidia/version: No such file or directory",
    )
    no_pci = rec("host", "pci_nvidia_sysfs", "", 1)
    found = judge(host={"proc_driver_version": no_module, "pci_nvidia_sysfs": no_pci})
    for ch in c.CHECKS:
        if (
            ch.needs_gpu and "host" in ch.roles
        ):  # the host's proof; a container-only check reads the container's
            f = found[ch.id]
            assert f.severity.value == "n/a" and "no NVIDIA GPU or driver" in f.observed, (
                ch.id,
                f.observed,
            )
    assert sev(found, "shm") == "ok"  # not a GPU check: still judged


# ---------------------------------------------------------------- GPUs


def test_gpu_inventory_agree_fewer_and_broken():
    assert sev(BASE, "gpu_inventory_match") == "ok"
    four = "".join(
        (BEFORE / "container" / "smi_gpu_ids.out").read_text().splitlines(keepends=True)[:4]
    )
    f = judge(ctr={"smi_gpu_ids": four})["container.gpu_inventory_match"]
    assert f.severity.value == "critical" and "container sees 4 GPU(s); host has 8" in f.observed
    nvml = rec("container", "smi_gpu_ids", "Failed to initialize NVML: Unknown Error\n", 255)
    assert sev(judge(ctr={"smi_gpu_ids": nvml}), "gpu_inventory_match") == "critical"
    assert sev(judge(ctr={"smi_gpu_ids": None}), "gpu_inventory_match") == "unknown"


def test_gpu_inventory_config_passes_fewer_is_intended():
    conf = (BEFORE / "host" / "pve_lxc_confs.out").read_text()
    conf = "".join(
        ln
        for ln in conf.splitlines(keepends=True)
        if not any(f"/dev/nvidia{i} " in ln for i in (4, 5, 6, 7))
    )
    four = "".join(
        (BEFORE / "container" / "smi_gpu_ids.out").read_text().splitlines(keepends=True)[:4]
    )
    f = judge(host={"pve_lxc_confs": conf}, ctr={"smi_gpu_ids": four})[
        "container.gpu_inventory_match"
    ]
    assert f.severity.value == "ok" and "expected 4 passed by CT 101" in f.observed


def test_gpu_visibility():
    assert sev(BASE, "gpu_visibility") == "ok"
    lines = (BEFORE / "container" / "smi_gpu_ids.out").read_text().splitlines()
    swapped = "\n".join([lines[4].replace("4,", "0,", 1), lines[0].replace("0,", "1,", 1)]) + "\n"
    assert sev(judge(ctr={"smi_gpu_ids": swapped}), "gpu_visibility") == "info"
    alien = lines[0].replace("GPU-5e0c0a21", "GPU-deadbeef") + "\n"
    assert sev(judge(ctr={"smi_gpu_ids": alien}), "gpu_visibility") == "warning"


# ---------------------------------------------------------------- shm / memlock / quota / limits


@pytest.mark.parametrize(
    "df,severity",
    [
        ((FIX / "df-h-dev-shm" / "docker-default-64m-shm.txt").read_text(), "critical"),
        (
            "Filesystem      Size  Used Avail Use% Mounted on\ntmpfs           512M     0  512M   0% /dev/shm\n",
            "warning",
        ),
        ((FIX / "df-h-dev-shm" / "oracle-rac-node-tmpfs-16g.txt").read_text(), "ok"),
        (
            "Filesystem      Size  Used Avail Use% Mounted on\ntmpfs           1.0G     0  1.0G   0% /dev/shm\n",
            "ok",
        ),  # boundary
    ],
)
def test_shm(df, severity):
    f = judge(ctr={"df_shm": df})["container.shm"]
    assert f.severity.value == severity and "host /dev/shm 756 GiB" in f.observed


def test_shm_single_gpu_and_docker_ipc():
    one = (BEFORE / "container" / "smi_gpu_ids.out").read_text().splitlines()[0] + "\n"
    small = (FIX / "df-h-dev-shm" / "docker-default-64m-shm.txt").read_text()
    assert sev(judge(ctr={"smi_gpu_ids": one, "df_shm": small}), "shm") == "info"
    assert sev(judge(ctr={"df_shm": None}), "shm") == "unknown"
    assert BASE["container.shm_ipc"].severity.value == "n/a"
    same = judge(ctr={"virt": "docker\n", "df_shm": (BEFORE / "host" / "df_shm.out").read_text()})
    assert "IPC host" in same["container.shm_ipc"].title
    assert sev(judge(ctr={"virt": "docker\n", "df_shm": small}), "shm_ipc") == "info"


@pytest.mark.parametrize(
    "ulimit,ib,severity",
    [
        ("soft-limits-memlock-unlimited-no-R-line.txt", False, "ok"),
        ("memlock-8192-core-unlimited.txt", False, "info"),
        ("memlock-8192-core-unlimited.txt", True, "warning"),
    ],
)
def test_memlock(ulimit, ib, severity):
    over = {"ulimit_a": (FIX / "ulimit-a" / ulimit).read_text()}
    if ib:
        over["dev_infiniband"] = "issm0\numad0\nuverbs0\n"
    assert sev(judge(ctr=over), "memlock") == severity


def test_nofile_and_memlock_unknown():
    low = judge(ctr={"ulimit_a": (FIX / "ulimit-a" / "memlock-64-legacy-default.txt").read_text()})
    assert sev(low, "nofile") == "info" and sev(BASE, "nofile") == "ok"
    assert sev(judge(ctr={"ulimit_a": None}), "memlock") == "unknown"


CG = (
    "/sys/fs/cgroup/cpuset.cpus.effective:{cpus}\n/sys/fs/cgroup/cpu.max:{max}\n/sys/fs/cgroup/memory.max:max\n"
    "/sys/fs/cgroup/cpu.stat:nr_periods {p}\n/sys/fs/cgroup/cpu.stat:nr_throttled {t}\n/sys/fs/cgroup/memory.events:oom_kill {o}\n"
)


@pytest.mark.parametrize(
    "cpumax,p,t,severity",
    [
        ("max 100000", 0, 0, "ok"),
        ("800000 100000", 10000, 5000, "warning"),
        ("800000 100000", 10000, 10, "info"),
    ],
)
def test_cpu_quota(cpumax, p, t, severity):
    assert (
        sev(
            judge(ctr={"cgroup_limits": CG.format(cpus="0-63", max=cpumax, p=p, t=t, o=0)}),
            "cpu_quota",
        )
        == severity
    )


def test_cpu_quota_pve_cpulimit_visible_only_in_config():
    conf = (
        BEFORE / "host" / "pve_lxc_confs.out"
    ).read_text() + "/etc/pve/lxc/101.conf:cpulimit: 4\n"
    found = judge(host={"pve_lxc_confs": conf})
    f = found["container.cpu_quota"]
    assert f.severity.value == "info" and "cpulimit 4" in f.observed and "cpu.max max" in f.observed
    lim = found["container.limits_vs_model"]
    assert (
        lim.severity.value == "warning"
        and "8 GPU rank(s)" in lim.observed
        and "cpulimit: 4" in lim.observed
    )


def test_limits_and_memory():
    assert sev(BASE, "limits_vs_model") == "ok"
    f = judge(ctr={"cgroup_limits": CG.format(cpus="0-7", max="max 100000", p=0, t=0, o=0)})[
        "container.limits_vs_model"
    ]
    assert f.severity.value == "warning" and ">= 9 CPUs" in f.expected
    assert (
        sev(
            judge(ctr={"cgroup_limits": CG.format(cpus="0-63", max="max 100000", p=0, t=0, o=3)}),
            "memory_limit",
        )
        == "warning"
    )
    assert sev(BASE, "memory_limit") == "info"
    assert sev(judge(ctr={"cgroup_limits": None}), "limits_vs_model") == "unknown"
    cores = (
        BEFORE / "host" / "pve_lxc_confs.out"
    ).read_text() + "/etc/pve/lxc/101.conf:cores: 16\n"
    filled = judge(host={"pve_lxc_confs": cores}, ctr={"cgroup_limits": None})[
        "container.limits_vs_model"
    ]
    assert (
        filled.severity.value == "ok" and "PVE cores: 16" in filled.observed
    )  # the host config fills the gap


def test_userspace_docker_privilege_detect():
    u = BASE["container.userspace_driver"]
    assert u.severity.value == "info" and "590.48.01" in u.title
    none = rec(
        "container",
        "libcuda_files",
        "",
        2,
        "ls: cannot access '/usr/lib64/libcuda.so.*': No such file or directory",
    )
    assert sev(judge(ctr={"libcuda_files": none}), "userspace_driver") == "warning"
    assert BASE["container.docker_gpu_runtime"].severity.value == "n/a"
    nodev = rec(
        "container",
        "dev_nvidia",
        "",
        2,
        "ls: cannot access '/dev/nvidia*': No such file or directory",
    )
    dock = judge(
        ctr={
            "virt": "docker\n",
            "dev_nvidia": nodev,
            "smi_gpu_ids": rec("container", "smi_gpu_ids", "", 127, "sh: 1: nvidia-smi: not found"),
        }
    )
    assert sev(dock, "docker_gpu_runtime") == "critical"
    p = BASE["container.lxc_privilege"]
    assert "privileged" in p.observed and "0 -> 0" in p.observed
    assert "matched CT 101" in BASE["container.detect"].observed


def test_match_config_by_cgroup_id_and_ambiguous():
    ctr = CTR.model_copy(update={"hostname": "nomatch", "cgroup_lxc_id": "101"})
    assert match_config(HOST, ctr)[0].vmid == "101"
    two = (
        (BEFORE / "host" / "pve_lxc_confs.out")
        .read_text()
        .replace(
            "/etc/pve/lxc/102.conf:hostname: pihole",
            "/etc/pve/lxc/102.conf:lxc.cgroup2.devices.allow: c 195:* rwm",
        )
    )
    host2 = c.extract(outputs("host", {"pve_lxc_confs": two}), "host")
    assert match_config(host2, CTR.model_copy(update={"hostname": "x"}))[0] is None


@pytest.mark.parametrize("phase", ["before", "after"])
async def test_case_study(phase):
    f = await run_case_study(c.PROBE, phase, ROLES)
    assert len(f) == 16
    assert all(x.severity.value in ("ok", "info", "n/a") for x in f.values()), {
        x.id: x.observed for x in f.values() if x.severity.value not in ("ok", "info", "n/a")
    }
    for cid in (
        "container.device_cgroup",
        "container.device_nodes",
        "container.device_major_match",
        "container.gpu_inventory_match",
        "container.shm",
        "container.memlock",
        "container.cpu_quota",
    ):
        assert f[cid].severity.value == "ok", cid
    h = await run_case_study(c.PROBE, phase, ("host",))
    assert sorted(h) == ["container.device_cgroup"]  # every other check needs the container
    assert (
        h["container.device_cgroup"].severity.value == "ok"
    )  # host checks still run over the GPU containers' configs


def test_device_nodes_names_the_host_side_cause():
    """The config passes /dev/nvidia-uvm but the host has no such node yet: the finding says so."""
    host_ls = without_lines("host", "dev_nvidia", "/dev/nvidia-uvm\n")
    ctr_ls = without_lines("container", "dev_nvidia", "/dev/nvidia-uvm\n")
    f = judge(host={"dev_nvidia": host_ls}, ctr={"dev_nvidia": ctr_ls})["container.device_nodes"]
    assert f.severity.value == "critical" and "the host itself lacks /dev/nvidia-uvm" in f.observed


def test_detect_is_a_cross_target_row():
    down = {
        cid: rec(
            "container",
            cid,
            exit_status=None,
            error="target failed: ssh: connect to host 127.0.0.1 port 9: refused",
        )
        for cid in outputs("container")
    }
    f = judge(ctr=down)["container.detect"]
    assert f.severity.value == "unknown" and f.observed.startswith("container unreachable")
    assert BASE["container.detect"].targets == ["host", "container"]


def test_partial_listing_with_permission_denied_is_not_an_answer():
    """grep -H over the configs: one file unreadable -> the list is incomplete, the check is unknown (not judged)."""
    conf = (BEFORE / "host" / "pve_lxc_confs.out").read_text()
    partial = rec(
        "host", "pve_lxc_confs", conf, 2, "grep: /etc/pve/lxc/103.conf: Permission denied"
    )
    f = judge(host={"pve_lxc_confs": partial})["container.device_cgroup"]
    assert f.severity.value == "unknown" and "Permission denied" in f.observed


def test_busybox_ls_no_such_file_exit_1_is_an_answer():
    """busybox ls exits 1 (GNU ls 2) for a missing path: "no RDMA devices" / "no nodes", not unknown."""
    ib = rec("container", "dev_infiniband", "", 1, "ls: /dev/infiniband: No such file or directory")
    assert c.extract({"dev_infiniband": ib}, "container").infiniband is False
    nodes = rec("container", "dev_nvidia", "", 1, "ls: /dev/nvidia*: No such file or directory")
    assert c.extract({"dev_nvidia": nodes}, "container").nodes == []
    other = rec("container", "dev_nvidia", "", 1, "ls: /dev/nvidia-caps: Permission denied")
    assert (
        "Permission denied" in c.extract({"dev_nvidia": other}, "container").problems["dev_nvidia"]
    )


def test_docker_target_is_not_judged_against_the_hosts_lxc_configs():
    stale = (
        (BEFORE / "host" / "pve_lxc_confs.out").read_text().replace("c 510:* rwm", "c 511:* rwm")
    )
    lxc = judge(host={"pve_lxc_confs": stale})["container.device_major_match"]
    docker = judge(host={"pve_lxc_confs": stale}, ctr={"virt": "docker\n"})[
        "container.device_major_match"
    ]
    assert lxc.severity.value == "critical" and docker.severity.value == "ok", docker.observed
