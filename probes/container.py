"""Container probe: LXC/Docker GPU passthrough (cgroup allow-list, device nodes, majors), GPU visibility,
/dev/shm, memlock, CPU quota and memory limits — host config and container view compared."""

from __future__ import annotations

import re
from collections.abc import Iterator

from pydantic import BaseModel

from probes.core.errors import ParseError
from probes.core.models import CommandRecord, Finding, Role
from probes.core.parsers.lxc import LxcConfig, parse_conf_dump
from probes.core.parsers.nvidia_smi import detect_smi_error, parse_query_gpu_csv
from probes.core.parsers.system import (
    normalize_bdf,
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
from probes.core.spec import Command, FactsByTarget, Outputs, Probe, finding, record_problem

PROBE_ID = "container"
GIB = 1024**3
NVIDIA_MAJOR_NAMES = ("nvidia-frontend", "nvidia-uvm", "nvidia-caps", "nvidia-nvswitch", "nvidia-caps-imex-channels",
                      "nvidia-nvlink")


class Rule(BaseModel, frozen=True):
    type: str
    major: int | None = None
    minor: int | None = None
    v1: bool = False

    def covers(self, major: int) -> bool:
        return self.type == "a" or (self.type == "c" and (self.major is None or self.major == major))

    def label(self) -> str:
        if self.type == "a":
            return "a"
        return f"{self.type} {'*' if self.major is None else self.major}:{'*' if self.minor is None else self.minor}"


class CtConfig(BaseModel, frozen=True):
    vmid: str
    hostname: str | None = None
    unprivileged: bool = False
    cores: int | None = None
    cpulimit: float | None = None
    memory_mb: int | None = None
    rules: list[Rule] = []
    mount_sources: list[str] = []
    optional_mounts: list[str] = []
    dev_paths: list[str] = []
    prlimit_memlock: str | None = None

    @property
    def nvidia_paths(self) -> list[str]:
        return [p for p in self.mount_sources + self.dev_paths if p.startswith("/dev/nvidia")]

    @property
    def has_nvidia(self) -> bool:
        return bool(self.nvidia_paths) or any(r.major == 195 for r in self.rules)


class Node(BaseModel, frozen=True):
    path: str
    kind: str
    major: int | None = None
    minor: int | None = None
    mode: str = ""


class Gpu(BaseModel, frozen=True):
    index: int | None = None
    uuid: str | None = None
    bus_id: str = ""


class ContainerFacts(BaseModel, frozen=True):
    virt: str | None = None
    # host side
    is_pve: bool | None = None
    configs: dict[str, CtConfig] | None = None
    majors: dict[str, int] | None = None
    """NVIDIA char majors from /proc/devices: name -> major."""
    all_majors: list[int] | None = None
    # both
    nodes: list[Node] | None = None
    gpus: list[Gpu] | None = None
    smi_error: str | None = None
    shm_bytes: int | None = None
    shm_fs: str | None = None
    # container side
    hostname: str | None = None
    cgroup_version: str | None = None
    cgroup_lxc_id: str | None = None
    uid_map_unprivileged: bool | None = None
    memlock_kb: int | None = None
    """-1 = unlimited."""
    nofile: int | None = None
    cpuset_cpus: int | None = None
    cpu_quota_us: int | None = None
    cpu_period_us: int | None = None
    cpu_max_read: bool = False
    nr_periods: int | None = None
    nr_throttled: int | None = None
    memory_max: int | None = None
    memory_max_read: bool = False
    oom_kills: int | None = None
    infiniband: bool | None = None
    libcuda_versions: list[str] | None = None
    problems: dict[str, str] = {}


ON_BOTH = frozenset({"host", "container"})
ON_CTR = frozenset({"container"})
SMI_GPU_IDS = "nvidia-smi --query-gpu=index,uuid,pci.bus_id,name --format=csv,noheader"
CGROUP_FILES = ("grep -H . /sys/fs/cgroup/cpuset.cpus.effective /sys/fs/cgroup/cpuset.mems.effective "
                "/sys/fs/cgroup/cpu.max /sys/fs/cgroup/memory.max /sys/fs/cgroup/cpu.stat /sys/fs/cgroup/memory.events")
COMMANDS = (
    Command("virt", "systemd-detect-virt -c", on=ON_BOTH),
    Command("pve_lxc_confs", "grep -H . /etc/pve/lxc/*.conf", needs_root=True,
            description="every container config on a Proxmox host (the container's own id is matched in judge)"),
    Command("proc_devices", "cat /proc/devices"),
    Command("dev_nvidia", "ls -l /dev/nvidia*", on=ON_BOTH),
    Command("smi_gpu_ids", SMI_GPU_IDS, on=ON_BOTH),
    Command("df_shm", "df -h /dev/shm", on=ON_BOTH),
    Command("uname_n", "uname -n", on=ON_CTR),
    Command("proc_self_cgroup", "cat /proc/self/cgroup", on=ON_CTR),
    Command("uid_map", "cat /proc/self/uid_map", on=ON_CTR),
    Command("ulimit_a", "ulimit -a", on=ON_CTR),
    Command("cgroup_limits", CGROUP_FILES, on=ON_CTR),
    Command("dev_infiniband", "ls /dev/infiniband", on=ON_CTR),
    Command("libcuda_files", "ls /usr/lib/x86_64-linux-gnu/libcuda.so.* /usr/lib64/libcuda.so.* /usr/lib/aarch64-linux-gnu/libcuda.so.*",
            on=ON_CTR),
)

# --------------------------------------------------------------------------- extract


def _no_such_file(rec: CommandRecord | None) -> bool:
    return rec is not None and not rec.error and rec.exit_status in (1, 2) and "No such file" in rec.stderr


def _config_model(c: LxcConfig) -> CtConfig:
    return CtConfig(
        vmid=c.vmid or "?", hostname=c.hostname, unprivileged=c.unprivileged, cores=c.cores, cpulimit=c.cpulimit,
        memory_mb=c.memory_mb,
        rules=[Rule(type=r.type, major=r.major, minor=r.minor, v1=r.cgroup_v1) for r in c.allow],
        mount_sources=[m.source for m in c.mounts], optional_mounts=[m.source for m in c.mounts if m.optional],
        dev_paths=[d.path for d in c.devs], prlimit_memlock=c.prlimit_memlock)


def parse_gpus(text: str) -> list[Gpu]:
    """`nvidia-smi --query-gpu=index,uuid,pci.bus_id,name --format=csv,noheader` -> Gpu list (ParseError on a banner)."""
    rows = parse_query_gpu_csv(text, ["index", "uuid", "pci.bus_id", "name"])
    return [Gpu(index=int(r["index"]) if (r.get("index") or "").isdigit() else None, uuid=r.get("uuid"),
                bus_id=normalize_bdf(r.get("pci.bus_id") or "")) for r in rows]


def extract(outputs: Outputs, role: Role) -> ContainerFacts:
    problems = {cid: p for cid, rec in outputs.items() if (p := record_problem(rec))}
    data: dict[str, object] = {}

    def text(cid: str) -> str | None:
        rec = outputs.get(cid)
        return rec.stdout if rec is not None and cid not in problems else None

    # systemd-detect-virt exits 1 when it prints "none": an answer, not a failure.
    vrec = outputs.get("virt")
    if vrec is not None and not vrec.error and vrec.exit_status in (0, 1) and (v := parse_detect_virt(vrec.stdout)):
        problems.pop("virt", None)
        data["virt"] = v
    crec = outputs.get("pve_lxc_confs")
    if _no_such_file(crec):
        problems.pop("pve_lxc_confs", None)
        data.update(is_pve=False, configs={})
    elif (t := text("pve_lxc_confs")) is not None:
        data.update(is_pve=True, configs={k: _config_model(c) for k, c in parse_conf_dump(t).items()})
    if (t := text("proc_devices")) is not None:
        pd = parse_proc_devices(t)
        data["majors"] = {n: m for n in NVIDIA_MAJOR_NAMES if (m := pd.char_major(n)) is not None}
        data["all_majors"] = sorted({m for ms in pd.char.values() for m in ms})
    drec = outputs.get("dev_nvidia")
    if drec is not None and (not problems.get("dev_nvidia") or _no_such_file(drec)):
        problems.pop("dev_nvidia", None)
        data["nodes"] = [Node(path=n.path, kind=n.kind, major=n.major, minor=n.minor, mode=n.mode)
                         for n in parse_ls_dev(drec.stdout)]
    srec = outputs.get("smi_gpu_ids")
    if srec is not None and (err := detect_smi_error(srec.stdout + "\n" + srec.stderr)) and not srec.missing_tool:
        data["smi_error"] = err
        problems["smi_gpu_ids"] = f"nvidia-smi error: {err}"
    elif (t := text("smi_gpu_ids")) is not None:
        try:
            data["gpus"] = parse_gpus(t)
        except ParseError as exc:
            problems["smi_gpu_ids"] = str(exc)
    if (t := text("df_shm")) is not None:
        rows = parse_df(t)
        if rows:
            data.update(shm_bytes=rows[0].size_bytes, shm_fs=rows[0].filesystem)
    if (t := text("uname_n")) is not None:
        data["hostname"] = (t.strip().split() or [None])[0]
    if (t := text("proc_self_cgroup")) is not None:
        cg = parse_proc_self_cgroup(t)
        data.update(cgroup_version=cg.version, cgroup_lxc_id=cg.lxc_id)
    if (t := text("uid_map")) is not None:
        m = parse_uid_map(t)
        if m:
            data["uid_map_unprivileged"] = not any(inside == 0 and outside == 0 for inside, outside, _ in m)
    if (t := text("ulimit_a")) is not None:
        lim = parse_ulimit_a(t)
        data.update(memlock_kb=ulimit_kb(lim.get("l")), nofile=ulimit_kb(lim.get("n")))
    grec = outputs.get("cgroup_limits")
    if grec is not None and not grec.error and grec.exit_status == 2 and grec.stdout.strip():
        problems.pop("cgroup_limits", None)  # some files absent (no cpuset controller): the rest is good
    if (t := text("cgroup_limits")) is not None:
        cl = parse_cgroup_files(t)
        data.update(cpuset_cpus=len(cl.cpuset_cpus) if cl.cpuset_cpus is not None else None,
                    cpu_quota_us=cl.cpu_quota_us, cpu_period_us=cl.cpu_period_us, cpu_max_read=cl.cpu_max_read,
                    nr_periods=cl.cpu_stat.get("nr_periods"), nr_throttled=cl.cpu_stat.get("nr_throttled"),
                    memory_max=cl.memory_max, memory_max_read=cl.memory_max_read,
                    oom_kills=cl.memory_events.get("oom_kill"))
    irec = outputs.get("dev_infiniband")
    if irec is not None and not irec.error:
        if _no_such_file(irec):
            problems.pop("dev_infiniband", None)
            data["infiniband"] = False
        elif irec.exit_status == 0:
            data["infiniband"] = bool(irec.stdout.strip())
    lrec = outputs.get("libcuda_files")
    if lrec is not None and not lrec.error and not lrec.timed_out and lrec.exit_status in (0, 2):
        problems.pop("libcuda_files", None)
        data["libcuda_versions"] = sorted({m.group(1) for m in re.finditer(r"libcuda\.so\.(\d+\.\d+(?:\.\d+)?)", lrec.stdout)})
    return ContainerFacts(problems=problems, **data)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- helpers


def _mk(slug: str, severity: str, title: str, *, targets: tuple[Role, ...] = ("host",), observed: str = "",
        expected: str = "", why: str = "", fix: str = "", evidence: list[tuple[Role, str]] | None = None) -> Finding:
    return finding(PROBE_ID, slug, severity, title, targets=targets, observed=observed, expected=expected, why=why,
                   fix=fix, evidence=evidence or [])


def _why(f: ContainerFacts, *cids: str) -> str:
    return "; ".join(f"{c}: {f.problems[c]}" for c in cids if c in f.problems) or "not collected"


def _na_no_container(slug: str, title: str, evidence: list[tuple[Role, str]] | None = None) -> Finding:
    return _mk(slug, "ok", f"{title}: not applicable", observed="not applicable: no container target", evidence=evidence)


def _gib(n: int | None) -> str:
    if n is None:
        return "unknown"
    return f"{n / GIB:.0f} GiB" if n >= GIB else f"{n / 1024**2:.0f} MiB"


def match_config(host: ContainerFacts, ctr: ContainerFacts | None) -> tuple[CtConfig | None, str]:
    """Which host config belongs to the container target: cgroup id, then hostname, then the only GPU container."""
    configs = host.configs or {}
    if ctr is not None:
        if ctr.cgroup_lxc_id and ctr.cgroup_lxc_id in configs:
            return configs[ctr.cgroup_lxc_id], f"CT {ctr.cgroup_lxc_id} (from the container's /proc/self/cgroup)"
        if ctr.hostname:
            hits = [c for c in configs.values() if (c.hostname or "").lower() == ctr.hostname.lower()]
            if len(hits) == 1:
                return hits[0], f"CT {hits[0].vmid} (hostname {ctr.hostname})"
    gpu = [c for c in configs.values() if c.has_nvidia]
    if len(gpu) == 1:
        return gpu[0], f"CT {gpu[0].vmid} (the only GPU container on the host)"
    return None, ""


def _scope(host: ContainerFacts, ctr: ContainerFacts | None) -> tuple[list[CtConfig], str]:
    """Configs the host-side checks judge: the matched one, else every GPU container on the host."""
    cfg, how = match_config(host, ctr)
    if cfg is not None:
        return [cfg], how
    gpu = [c for c in (host.configs or {}).values() if c.has_nvidia]
    return gpu, f"all {len(gpu)} GPU container config(s)" + (" (the container target could not be matched)" if ctr else "")


def _configs_unavailable(slug: str, title: str, host: ContainerFacts) -> Finding | None:
    if host.configs is None:
        return _mk(slug, "unknown", f"{title}: container configs not read", observed=_why(host, "pve_lxc_confs"),
                   evidence=[("host", "pve_lxc_confs")])
    if not host.is_pve:
        return _mk(slug, "ok", f"{title}: not applicable", observed="not applicable: not a Proxmox host (no /etc/pve/lxc)",
                   evidence=[("host", "pve_lxc_confs")])
    return None


# --------------------------------------------------------------------------- rules


def judge_detect(host: ContainerFacts, ctr: ContainerFacts | None) -> Finding:
    gpu_cts = sorted(c.vmid for c in (host.configs or {}).values() if c.has_nvidia)
    parts = []
    if host.configs is not None and host.is_pve:
        parts.append(f"host: Proxmox, {len(host.configs)} LXC config(s), GPU passthrough in {', '.join('CT ' + v for v in gpu_cts) or 'none'}")
    if ctr is not None:
        cfg, how = match_config(host, ctr)
        parts.append(f"container: {ctr.virt or 'unknown kind'}" + (f", hostname {ctr.hostname}" if ctr.hostname else "")
                     + (f", matched {how}" if cfg else ""))
    else:
        parts.append("no container target")
    return _mk("detect", "info", "Container detection", targets=("host", "container") if ctr else ("host",),
               observed="; ".join(parts), evidence=[("host", "pve_lxc_confs"), ("container", "virt"), ("container", "uname_n")])


def judge_privilege(host: ContainerFacts, ctr: ContainerFacts | None) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "pve_lxc_confs"), ("container", "uid_map")]
    cfg, how = match_config(host, ctr)
    parts = []
    if cfg is not None:
        parts.append(f"config {how}: {'unprivileged' if cfg.unprivileged else 'privileged'}")
    if ctr is not None and ctr.uid_map_unprivileged is not None:
        parts.append("container uid_map: " + ("mapped (unprivileged)" if ctr.uid_map_unprivileged else "0 -> 0 (privileged)"))
    if not parts:
        if ctr is None and (host.configs == {} or host.is_pve is False):
            return _mk("lxc_privilege", "ok", "LXC privilege: not applicable", observed="not applicable: no LXC container", evidence=ev)
        return _mk("lxc_privilege", "unknown", "LXC privilege could not be read",
                   observed=_why(host, "pve_lxc_confs") + ("; " + _why(ctr, "uid_map") if ctr else ""), evidence=ev)
    return _mk("lxc_privilege", "info", "LXC privilege", targets=("host", "container") if ctr else ("host",),
               observed="; ".join(parts),
               why="Both work; unprivileged containers see host device nodes as nobody:nogroup, so the nodes must be "
                   "world read-write (0666) on the host or gid-mapped.", evidence=ev)


