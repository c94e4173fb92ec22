"""Fleet mode: `--hosts FILE` audits every host of an inventory, a global cap on connections at once.

Inventory: either one `[user@]host[:port]` per line (`#` comments, blank lines), or an Ansible-style INI
inventory: `[group]` headers, host lines `alias ansible_host=10.0.0.5 ansible_port=2222 ansible_user=root`,
`[group:vars]` sections whose `ansible_user`/`ansible_port` apply to the group's hosts (`[all:vars]` to
every host), `[group:children]` sections (ignored: the children list their own hosts), `;`/`#` comments.
A host listed twice (same user, address, port) is audited once.

Each host is audited alone (host role only) with the probes of a normal audit; a failing host never stops
the others. `--json` prints ONE document on stdout:

    {"fleet": [{"target": "root@10.0.0.5:22", "name": "gpu01", "groups": ["gpu"], "exit_status": 0,
                "duration_s": 1.9, "error": null, "snapshot": {...Snapshot...}},
               {"target": "10.0.0.6", "name": "10.0.0.6", "groups": [], "exit_status": 3,
                "duration_s": 5.0, "error": "10.0.0.6: connection refused", "snapshot": null}],
     "summary": {"targets": 2, "reachable": 1, "failed": 1, "exit_status": 3, "duration_s": 5.1,
                 "max_connections": 32, "findings": {"critical": 0, "warning": 3, ...}}}

`fleet` keeps the inventory's order. `exit_status` per host follows the headless rules (0 fine, 1 a finding
reached --fail-on, 3 could not be audited); the process exits with the worst of them. Without --json a short
per-host table goes to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import re
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

_GROUP = re.compile(r"^\[(?P<name>[A-Za-z_][A-Za-z0-9_.-]*)(?::(?P<kind>vars|children))?\]$")
_VAR = re.compile(r"^(?P<key>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>\S*)$")


@dataclass(frozen=True, slots=True)
class FleetHost:
    """One inventory entry resolved to an SSH spec (`[user@]host[:port]`)."""

    spec: str
    name: str
    groups: tuple[str, ...] = ()


@dataclass(slots=True)
class _Pending:
    name: str
    user: str | None
    host: str
    port: int | None
    hostvars: dict[str, str]
    groups: list[str]
    line: int


def _strip_comment(line: str) -> str:
    # `#` and `;` start comments in Ansible INI; inside a host line only after whitespace
    stripped = line.strip()
    if stripped.startswith(("#", ";")):
        return ""
    return re.split(r"\s[#;]", stripped, maxsplit=1)[0].strip()


def _join_spec(address: str, user: str | None, port: str | None) -> str:
    host = f"[{address}]" if ":" in address else address
    return f"{user + '@' if user else ''}{host}{':' + port if port else ''}"


def parse_inventory(text: str, source: str = "inventory") -> list[FleetHost]:
    """Inventory text -> hosts in file order, duplicates dropped; UsageError on a malformed line.

    >>> [h.spec for h in parse_inventory("[gpu]\\nnode1 ansible_host=10.0.0.5 ansible_user=root\\n10.0.0.6:2222\\n")]
    ['root@10.0.0.5', '10.0.0.6:2222']
    """
    from gpuaudit.probes.core.errors import UsageError
    from gpuaudit.probes.core.targets import parse_ssh_address

    pending: dict[str, _Pending] = {}
    group_vars: dict[str, dict[str, str]] = {}
    section: tuple[str, str] = ("ungrouped", "hosts")
    for n, raw in enumerate(text.splitlines(), 1):
        line = _strip_comment(raw)
        if not line:
            continue
        m = _GROUP.match(line)
        if m:
            section = (m["name"], m["kind"] or "hosts")
            continue
        where = f"{source}:{n}"
        if section[1] == "children":
            continue
        if section[1] == "vars":
            key, sep, value = line.partition("=")
            if sep:
                group_vars.setdefault(section[0], {})[key.strip()] = value.strip().strip("'\"")
            continue
        first, *rest = line.split()
        hvars: dict[str, str] = {}
        for token in rest:
            vm = _VAR.match(token)
            if not vm:
                raise UsageError(f"{where}: cannot read {token!r}: expected key=value after the host")
            hvars[vm["key"]] = vm["value"].strip("'\"")
        if re.search(r"\[[^\]]*:[^\]]*\]", first) and not first.startswith("["):
            raise UsageError(f"{where}: host ranges like {first!r} are not supported; list the hosts")
        try:
            addr = parse_ssh_address(first)
        except UsageError as exc:
            raise UsageError(f"{where}: {exc}") from None
        group = [] if section[0] == "ungrouped" else [section[0]]
        if first in pending:  # the same inventory name in two groups is one host (Ansible's rule)
            p = pending[first]
            p.groups = list(dict.fromkeys(p.groups + group))
            p.hostvars.update(hvars)
        else:
            pending[first] = _Pending(name=first, user=addr.user, host=addr.host, port=addr.port, hostvars=hvars,
                                      groups=group, line=n)

    hosts: list[FleetHost] = []
    seen: set[str] = set()
    for p in pending.values():
        merged: dict[str, str] = dict(group_vars.get("all", {}))
        for g in p.groups:  # a group's vars beat [all:vars]; host vars beat both
            merged.update(group_vars.get(g, {}))
        merged.update(p.hostvars)
        user = p.user or merged.get("ansible_user") or None
        port = str(p.port) if p.port else (merged.get("ansible_port") or None)
        spec = _join_spec(merged.get("ansible_host", p.host), user, port)
        try:
            parse_ssh_address(spec)
        except UsageError as exc:
            raise UsageError(f"{source}:{p.line}: {exc}") from None
        if spec in seen:  # two names for one address: audit it once
            continue
        seen.add(spec)
        hosts.append(FleetHost(spec=spec, name=p.name, groups=tuple(p.groups)))
    return hosts


def load_inventory(path: str) -> list[FleetHost]:
    from gpuaudit.probes.core.errors import UsageError

    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UsageError(f"--hosts {path}: {exc.strerror or exc}") from None
    hosts = parse_inventory(text, source=path)
    if not hosts:
        raise UsageError(f"--hosts {path}: no hosts in the inventory")
    return hosts


@dataclass(slots=True)
class HostResult:
    host: FleetHost
    exit_status: int
    duration_s: float
    snapshot_json: str | None = None
    """The host's Snapshot, already serialised: 100 hosts' models need not stay alive together."""
    error: str | None = None
    counts: dict[str, int] = field(default_factory=dict)


async def audit_host(host: FleetHost, args: argparse.Namespace, ssh: object, limit: asyncio.Semaphore) -> HostResult:
    """One host's audit under the fleet-wide connection cap; every failure becomes data."""
    from gpuaudit.probes.core.runner import Audit
    from gpuaudit.probes.core.session import live_bindings
    from gpuaudit.probes.core.targets import parse_host_spec
    from gpuaudit.snapshots.listing import severity_counts
    from gpuaudit.snapshots.schema import Snapshot
    from gpuaudit.tui.headless import EXIT_TARGET_FAILED, collect, exit_code
    from gpuaudit.tui.session_setup import AuditSetup, audit_options, selected_probes

    async with limit:
        t0 = time.monotonic()
        try:
            bindings = live_bindings(parse_host_spec(host.spec), None, ssh)  # type: ignore[arg-type]
            setup = AuditSetup(Audit(bindings, selected_probes(args), audit_options(args)), "live")
            run = await collect(setup)
        except Exception as exc:  # a bug or odd host must not stop the fleet
            return HostResult(host, EXIT_TARGET_FAILED, time.monotonic() - t0, error=f"{exc.__class__.__name__}: {exc}")
        duration = time.monotonic() - t0
    failed = [s.reason or "failed" for s in run.target_states.values() if s.state == "failed"]
    snapshot = Snapshot.from_run(run)
    return HostResult(host, exit_code(run, args.fail_on), duration, snapshot.model_dump_json(),
                      error=failed[0] if failed else None, counts=severity_counts(snapshot))


