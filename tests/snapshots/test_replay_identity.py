"""`diff A replay(A)` for EVERY snapshot file under tests/fixtures and snapshots/examples (issue 24).

What "identical" means (snapshots/diff.py's docstring says the same):

* Records: always identical. A replay keeps every record of A as recorded, field for field (`executed`
  included: a container's `pct exec 101 --` wrapper), the records of commands no probe asks for today
  included; a command A never recorded is answered "not recorded" (nothing executed, no exit status), which
  `diff` treats as the absence it stands for. So `diff` lists no raw output for any snapshot.
* Findings and facts are re-derived by today's extract and checks. For a snapshot of this release they are
  identical too: `diff` exits 0 and says "identical". For a snapshot of an older release the checks added
  since (ids the snapshot has no finding for) appear, and a verdict of an id the snapshot has may change
  only where ALLOWED below names the id and says why. The facts (a release's internal model, not an
  interface: PROBES.md ids are findings) and the roofline (recomputed) are today's.
* Today's judgement is a fixed point: replay(replay(A)) is identical to replay(A) for every snapshot.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from gpuaudit.probes.core.version import __version__
from gpuaudit.snapshots import store
from gpuaudit.snapshots.compact import unpack
from gpuaudit.tui.cli.entry import main as cli_main

ROOT = Path(__file__).resolve().parents[2]
_SPEC = importlib.util.spec_from_file_location(
    "build_case_study", ROOT / "scripts" / "build_case_study.py"
)
assert _SPEC is not None and _SPEC.loader is not None
build_case_study = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(build_case_study)
NOT_SNAPSHOTS = {"tui/roofline-demo.json": "a roofline report (Snapshot.roofline), not a snapshot"}


def _is_snapshot(path: Path) -> bool:
    try:
        doc = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(doc, dict) and ("schema_version" in doc or {"probes", "targets"} <= set(doc))


def _name(p: Path) -> str:
    base = ROOT / "tests" / "fixtures"
    return str(p.relative_to(base)) if base in p.parents else str(p.relative_to(ROOT))


FIXTURE_JSON = sorted((ROOT / "tests" / "fixtures").rglob("*.json"))
SNAPSHOTS = [p for p in FIXTURE_JSON if _is_snapshot(p)] + sorted(
    (ROOT / "snapshots" / "examples").glob("*.json")
)

# Verdict changes of ids an older snapshot HAS, on purpose since its release: fixture -> id -> why.
_SINCE_010 = {
    "power.gpu_clock_events": "n/a -> ok: clock events are judged on idle GPUs too (issue 12 item 5); 0.1.0 "
    "said 'not applicable: all GPUs below 50% utilisation'",
    "kernel.tuned_profile": "observed text only: 'Proxmox VE does not ship it' and what no profile overrides",
}
_SAMPLES = {
    "kernel.numa_balancing": "warning -> unknown: the check reads node_list now (balancing matters with more "
    "than one node), which 0.1.0 did not record",
    "kernel.uvm_hmm": "n/a -> unknown: the check reads uvm_disable_hmm, which 0.1.0 did not record",
}
ALLOWED: dict[str, dict[str, str]] = {
    "releases/0.1.0/case-study-before.json": _SINCE_010,
    "releases/0.1.0/case-study-after.json": _SINCE_010,
    "snapshots/v1/sample.json": _SAMPLES,
    "snapshots/v2/sample.json": _SAMPLES,
    "snapshots/v3/sample.json": _SAMPLES,
}
SYNTHETIC = {"tui/synthetic-done.json"}
"""Hand-made findings over almost no records (a rendering fixture, SOURCES.md says so): today's checks have
nothing to judge, so every finding it holds becomes unknown in the replay; any other change is a failure."""

KEPT = ("target", "command_id", "executed", "exit_status", "stdout", "stderr", "timed_out")
KEPT += ("truncated", "error", "needs_root")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuaudit.tui", *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )


def _in_process(*args: str) -> tuple[int, str]:
    """The CLI's exit status and stdout, run in this process (the replay of A itself runs as a user runs it)."""
    raw = io.BytesIO()
    text = io.TextIOWrapper(raw, encoding="utf-8")
    with contextlib.redirect_stdout(text):
        rc = cli_main(list(args))
    text.flush()
    return rc, raw.getvalue().decode()


def _replay_in_process(src: Path, out: Path) -> Path:
    _, text = _in_process("--replay", str(src), "--json")
    assert text.startswith("{"), src
    out.write_text(text)
    return out


