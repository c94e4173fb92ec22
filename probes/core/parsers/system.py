"""Parsers for generic Linux system outputs shared by the kernel, numa and container probes.

uname, /proc/cmdline, /proc/cpuinfo head, sysctl, numactl -H, /sys node lists and cpulists,
/proc/self/cgroup, cgroup v2 files, df -h /dev/shm, ulimit -a, /proc/devices,
systemd-detect-virt, ls -l /dev/nvidia*, /proc/self/status allowed lists, /proc/self/uid_map.

All parsers are pure; they never raise on odd input (they return empty / None parts instead),
so `extract` can turn whatever they give into facts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpuaudit.probes.core.parsers.lines import (
    CGROUP_FILES as CGROUP_FILES,  # declared there, read here
)
from gpuaudit.probes.core.parsing import cpu_list, first_line, kv_lines, parse_once, size_bytes

# --------------------------------------------------------------------------- uname


@dataclass(frozen=True)
class Uname:
    """`uname`: the kernel release, its flavour (pve, generic, ...) and the host name when shown."""

    release: str | None
    hostname: str | None = None
    flavour: str | None = None
    """"pve", "generic", "nvidia", "el8_0", ... (the suffix that names who built the kernel)."""


_RELEASE = re.compile(r"^\d+\.\d+(?:\.\d+)?[-.+\w]*$")


@parse_once
def parse_uname(text: str) -> Uname:
    """`uname -r`, `uname -a` or `uname -snrvm` -> release (and hostname when present).

        Linux yangz 6.8.4-2-pve #1 SMP PREEMPT_DYNAMIC PMX 6.8.4-2 (2024-04-10T17:36Z) x86_64
    -> Uname(release="6.8.4-2-pve", hostname="yangz", flavour="pve")
    """
    parts = first_line(text).split()
    release = hostname = None
    if len(parts) == 1 and _RELEASE.match(parts[0]):
        release = parts[0]
    elif len(parts) >= 3 and parts[0] == "Linux" and _RELEASE.match(parts[2]):
        hostname, release = parts[1], parts[2]
    return Uname(
        release=release, hostname=hostname, flavour=kernel_flavour(release) if release else None
    )


def kernel_flavour(release: str) -> str | None:
    """ "6.8.12-9-pve" -> "pve"; "5.15.0-46-generic" -> "generic"; "4.18.0-80.11.2.el8_0.x86_64" -> "el8_0"."""
    m = re.search(r"-(?:\d+-)?([a-z][a-z0-9_]*)$", release)
    if m:
        return m.group(1)
    m = re.search(r"\.(el\d+[_\w]*)\.", release)
    return m.group(1) if m else None


# --------------------------------------------------------------------------- /proc/cmdline


@parse_once
def parse_cmdline(text: str) -> list[tuple[str, str | None]]:
    """`cat /proc/cmdline` -> ordered (key, value) pairs; flags have value None.

        BOOT_IMAGE=/boot/vmlinuz-5.15.0-46-generic ro amd_iommu=on iommu=pt numa_balancing=disable
    -> [("BOOT_IMAGE", "/boot/vmlinuz-5.15.0-46-generic"), ("ro", None), ("amd_iommu", "on"), ...]
    Repeated keys (hugepagesz=1G ... hugepagesz=2M) are kept in order.
    """
    out: list[tuple[str, str | None]] = []
    for tok in first_line(text).split():
        if "=" in tok:
            k, v = tok.split("=", 1)
            out.append((k, v))
        else:
            out.append((tok, None))
    return out


def cmdline_value(pairs: list[tuple[str, str | None]], key: str) -> str | None:
    """The last value given for `key` (the kernel honours the last one), "" for a bare flag, None if absent."""
    found: str | None = None
    for k, v in pairs:
        if k == key:
            found = v if v is not None else ""
    return found


# --------------------------------------------------------------------------- /proc/cpuinfo head


@dataclass(frozen=True)
class CpuId:
    """The CPU's vendor, family, model and name from /proc/cpuinfo."""

    vendor: str | None = None
    family: int | None = None
    model: int | None = None
    model_name: str | None = None