async def run_fleet(hosts: list[FleetHost], args: argparse.Namespace, ssh: object) -> list[HostResult]:
    limit = asyncio.Semaphore(args.max_connections)
    return list(await asyncio.gather(*(audit_host(h, args, ssh, limit) for h in hosts)))


def fleet_document(results: Iterable[HostResult], duration_s: float, max_connections: int) -> str:
    """The --json document, assembled from each host's pre-serialised snapshot."""
    results = list(results)
    totals: dict[str, int] = {}
    entries = []
    for r in results:
        for s, n in r.counts.items():
            totals[s] = totals.get(s, 0) + n
        head = json.dumps({"target": r.host.spec, "name": r.host.name, "groups": list(r.host.groups),
                           "exit_status": r.exit_status, "duration_s": round(r.duration_s, 3), "error": r.error})
        entries.append(head[:-1] + ', "snapshot": ' + (r.snapshot_json or "null") + "}")
    summary = {"targets": len(results), "reachable": sum(r.snapshot_json is not None and r.exit_status != 3 for r in results),
               "failed": sum(r.exit_status == 3 for r in results),
               "exit_status": max((r.exit_status for r in results), default=0),
               "duration_s": round(duration_s, 3), "max_connections": max_connections, "findings": totals}
    return '{"fleet": [\n' + ",\n".join(entries) + '\n], "summary": ' + json.dumps(summary) + "}\n"


