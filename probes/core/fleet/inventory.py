"""Fleet inventories (`--hosts FILE`): a plain list of `[user@]host[:port]`, or an Ansible INI inventory.

Ansible INI: `[group]` host sections, `[group:vars]` variables, `[parent:children]` groups of groups (a
child's hosts get the parent's vars; deeper groups win, as in Ansible: all < parent < child < host vars),
`;`/`#` comments, host lines `alias ansible_host=10.0.0.5 ansible_port=2222 ansible_user=root`. The
SSH variables Ansible honours are honoured under both spellings (`ansible_host`/`ansible_ssh_host`,
`ansible_port`/`ansible_ssh_port`, `ansible_user`/`ansible_ssh_user`,
`ansible_private_key_file`/`ansible_ssh_private_key_file`); every other `ansible_*` variable is
reported as ignored. A host listed twice (same user, address, port) is audited once.

The file is read defensively: only a regular file (never a device or FIFO: `/dev/zero` grows without end,
a FIFO blocks forever), at most MAX_INVENTORY_BYTES and MAX_HOSTS hosts.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shlex
import stat
from dataclasses import dataclass, field

from gpuaudit.probes.core.collect.redfish import BmcConfigError, parse_address
from gpuaudit.probes.core.collect.targets import parse_ssh_address
from gpuaudit.probes.core.errors import UsageError

MAX_INVENTORY_BYTES = 4 * 1024 * 1024
MAX_HOSTS = 10_000

HOST_VARS = ("ansible_host", "ansible_ssh_host")
PORT_VARS = ("ansible_port", "ansible_ssh_port")
USER_VARS = ("ansible_user", "ansible_ssh_user")
KEY_VARS = ("ansible_private_key_file", "ansible_ssh_private_key_file")
BMC_VARS = ("gpuaudit_bmc",)
"""The host's BMC address for --bmc reads (BIOS settings over Redfish); credentials/CA come from the command line."""
HONOURED = frozenset(HOST_VARS + PORT_VARS + USER_VARS + KEY_VARS)

_SECTION = re.compile(r"^\[(?P<name>[A-Za-z0-9_][A-Za-z0-9_.-]*)(?::(?P<kind>vars|children))?\]$")
_VAR = re.compile(r"^(?P<key>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)$", re.DOTALL)
# Ansible host ranges: node[01:10], db-[a:f], node[1:9:2]; an IPv6 literal `[::1]` or `[2001:db8::1]` is not one
_RANGE = re.compile(r"\[[0-9A-Za-z]+:[0-9A-Za-z]+(?::[0-9]+)?\]")


@dataclass(frozen=True, slots=True)
class FleetHost:
    """One inventory entry resolved to an SSH spec (`[user@]host[:port]`) and an optional key file."""

    spec: str
    name: str
    groups: tuple[str, ...] = ()
    identity: str | None = None
    bmc: str | None = None
    """`gpuaudit_bmc=ADDRESS`: this host's BMC, read over Redfish like --bmc (issue 27)."""


@dataclass(frozen=True, slots=True)
class Inventory:
    hosts: list[FleetHost]
    ignored: tuple[str, ...] = ()
    """`ansible_*` variables present in the file that an SSH audit does not use (ansible_become, ...)."""

    def ignored_note(self) -> str | None:
        """One line for stderr naming the ignored variables, or None."""
        if not self.ignored:
            return None
        return (
            f"inventory: ignored variable(s) {', '.join(self.ignored)} (used: ansible_host, ansible_port, "
            "ansible_user, ansible_private_key_file and their ansible_ssh_* spellings)"
        )


@dataclass(slots=True)
class _Pending:
    name: str
    user: str | None
    host: str
    port: int | None
    hostvars: dict[str, str]
    groups: list[str]
    line: int


@dataclass(slots=True)
class _Parsed:
    pending: dict[str, _Pending] = field(default_factory=dict)
    group_vars: dict[str, dict[str, str]] = field(default_factory=dict)
    children: dict[str, list[str]] = field(default_factory=dict)


def _strip_comment(line: str) -> str:
    # `#` and `;` start a comment line in Ansible INI; within a line only `#` after whitespace does
    # (ansible-core refuses `h1 ; note`, and so does this reader)
    stripped = line.strip()
    if stripped.startswith(("#", ";")):
        return ""
    return re.split(r"\s#", stripped, maxsplit=1)[0].strip()


def _join_spec(address: str, user: str | None, port: str | None) -> str:
    host = f"[{address}]" if ":" in address and not address.startswith("[") else address
    return f"{user + '@' if user else ''}{host}{':' + port if port else ''}"


