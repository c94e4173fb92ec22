"""Parsers for Proxmox LXC container configs: `/etc/pve/lxc/<ID>.conf` and `pct config <ID>`.

What the container probe needs: the cgroup device allow-list (`lxc.cgroup2.devices.allow`, the
legacy v1 `lxc.cgroup.devices.allow`), bind mounts (`lxc.mount.entry`), the PVE 8.1+ `devN:`
passthrough entries, privilege (`unprivileged: 1`, `lxc.idmap`), and the resource keys
(`cores`, `cpulimit`, `memory`, `swap`, `lxc.prlimit.memlock`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpuaudit.probes.core.parsing import parse_once


@dataclass(frozen=True)
class DeviceRule:
    """One `devices.allow` entry: `c 195:* rwm`; major/minor None means `*`."""

    type: str
    """"c", "b" or "a" (all devices)."""
    major: int | None = None
    minor: int | None = None
    access: str = "rwm"
    cgroup_v1: bool = False
    """Written with the legacy `lxc.cgroup.devices.allow` key (ignored on a cgroup v2 host)."""

    def covers(self, major: int, minor: int | None = None) -> bool:
        if self.type == "a":
            return True
        if self.type != "c":
            return False
        if self.major is not None and self.major != major:
            return False
        return self.minor is None or minor is None or self.minor == minor

    def label(self) -> str:
        if self.type == "a":
            return "a"
        ma = "*" if self.major is None else str(self.major)
        mi = "*" if self.minor is None else str(self.minor)
        return f"{self.type} {ma}:{mi}"


@dataclass(frozen=True)
class MountEntry:
    """One `lxc.mount.entry` line: source, target and mount options."""

    source: str
    target: str
    options: tuple[str, ...] = ()

    @property
    def optional(self) -> bool:
        return "optional" in self.options


@dataclass(frozen=True)
class DevEntry:
    """PVE 8.1+ `devN: /dev/nvidia0,gid=44,mode=0666` (handles cgroup rule and node creation)."""

    index: int
    path: str
    options: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LxcConfig:
    """A container's LXC/PVE configuration: privilege, CPU and memory limits, device rules and mounts."""

    vmid: str | None = None
    hostname: str | None = None
    unprivileged: bool = False
    cores: int | None = None
    cpulimit: float | None = None
    memory_mb: int | None = None
    swap_mb: int | None = None
    allow: tuple[DeviceRule, ...] = ()
    deny: tuple[DeviceRule, ...] = ()
    mounts: tuple[MountEntry, ...] = ()
    devs: tuple[DevEntry, ...] = ()
    idmap: tuple[str, ...] = ()
    prlimit_memlock: str | None = None
    cpuset_cpus: str | None = None
    """`lxc.cgroup2.cpuset.cpus` when pinned in the config."""
    keys: dict[str, str] = field(default_factory=dict)
    """Every other `key: value` of the main section (first occurrence)."""

    @property
    def allow_all(self) -> bool:
        return any(r.type == "a" and not r.cgroup_v1 for r in self.allow)

    @property
    def nvidia_paths(self) -> list[str]:
        """NVIDIA device paths passed in: mount sources, where a mount lands in the container (a node bind-mounted
        from another host folder, `/lxc/102010/devices/nvidia0 dev/nvidia0`, still becomes /dev/nvidia0), devN paths."""
        paths = [m.source for m in self.mounts] + ["/" + m.target.lstrip("/") for m in self.mounts]
        paths += [d.path for d in self.devs]
        return list(dict.fromkeys(p for p in paths if p.startswith("/dev/nvidia")))

    @property
    def has_nvidia(self) -> bool:
        return bool(self.nvidia_paths) or any(r.major == 195 for r in self.allow)


def _rule(value: str, v1: bool) -> DeviceRule | None:
    p = value.split()
    if p == ["a"]:
        return DeviceRule(type="a", cgroup_v1=v1)
    if len(p) >= 2 and p[0] in ("a", "b", "c"):
        m = re.fullmatch(r"(\d+|\*):(\d+|\*)", p[1])
        if not m:
            return None
        return DeviceRule(
            type=p[0],
            major=None if m.group(1) == "*" else int(m.group(1)),
            minor=None if m.group(2) == "*" else int(m.group(2)),
            access=p[2] if len(p) > 2 else "rwm",
            cgroup_v1=v1,
        )
    return None