def fleet_table(results: list[HostResult]) -> str:
    """A short per-host table for a terminal."""
    width = max([len("target")] + [len(r.host.spec) for r in results])
    lines = [f"{'target':<{width}}  exit  crit  warn  time    note"]
    for r in results:
        c = r.counts
        note = r.error or ("" if r.host.name == r.host.spec else r.host.name)
        lines.append(f"{r.host.spec:<{width}}  {r.exit_status:>4}  {c.get('critical', 0):>4}  {c.get('warning', 0):>4}  "
                     f"{r.duration_s:5.1f}s  {note[:100]}")
    worst = max((r.exit_status for r in results), default=0)
    failed = sum(r.exit_status == 3 for r in results)
    lines.append(f"{len(results)} host(s), {failed} unreachable, exit {worst}")
    return "\n".join(lines) + "\n"


def write_fleet_prom(results: list[HostResult], path: Path) -> None:
    """--prom in fleet mode: ONE textfile for every host, each series labelled node="<inventory name>"."""
    from gpuaudit.probes.core.prometheus import NodeAudit, from_snapshot, render, write_textfile
    from gpuaudit.snapshots.schema import Snapshot

    nodes: dict[str | None, NodeAudit] = {}
    for r in results:
        if r.snapshot_json is not None:
            nodes[r.host.name] = from_snapshot(Snapshot.model_validate_json(r.snapshot_json))
        else:
            nodes[r.host.name] = NodeAudit(findings=(), targets={"host": False}, created_at=None, duration_s=None,
                                           probe_durations={}, info={})
    write_textfile(Path(path), render(nodes))


def main(args: argparse.Namespace) -> int:
    from gpuaudit.tui.session_setup import ssh_options

    hosts = load_inventory(args.hosts)
    t0 = time.monotonic()
    # one connection per host: in a fleet the handshakes, not the channel cap, are the cost
    ssh = dataclasses.replace(ssh_options(args), connections=1)
    results = asyncio.run(run_fleet(hosts, args, ssh))
    elapsed = time.monotonic() - t0
    if getattr(args, "prom", None):
        write_fleet_prom(results, args.prom)
    if args.json:
        sys.stdout.write(fleet_document(results, elapsed, args.max_connections))
    else:
        sys.stdout.write(fleet_table(results))
    for r in results:
        if r.exit_status == 3:
            print(f"gpuaudit-tui: {r.host.spec} failed: {r.error}", file=sys.stderr)
    sys.stdout.flush()
    return max((r.exit_status for r in results), default=0)
