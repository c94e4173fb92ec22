"""The raw Bios JSON is a record like any other: a BIOS change between two audits (a BIOS update, a setting
changed in setup) shows in `gpuaudit-tui diff` as the normalised setting beside its raw attribute name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from gpuaudit.probes.catalogue import REGISTRY
from gpuaudit.probes.core.run.runner import Audit
from gpuaudit.probes.core.run.session import directory_bindings, run_sync, run_to_end
from gpuaudit.snapshots.schema import Snapshot
from gpuaudit.tui.cli import entry as cli
from redfish_server import records_by_id

FX = Path(__file__).parents[1] / "fixtures/redfish/dell-r750/Systems/System.Embedded.1"


def snapshot_of(root: Path, edit=None) -> Path:
    host = root / "host"
    host.mkdir(parents=True)
    shutil.copy(FX / "index.json", host / "redfish_system.out")
    bios = json.loads((FX / "Bios/index.json").read_text())
    if edit:
        edit(bios["Attributes"])
    (host / "redfish_bios.out").write_text(json.dumps(bios, indent=2))  # as the reader stores it
    probes = [p for p in REGISTRY if p.id == "firmware"]
    run = run_sync(run_to_end(Audit(directory_bindings(root, ("host",)), probes)))
    out = root / "snap.json"
    out.write_text(Snapshot.from_run(run).model_dump_json())
    return out


def test_a_bios_change_shows_in_diff(tmp_path, capsys):
    before = snapshot_of(tmp_path / "a")

    def update(attrs):
        attrs["ProcCStates"] = "Enabled"
        attrs["SysProfile"] = "PerfPerWattOptimizedDapc"

    after = snapshot_of(tmp_path / "b", update)
    doc = json.loads(before.read_text())
    recs = set(records_by_id(doc))
    assert {"redfish_system", "redfish_bios"} <= recs
    code = cli.main(["diff", str(before), str(after)])
    out = capsys.readouterr().out
    assert code in (0, 1), out
    assert "ProcCStates" in out and "SysProfile" in out, out
    assert "<redacted>" in (before.read_text())  # the BIOS password hashes of the capture
    assert "19D28380D586B21FD54F75A0687D5692" not in before.read_text()