@parse_once
def parse_cpuinfo_id(text: str) -> CpuId:
    """`grep -m4 -E '^(vendor_id|cpu family|model|model name)' /proc/cpuinfo` -> CpuId.

    vendor_id	: AuthenticAMD
    cpu family	: 26
    model		: 2
    model name	: AMD EPYC 9575F 64-Core Processor
    """
    vals = kv_lines(text)

    def num(s: str | None) -> int | None:
        return int(s) if s and s.isdigit() else None

    return CpuId(
        vendor=vals.get("vendor_id") or None,
        family=num(vals.get("cpu family")),
        model=num(vals.get("model")),
        model_name=vals.get("model name") or None,
    )


# --------------------------------------------------------------------------- sysctl / single values


@parse_once
def parse_sysctl(text: str) -> dict[str, str]:
    """`sysctl -a` / `sysctl k1 k2` lines "key = value" -> dict (first occurrence wins).

    kernel.numa_balancing = 1
    vm.zone_reclaim_mode = 0
    """
    out: dict[str, str] = {}
    for line in text.splitlines():
        if " = " in line:
            k, v = line.split(" = ", 1)
            out.setdefault(k.strip(), v.strip())
        elif line.rstrip().endswith(" =") and " " not in line.strip()[:-2]:
            out.setdefault(line.strip()[:-2].strip(), "")
    return out


@parse_once
def parse_int(text: str) -> int | None:
    """A file holding one integer ("1\\n") -> 1; anything else -> None."""
    line = first_line(text)
    return int(line) if re.fullmatch(r"-?\d+", line) else None


@parse_once
def parse_bracketed_choice(text: str) -> str | None:
    """`always [madvise] never` -> "madvise" (the active choice of a sysfs selector); None if none."""
    m = re.search(r"\[([^\]]+)\]", text)
    return m.group(1) if m else None


# --------------------------------------------------------------------------- NUMA


@dataclass(frozen=True)
class NumaNode:
    """One node of `numactl -H`: its CPUs and memory (MiB)."""

    id: int
    cpus: tuple[int, ...] = ()
    size_mb: int | None = None
    free_mb: int | None = None


@dataclass(frozen=True)
class NumaTopology:
    """`numactl -H`: the nodes and the node distance matrix."""

    nodes: dict[int, NumaNode] = field(default_factory=dict)
    distances: dict[int, dict[int, int]] = field(default_factory=dict)


@parse_once
def parse_numactl_h(text: str) -> NumaTopology:
    """`numactl -H` / `numactl --hardware` -> nodes (cpus, size, free) and the distance table.

        available: 2 nodes (0-1)
        node 0 cpus: 0 1 2 3
        node 0 size: 773271 MB
        node 0 free: 678823 MB
        node distances:
        node   0   1
          0:  10  32
    Tolerates trailing spaces and e-mail quote prefixes ("> ").
    """
    cpus: dict[int, tuple[int, ...]] = {}
    size: dict[int, int] = {}
    free: dict[int, int] = {}
    distances: dict[int, dict[int, int]] = {}
    header: list[int] = []
    in_dist = False
    for raw in text.splitlines():
        line = re.sub(r"^(?:>\s*)+", "", raw).strip()
        if m := re.match(r"node (\d+) cpus:(.*)$", line):
            cpus[int(m.group(1))] = tuple(int(c) for c in m.group(2).split() if c.isdigit())
        elif m := re.match(r"node (\d+) size: (\d+) MB", line):
            size[int(m.group(1))] = int(m.group(2))
        elif m := re.match(r"node (\d+) free: (\d+) MB", line):
            free[int(m.group(1))] = int(m.group(2))
        elif line.startswith("node distances"):
            in_dist = True
        elif in_dist and re.match(r"node(\s+\d+)+$", line):
            header = [int(x) for x in line.split()[1:]]
        elif in_dist and (m := re.match(r"(\d+):((?:\s+\d+)+)$", line)):
            row = [int(x) for x in m.group(2).split()]
            distances[int(m.group(1))] = dict(zip(header, row))
    ids = sorted(set(cpus) | set(size) | set(free))
    nodes = {
        i: NumaNode(id=i, cpus=cpus.get(i, ()), size_mb=size.get(i), free_mb=free.get(i))
        for i in ids
    }
    return NumaTopology(nodes=nodes, distances=distances)


