"""A resumed snapshot keeps the recorded records no probe asks for today, as recorded (issue 24), like a replay."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from gpuaudit.probes.core.run.request import AuditRequest
from gpuaudit.snapshots import store
from gpuaudit.snapshots.compact import unpack
from gpuaudit.tui.cli.headless import collect
from gpuaudit.tui.cli.resume import build_resume_setup

ROOT = Path(__file__).resolve().parents[2]
UNASKED = {
    "target": "host",
    "probe_id": "nvlink",
    "command_id": "lspci_acsctl",  # recorded by 0.1.0, asked by no probe today
    "command": "lspci -vvv | grep ACSCtl",
    "executed": "lspci -vvv | grep ACSCtl",
    "exit_status": 0,
    "stdout": "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n",
}


def test_a_resume_with_nothing_to_rerun_keeps_the_unasked_record(tmp_path: Path) -> None:
    doc = unpack(json.loads((ROOT / "snapshots/examples/case-study-before.json").read_text()))
    doc["mode"], doc["name"] = "live", "resumable"
    for p in doc[
        "probes"
    ]:  # nothing to re-run: the sources newer than the recording read as before
        for r in p[
            "records"
        ]:  # this session's rebuild (no tool: exit 127), so no machine is reached
            if (r.get("error") or "").startswith("not recorded"):
                r |= {
                    "error": None,
                    "exit_status": 127,
                    "stderr": f"sh: 1: {r['command_id']}: not found\n",
                }
    nvlink = next(p for p in doc["probes"] if p["probe_id"] == "nvlink")
    nvlink["records"].append(UNASKED)
    src = tmp_path / "resumable.json"
    src.write_text(json.dumps(doc))
    setup = build_resume_setup(AuditRequest(resume=str(src), probe_ids=("nvlink",)))
    run = asyncio.run(collect(setup))
    recs = [r for p in run.probes for r in p.records if r.command_id == "lspci_acsctl"]
    assert [r.stdout for r in recs] == [UNASKED["stdout"]], "the unasked record was dropped"
    assert store.load(src).records  # the source snapshot itself is left as it was