def _first(levels: list[dict[str, str]], names: tuple[str, ...]) -> str | None:
    """The most specific level that sets any spelling wins (host > child group > parent > all); within one
    level the current name beats the old `ansible_ssh_*` one."""
    for level in reversed(levels):
        for n in names:
            if level.get(n):
                return level[n]
    return None


def _host_line(line: str, where: str) -> tuple[str, dict[str, str]]:
    try:
        first, *rest = shlex.split(line, comments=False, posix=True)
    except ValueError as exc:
        raise UsageError(f"{where}: cannot read the line: {exc}") from None
    hvars: dict[str, str] = {}
    for token in rest:
        vm = _VAR.match(token)
        if not vm:
            raise UsageError(f"{where}: cannot read {token!r}: expected key=value after the host")
        hvars[vm["key"]] = vm["value"]
    if _RANGE.search(first):
        raise UsageError(
            f"{where}: host ranges like {first!r} are Ansible's to expand; resolve the inventory with "
            "`ansible-inventory -i FILE --list > hosts.json` and pass --hosts hosts.json"
        )
    return first, hvars


def _parse(text: str, source: str) -> _Parsed:
    out = _Parsed()
    section: tuple[str, str] = ("ungrouped", "hosts")
    lines = [_strip_comment(raw) for raw in text.splitlines()]
    # a plain list (no section, no variable): every line is its own target, `h:2201` and `h:2202` two hosts;
    # in an Ansible inventory they are one host `h` (ansible-core's rule, below)
    plain = not any(ln and (_SECTION.match(ln) or "=" in ln) for ln in lines)
    for n, raw in enumerate(text.splitlines(), 1):
        line = _strip_comment(raw)
        if not line:
            continue
        m = _SECTION.match(line)
        if m:
            section = (m["name"], m["kind"] or "hosts")
            if section[1] == "children":
                out.children.setdefault(section[0], [])
            continue
        where = f"{source}:{n}"
        group, kind = section
        if kind == "children":
            out.children[group].append(line.split()[0])
            continue
        if kind == "vars":
            key, sep, value = line.partition("=")
            if not sep or not key.strip():
                raise UsageError(
                    f"{where}: cannot read {line[:60]!r}: expected key=value in [{group}:vars]"
                )
            out.group_vars.setdefault(group, {})[key.strip()] = value.strip().strip("'\"")
            continue
        first, hvars = _host_line(line, where)
        user_part, _, bare = first.rpartition("@")
        try:  # a bare IPv6 address is a host name to ansible-core (no port in it)
            ipaddress.IPv6Address(bare)
            as_address = f"{user_part + '@' if user_part else ''}[{bare}]"
        except ValueError:
            as_address = first
        try:
            addr = parse_ssh_address(as_address)
        except UsageError as exc:
            raise UsageError(f"{where}: {exc}") from None
        groups = [] if group == "ungrouped" else [group]
        name = first
        bare_name = first.rsplit(":", 1)[0].strip("[]") if addr.port is not None else first
        if plain and addr.port is not None and bare_name in out.pending:
            # a plain list's `h:2202` after `h:2201` is a second target (ansible-core would merge them into
            # one host `h`: a plain list is not an Ansible inventory, and dropping a target silently is worse)
            hvars = {"ansible_port": str(addr.port), **hvars}
        elif addr.port is not None:  # as ansible-core: `h:2222` is host `h` with ansible_port=2222,
            name = first.rsplit(":", 1)[0]  # which a variable on the same line overrides
            if name.startswith("[") and name.endswith(
                "]"
            ):  # `[2001:db8::2]:2222` is host 2001:db8::2
                name = name[1:-1]
            if (
                name not in out.pending
            ):  # a later `h:2202` of a known host: ansible-core keeps the port
                hvars = {"ansible_port": str(addr.port), **hvars}
        if (
            name in out.pending
        ):  # the same inventory name in two groups is one host (Ansible's rule)
            p = out.pending[name]
            p.groups = list(dict.fromkeys(p.groups + groups))
            p.hostvars.update(hvars)
        else:
            if len(out.pending) >= MAX_HOSTS:
                raise UsageError(f"{where}: more than {MAX_HOSTS} hosts in one inventory; split it")
            out.pending[name] = _Pending(
                name=name,
                user=addr.user,
                host=addr.host,
                port=None,
                hostvars=hvars,
                groups=groups,
                line=n,
            )
    return out


def _ancestry(groups: list[str], children: dict[str, list[str]]) -> list[str]:
    """The host's groups and every parent group above them, shallowest (applied first) to deepest."""
    parents: dict[str, set[str]] = {}
    for parent, kids in children.items():
        for kid in kids:
            parents.setdefault(kid, set()).add(parent)
    depth: dict[str, int] = {}

    def climb(g: str, seen: frozenset[str]) -> int:  # depth below `all`; a cycle stops the climb
        if g in depth:
            return depth[g]
        ups = [climb(p, seen | {g}) for p in sorted(parents.get(g, ())) if p not in seen]
        depth[g] = 1 + max(ups, default=0)
        return depth[g]

    todo, found = list(groups), []
    while todo:
        g = todo.pop()
        if g in found:
            continue
        found.append(g)
        todo.extend(sorted(parents.get(g, ())))
    for g in found:
        climb(g, frozenset())
    return sorted(found, key=lambda g: (depth[g], g))