def _coverage(cfg: CtConfig, host: ContainerFacts) -> tuple[list[str], list[str], list[str]]:
    """(critical, warning, info) problems of one config's device allow-list against the host majors."""
    majors = host.majors or {}
    crit: list[str] = []
    warn: list[str] = []
    info: list[str] = []
    v2 = [r for r in cfg.rules if not r.v1]
    v1 = [r for r in cfg.rules if r.v1]
    node_major = {n.path: n.major for n in host.nodes or [] if n.major is not None}
    dev_majors = {node_major[p] for p in cfg.dev_paths if p in node_major}
    if any(r.type == "a" for r in v2):
        info.append("allow-list contains 'a' (every device allowed): passes trivially, a security choice")
    if v1 and not v2:
        crit.append("only legacy lxc.cgroup.devices.allow (cgroup v1) rules, ignored on a cgroup v2 host")

    def covered(major: int) -> bool:
        return any(r.covers(major) for r in v2) or major in dev_majors or any(
            p.startswith("/dev/nvidia") and node_major.get(p) == major for p in cfg.dev_paths)

    for name, sev in (("nvidia-frontend", crit), ("nvidia-uvm", crit), ("nvidia-caps", warn)):
        major = majors.get(name, 195 if name == "nvidia-frontend" else None)
        if major is None:
            if name == "nvidia-uvm":
                warn.append("nvidia-uvm is not in the host's /proc/devices (module not loaded): its major cannot be checked")
            continue
        if not covered(major):
            sev.append(f"{name} major {major} not allowed (allow-list: {', '.join(r.label() for r in v2) or 'none'})")
    return crit, warn, info


