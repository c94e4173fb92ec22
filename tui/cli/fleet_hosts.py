"""Fleet mode: `--hosts FILE` audits every host of an inventory, a global cap on connections at once.

Inventory: the JSON of `ansible-inventory -i SOURCE --list` (ranges, YAML, group_vars/, plugins and vaults are then
Ansible's job: probes/core/fleet/ansible_inventory.py), one `[user@]host[:port]` per line (`#` comments, blank
lines), or an Ansible INI inventory read natively (probes/core/fleet/inventory.py: groups, vars, children, the
SSH variables under both Ansible spellings; other ansible_* variables are named as ignored; host ranges, YAML and
group_vars/ are refused with one line pointing at the JSON path). A host listed twice is audited once.

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
per-host table goes to stdout. On a terminal (stdin and stdout TTYs) without --json/--prom/--health, the fleet
screen (tui/screens/fleet.py) shows the audit live instead, and the table is printed when it closes; quitting
before every host finished exits 3.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from gpuaudit.probes.core.collect.targets import parse_host_spec
from gpuaudit.probes.core.fleet.ansible_inventory import load_any_inventory
from gpuaudit.probes.core.fleet.inventory import FleetHost, load_inventory, parse_inventory  # noqa: F401 - re-exported
from gpuaudit.probes.core.fleet.prometheus import NodeAudit, from_snapshot, write_prom_file
from gpuaudit.probes.core.parsing import parse_scope
from gpuaudit.probes.core.record import fast_json
from gpuaudit.probes.core.run.request import AuditRequest
from gpuaudit.probes.core.run.runner import Audit
from gpuaudit.probes.core.run.session import live_bindings, run_sync
from gpuaudit.snapshots.baseline import apply_baseline
from gpuaudit.snapshots.listing import severity_counts
from gpuaudit.snapshots.schema import Snapshot
from gpuaudit.tui.cli import bridge
from gpuaudit.tui.cli.headless import EXIT_TARGET_FAILED, collect, exit_code
from gpuaudit.tui.cli.session_setup import AuditSetup, audit_options, selected_probes, ssh_options


@dataclass(slots=True)
class HostResult:
    host: FleetHost
    exit_status: int
    duration_s: float
    snapshot_json: str | bytes | None = None
    """The host's Snapshot, already serialised (UTF-8 JSON bytes as pydantic writes them, no str round trip): 100
    hosts' models need not stay alive together."""
    error: str | None = None
    counts: dict[str, int] = field(default_factory=dict)


async def audit_host(
    host: FleetHost,
    request: AuditRequest,
    ssh: object,
    limit: asyncio.Semaphore,
    on_start: Callable[[FleetHost], None] | None = None,
) -> HostResult:
    """One host's audit under the fleet-wide connection cap; every failure becomes data.

    `on_start(host)` is called once the cap lets this host's audit begin (the TUI's "auditing"). Its outputs are
    parsed once for its probes, roofline and snapshot in a parse cache of its own, freed when the host is done.
    """
    with parse_scope():
        return await _audit_host(host, request, ssh, limit, on_start)


async def _audit_host(
    host: FleetHost,
    request: AuditRequest,
    ssh: object,
    limit: asyncio.Semaphore,
    on_start: Callable[[FleetHost], None] | None,
) -> HostResult:
    async with limit:
        if on_start is not None:
            on_start(host)
        t0 = time.monotonic()
        try:
            if host.identity:  # the inventory's ansible_private_key_file for this host
                ssh = dataclasses.replace(ssh, identity=host.identity)  # type: ignore[type-var]
            if host.bmc:  # the inventory's gpuaudit_bmc for this host (issue 27)
                request = dataclasses.replace(request, bmc=host.bmc)
            bindings = live_bindings(parse_host_spec(host.spec), None, ssh)  # type: ignore[arg-type]
            setup = AuditSetup(
                Audit(bindings, selected_probes(request), audit_options(request)), "live"
            )
            run = await collect(setup)
        except Exception as exc:  # a bug or odd host must not stop the fleet
            return HostResult(
                host,
                EXIT_TARGET_FAILED,
                time.monotonic() - t0,
                error=f"{exc.__class__.__name__}: {exc}",
            )
        duration = time.monotonic() - t0
    run = apply_baseline(run)  # the host's regression.* findings when it has a baseline (issue 26)
    failed = [s.reason or "failed" for s in run.target_states.values() if s.state == "failed"]
    snapshot = Snapshot.from_run(run)
    return HostResult(
        host,
        exit_code(run, request.fail_on),
        duration,
        snapshot.to_json(),  # model_dump_json's bytes, not decoded
        error=failed[0] if failed else None,
        counts=severity_counts(snapshot),
    )


