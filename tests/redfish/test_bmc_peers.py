"""Fleet peer comparison of BIOS settings (--bmc): within a class, a node whose BIOS attribute differs from the
majority is an outlier under the attribute's raw name. Identity records are the case study's real recordings;
the BIOS is the Dell R750 capture (tests/fixtures/redfish), one node with ProcCStates changed."""

from __future__ import annotations

import json
from pathlib import Path

from gpuaudit.probes.core.fleet.peers import compare, node_from_records

ROOT = Path(__file__).parents[2]
HOST = ROOT / "snapshots/examples/case-study/before/host"
BIOS = ROOT / "tests/fixtures/redfish/dell-r750/Systems/System.Embedded.1/Bios/index.json"


def records(cstates: str | None) -> dict[str, str]:
    recs = {cid: (HOST / f"{cid}.out").read_text() for cid in ("smi_gpu_ids", "dmidecode_bios")}
    if cstates is not None:
        doc = json.loads(BIOS.read_text())
        doc["Attributes"]["ProcCStates"] = cstates
        recs["redfish_bios"] = json.dumps(doc, indent=2)
    return recs


def test_a_bios_setting_that_differs_from_the_class_is_an_outlier():
    nodes = [
        node_from_records("n1", "a", records("Disabled")),
        node_from_records("n2", "b", records("Disabled")),
        node_from_records("n3", "c", records("Enabled")),
        node_from_records(
            "n4", "d", records(None)
        ),  # no --bmc on this node: compared on nothing BIOS
    ]
    (report,) = compare(nodes)
    bios = [o for o in report.outliers if o.fact.startswith("bios.")]
    assert [(o.node, o.fact, o.value, o.majority) for o in bios] == [
        ("n3", "bios.ProcCStates", "Enabled", "Disabled")
    ]
    assert "bios.SysProfile" in report.compared
    assert not any(k.lower().endswith(("password", "salt")) for k in report.compared)