def judge_device_cgroup(host: ContainerFacts, ctr: ContainerFacts | None) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "pve_lxc_confs"), ("host", "proc_devices"), ("host", "dev_nvidia")]
    if (na := _configs_unavailable("device_cgroup", "cgroup device allow-list", host)) is not None:
        return na
    if host.majors is None:
        return _mk("device_cgroup", "unknown", "Host device majors not read", observed=_why(host, "proc_devices"), evidence=ev)
    scope, how = _scope(host, ctr)
    if not scope:
        return _mk("device_cgroup", "ok", "cgroup device allow-list: not applicable",
                   observed="not applicable: no container config passes NVIDIA devices", evidence=ev)
    crit: list[str] = []
    warn: list[str] = []
    info: list[str] = []
    for cfg in scope:
        c, w, i = _coverage(cfg, host)
        crit += [f"CT {cfg.vmid}: {x}" for x in c]
        warn += [f"CT {cfg.vmid}: {x}" for x in w]
        info += [f"CT {cfg.vmid}: {x}" for x in i]
    host_m = ", ".join(f"{n} {m}" for n, m in sorted(host.majors.items(), key=lambda kv: kv[1]))
    why = ("CUDA needs nvidiactl/nvidiaN (major 195) and nvidia-uvm; the uvm and caps majors are assigned dynamically "
           "at module load, so an allow-list must match this host's /proc/devices.")
    fix = ("Allow every NVIDIA major from the host's /proc/devices (lxc.cgroup2.devices.allow: c <major>:* rwm), "
           "or use PVE 8.1+ devN: /dev/nvidia0 ... /dev/nvidia-uvm entries, which create the rule for you.")
    if crit:
        return _mk("device_cgroup", "critical", "Container's cgroup allow-list misses NVIDIA majors",
                   observed="; ".join(crit + warn) + f" — host /proc/devices: {host_m}", expected="every NVIDIA major allowed",
                   why=why, fix=fix, evidence=ev)
    if warn:
        return _mk("device_cgroup", "warning", "Container's cgroup allow-list is incomplete",
                   observed="; ".join(warn) + f" — host /proc/devices: {host_m}", expected="every NVIDIA major allowed",
                   why=why + " nvidia-caps is only needed for MIG/IMEX/capability-gated features.", fix=fix, evidence=ev)
    if info:
        return _mk("device_cgroup", "info", "Container allows all devices", observed="; ".join(info) + f" ({how})",
                   why="'a' lets the container open any host device, which is broader than GPU passthrough needs.",
                   fix="Replace 'a' with the NVIDIA majors (or devN entries) if isolation matters.", evidence=ev)
    return _mk("device_cgroup", "ok", "Container's cgroup allow-list covers every NVIDIA major",
               observed=f"{how}: allowed " + "; ".join(f"CT {c.vmid}: {', '.join(r.label() for r in c.rules if not r.v1) or 'devN entries'}"
                                                       for c in scope) + f" — host /proc/devices: {host_m}", evidence=ev)


