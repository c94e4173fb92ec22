"""Turns the container probe's command outputs into ContainerFacts (never raises on odd output)."""

from __future__ import annotations

import re

from gpuaudit.probes.container.facts import ContainerFacts, CtConfig, Gpu, Node, Rule
from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.models import CommandRecord, Role
from gpuaudit.probes.core.parsers.lxc import LxcConfig, parse_conf_dump
from gpuaudit.probes.core.parsers.nvidia_smi import detect_smi_error, parse_smi_gpu_ids
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
from gpuaudit.probes.core.spec import Outputs, partial_grep_ok, record_problem, usable_stdout

NVIDIA_MAJOR_NAMES = ("nvidia-frontend", "nvidia-uvm", "nvidia-caps", "nvidia-nvswitch", "nvidia-caps-imex-channels",
                      "nvidia-nvlink")


def _no_such_file(rec: CommandRecord | None) -> bool:
    return rec is not None and not rec.error and rec.exit_status in (1, 2) and "No such file" in rec.stderr


def _config_model(c: LxcConfig) -> CtConfig:
    return CtConfig(
        vmid=c.vmid or "?", hostname=c.hostname, unprivileged=c.unprivileged, cores=c.cores, cpulimit=c.cpulimit,
        memory_mb=c.memory_mb,
        rules=[Rule(type=r.type, major=r.major, minor=r.minor, v1=r.cgroup_v1) for r in c.allow],
        mount_sources=[m.source for m in c.mounts], optional_mounts=[m.source for m in c.mounts if m.optional],
        dev_paths=[d.path for d in c.devs], prlimit_memlock=c.prlimit_memlock)


def extract(outputs: Outputs, role: Role) -> ContainerFacts:
    problems: dict[str, str] = {}
    data: dict[str, object] = {}

    def text(cid: str) -> str | None:
        if cid == "cgroup_limits" and partial_grep_ok(outputs, cid):
            return outputs[cid].stdout  # some files absent (no cpuset controller): the rest is good
        return usable_stdout(outputs, cid, problems)

    def note(cid: str) -> None:
        """Record why a command read by hand (not through `text`) is unusable."""
        rec = outputs.get(cid)
        if rec is not None and (p := record_problem(rec)):
            problems[cid] = p

    # systemd-detect-virt exits 1 when it prints "none": an answer, not a failure.
    vrec = outputs.get("virt")
    if vrec is not None and not vrec.error and vrec.exit_status in (0, 1) and (v := parse_detect_virt(vrec.stdout)):
        data["virt"] = v
    else:
        note("virt")
    crec = outputs.get("pve_lxc_confs")
    if _no_such_file(crec):
        data.update(is_pve=False, configs={})
    elif (t := text("pve_lxc_confs")) is not None:
        data.update(is_pve=True, configs={k: _config_model(c) for k, c in parse_conf_dump(t).items()})
    if (t := text("proc_devices")) is not None:
        pd = parse_proc_devices(t)
        data["majors"] = {n: m for n in NVIDIA_MAJOR_NAMES if (m := pd.char_major(n)) is not None}
        data["all_majors"] = sorted({m for ms in pd.char.values() for m in ms})
    drec = outputs.get("dev_nvidia")
    if drec is not None and (_no_such_file(drec) or text("dev_nvidia") is not None):
        data["nodes"] = [Node(path=n.path, kind=n.kind, major=n.major, minor=n.minor, mode=n.mode)
                         for n in parse_ls_dev(drec.stdout)]
    srec = outputs.get("smi_gpu_ids")
    if srec is not None and (err := detect_smi_error(srec.stdout + "\n" + srec.stderr)) and not srec.missing_tool:
        data["smi_error"] = err
        problems["smi_gpu_ids"] = f"nvidia-smi error: {err}"
    elif (t := text("smi_gpu_ids")) is not None:
        try:
            data["gpus"] = [Gpu(index=g.index, uuid=g.uuid, bus_id=g.bus_id) for g in parse_smi_gpu_ids(t)]
        except ParseError as exc:
            problems["smi_gpu_ids"] = str(exc)
    if (t := text("df_shm")) is not None:
        rows = parse_df(t)
        if rows:
            data.update(shm_bytes=rows[0].size_bytes, shm_fs=rows[0].filesystem)
    if (t := text("uname_n")) is not None:
        words = t.strip().split()
        data["hostname"] = words[0] if words else None
    if (t := text("proc_self_cgroup")) is not None:
        cg = parse_proc_self_cgroup(t)
        data.update(cgroup_version=cg.version, cgroup_lxc_id=cg.lxc_id)
    if (t := text("uid_map")) is not None:
        uid_map = parse_uid_map(t)
        if uid_map:
            data["uid_map_unprivileged"] = not any(inside == 0 and outside == 0 for inside, outside, _ in uid_map)
    if (t := text("ulimit_a")) is not None:
        lim = parse_ulimit_a(t)
        data.update(memlock_kb=ulimit_kb(lim.get("l")), nofile=ulimit_kb(lim.get("n")))
    if (t := text("cgroup_limits")) is not None:
        cl = parse_cgroup_files(t)
        data.update(cpuset_cpus=len(cl.cpuset_cpus) if cl.cpuset_cpus is not None else None,
                    cpu_quota_us=cl.cpu_quota_us, cpu_period_us=cl.cpu_period_us, cpu_max_read=cl.cpu_max_read,
                    nr_periods=cl.cpu_stat.get("nr_periods"), nr_throttled=cl.cpu_stat.get("nr_throttled"),
                    memory_max=cl.memory_max, memory_max_read=cl.memory_max_read,
                    oom_kills=cl.memory_events.get("oom_kill"))
    if _no_such_file(outputs.get("dev_infiniband")):
        data["infiniband"] = False
    elif (t := text("dev_infiniband")) is not None:
        data["infiniband"] = bool(t.strip())
    lrec = outputs.get("libcuda_files")
    if lrec is not None and not lrec.error and not lrec.timed_out and lrec.exit_status in (0, 2):
        data["libcuda_versions"] = sorted({m.group(1) for m in re.finditer(r"libcuda\.so\.(\d+\.\d+(?:\.\d+)?)", lrec.stdout)})
    else:
        note("libcuda_files")
    return ContainerFacts(problems=problems, **data)  # type: ignore[arg-type]
