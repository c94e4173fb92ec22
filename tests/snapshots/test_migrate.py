"""Schema evolution: every kept sample loads; the step mechanism upgrades old documents in order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gpuaudit.snapshots import store
from gpuaudit.snapshots.compact import unpack
from gpuaudit.snapshots.migrate import MigrationError, migrate
from gpuaudit.snapshots.schema import SCHEMA_VERSION

SAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "snapshots"


def test_a_sample_is_kept_for_every_schema_version() -> None:
    assert sorted(p.name for p in SAMPLES.iterdir() if p.is_dir()) == [
        f"v{n}" for n in range(1, SCHEMA_VERSION + 1)
    ]


@pytest.mark.parametrize(
    "sample", sorted(SAMPLES.glob("v*/*.json")), ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_kept_samples_load(sample: Path) -> None:
    snap = store.load(sample)
    assert snap.schema_version == SCHEMA_VERSION
    assert snap.probes and snap.records


def test_current_version_passes_through_untouched() -> None:
    doc = {"schema_version": SCHEMA_VERSION, "probes": []}
    assert migrate(doc) is doc


# A made-up history (v1 -> v2 -> v3) that exercises the mechanism without inventing a real old schema.
def _v1_to_v2(doc: dict) -> dict:
    doc["note"] = (doc.get("note") or "") + "+v2"
    return doc


def _v2_to_v3(doc: dict) -> dict:
    doc["renamed"] = doc.pop("note")
    return doc


FAKE_STEPS = {1: _v1_to_v2, 2: _v2_to_v3}


def test_steps_run_in_order_and_stamp_the_version() -> None:
    out = migrate({"schema_version": 1, "note": "n"}, steps=FAKE_STEPS, current=3)
    assert out == {"schema_version": 3, "renamed": "n+v2"}
    assert (
        migrate({"schema_version": 2, "note": "n"}, steps=FAKE_STEPS, current=3)["renamed"] == "n"
    )


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"schema_version": 4}, r"newer gpuaudit-tui \(schema 4"),
        ({"schema_version": 0}, "older than any"),
        ({"schema_version": "1"}, "not an integer"),
        ({"schema_version": True}, "not an integer"),
        ({"probes": []}, "no schema_version"),
        ([1, 2], "no schema_version"),
    ],
)
def test_unreadable_versions(doc: object, message: str) -> None:
    with pytest.raises(MigrationError, match=message):
        migrate(doc, steps=FAKE_STEPS, current=3)


def test_a_missing_step_is_an_error() -> None:
    with pytest.raises(MigrationError, match="no migration from schema 2 to 3"):
        migrate({"schema_version": 1}, steps={1: _v1_to_v2}, current=3)


def test_load_goes_through_migrate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An older document (written here as v0 of a pretend history) is upgraded on read."""
    doc = json.loads((SAMPLES / "v1" / "sample.json").read_text())
    doc["schema_version"] = 0
    doc["title_of_note"] = doc.pop("note")
    (tmp_path / "old.json").write_text(json.dumps(doc))

    def v0_to_v1(d: dict) -> dict:
        d["note"] = d.pop("title_of_note")
        return d

    import gpuaudit.snapshots.migrate as m

    monkeypatch.setattr(m, "STEPS", {0: v0_to_v1, **m.STEPS})
    monkeypatch.setattr(m, "OLDEST_READABLE", 0)
    snap = store.load(tmp_path / "old.json")
    assert snap.schema_version == SCHEMA_VERSION and snap.note and snap.note.startswith("SYNTHETIC")


# The real step 1 -> 2: "not applicable" becomes its own severity n/a (schema 1: ok + a text prefix).
def _finding(severity: str, observed: str, fid: str = "nvlink.presence") -> dict:
    return {"id": fid, "severity": severity, "probe": fid.split(".")[0], "observed": observed}


def test_v1_not_applicable_findings_become_n_a_and_keep_their_reason() -> None:
    na = _finding("ok", "not applicable: no NVSwitch in this system")
    info_na = _finding("info", "not applicable: no cpufreq driver (VM)", "power.cpu_boost")
    driver = _finding(
        "info",
        "no NVIDIA GPU or driver on this host (no device): the GPU checks are not applicable",
        "driver.version_flavor",
    )
    real_ok = _finding("ok", "performance on 2 policies", "power.cpu_governor")
    real_warn = _finding("warning", "not applicable: is text the warning chose", "x.y")
    doc = {
        "schema_version": 1,
        "findings": [na, info_na, driver, real_ok, real_warn],
        "probes": [{"probe_id": "nvlink", "findings": [na, real_ok]}],
    }
    out = migrate(doc)
    assert out["schema_version"] == SCHEMA_VERSION
    got = [(f["severity"], f["observed"]) for f in out["findings"]]
    assert got == [
        ("n/a", "no NVSwitch in this system"),
        ("n/a", "no cpufreq driver (VM)"),
        ("n/a", "no NVIDIA GPU or driver on this host (no device): the GPU checks do not apply"),
        ("ok", "performance on 2 policies"),
        ("warning", "not applicable: is text the warning chose"),
    ]
    assert [f["severity"] for f in unpack(out)["probes"][0]["findings"]] == ["n/a", "ok"]


def test_previous_release_snapshots_load_with_n_a() -> None:
    """The 0.1.0 case study (schema 1) loads as schema 2: its not-applicable oks are n/a, no ok says so."""
    old = SAMPLES.parent / "releases" / "0.1.0"
    for name in ("case-study-before.json", "case-study-after.json"):
        raw = json.loads((old / name).read_text())
        assert raw["schema_version"] == 1
        was = sum(1 for f in raw["findings"] if f["observed"].startswith("not applicable"))
        snap = store.load(old / name)
        assert was and sum(1 for f in snap.findings if f.severity.value == "n/a") == was
        assert not [
            f for f in snap.findings if f.severity.value == "ok" and "not applicable" in f.observed
        ]