def judge_device_major_match(host: ContainerFacts, ctr: ContainerFacts | None) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "proc_devices"), ("host", "pve_lxc_confs"), ("container", "dev_nvidia")]
    if host.majors is None or host.all_majors is None:
        return _mk("device_major_match", "unknown", "Host device majors not read", observed=_why(host, "proc_devices"), evidence=ev)
    majors = host.majors
    targets: tuple[Role, ...] = ("host", "container") if ctr else ("host",)
    crit: list[str] = []
    warn: list[str] = []
    # 1. container device nodes whose major is not the host's current one (stale mknod / copied nodes).
    if ctr is not None and ctr.nodes is not None:
        for n in ctr.nodes:
            if n.kind != "c" or n.major is None:
                continue
            name = n.path.rsplit("/", 1)[-1]
            want = (majors.get("nvidia-uvm") if name.startswith("nvidia-uvm") else
                    majors.get("nvidia-caps") if n.path.startswith("/dev/nvidia-caps/") else
                    majors.get("nvidia-frontend", 195) if re.fullmatch(r"nvidia(\d+|ctl|-modeset)", name) else None)
            if want is not None and n.major != want:
                crit.append(f"container {n.path} is {n.major}:{n.minor}, host {name} major is {want}")
    # 2. hard-coded allow-list majors that no longer name a device on the host.
    scope: list[CtConfig] = []
    if host.configs:
        scope, _how = _scope(host, ctr)
    for cfg in scope:
        c, _w, _i = _coverage(cfg, host)
        for r in cfg.rules:
            if r.type == "c" and r.major is not None and r.major not in host.all_majors:
                msg = (f"CT {cfg.vmid} allows c {r.major}:* but no host device has major {r.major} "
                       f"(host: nvidia-uvm {majors.get('nvidia-uvm', '?')}, nvidia-caps {majors.get('nvidia-caps', '?')})")
                (crit if any("nvidia-uvm" in x or "nvidia-frontend" in x for x in c) else warn).append(msg)
    host_m = ", ".join(f"{n} {m}" for n, m in sorted(majors.items(), key=lambda kv: kv[1]))
    why = ("nvidia-uvm and nvidia-caps majors are dynamic: a rule or node written for another boot or driver "
           "(511 vs 510, 236 vs 235) silently stops matching and CUDA then fails to initialise in the container.")
    fix = "Re-derive the majors from the host's /proc/devices (or switch to devN: entries) and restart the container."
    if crit:
        return _mk("device_major_match", "critical", "Container device majors do not match the host's", targets=targets,
                   observed="; ".join(crit + warn), expected=f"host majors: {host_m}", why=why, fix=fix, evidence=ev)
    if warn:
        return _mk("device_major_match", "warning", "Stale device major in a container allow-list", targets=targets,
                   observed="; ".join(warn), expected=f"host majors: {host_m}", why=why + " Today another rule covers it.",
                   fix=fix, evidence=ev)
    seen = ""
    if ctr is not None and ctr.nodes:
        cm = sorted({n.major for n in ctr.nodes if n.kind == "c" and n.major is not None})
        seen = f"; container nodes use majors {', '.join(map(str, cm))}"
    elif ctr is None:
        seen = "; container nodes: not applicable (no container target)"
    return _mk("device_major_match", "ok", "Container device majors match the host", targets=targets,
               observed=f"host /proc/devices: {host_m}{seen}", evidence=ev)


def _gpu_minors(nodes: list[Node] | None) -> set[int]:
    return {int(m.group(1)) for n in nodes or [] if (m := re.fullmatch(r"/dev/nvidia(\d+)", n.path))}


