"""The container probe's outputs -> ContainerFacts: a table of source -> reader (never raises on odd output).

Each reader gets a usable stdout (the framework has already judged exit codes, timeouts and refusals) and
returns the fields it fills; a reader that finds the output unusable raises ValueError, which becomes
`problems[command_id]` (and so an `unknown` for every check that needs the source).
"""

from __future__ import annotations

import re
from typing import Any

from gpuaudit.probes.container.facts import ContainerFacts, CtConfig, Gpu, Node, Rule
from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.judge.combiners import gpu_entries
from gpuaudit.probes.core.judge.probe import Reads, read_table
from gpuaudit.probes.core.models import CommandRecord, Role
from gpuaudit.probes.core.parsers.lxc import LxcConfig, parse_conf_dump
from gpuaudit.probes.core.parsers.nvidia_smi import detect_smi_error
from gpuaudit.probes.core.parsers.system import (
    parse_cgroup_files,
    parse_detect_virt,
    parse_df,
    parse_ls_dev,
    parse_proc_devices,
    parse_proc_self_cgroup,
    parse_uid_map,
    parse_ulimit_a,
    ulimit_kb,
)
from gpuaudit.probes.core.spec import Outputs

NVIDIA_MAJOR_NAMES = (
    "nvidia-frontend",
    "nvidia-uvm",
    "nvidia-caps",
    "nvidia-nvswitch",
    "nvidia-caps-imex-channels",
    "nvidia-nvlink",
)
Fields = dict[str, Any]


def _no_such_file(rec: CommandRecord) -> bool:
    return rec.exit_status in (1, 2) and "No such file" in rec.stderr


def _exit_means_none(rec: CommandRecord) -> None:
    """ls/grep exit 1/2: "No such file" is an answer (nothing there); any other exit-2 cause (a permission denied
    beside files that were read, say) makes the listing incomplete, so not an answer."""
    if rec.exit_status not in (
        1,
        2,
    ):  # GNU ls says "No such file" with exit 2, busybox ls with exit 1
        return
    other = [
        ln.strip() for ln in rec.stderr.splitlines() if ln.strip() and "No such file" not in ln
    ]
    if other or (rec.exit_status == 2 and not (rec.stderr.strip() or rec.stdout.strip())):
        raise ValueError(f"exit {rec.exit_status}: {(other or ['no output'])[0][:160]}")


def read_virt(rec: CommandRecord) -> Fields:
    v = parse_detect_virt(rec.stdout)
    if v is None:
        raise ValueError("systemd-detect-virt printed no kind")
    return {"virt": v}


def _config_model(c: LxcConfig) -> CtConfig:
    return CtConfig(
        vmid=c.vmid or "?",
        hostname=c.hostname,
        unprivileged=c.unprivileged,
        cores=c.cores,
        cpulimit=c.cpulimit,
        memory_mb=c.memory_mb,
        rules=[Rule(type=r.type, major=r.major, minor=r.minor, v1=r.cgroup_v1) for r in c.allow],
        mount_sources=[m.source for m in c.mounts],
        mount_targets=["/" + m.target.lstrip("/") for m in c.mounts],
        optional_mounts=[m.source for m in c.mounts if m.optional],
        dev_paths=[d.path for d in c.devs],
        prlimit_memlock=c.prlimit_memlock,
    )


def read_pve_confs(rec: CommandRecord) -> Fields:
    if _no_such_file(rec) and not rec.stdout.strip():
        return {"is_pve": False, "configs": {}}
    _exit_means_none(rec)
    return {
        "is_pve": True,
        "configs": {k: _config_model(c) for k, c in parse_conf_dump(rec.stdout).items()},
    }


def read_proc_devices(rec: CommandRecord) -> Fields:
    pd = parse_proc_devices(rec.stdout)
    if not pd.char:
        raise ValueError("no 'Character devices:' section")
    return {
        "majors": {n: m for n in NVIDIA_MAJOR_NAMES if (m := pd.char_major(n)) is not None},
        "all_majors": sorted({m for ms in pd.char.values() for m in ms}),
    }


def read_dev_nvidia(rec: CommandRecord) -> Fields:
    _exit_means_none(rec)
    return {
        "nodes": [
            Node(path=n.path, kind=n.kind, major=n.major, minor=n.minor, mode=n.mode)
            for n in parse_ls_dev(rec.stdout)
        ]
    }


def read_smi_gpu_ids(rec: CommandRecord) -> Fields:
    try:
        return {
            "gpus": [  # the shared GPU list (combiners)
                Gpu(index=g.index, uuid=g.uuid, bus_id=g.bus_id)
                for g in gpu_entries("smi_gpu_ids", rec.stdout)
            ]
        }
    except ParseError as exc:
        raise ValueError(str(exc)) from exc


def read_df_shm(rec: CommandRecord) -> Fields:
    rows = parse_df(rec.stdout)
    if not rows:
        raise ValueError("no df row for /dev/shm")
    return {"shm_bytes": rows[0].size_bytes, "shm_fs": rows[0].filesystem}


def read_uname_n(rec: CommandRecord) -> Fields:
    words = rec.stdout.strip().split()
    return {"hostname": words[0] if words else None}


def read_proc_self_cgroup(rec: CommandRecord) -> Fields:
    cg = parse_proc_self_cgroup(rec.stdout)
    return {"cgroup_version": cg.version, "cgroup_lxc_id": cg.lxc_id}


def read_uid_map(rec: CommandRecord) -> Fields:
    uid_map = parse_uid_map(rec.stdout)
    if not uid_map:
        raise ValueError("empty uid_map")
    return {
        "uid_map_unprivileged": not any(
            inside == 0 and outside == 0 for inside, outside, _ in uid_map
        )
    }