def _refuse_loops(children: dict[str, list[str]], source: str) -> None:
    """ansible-core refuses a loop of :children groups; so does this reader (one line naming it)."""
    state: dict[str, int] = {}

    def visit(g: str, path: list[str]) -> None:
        state[g] = 1
        for kid in children.get(g, ()):
            if state.get(kid) == 1:
                loop = " -> ".join(path[path.index(kid) :] + [g, kid]) if kid in path else kid
                raise UsageError(
                    f"{source}: the :children groups form a loop ({loop}); ansible-core refuses it too"
                )
            if kid not in state:
                visit(kid, path + [g])
        state[g] = 2

    for g in list(children):
        if g not in state:
            visit(g, [])


def read_inventory(text: str, source: str = "inventory") -> Inventory:
    """Inventory text -> hosts in file order (duplicates dropped) and the ignored variables; UsageError on a bad line."""
    parsed = _parse(text, source)
    _refuse_loops(parsed.children, source)
    hosts: list[FleetHost] = []
    seen: set[str] = set()
    used_vars: set[str] = set()
    for p in parsed.pending.values():
        levels = [parsed.group_vars.get("all", {})]
        levels += [parsed.group_vars.get(g, {}) for g in _ancestry(p.groups, parsed.children)]
        levels.append(p.hostvars)
        for level in levels:
            used_vars.update(level)
        user = p.user or _first(levels, USER_VARS)
        port = _first(levels, PORT_VARS)
        spec = _join_spec(_first(levels, HOST_VARS) or p.host, user, port)
        try:
            parse_ssh_address(spec)
        except UsageError as exc:
            raise UsageError(f"{source}:{p.line}: {exc}") from None
        if spec in seen:  # two names for one address: audit it once
            continue
        seen.add(spec)
        bmc = _first(levels, BMC_VARS)
        if bmc is not None:
            try:
                parse_address(bmc)
            except BmcConfigError as exc:
                raise UsageError(f"{source}:{p.line}: gpuaudit_bmc: {exc}") from None
        hosts.append(
            FleetHost(
                spec=spec,
                name=p.name,
                groups=tuple(p.groups),
                identity=_first(levels, KEY_VARS),
                bmc=bmc,
            )
        )
    ignored = tuple(sorted(v for v in used_vars if v.startswith("ansible_") and v not in HONOURED))
    return Inventory(hosts, ignored)


def parse_inventory(text: str, source: str = "inventory") -> list[FleetHost]:
    """read_inventory's hosts.

    >>> [h.spec for h in parse_inventory("[gpu]\\nnode1 ansible_host=10.0.0.5 ansible_user=root\\n10.0.0.6:2222\\n")]
    ['root@10.0.0.5', '10.0.0.6:2222']
    """
    return read_inventory(text, source).hosts


def read_inventory_file(path: str) -> str:
    """The text of a regular file of at most MAX_INVENTORY_BYTES; UsageError otherwise (checked before reading)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise UsageError(f"--hosts {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        what = (
            "a directory"
            if stat.S_ISDIR(st.st_mode)
            else "a FIFO"
            if stat.S_ISFIFO(st.st_mode)
            else "a device"
            if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
            else "a socket or special file"
        )
        raise UsageError(f"--hosts {path}: {what}, not a regular inventory file")
    if st.st_size > MAX_INVENTORY_BYTES:
        raise UsageError(
            f"--hosts {path}: too large ({st.st_size} bytes, limit {MAX_INVENTORY_BYTES})"
        )
    try:
        # O_NONBLOCK: if the path was swapped for a FIFO since the stat, open must not block; fstat re-checks
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise UsageError(f"--hosts {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UsageError(f"--hosts {path}: not a regular inventory file")
        data = fh.read(MAX_INVENTORY_BYTES + 1)
    if len(data) > MAX_INVENTORY_BYTES:
        raise UsageError(f"--hosts {path}: too large (over {MAX_INVENTORY_BYTES} bytes)")
    return data.decode("utf-8", errors="replace")


def load_inventory(path: str) -> Inventory:
    """Read and parse an inventory file; UsageError when it is unusable or lists no host."""
    inventory = read_inventory(read_inventory_file(path), source=path)
    if not inventory.hosts:
        raise UsageError(f"--hosts {path}: no hosts in the inventory")
    return inventory