def judge_device_nodes(host: ContainerFacts, ctr: ContainerFacts | None) -> Finding:
    ev: list[tuple[Role, str]] = [("container", "dev_nvidia"), ("host", "dev_nvidia"), ("host", "pve_lxc_confs")]
    cfg, how = match_config(host, ctr) if host.configs else (None, "")
    host_paths = {n.path for n in host.nodes or []}
    if ctr is None:
        scope = [c for c in (host.configs or {}).values() if c.has_nvidia]
        if host.nodes is not None and scope:
            gone = [f"CT {c.vmid}: {p}" for c in scope for p in c.nvidia_paths if p not in host_paths]
            if gone:
                return _mk("device_nodes", "warning", "Configured NVIDIA device nodes missing on the host",
                           observed="; ".join(gone) + " (not applicable inside: no container target)",
                           expected="every configured /dev/nvidia* node exists on the host before containers start",
                           why="lxc.mount.entry ... optional silently skips a node that does not exist at container start; "
                               "nvidia-uvm appears only once nvidia_uvm is loaded.",
                           fix="Load nvidia and nvidia_uvm at boot (/etc/modules-load.d/) and create nodes (nvidia-modprobe -u -c0) "
                               "before containers start, or use devN: entries.", evidence=ev)
        return _na_no_container("device_nodes", "Container device nodes", ev)
    targets: tuple[Role, ...] = ("host", "container")
    if ctr.nodes is None:
        return _mk("device_nodes", "unknown", "Container device nodes could not be listed", targets=targets,
                   observed=_why(ctr, "dev_nvidia"), evidence=ev)
    have = {n.path: n for n in ctr.nodes}
    if cfg is not None and any(re.fullmatch(r"/dev/nvidia\d+", p) for p in cfg.nvidia_paths):
        want_gpus = {int(p[len("/dev/nvidia"):]) for p in cfg.nvidia_paths if re.fullmatch(r"/dev/nvidia\d+", p)}
        src = f"passed by {how}"
    else:
        want_gpus = _gpu_minors(host.nodes)
        src = "present on the host"
    crit = [p for p in ("/dev/nvidiactl", "/dev/nvidia-uvm") if p not in have]
    crit += [f"/dev/nvidia{i}" for i in sorted(want_gpus) if f"/dev/nvidia{i}" not in have]
    info = [p for p in ("/dev/nvidia-uvm-tools",) if p not in have]
    cont_gpus = sorted(_gpu_minors(ctr.nodes))
    obs_both = (f"container has {', '.join(sorted(have)) or 'no /dev/nvidia* nodes'}; "
                f"expected nvidiactl, nvidia-uvm and nvidia{{{','.join(map(str, sorted(want_gpus)))}}} ({src})")
    if crit:
        return _mk("device_nodes", "critical", f"Container lacks {', '.join(crit[:4])}" + ("..." if len(crit) > 4 else ""),
                   targets=targets, observed=f"missing in container: {', '.join(crit)}; " + obs_both,
                   expected="nvidiactl, nvidia-uvm and every passed nvidiaN inside the container",
                   why="CUDA needs nvidiactl, nvidia-uvm and the GPU's nvidiaN node; an 'optional' bind mount silently skips "
                       "a node missing on the host at container start (nvidia-uvm appears only when nvidia_uvm loads).",
                   fix="Load nvidia_uvm at boot and create its nodes before containers start (nvidia-modprobe -u -c0), "
                       "then restart the container; or use devN: entries, which fail loudly.", evidence=ev)
    unpriv = (cfg.unprivileged if cfg is not None else None) if ctr.uid_map_unprivileged is None else ctr.uid_map_unprivileged
    closed = [n.path for n in ctr.nodes if n.kind == "c" and not n.path.startswith("/dev/nvidia-caps") and not n.mode[7:9] == "rw"]
    if unpriv and closed:
        return _mk("device_nodes", "warning", "Unprivileged container with device nodes not world read-write", targets=targets,
                   observed=f"{', '.join(closed)} not rw for others in an unprivileged container; container GPUs nvidia{cont_gpus}",
                   expected="crw-rw-rw- (0666) on the host, or a gid mapping for the nodes' group",
                   why="Inside an unprivileged container the nodes belong to nobody:nogroup; without o+rw CUDA fails with permission errors.",
                   fix="chmod 0666 the nodes on the host via a udev rule, or devN: ...,mode=0666, or map the group (lxc.idmap).",
                   evidence=ev)
    if info:
        return _mk("device_nodes", "info", "Container lacks nvidia-uvm-tools (profilers only)", targets=targets,
                   observed=obs_both, why="nvidia-uvm-tools is used by profilers, not by inference.", evidence=ev)
    return _mk("device_nodes", "ok", "Container has every NVIDIA device node", targets=targets, observed=obs_both, evidence=ev)


def _expected_gpu_count(host: ContainerFacts, ctr: ContainerFacts) -> tuple[int | None, str]:
    cfg, how = match_config(host, ctr) if host.configs else (None, "")
    if cfg is not None:
        n = len({p for p in cfg.nvidia_paths if re.fullmatch(r"/dev/nvidia\d+", p)})
        if n:
            return n, f"{n} passed by {how}"
    if host.gpus is not None:
        return len(host.gpus), f"{len(host.gpus)} on the host"
    return None, ""


def judge_gpu_inventory_match(host: ContainerFacts, ctr: ContainerFacts | None) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "smi_gpu_ids"), ("container", "smi_gpu_ids"), ("host", "pve_lxc_confs")]
    if ctr is None:
        return _na_no_container("gpu_inventory_match", "GPU inventory host vs container", [("host", "smi_gpu_ids")])
    targets: tuple[Role, ...] = ("host", "container")
    want, src = _expected_gpu_count(host, ctr)
    if ctr.smi_error:
        return _mk("gpu_inventory_match", "critical", "nvidia-smi fails inside the container", targets=targets,
                   observed=f"container: {ctr.smi_error}; host: {len(host.gpus) if host.gpus is not None else 'unknown'} GPU(s)",
                   expected=f"the container lists {src or 'its GPUs'}",
                   why="If NVML cannot open the devices the serving engine cannot either.",
                   fix="See container.device_nodes / device_cgroup and driver.userspace_match.", evidence=ev)
    if ctr.gpus is None or want is None:
        return _mk("gpu_inventory_match", "unknown", "GPU counts could not be compared", targets=targets,
                   observed=f"container: {_why(ctr, 'smi_gpu_ids') if ctr.gpus is None else len(ctr.gpus)}; "
                            f"host: {_why(host, 'smi_gpu_ids') if host.gpus is None else len(host.gpus)}", evidence=ev)
    host_n = len(host.gpus) if host.gpus is not None else None
    obs = f"container sees {len(ctr.gpus)} GPU(s); host has {host_n if host_n is not None else 'unknown'}; expected {src}"
    if len(ctr.gpus) < want:
        return _mk("gpu_inventory_match", "critical", f"Container sees {len(ctr.gpus)} of {want} GPUs", targets=targets,
                   observed=obs, expected=f"{want} GPU(s) in the container",
                   why="An engine configured for more GPUs than it can see fails to start or silently runs with a smaller "
                       "tensor-parallel size.",
                   fix="Pass every intended /dev/nvidiaN (mount entries or devN:) and restart the container.", evidence=ev)
    return _mk("gpu_inventory_match", "ok", f"Container sees all {want} expected GPU(s)", targets=targets, observed=obs, evidence=ev)


