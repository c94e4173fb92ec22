"""Container rules on detection, privilege, the cgroup device allow-list, majors and device nodes."""

from __future__ import annotations

import re

from gpuaudit.probes.container.facts import ContainerFacts, CtConfig, Node
from gpuaudit.probes.container.rules_common import _configs_unavailable, _mk, _na_no_container, _scope, _why, match_config
from gpuaudit.probes.core.models import Finding, Role


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
    unread = []
    if ctr is not None and ctr.nodes is None:
        unread.append(f"container device nodes: {_why(ctr, 'dev_nvidia')}")
    if host.configs is None:
        unread.append(f"host container configs: {_why(host, 'pve_lxc_confs')}")
    if unread:
        return _mk("device_major_match", "unknown", "Container device majors could not be checked", targets=targets,
                   observed="; ".join(unread) + f" (host /proc/devices: {host_m})", evidence=ev)
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