@parse_once
def parse_node_list(text: str) -> list[int]:
    """`ls -d /sys/devices/system/node/node[0-9]*` -> sorted node ids.

    /sys/devices/system/node/node0
    /sys/devices/system/node/node1
    """
    return sorted({int(m.group(1)) for m in re.finditer(r"node(\d+)\s*$", text, re.M)})


@parse_once
def parse_grep_h(text: str) -> dict[str, list[str]]:
    """`grep -H . FILE...` -> path -> its non-empty lines, in order.

        /sys/devices/system/node/node0/cpulist:0-31
        /sys/fs/cgroup/cpu.stat:nr_periods 0
    Lines without a "path:" prefix (an unexpected shape) are ignored. Paths may contain ":" (PCI
    addresses) but no whitespace, and the file name itself has no ":"; values may contain both.
    """
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        m = re.match(r"^(/\S*/[^/:\s]+):(.*)$", line)
        if m:
            out.setdefault(m.group(1), []).append(m.group(2).strip())
    return out


@parse_once
def parse_node_cpulists(text: str) -> dict[int, list[int]]:
    """`grep -H . /sys/devices/system/node/node*/cpulist` -> node -> cpus."""
    out: dict[int, list[int]] = {}
    for path, lines in parse_grep_h(text).items():
        m = re.search(r"/node(\d+)/cpulist$", path)
        if m and lines:
            try:
                out[int(m.group(1))] = cpu_list(lines[0])
            except ValueError:
                continue
    return out


@dataclass(frozen=True)
class PciNuma:
    """One PCI device's NUMA node (sysfs `numa_node`; None: -1 or not shown)."""

    bdf: str
    numa_node: int | None = None
    local_cpus: tuple[int, ...] = ()


@parse_once
def parse_pci_numa(text: str) -> dict[str, PciNuma]:
    """`grep -H . /sys/bus/pci/drivers/nvidia/*/numa_node /sys/bus/pci/drivers/nvidia/*/local_cpulist`.

        /sys/bus/pci/drivers/nvidia/0000:01:00.0/numa_node:0
        /sys/bus/pci/drivers/nvidia/0000:01:00.0/local_cpulist:0-31
    -> {"0000:01:00.0": PciNuma(numa_node=0, local_cpus=(0..31))}; bus ids lower-cased.
    """
    node: dict[str, int] = {}
    cpus: dict[str, tuple[int, ...]] = {}
    for path, lines in parse_grep_h(text).items():
        m = re.search(
            r"/([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])/(numa_node|local_cpulist)$",
            path,
        )
        if not m or not lines:
            continue
        bdf = normalize_bdf(m.group(1))
        if m.group(2) == "numa_node" and re.fullmatch(r"-?\d+", lines[0]):
            node[bdf] = int(lines[0])
        elif m.group(2) == "local_cpulist":
            try:
                cpus[bdf] = tuple(cpu_list(lines[0]))
            except ValueError:
                pass
    return {
        b: PciNuma(bdf=b, numa_node=node.get(b), local_cpus=cpus.get(b, ()))
        for b in sorted(set(node) | set(cpus))
    }


def normalize_bdf(bus_id: str) -> str:
    """nvidia-smi "00000000:01:00.0" and sysfs "0000:01:00.0" -> "0000:01:00.0" (lower case)."""
    s = bus_id.strip().lower()
    m = re.fullmatch(r"(?:([0-9a-f]+):)?([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])", s)
    if not m:
        return s
    domain = int(m.group(1) or "0", 16)
    return f"{domain:04x}:{m.group(2)}:{m.group(3)}.{m.group(4)}"


# --------------------------------------------------------------------------- cgroups