def _dev(index: int, value: str) -> DevEntry:
    parts = [p.strip() for p in value.split(",") if p.strip()]
    path = ""
    opts: dict[str, str] = {}
    for p in parts:
        if "=" in p:
            k, v = p.split("=", 1)
            if k == "path":
                path = v
            else:
                opts[k] = v
        elif not path:
            path = p
    return DevEntry(index=index, path=path, options=opts)


@parse_once
def parse_lxc_conf(text: str, vmid: str | None = None) -> LxcConfig:
    """A PVE container config (`cat /etc/pve/lxc/101.conf` or `pct config 101`) -> LxcConfig.

        hostname: xtts-api
        unprivileged: 1
        lxc.cgroup2.devices.allow: c 195:* rwm
        lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file
        dev0: /dev/nvidia-uvm,mode=0666
    Only the main section is read: `[snapshot]` / `[pve:pending]` sections that follow describe
    snapshots or pending changes, not the running container.
    """
    keys: dict[str, str] = {}
    allow: list[DeviceRule] = []
    deny: list[DeviceRule] = []
    mounts: list[MountEntry] = []
    devs: list[DevEntry] = []
    idmap: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            break
        if ":" not in line:
            continue
        key, value = (s.strip() for s in line.split(":", 1))
        if key in ("lxc.cgroup2.devices.allow", "lxc.cgroup.devices.allow"):
            if r := _rule(value, key == "lxc.cgroup.devices.allow"):
                allow.append(r)
        elif key in ("lxc.cgroup2.devices.deny", "lxc.cgroup.devices.deny"):
            if r := _rule(value, key == "lxc.cgroup.devices.deny"):
                deny.append(r)
        elif key == "lxc.mount.entry":
            p = value.split()
            if len(p) >= 4:
                mounts.append(MountEntry(source=p[0], target=p[1], options=tuple(p[3].split(","))))
        elif m := re.fullmatch(r"dev(\d+)", key):
            devs.append(_dev(int(m.group(1)), value))
        elif key == "lxc.idmap":
            idmap.append(value)
        else:
            keys.setdefault(key, value)

    def num(k: str) -> int | None:
        v = keys.get(k)
        return int(v) if v and v.isdigit() else None

    cpulimit = None
    if (v := keys.get("cpulimit")) and re.fullmatch(r"\d+(?:\.\d+)?", v):
        cpulimit = float(v)
    return LxcConfig(
        vmid=vmid,
        hostname=keys.get("hostname"),
        unprivileged=keys.get("unprivileged") == "1",
        cores=num("cores"),
        cpulimit=cpulimit,
        memory_mb=num("memory"),
        swap_mb=num("swap"),
        allow=tuple(allow),
        deny=tuple(deny),
        mounts=tuple(mounts),
        devs=tuple(devs),
        idmap=tuple(idmap),
        prlimit_memlock=keys.get("lxc.prlimit.memlock"),
        cpuset_cpus=keys.get("lxc.cgroup2.cpuset.cpus"),
        keys=keys,
    )


@parse_once
def parse_conf_dump(text: str) -> dict[str, LxcConfig]:
    """`grep -H . /etc/pve/lxc/*.conf` -> vmid -> config (one grep over every container's config).

    /etc/pve/lxc/101.conf:hostname: sglang
    /etc/pve/lxc/101.conf:lxc.cgroup2.devices.allow: c 195:* rwm
    """
    per: dict[str, list[str]] = {}
    for line in text.splitlines():
        m = re.match(r"^(?:/etc/pve(?:/nodes/[^/]+)?/lxc/)?(\d+)\.conf:(.*)$", line)
        if m:
            per.setdefault(m.group(1), []).append(m.group(2))
    return {vmid: parse_lxc_conf("\n".join(lines), vmid=vmid) for vmid, lines in per.items()}