def judge_gpu_visibility(host: ContainerFacts, ctr: ContainerFacts | None) -> Finding:
    ev: list[tuple[Role, str]] = [("host", "smi_gpu_ids"), ("container", "smi_gpu_ids")]
    if ctr is None:
        return _na_no_container("gpu_visibility", "GPU visibility", [("host", "smi_gpu_ids")])
    targets: tuple[Role, ...] = ("host", "container")
    if ctr.gpus is None or host.gpus is None:
        return _mk("gpu_visibility", "unknown", "GPU UUIDs could not be compared", targets=targets,
                   observed=f"host: {_why(host, 'smi_gpu_ids') if host.gpus is None else 'ok'}; "
                            f"container: {_why(ctr, 'smi_gpu_ids') if ctr.gpus is None else 'ok'}", evidence=ev)
    hu = {g.uuid: g for g in host.gpus if g.uuid}
    foreign = [g.uuid for g in ctr.gpus if g.uuid and g.uuid not in hu]
    if foreign:
        return _mk("gpu_visibility", "warning", "Container sees GPUs the host does not list", targets=targets,
                   observed=f"container UUIDs not on the host: {', '.join(u for u in foreign if u)}",
                   expected="container GPUs are a subset of the host's",
                   why="The container target is probably not on this host (or a VM with its own GPUs).",
                   fix="Check which host and container the audit points at.", evidence=ev)
    moved = [f"container GPU{g.index} = host GPU{hu[g.uuid].index}" for g in ctr.gpus
             if g.uuid in hu and g.index is not None and hu[g.uuid].index != g.index]
    if moved:
        return _mk("gpu_visibility", "info", "GPU indices differ between host and container", targets=targets,
                   observed="; ".join(moved[:8]),
                   why="Index-based pinning (CUDA_VISIBLE_DEVICES, NUMA binding) then refers to different boards.",
                   fix="Set CUDA_DEVICE_ORDER=PCI_BUS_ID or pin by UUID.", evidence=ev)
    return _mk("gpu_visibility", "ok", "Container GPUs are the host's, same indices", targets=targets,
               observed=f"{len(ctr.gpus)} container GPU(s), all on the host with the same index", evidence=ev)


def _multi_gpu(ctr: ContainerFacts) -> bool | None:
    return None if ctr.gpus is None else len(ctr.gpus) > 1


def judge_shm(host: ContainerFacts, ctr: ContainerFacts | None) -> Finding:
    ev: list[tuple[Role, str]] = [("container", "df_shm"), ("container", "smi_gpu_ids")]
    if ctr is None:
        return _na_no_container("shm", "/dev/shm capacity", [("host", "df_shm")])
    targets: tuple[Role, ...] = ("container",)
    if ctr.shm_bytes is None:
        return _mk("shm", "unknown", "/dev/shm size could not be read", targets=targets, observed=_why(ctr, "df_shm"), evidence=ev)
    multi = _multi_gpu(ctr)
    obs = f"/dev/shm {_gib(ctr.shm_bytes)} ({ctr.shm_fs}) in the container; host /dev/shm {_gib(host.shm_bytes)}; " \
          f"{len(ctr.gpus) if ctr.gpus is not None else 'unknown'} GPU(s) visible"
    why = ("NCCL's shared-memory transport and PyTorch's cross-process tensors live in /dev/shm; when it cannot grow NCCL fails "
           "('failed to extend /dev/shm/nccl-...') or the engine crashes with bus errors.")
    fix = "Docker: --ipc=host or --shm-size=16g; Kubernetes: memory-backed emptyDir on /dev/shm; LXC: tmpfs sized from container RAM."
    if multi is False:
        return _mk("shm", "info", "/dev/shm: single GPU", targets=targets, observed=obs, why="Only multi-GPU (TP/PP > 1) needs large /dev/shm.", evidence=ev)
    if ctr.shm_bytes <= 64 * 1024**2:
        return _mk("shm", "critical", f"/dev/shm is only {_gib(ctr.shm_bytes)}", targets=targets, observed=obs,
                   expected=">= 1 GiB (NCCL recommends --shm-size=1g; more for large TP)", why=why, fix=fix, evidence=ev)
    if ctr.shm_bytes < GIB:
        return _mk("shm", "warning", f"/dev/shm is {_gib(ctr.shm_bytes)}", targets=targets, observed=obs,
                   expected=">= 1 GiB", why=why, fix=fix, evidence=ev)
    return _mk("shm", "ok", f"/dev/shm {_gib(ctr.shm_bytes)}", targets=targets, observed=obs, expected=">= 1 GiB", evidence=ev)


def judge_shm_ipc(host: ContainerFacts, ctr: ContainerFacts | None) -> Finding:
    ev: list[tuple[Role, str]] = [("container", "virt"), ("container", "df_shm"), ("host", "df_shm")]
    if ctr is None:
        return _na_no_container("shm_ipc", "Docker IPC mode")
    targets: tuple[Role, ...] = ("host", "container")
    if ctr.virt != "docker":
        return _mk("shm_ipc", "ok", "Docker IPC mode: not applicable", targets=targets,
                   observed=f"not applicable: {ctr.virt or 'unknown'} container, not Docker", evidence=ev)
    if ctr.shm_bytes is not None and host.shm_bytes is not None and ctr.shm_bytes == host.shm_bytes:
        return _mk("shm_ipc", "ok", "Container shares the host's /dev/shm (IPC host)", targets=targets,
                   observed=f"container /dev/shm {_gib(ctr.shm_bytes)} = host /dev/shm {_gib(host.shm_bytes)}",
                   why="With --ipc=host df shows the host's /dev/shm: that is the intended configuration.", evidence=ev)
    return _mk("shm_ipc", "info", "Container has its own /dev/shm (private IPC)", targets=targets,
               observed=f"container /dev/shm {_gib(ctr.shm_bytes)}, host {_gib(host.shm_bytes)}: see container.shm", evidence=ev)


def judge_memlock(host: ContainerFacts, ctr: ContainerFacts | None) -> Finding:
    ev: list[tuple[Role, str]] = [("container", "ulimit_a"), ("container", "dev_infiniband")]
    if ctr is None:
        return _na_no_container("memlock", "Locked-memory limit")
    targets: tuple[Role, ...] = ("container",)
    if ctr.memlock_kb is None:
        return _mk("memlock", "unknown", "Locked-memory limit could not be read", targets=targets, observed=_why(ctr, "ulimit_a"), evidence=ev)
    if ctr.memlock_kb == -1:
        return _mk("memlock", "ok", "Locked memory unlimited", targets=targets, observed="ulimit -l unlimited", evidence=ev)
    obs = f"ulimit -l {ctr.memlock_kb} kB in the container shell; RDMA devices: " + \
          ("present" if ctr.infiniband else "none" if ctr.infiniband is False else "unknown")
    why = ("NCCL pairs shm with memlock=-1: verbs memory registration (GPUDirect RDMA / InfiniBand) pins host buffers; "
           "single-node PCIe traffic barely depends on it. The engine inherits the limit of whatever starts it (systemd unit, ssh session).")
    fix = "Docker --ulimit memlock=-1; LXC lxc.prlimit.memlock: unlimited; systemd LimitMEMLOCK=infinity."
    if ctr.infiniband:
        return _mk("memlock", "warning", f"Locked memory limited to {ctr.memlock_kb} kB with RDMA devices present", targets=targets,
                   observed=obs, expected="unlimited", why=why, fix=fix, evidence=ev)
    return _mk("memlock", "info", f"Locked memory limited to {ctr.memlock_kb} kB (no RDMA)", targets=targets, observed=obs,
               expected="unlimited", why=why, fix=fix, evidence=ev)