@dataclass(frozen=True)
class CgroupMembership:
    """/proc/self/cgroup: the cgroup version, the unified path and the LXC or Docker id it names."""

    version: str
    """"v2", "v1", "hybrid" or "unknown"."""
    unified_path: str | None = None
    lxc_id: str | None = None
    """The Proxmox/LXC container id when the path shows it (/lxc/101/...); None behind a cgroup namespace."""
    docker_id: str | None = None


@parse_once
def parse_proc_self_cgroup(text: str) -> CgroupMembership:
    """`cat /proc/self/cgroup` -> cgroup version and container hints.

    0::/lxc/101/ns/user.slice/user-0.slice/session-3.scope     (host view of a PVE container)
    0::/init.scope                                            (inside a container, cgroup namespace)
    12:freezer:/ ... 0::/init.scope                           (hybrid v1+v2)
    """
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    unified = None
    v1 = False
    for ln in lines:
        parts = ln.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            unified = parts[2]
        else:
            v1 = True
    if not lines:
        version = "unknown"
    elif unified is not None and not v1:
        version = "v2"
    elif unified is not None:
        version = "hybrid"
    else:
        version = "v1" if v1 else "unknown"
    paths = " ".join(ln.split(":", 2)[-1] for ln in lines)
    m = re.search(r"/lxc(?:\.payload)?[./](\d+)(?:/|\b)", paths)
    d = re.search(r"/docker[-/]([0-9a-f]{12,64})", paths)
    return CgroupMembership(
        version=version,
        unified_path=unified,
        lxc_id=m.group(1) if m else None,
        docker_id=d.group(1) if d else None,
    )


@dataclass(frozen=True)
class CgroupLimits:
    """The container's own cgroup v2 files (read from inside, through the cgroup namespace)."""

    cpuset_cpus: tuple[int, ...] | None = None
    cpuset_mems: tuple[int, ...] | None = None
    cpu_quota_us: int | None = None
    """None = "max" (no quota) or not read; see cpu_max_read."""
    cpu_period_us: int | None = None
    cpu_max_read: bool = False
    memory_max: int | None = None
    """Bytes; None = "max" (no limit) or not read; see memory_max_read."""
    memory_max_read: bool = False
    cpu_stat: dict[str, int] = field(default_factory=dict)
    memory_events: dict[str, int] = field(default_factory=dict)


@parse_once
def parse_cpu_max(text: str) -> tuple[int | None, int | None]:
    """cgroup v2 `cpu.max`: "max 100000" -> (None, 100000); "400000 100000" -> (400000, 100000)."""
    parts = first_line(text).split()
    if not parts:
        return None, None
    quota = int(parts[0]) if parts[0].isdigit() else None
    period = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    return quota, period