async def run_fleet(
    hosts: list[FleetHost],
    request: AuditRequest,
    ssh: object,
    on_start: Callable[[FleetHost], None] | None = None,
    on_done: Callable[[HostResult], None] | None = None,
) -> list[HostResult]:
    """Every host's audit, at most --max-connections at once; `on_done(result)` as each one ends."""
    limit = asyncio.Semaphore(request.max_connections)

    async def one(host: FleetHost) -> HostResult:
        result = await audit_host(host, request, ssh, limit, on_start)
        if on_done is not None:
            on_done(result)
        return result

    # each host's snapshot JSON through pydantic_core's encoder, loaded once for the whole fleet
    with fast_json() if len(hosts) > 1 else contextlib.nullcontext():
        return list(await asyncio.gather(*(one(h) for h in hosts)))


class Spool:
    """Each host's snapshot JSON in an unlinked temporary file until the document is written (issue 30): 1,000 GPU
    servers' snapshots (~0.7 MB each) need not stay in memory together. `keep` is the fleet's on_done for the
    text outputs; a kept result's `snapshot_json` becomes "" (still "has a snapshot") and `text(r)` reads it back."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile()
        self._where: dict[int, tuple[int, int]] = {}

    def keep(self, result: HostResult) -> None:
        if not result.snapshot_json:
            return
        data = result.snapshot_json
        if isinstance(data, str):
            data = data.encode("utf-8", errors="surrogateescape")
        self._file.seek(0, 2)
        self._where[id(result)] = (self._file.tell(), len(data))
        self._file.write(data)
        result.snapshot_json = ""

    def text(self, result: HostResult) -> str | None:
        where = self._where.get(id(result))
        if where is None:
            return _as_text(result.snapshot_json)
        self._file.seek(where[0])
        return self._file.read(where[1]).decode("utf-8", errors="surrogateescape")


def _as_text(doc: str | bytes | None) -> str | None:
    return doc.decode("utf-8", errors="surrogateescape") if isinstance(doc, bytes) else doc


def fleet_document_parts(
    results: Iterable[HostResult],
    duration_s: float,
    max_connections: int,
    text: Callable[[HostResult], str | None] = lambda r: _as_text(r.snapshot_json),
) -> Iterator[str]:
    """The --json document in pieces (one per host), assembled from each host's pre-serialised snapshot: written
    out piece by piece, the document is never one string in memory."""
    results = list(results)
    totals: dict[str, int] = {}
    yield '{"fleet": [\n'
    for i, r in enumerate(results):
        for s, n in r.counts.items():
            totals[s] = totals.get(s, 0) + n
        head = json.dumps(
            {
                "target": r.host.spec,
                "name": r.host.name,
                "groups": list(r.host.groups),
                "exit_status": r.exit_status,
                "duration_s": round(r.duration_s, 3),
                "error": r.error,
            }
        )
        sep = ",\n" if i else ""
        yield sep + head[:-1] + ', "snapshot": ' + (text(r) or "null") + "}"
    summary = {
        "targets": len(results),
        "reachable": sum(r.snapshot_json is not None and r.exit_status != 3 for r in results),
        "failed": sum(r.exit_status == 3 for r in results),
        "exit_status": max((r.exit_status for r in results), default=0),
        "duration_s": round(duration_s, 3),
        "max_connections": max_connections,
        "findings": totals,
    }
    yield '\n], "summary": ' + json.dumps(summary) + "}\n"


def fleet_document(results: Iterable[HostResult], duration_s: float, max_connections: int) -> str:
    """The --json document as one string (fleet_document_parts joined)."""
    return "".join(fleet_document_parts(results, duration_s, max_connections))


def fleet_table(results: list[HostResult]) -> str:
    """A short per-host table for a terminal."""
    width = max([len("target")] + [len(r.host.spec) for r in results])
    lines = [f"{'target':<{width}}  exit  crit  warn  time    note"]
    for r in results:
        c = r.counts
        note = r.error or ("" if r.host.name == r.host.spec else r.host.name)
        lines.append(
            f"{r.host.spec:<{width}}  {r.exit_status:>4}  {c.get('critical', 0):>4}  {c.get('warning', 0):>4}  "
            f"{r.duration_s:5.1f}s  {note[:100]}"
        )
    worst = max((r.exit_status for r in results), default=0)
    failed = sum(r.exit_status == 3 for r in results)
    lines.append(f"{len(results)} host(s), {failed} unreachable, exit {worst}")
    return "\n".join(lines) + "\n"


def write_fleet_prom(
    results: list[HostResult],
    path: Path,
    text: Callable[[HostResult], str | bytes | None] = lambda r: r.snapshot_json,
) -> None:
    """--prom in fleet mode: ONE textfile for every host, each series labelled gpuaudit_node="<inventory
    name>", in the compact layout (check series at unknown or worse); an unreachable host keeps its last
    verdicts from the file being replaced."""

    nodes: dict[str | None, NodeAudit] = {}
    for r in results:
        if (doc := text(r)) is not None:
            nodes[r.host.name] = from_snapshot(Snapshot.model_validate_json(doc))
        else:
            nodes[r.host.name] = NodeAudit(
                findings=(),
                targets={"host": False},
                created_at=None,
                duration_s=None,
                probe_durations={},
                info={},
            )
    write_prom_file(Path(path), nodes)


def wants_screen(request: AuditRequest) -> bool:
    """The fleet screen on a terminal; --json, --prom, --health or a pipe keep the text/JSON output."""
    if request.json or request.prom or request.health:
        return False
    return sys.stdin.isatty() and sys.stdout.isatty()


def run_screen(hosts: list[FleetHost], request: AuditRequest, ssh: object) -> list[HostResult]:
    """The live fleet screen (tui/interactive.py): rows go pending -> auditing -> done while the audit runs."""
    print(
        f"gpuaudit-tui: {len(hosts)} host(s): opening the fleet screen…",
        file=sys.stderr,
        flush=True,
    )
    return bridge.interactive().run_fleet_screen(hosts, request, ssh, run_fleet)


def main(request: AuditRequest) -> int:

    inventory = load_any_inventory(request.hosts)
    hosts = inventory.hosts
    if inventory.ignored_note():
        print(f"gpuaudit-tui: {inventory.ignored_note()}", file=sys.stderr)
    t0 = time.monotonic()
    # one connection per host: in a fleet the handshakes, not the channel cap, are the cost
    ssh = dataclasses.replace(ssh_options(request), connections=1)
    if wants_screen(request):
        results = run_screen(hosts, request, ssh)
        sys.stdout.write(
            fleet_table(results)
        )  # the terminal keeps the result once the screen closes
        for r in results:
            if r.exit_status == 3:
                print(f"gpuaudit-tui: {r.host.spec} failed: {r.error}", file=sys.stderr)
        if len(results) < len(hosts):
            print(
                f"gpuaudit-tui: fleet audit stopped: {len(hosts) - len(results)} host(s) not audited",
                file=sys.stderr,
            )
            return 3  # an incomplete audit never passes
        return max((r.exit_status for r in results), default=0)

    spool = Spool()
    results = run_sync(run_fleet(hosts, request, ssh, on_done=spool.keep))
    elapsed = time.monotonic() - t0
    if request.prom:
        write_fleet_prom(results, request.prom, spool.text)
    if request.json:
        for part in fleet_document_parts(results, elapsed, request.max_connections, spool.text):
            sys.stdout.write(part)
    else:
        sys.stdout.write(fleet_table(results))
    for r in results:
        if r.exit_status == 3:
            print(f"gpuaudit-tui: {r.host.spec} failed: {r.error}", file=sys.stderr)
    sys.stdout.flush()
    return max((r.exit_status for r in results), default=0)