def _cpus_available(host: ContainerFacts, ctr: ContainerFacts) -> tuple[float | None, str]:
    cands: list[tuple[float, str]] = []
    if ctr.cpuset_cpus:
        cands.append((float(ctr.cpuset_cpus), f"cpuset {ctr.cpuset_cpus} CPUs"))
    if ctr.cpu_quota_us and ctr.cpu_period_us:
        cands.append((ctr.cpu_quota_us / ctr.cpu_period_us, f"cpu.max {ctr.cpu_quota_us} {ctr.cpu_period_us}"))
    cfg, _how = match_config(host, ctr) if host.configs else (None, "")
    if cfg is not None and cfg.cores:
        cands.append((float(cfg.cores), f"PVE cores: {cfg.cores}"))
    if cfg is not None and cfg.cpulimit:
        cands.append((cfg.cpulimit, f"PVE cpulimit: {cfg.cpulimit:g}"))
    if not cands:
        return None, ""
    best = min(cands, key=lambda c: c[0])
    return best[0], ", ".join(c[1] for c in cands)


def judge_cpu_quota(host: ContainerFacts, ctr: ContainerFacts | None) -> Finding:
    ev: list[tuple[Role, str]] = [("container", "cgroup_limits"), ("host", "pve_lxc_confs")]
    if ctr is None:
        return _na_no_container("cpu_quota", "CPU quota")
    targets: tuple[Role, ...] = ("host", "container")
    cfg, how = match_config(host, ctr) if host.configs else (None, "")
    limit = cfg.cpulimit if cfg is not None else None
    if not ctr.cpu_max_read and limit is None:
        return _mk("cpu_quota", "unknown", "CPU quota could not be read", targets=targets, observed=_why(ctr, "cgroup_limits"), evidence=ev)
    quota = f"cpu.max {ctr.cpu_quota_us} {ctr.cpu_period_us}" if ctr.cpu_quota_us else "cpu.max max (no quota in the container's cgroup)"
    obs = quota + (f"; {how}: cpulimit {limit:g}" if limit else "")
    if ctr.nr_periods:
        obs += f"; throttled in {ctr.nr_throttled or 0} of {ctr.nr_periods} periods"
    if not ctr.cpu_quota_us and not limit:
        return _mk("cpu_quota", "ok", "No CPU quota", targets=targets, observed=obs,
                   why="Proxmox sets cpulimit on the parent /lxc/<id> cgroup, invisible from inside; the config was checked too."
                   if cfg is not None else "", evidence=ev)
    ratio = (ctr.nr_throttled or 0) / ctr.nr_periods if ctr.nr_periods else 0.0
    why = ("The engine's scheduler and per-GPU workers launch kernels every few ms; a throttled cgroup stalls them for the "
           "rest of the CFS period, which shows as token-latency jitter while the GPUs wait.")
    if ratio > 0.01:
        return _mk("cpu_quota", "warning", f"CPU quota throttled the container in {100 * ratio:.1f}% of periods", targets=targets,
                   observed=obs, expected="no throttling while serving", why=why,
                   fix="Remove cpulimit / the quota, give enough cores, or pin with lxc.cgroup2.cpuset.cpus.", evidence=ev)
    return _mk("cpu_quota", "info", "CPU quota set, little throttling so far", targets=targets, observed=obs, why=why,
               fix="Sample cpu.stat nr_throttled twice while serving; remove the quota if it grows.", evidence=ev)


def judge_memory_limit(host: ContainerFacts, ctr: ContainerFacts | None) -> Finding:
    ev: list[tuple[Role, str]] = [("container", "cgroup_limits"), ("host", "pve_lxc_confs")]
    if ctr is None:
        return _na_no_container("memory_limit", "Container memory limit")
    targets: tuple[Role, ...] = ("host", "container")
    cfg, how = match_config(host, ctr) if host.configs else (None, "")
    if not ctr.memory_max_read and (cfg is None or cfg.memory_mb is None):
        return _mk("memory_limit", "unknown", "Memory limit could not be read", targets=targets, observed=_why(ctr, "cgroup_limits"), evidence=ev)
    obs = f"memory.max {_gib(ctr.memory_max) if ctr.memory_max else 'max'}" + \
          (f"; {how}: memory {cfg.memory_mb} MiB" if cfg is not None and cfg.memory_mb else "") + \
          (f"; oom_kill {ctr.oom_kills}" if ctr.oom_kills is not None else "")
    if ctr.oom_kills:
        return _mk("memory_limit", "warning", f"{ctr.oom_kills} OOM kill(s) in the container's cgroup", targets=targets,
                   observed=obs, expected="oom_kill 0",
                   why="Weight loading streams the checkpoint through the page cache charged to the container; at the limit processes get killed.",
                   fix="Raise the container's memory (PVE memory:) or reduce CPU-side caches/offload.", evidence=ev)
    return _mk("memory_limit", "info", "Container memory limit", targets=targets, observed=obs,
               why="Model loading through the page cache is throttled by a tight limit (slow restarts).", evidence=ev)


def judge_limits_vs_model(host: ContainerFacts, ctr: ContainerFacts | None) -> Finding:
    ev: list[tuple[Role, str]] = [("container", "cgroup_limits"), ("container", "smi_gpu_ids"), ("host", "pve_lxc_confs")]
    if ctr is None:
        return _na_no_container("limits_vs_model", "Container limits vs GPU ranks")
    targets: tuple[Role, ...] = ("host", "container")
    cpus, src = _cpus_available(host, ctr)
    if cpus is None or ctr.gpus is None:
        return _mk("limits_vs_model", "unknown", "Container CPUs or GPU count not known", targets=targets,
                   observed=f"CPUs: {src or _why(ctr, 'cgroup_limits')}; GPUs: {len(ctr.gpus) if ctr.gpus is not None else _why(ctr, 'smi_gpu_ids')}",
                   evidence=ev)
    ranks = len(ctr.gpus)
    need = ranks + 1
    obs = f"{cpus:g} CPU(s) available ({src}) for {ranks} GPU rank(s) + API/scheduler; model size not read by this probe"
    if cpus < need:
        return _mk("limits_vs_model", "warning", f"{cpus:g} CPUs for {ranks} GPU ranks", targets=targets, observed=obs,
                   expected=f">= {need} CPUs (1-2 per rank plus the API/scheduler process)",
                   why="Each rank's CPU thread launches kernels and runs NCCL proxies; too few cores serialise them and the GPUs wait.",
                   fix="Give the container more cores (PVE cores:/cpulimit:, cpuset).", evidence=ev)
    return _mk("limits_vs_model", "ok", "Enough CPUs for the GPU ranks", targets=targets, observed=obs,
               expected=f">= {need} CPUs", evidence=ev)