@parse_once
def parse_cgroup_files(text: str) -> CgroupLimits:
    """`grep -H . /sys/fs/cgroup/{cpuset.cpus.effective,cpuset.mems.effective,cpu.max,memory.max,cpu.stat,memory.events}`.

        /sys/fs/cgroup/cpuset.cpus.effective:0-63
        /sys/fs/cgroup/cpu.max:max 100000
        /sys/fs/cgroup/memory.max:max
        /sys/fs/cgroup/cpu.stat:nr_throttled 0
    Files that are missing simply leave their fields at None.
    """
    by_name = {path.rsplit("/", 1)[-1]: lines for path, lines in parse_grep_h(text).items()}

    def cpus(name: str) -> tuple[int, ...] | None:
        lines = by_name.get(name)
        if not lines:
            return None
        try:
            return tuple(cpu_list(lines[0]))
        except ValueError:
            return None

    def stat(name: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for ln in by_name.get(name, []):
            p = ln.split()
            if len(p) == 2 and p[1].isdigit():
                out[p[0]] = int(p[1])
        return out

    quota = period = None
    if "cpu.max" in by_name:
        quota, period = parse_cpu_max(by_name["cpu.max"][0])
    mem = None
    if "memory.max" in by_name:
        v = by_name["memory.max"][0]
        mem = int(v) if v.isdigit() else None
    return CgroupLimits(
        cpuset_cpus=cpus("cpuset.cpus.effective"),
        cpuset_mems=cpus("cpuset.mems.effective"),
        cpu_quota_us=quota,
        cpu_period_us=period,
        cpu_max_read="cpu.max" in by_name,
        memory_max=mem,
        memory_max_read="memory.max" in by_name,
        cpu_stat=stat("cpu.stat"),
        memory_events=stat("memory.events"),
    )


@parse_once
def parse_status_allowed(text: str) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
    """`grep -E '^(Cpus|Mems)_allowed_list' /proc/self/status` -> (cpus, mems).

    Cpus_allowed_list:	0-63
    Mems_allowed_list:	0-1
    """
    cpus = mems = None
    for line in text.splitlines():
        if ":" not in line:
            continue
        k, v = line.split(":", 1)
        try:
            if k.strip() == "Cpus_allowed_list":
                cpus = tuple(cpu_list(v))
            elif k.strip() == "Mems_allowed_list":
                mems = tuple(cpu_list(v))
        except ValueError:
            continue
    return cpus, mems


@parse_once
def parse_uid_map(text: str) -> list[tuple[int, int, int]]:
    """`cat /proc/self/uid_map` -> [(inside, outside, count)]; "0 100000 65536" means unprivileged.

    0     100000      65536
    """
    out = []
    for line in text.splitlines():
        p = line.split()
        if len(p) == 3 and all(x.isdigit() for x in p):
            out.append((int(p[0]), int(p[1]), int(p[2])))
    return out


# --------------------------------------------------------------------------- df / ulimit


@dataclass(frozen=True)
class DfRow:
    """One filesystem line of `df`."""

    filesystem: str
    size_bytes: int | None
    used_bytes: int | None
    avail_bytes: int | None
    mounted_on: str


@parse_once
def parse_df(text: str) -> list[DfRow]:
    """`df -h /dev/shm` (or `df -B1`) -> rows.

        Filesystem      Size  Used Avail Use% Mounted on
        shm              64M     0   64M   0% /dev/shm
    A long filesystem name wrapped onto its own line (old df) is joined with the next line.
    """
    rows: list[DfRow] = []
    pending = ""
    for line in text.splitlines():
        if not line.strip() or line.startswith("Filesystem"):
            continue
        parts = (pending + " " + line).split() if pending else line.split()
        if len(parts) == 1:
            pending = parts[0]
            continue
        pending = ""
        if len(parts) < 6:
            continue
        rows.append(
            DfRow(
                filesystem=parts[0],
                size_bytes=size_bytes(parts[1]),
                used_bytes=size_bytes(parts[2]),
                avail_bytes=size_bytes(parts[3]),
                mounted_on=" ".join(parts[5:]),
            )
        )
    return rows


# ulimit letter <- dash's names (dash prints "locked memory(kbytes) 64" instead of bash's "(kbytes, -l)").
_DASH_ULIMIT = {
    "time": "t",
    "file": "f",
    "data": "d",
    "stack": "s",
    "coredump": "c",
    "memory": "m",
    "locked memory": "l",
    "process": "u",
    "nofiles": "n",
    "vmemory": "v",
    "locks": "x",
    "rtprio": "r",
    "nice": "e",
    "sigpending": "i",
    "msgqueue": "q",
    "rttime": "R",
}


@parse_once
def parse_ulimit_a(text: str) -> dict[str, str]:
    """`ulimit -a` (bash or dash format) -> option letter -> value ("unlimited" or a number string).

        max locked memory           (kbytes, -l) 8192
        open files                          (-n) 1024
    dash:  `locked memory(kbytes) 8192`, `nofiles 1024`.
    """
    out: dict[str, str] = {}
    for line in text.splitlines():
        if m := re.match(r"^.*\(.*-([A-Za-z])\)\s+(\S+)\s*$", line):
            out.setdefault(m.group(1), m.group(2))
        elif m := re.match(r"^([a-z][a-z ]*?)(?:\([^)]*\))?\s+(\S+)\s*$", line.strip()):
            letter = _DASH_ULIMIT.get(m.group(1).strip())
            if letter:
                out.setdefault(letter, m.group(2))
    return out


def ulimit_kb(value: str | None) -> int | None:
    """ "unlimited" -> -1, "8192" -> 8192, anything else -> None."""
    if value is None:
        return None
    if value == "unlimited":
        return -1
    return int(value) if value.isdigit() else None


# --------------------------------------------------------------------------- /proc/devices, /dev nodes


@dataclass(frozen=True)
class ProcDevices:
    """/proc/devices: the character and block device majors by driver name."""

    char: dict[str, list[int]] = field(default_factory=dict)
    """name -> majors (a name can appear twice: infiniband_verbs 231 and 240)."""
    block: dict[str, list[int]] = field(default_factory=dict)

    def char_major(self, name: str) -> int | None:
        majors = self.char.get(name)
        return majors[0] if majors else None

    def char_name(self, major: int) -> str | None:
        for name, majors in self.char.items():
            if major in majors:
                return name
        return None


@parse_once
def parse_proc_devices(text: str) -> ProcDevices:
    """`cat /proc/devices` -> char and block majors by name.

    Character devices:
    195 nvidia-frontend
    510 nvidia-uvm
    Block devices:
      9 md
    """
    char: dict[str, list[int]] = {}
    block: dict[str, list[int]] = {}
    section = char
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("Character devices"):
            section = char
        elif s.startswith("Block devices"):
            section = block
        elif m := re.match(r"^(\d+)\s+(\S.*)$", s):
            section.setdefault(m.group(2).strip(), []).append(int(m.group(1)))
    return ProcDevices(char=char, block=block)


@dataclass(frozen=True)
class DevNode:
    """One entry of an `ls -l` listing of /dev (a device node, folder, file or link)."""

    path: str
    kind: str
    """"c" char, "b" block, "d" directory, "-" file, "l" link."""
    major: int | None = None
    minor: int | None = None
    mode: str = ""
    owner: str = ""
    group: str = ""

    @property
    def world_rw(self) -> bool:
        return len(self.mode) >= 10 and self.mode[7] == "r" and self.mode[8] == "w"


@parse_once
def parse_ls_dev(text: str) -> list[DevNode]:
    """`ls -l /dev/nvidia*` (directories such as /dev/nvidia-caps listed in their own section).

    crw-rw-rw- 1 root root 195,   0 Mar  3 10:01 /dev/nvidia0
    crw-rw-rw- 1 root root 510,   0 Mar  3 10:01 /dev/nvidia-uvm

    /dev/nvidia-caps:
    total 0
    cr-------- 1 root root 235, 1 Mar  3 10:01 nvidia-cap1
    """
    nodes: list[DevNode] = []
    directory = ""
    for line in text.splitlines():
        s = line.rstrip()
        if not s or s.startswith("total "):
            continue
        if s.endswith(":") and " " not in s:
            directory = s[:-1].rstrip("/") + "/"
            continue
        m = re.match(
            r"^([cbdl-])([rwxsStT-]{9})[.+]?\s+\d+\s+(\S+)\s+(\S+)\s+(?:(\d+),\s*(\d+)|\d+)\s+"
            r"\S+\s+\S+\s+\S+\s+(.+)$",
            s,
        )
        if not m:
            continue
        name = m.group(7).split(" -> ")[0]
        path = name if name.startswith("/") else directory + name
        nodes.append(
            DevNode(
                path=path,
                kind=m.group(1),
                mode=m.group(1) + m.group(2),
                owner=m.group(3),
                group=m.group(4),
                major=int(m.group(5)) if m.group(5) else None,
                minor=int(m.group(6)) if m.group(6) else None,
            )
        )
    return nodes


@parse_once
def parse_detect_virt(text: str) -> str | None:
    """`systemd-detect-virt [-c]` -> "lxc", "docker", "kvm", "none", ...; None when empty."""
    line = first_line(text)
    return line if re.fullmatch(r"[a-z][a-z0-9_-]*", line) else None
