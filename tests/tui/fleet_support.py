"""A replayed fleet for the fleet screen's tests: no network.

Five nodes are the case study's 'after' snapshot (raw outputs built from real captures) with their own host
names; gpu03 runs an older kernel and gpu05 an older driver (the planted outliers), gpu06 is unreachable
with the reason a real refused connection gives (the live tests of tests/cli/test_fleet.py show it).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from gpuaudit.probes.core.fleet.model import FleetModel
from gpuaudit.snapshots.compact import unpack
from gpuaudit.snapshots.listing import severity_counts
from gpuaudit.snapshots.schema import Snapshot
from gpuaudit.tui.cli.fleet_hosts import FleetHost, HostResult

ROOT = Path(__file__).resolve().parents[2]
AFTER = ROOT / "snapshots" / "examples" / "case-study-after.json"
HOSTS = [FleetHost(spec=f"root@10.0.0.{i}", name=f"gpu0{i}", groups=("gpu",)) for i in range(1, 9)]
DOWN = "gpu06"
REFUSED = "root@10.0.0.6: connection refused"


class TickClock:
    """A monotonic clock that moves only when told (the progress line's seconds stay put in baselines)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def node_document(host: FleetHost) -> dict:
    doc = unpack(json.loads(AFTER.read_text()))
    doc["target_states"]["host"]["hostname"] = host.name
    doc["targets"][0]["spec"] = host.spec
    doc["name"], doc["mode"], doc["note"] = host.name, "live", None
    for probe in doc["probes"]:
        for r in probe["records"]:
            if r["target"] != "host":
                continue
            if host.name == "gpu03" and r["command_id"] == "uname_r":
                r["stdout"] = "6.8.12-9-pve\n"
            if host.name == "gpu05" and r["command_id"] == "proc_driver_version":
                r["stdout"] = r["stdout"].replace("590.48.01", "580.95.05")
    return doc


def host_result(host: FleetHost, duration_s: float = 1.9) -> HostResult:
    if host.name == DOWN:
        return HostResult(host, 3, 0.1, None, error=REFUSED)
    snap = Snapshot.model_validate(node_document(host))
    return HostResult(host, 1, duration_s, snap.model_dump_json(), counts=severity_counts(snap))


def write_snapshots(directory: Path, count: int = 5) -> list[Path]:
    paths = []
    for host in HOSTS[:count]:
        path = directory / f"{host.name}.json"
        path.write_text(json.dumps(node_document(host)))
        paths.append(path)
    return paths


def live_model(clock: TickClock) -> FleetModel:
    return FleetModel.for_hosts(HOSTS, title="fleet hosts.ini", max_connections=2, clock=clock)


class ReplayedFleet:
    """A runner for FleetApp: hosts start and finish when the test says so (`step`), like a real run."""

    width = 2
    """Hosts audited at once (the model's max_connections)."""

    def __init__(self, clock: TickClock) -> None:
        self.clock = clock
        self.go: asyncio.Queue[int] = asyncio.Queue()
        self.settled = asyncio.Event()
        """Set once the steps asked for so far have been applied to the model."""
        self.results = {h.spec: host_result(h, 1.0 + i / 10) for i, h in enumerate(HOSTS)}

    async def __call__(self, model: FleetModel) -> None:
        pending = list(HOSTS)
        running: list[FleetHost] = []
        while pending or running:
            n = await self.go.get()
            for _ in range(
                n
            ):  # one step: the oldest audit ends, the next hosts start, two at a time
                if running and (len(running) >= self.width or not pending):
                    model.host_finished(self.results[running.pop(0).spec])
                while pending and len(running) < self.width:
                    running.append(pending.pop(0))
                    model.host_started(running[-1])
            self.clock.now += 0.7 * n
            if self.go.empty():
                self.settled.set()

    def step(self, n: int = 1) -> None:
        self.settled.clear()
        self.go.put_nowait(n)