def read_ulimit_a(rec: CommandRecord) -> Fields:
    lim = parse_ulimit_a(rec.stdout)
    if "l" not in lim and "n" not in lim:
        raise ValueError("no locked-memory or open-files line")
    return {"memlock_kb": ulimit_kb(lim.get("l")), "nofile": ulimit_kb(lim.get("n"))}


def read_cgroup_limits(rec: CommandRecord) -> Fields:
    cl = parse_cgroup_files(rec.stdout)
    return {
        "cpuset_cpus": len(cl.cpuset_cpus) if cl.cpuset_cpus is not None else None,
        "cpu_quota_us": cl.cpu_quota_us,
        "cpu_period_us": cl.cpu_period_us,
        "cpu_max_read": cl.cpu_max_read,
        "nr_periods": cl.cpu_stat.get("nr_periods"),
        "nr_throttled": cl.cpu_stat.get("nr_throttled"),
        "memory_max": cl.memory_max,
        "memory_max_read": cl.memory_max_read,
        "oom_kills": cl.memory_events.get("oom_kill"),
    }


def read_dev_infiniband(rec: CommandRecord) -> Fields:
    _exit_means_none(rec)
    return {"infiniband": bool(rec.stdout.strip())}


def read_libcuda(rec: CommandRecord) -> Fields:
    _exit_means_none(rec)
    return {
        "libcuda_versions": sorted(
            {m.group(1) for m in re.finditer(r"libcuda\.so\.(\d+\.\d+(?:\.\d+)?)", rec.stdout)}
        )
    }


TABLE: tuple[Reads, ...] = (
    Reads("virt", record=read_virt),
    Reads("pve_lxc_confs", record=read_pve_confs),
    Reads("proc_devices", record=read_proc_devices),
    Reads("dev_nvidia", record=read_dev_nvidia),
    Reads("smi_gpu_ids", record=read_smi_gpu_ids),
    Reads("df_shm", record=read_df_shm),
    Reads("uname_n", record=read_uname_n),
    Reads("proc_self_cgroup", record=read_proc_self_cgroup),
    Reads("uid_map", record=read_uid_map),
    Reads("ulimit_a", record=read_ulimit_a),
    # a partial `grep -H` over cgroup files (no cpuset controller) still carries good lines
    Reads("cgroup_limits", record=read_cgroup_limits, partial_ok=True),
    Reads("dev_infiniband", record=read_dev_infiniband),
    Reads("libcuda_files", record=read_libcuda),
)
"""Source -> the reader of its usable record, run by the framework (`read_table`; ValueError = unusable, noted in
problems; an unusable record is the framework's gate's to report)."""

_WRAPPERS = (("pct exec ", "lxc"), ("lxc-attach ", "lxc"), ("docker exec ", "docker"))


def wrapper_kind(outputs: Outputs) -> str | None:
    """The container kind the target spec implies, from the wrapper the runner put around the commands."""
    for rec in outputs.values():
        for prefix, kind in _WRAPPERS:
            if prefix in rec.executed:
                return kind
    return None


def smi_banner(rec: CommandRecord | None) -> str | None:
    """nvidia-smi's error banner when it answered with one (not on a timeout, refusal or missing tool)."""
    if rec is None or rec.error or rec.timed_out or rec.missing_tool:
        return None
    return detect_smi_error(rec.stdout + "\n" + rec.stderr)


def extract(outputs: Outputs, role: Role) -> ContainerFacts:
    read = read_table(outputs, TABLE, note_unusable=False, why=str)
    data: Fields = {"wrapper_kind": wrapper_kind(outputs) if role == "container" else None}
    data.update(read.fields)
    problems = read.problems
    if banner := smi_banner(outputs.get("smi_gpu_ids")):
        data["smi_error"] = banner
        problems.setdefault("smi_gpu_ids", f"nvidia-smi error: {banner}")
    return ContainerFacts.of(data, problems=problems)


FIELD_SOURCES: dict[str, tuple[str, ...]] = {
    "virt": ("virt",),
    "wrapper_kind": (),
    "is_pve": ("pve_lxc_confs",),
    "configs": ("pve_lxc_confs",),
    "majors": ("proc_devices",),
    "all_majors": ("proc_devices",),
    "nodes": ("dev_nvidia",),
    "gpus": ("smi_gpu_ids",),
    "smi_error": ("smi_gpu_ids",),
    "shm_bytes": ("df_shm",),
    "shm_fs": ("df_shm",),
    "hostname": ("uname_n",),
    "cgroup_version": ("proc_self_cgroup",),
    "cgroup_lxc_id": ("proc_self_cgroup",),
    "uid_map_unprivileged": ("uid_map",),
    "memlock_kb": ("ulimit_a",),
    "nofile": ("ulimit_a",),
    "cpuset_cpus": ("cgroup_limits",),
    "cpu_quota_us": ("cgroup_limits",),
    "cpu_period_us": ("cgroup_limits",),
    "cpu_max_read": ("cgroup_limits",),
    "nr_periods": ("cgroup_limits",),
    "nr_throttled": ("cgroup_limits",),
    "memory_max": ("cgroup_limits",),
    "memory_max_read": ("cgroup_limits",),
    "oom_kills": ("cgroup_limits",),
    "infiniband": ("dev_infiniband",),
    "libcuda_versions": ("libcuda_files",),
}
"""Each fact field -> the sources it is read from (provenance; the read-tracking test holds verdicts to
their checks' declarations through it). () = from the records' wrapping, not a source's output."""