def judge_userspace_driver(ctr: ContainerFacts | None) -> Finding:
    ev: list[tuple[Role, str]] = [("container", "libcuda_files")]
    if ctr is None:
        return _na_no_container("userspace_driver", "Container user-space driver")
    targets: tuple[Role, ...] = ("container",)
    if ctr.libcuda_versions is None:
        return _mk("userspace_driver", "unknown", "libcuda could not be listed", targets=targets, observed=_why(ctr, "libcuda_files"), evidence=ev)
    if not ctr.libcuda_versions:
        return _mk("userspace_driver", "warning", "No libcuda.so in the container's library paths", targets=targets,
                   observed="no libcuda.so.<version> under /usr/lib/x86_64-linux-gnu, /usr/lib64, /usr/lib/aarch64-linux-gnu",
                   expected="libcuda.so.<host driver version>",
                   why="LXC does not inject the user-space driver; without libcuda the CUDA runtime cannot start (unless installed elsewhere).",
                   fix="Install the same driver version in the container with --no-kernel-module, or bind-mount the host libraries.",
                   evidence=ev)
    return _mk("userspace_driver", "info", f"Container libcuda {', '.join(ctr.libcuda_versions)}", targets=targets,
               observed=f"libcuda.so.{', libcuda.so.'.join(ctr.libcuda_versions)} (compared with the host module in driver.userspace_match)",
               evidence=ev)


def judge_docker_gpu_runtime(ctr: ContainerFacts | None) -> Finding:
    ev: list[tuple[Role, str]] = [("container", "virt"), ("container", "smi_gpu_ids")]
    if ctr is None:
        return _na_no_container("docker_gpu_runtime", "Docker GPU runtime")
    targets: tuple[Role, ...] = ("container",)
    if ctr.virt != "docker":
        return _mk("docker_gpu_runtime", "ok", "Docker GPU runtime: not applicable", targets=targets,
                   observed=f"not applicable: {ctr.virt or 'unknown'} container, not Docker", evidence=ev)
    if ctr.gpus:
        return _mk("docker_gpu_runtime", "ok", "Docker container has GPUs", targets=targets, observed=f"{len(ctr.gpus)} GPU(s) visible", evidence=ev)
    return _mk("docker_gpu_runtime", "critical", "Docker container sees no GPU", targets=targets,
               observed=ctr.smi_error or _why(ctr, "smi_gpu_ids"), expected="--gpus / NVIDIA runtime with compute,utility capabilities",
               why="Without a device request and the NVIDIA runtime no GPU nodes or driver libraries are injected.",
               fix="docker run --gpus all (or runtime: nvidia, NVIDIA_DRIVER_CAPABILITIES=compute,utility).", evidence=ev)


def judge_nofile(ctr: ContainerFacts | None) -> Finding:
    ev: list[tuple[Role, str]] = [("container", "ulimit_a")]
    if ctr is None:
        return _na_no_container("nofile", "Open-file limit")
    targets: tuple[Role, ...] = ("container",)
    if ctr.nofile is None:
        return _mk("nofile", "unknown", "Open-file limit could not be read", targets=targets, observed=_why(ctr, "ulimit_a"), evidence=ev)
    if ctr.nofile != -1 and ctr.nofile < 65536:
        return _mk("nofile", "info", f"Open-file limit {ctr.nofile}", targets=targets, observed=f"ulimit -n {ctr.nofile} in the container shell",
                   expected=">= 65536 for the API server",
                   why="Many concurrent HTTP/SSE streams plus model shards need file descriptors.",
                   fix="LimitNOFILE= in the engine's unit, or lxc.prlimit.nofile.", evidence=ev)
    return _mk("nofile", "ok", "Open-file limit", targets=targets, observed=f"ulimit -n {ctr.nofile if ctr.nofile != -1 else 'unlimited'}", evidence=ev)


def judge(facts: FactsByTarget) -> Iterator[Finding]:
    host: ContainerFacts | None = facts.get("host")
    if host is None:
        return
    ctr: ContainerFacts | None = facts.get("container")
    yield judge_detect(host, ctr)
    yield judge_privilege(host, ctr)
    yield judge_device_cgroup(host, ctr)
    yield judge_device_major_match(host, ctr)
    yield judge_device_nodes(host, ctr)
    yield judge_gpu_visibility(host, ctr)
    yield judge_gpu_inventory_match(host, ctr)
    yield judge_shm(host, ctr)
    yield judge_shm_ipc(host, ctr)
    yield judge_memlock(host, ctr)
    yield judge_cpu_quota(host, ctr)
    yield judge_memory_limit(host, ctr)
    yield judge_limits_vs_model(host, ctr)
    yield judge_userspace_driver(ctr)
    yield judge_docker_gpu_runtime(ctr)
    yield judge_nofile(ctr)


def summarize(facts: FactsByTarget) -> str:
    host: ContainerFacts | None = facts.get("host")
    ctr: ContainerFacts | None = facts.get("container")
    if host is None:
        return ""
    parts = []
    if ctr is not None:
        cfg, _how = match_config(host, ctr) if host.configs else (None, "")
        kind = ctr.virt or "container"
        parts.append(f"{kind} CT {cfg.vmid}" if cfg else kind)
        if ctr.gpus is not None:
            parts.append(f"{len(ctr.gpus)}/{len(host.gpus) if host.gpus is not None else '?'} GPUs")
        if ctr.shm_bytes is not None:
            parts.append(f"shm {_gib(ctr.shm_bytes)}")
    elif host.configs is not None and host.is_pve:
        parts.append(f"{sum(1 for c in host.configs.values() if c.has_nvidia)} GPU container config(s)")
    return " · ".join(parts)


PROBE = Probe(id=PROBE_ID, title="Container", commands=COMMANDS, extract=extract, judge=judge, summarize=summarize)