def _records(path: Path) -> dict[tuple[str, str], dict]:
    """(role, command id) -> the kept fields of its first record (a shared command shows once, like `diff`)."""
    doc = unpack(json.loads(path.read_text()))
    out: dict[tuple[str, str], dict] = {}
    for p in doc["probes"]:
        for r in p["records"]:
            out.setdefault((r["target"], r["command_id"]), {k: r.get(k) for k in KEPT})
    return out


def test_every_snapshot_file_is_covered():
    """A snapshot added under tests/fixtures is picked up; a JSON file that looks like one but is not says why."""
    names = {_name(p) for p in SNAPSHOTS}
    assert {"releases/0.1.0/case-study-before.json", "snapshots/v3/sample.json"} <= names
    assert {"snapshots/examples/case-study-before.json"} <= names
    for p in FIXTURE_JSON:
        if p.name in ("config.json", "hf_quant_config.json") or "redfish" in p.parts:
            continue
        if not _is_snapshot(p):
            assert _name(p) in NOT_SNAPSHOTS or "driver-lifecycle" in p.parts, _name(p)
    for p in SNAPSHOTS:
        store.load(p)  # each one loads (migrated) as a snapshot
    assert set(ALLOWED) | SYNTHETIC <= names  # the allow-list names real files


@pytest.mark.parametrize("snap", SNAPSHOTS, ids=_name)
def test_diff_against_its_own_replay(snap: Path, tmp_path: Path) -> None:
    name = _name(snap)
    proc = _cli("--replay", str(snap), "--json")
    assert proc.stdout.startswith("{"), proc.stderr
    first = tmp_path / "replay.json"
    first.write_text(proc.stdout)

    # records: every recorded one back as recorded; nothing invented
    before, after = _records(snap), _records(first)
    assert before, "nothing recorded"
    missing = {k: v for k, v in before.items() if after.get(k) != v}
    assert not missing, f"{name}: records not kept as recorded: {sorted(missing)[:5]}"
    for key in after.keys() - before.keys():
        rec = after[key]
        assert (rec["error"] or "").startswith("not recorded"), (name, key, rec)
        assert rec["exit_status"] is None and rec["stdout"] == "" and rec["executed"] == "", key

    # `diff A replay(A)`, as a user runs it
    rc, out = _in_process("diff", str(snap), str(first), "--json")
    assert rc in (0, 1), out
    d = json.loads(out)
    assert [r for p in d["probes"] for r in p["raw"]] == [], name
    assert not [t for t in d["targets"] if t["old"] is None or t["new"] is None], name
    current = json.loads(snap.read_text()).get("tool_version") == __version__
    if current:  # a snapshot of this release: identical, facts and findings included
        assert rc == 0 and d["probes"] == [] and d["roofline"] is None, name
        text = _cli("diff", str(snap), str(first))  # the text a user reads
        assert text.returncode == 0 and "identical" in text.stdout, text.stdout
    else:  # the diff says which releases judged each side
        assert d["old"]["tool_version"] != d["new"]["tool_version"] == __version__, name
        allowed = ALLOWED.get(name, {})
        for p in d["probes"]:
            for f in p["findings"]:
                if f["old_severity"] is None:
                    continue  # a check added since the snapshot's release
                if name in SYNTHETIC:
                    assert f["new_severity"] == "unknown", (name, f)
                    continue
                assert f["id"] in allowed, (
                    f"{name}: {f['id']} {f['old_severity']} -> {f['new_severity']} on replay "
                    f"({f['old_observed'][:80]!r} -> {f['new_observed'][:80]!r}): a check changed since "
                    "the snapshot's release; if on purpose, add the id to ALLOWED with the reason"
                )
            for f in p["findings"]:
                assert f["new_severity"] is not None, f"{name}: {f['id']} disappeared"

    # today's judgement is a fixed point
    second = _replay_in_process(first, tmp_path / "replay2.json")
    rc, out = _in_process("diff", str(first), str(second))
    assert rc == 0 and "identical" in out, out


@pytest.mark.parametrize("phase", ["before", "after"])
def test_a_snapshot_of_this_release_is_identical_to_its_replay(phase: str, tmp_path: Path) -> None:
    """Built now from the case-study recordings by today's code (the committed demo may lag behind it)."""
    fresh = tmp_path / f"case-study-{phase}.json"
    fresh.write_text(build_case_study.render(build_case_study.build(phase)))
    again = _replay_in_process(fresh, tmp_path / "replay.json")
    rc, out = _in_process("diff", str(fresh), str(again))
    assert rc == 0 and "identical" in out, out
    assert _records(fresh) == _records(again)
