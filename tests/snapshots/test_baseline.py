"""Last-known-good baseline (issue 26): two snapshots of one host that differ in driver and measured decode speed
-> regression.* findings in --json, --plan, --health (a speed regression fails) and --prom; the baseline CLI."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from gpuaudit.probes.core.models import Severity
from gpuaudit.snapshots import baseline as bl

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = ROOT / "snapshots" / "examples" / "case-study"


def _builder():
    spec = importlib.util.spec_from_file_location(
        "build_case_study", ROOT / "scripts" / "build_case_study.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def _speed(d: Path, tok_s: str) -> None:
    logs = d / "container" / "engine_logs.out"
    text = logs.read_text()
    for old in ("9.71", "10.12", "10.05"):
        text = text.replace(
            f"gen throughput (token/s): {old}", f"gen throughput (token/s): {tok_s}"
        )
    logs.write_text(text)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """The case study's 'before' recordings with CUDA graphs on (nothing critical left) at 48.0 tok/s single
    stream: the known-good; the same after a driver upgrade 590.48.01 -> 595.12.03 at 34.5 tok/s (-28%, the
    published driver-upgrade regression)."""
    tmp = tmp_path_factory.mktemp("baseline")
    good_dir, bad_dir = tmp / "good", tmp / "bad"
    for d in (good_dir, bad_dir):
        shutil.copytree(RECORDINGS, d)
        for role in ("host", "container"):
            f = d / "before" / role / "engine_procs.out"
            if f.exists():
                f.write_text(f.read_text().replace("--disable-cuda-graph\n", ""))
    _speed(good_dir / "before", "48.00")
    _speed(bad_dir / "before", "34.50")
    for f in (bad_dir / "before").rglob("*.out"):
        text = f.read_text(errors="replace")
        if "590.48.01" in text:
            f.write_text(text.replace("590.48.01", "595.12.03"))
    b = _builder()
    good = b.build("before", recordings=good_dir).model_copy(update={"name": "known-good"})
    bad = b.build("before", recordings=bad_dir).model_copy(update={"name": "after-upgrade"})
    paths = []
    for snap in (good, bad):
        path = tmp / f"{snap.name}.json"
        path.write_text(snap.model_dump_json())
        paths.append(path)
    return good, bad, paths[0], paths[1]


def by_id(findings):
    return {f.id: f for f in findings}


def test_compare_names_what_changed_and_by_how_much(pair):
    good, bad, _, _ = pair
    found = by_id(bl.compare(good, bad))
    speed = found["regression.decode_speed"]
    assert speed.severity == Severity.CRITICAL
    assert "decode 34.5 tok/s vs 48.0 at the baseline (-28.1%)" in speed.observed
    assert "regression.driver" in speed.fix
    driver = found["regression.driver"]
    assert driver.severity == Severity.WARNING
    assert driver.observed.startswith("driver: 590.48.01 -> 595.12.03")
    assert found["regression.kernel"].severity == Severity.OK
    assert found["regression.torch"].severity == Severity.OK
    assert found["regression.knobs"].severity == Severity.OK


def test_an_unchanged_box_within_the_threshold_is_ok(pair):
    good, _, _, _ = pair
    found = by_id(bl.compare(good, good))
    assert {f.severity for f in found.values()} == {Severity.OK}


def test_a_change_while_the_speed_held_is_info(pair):
    good, bad, _, _ = pair
    faster = bad.model_copy(update={"roofline": {**(bad.roofline or {}), "measured_tok_s": 48.5}})
    found = by_id(bl.compare(good, faster))
    assert found["regression.decode_speed"].severity == Severity.OK
    assert found["regression.driver"].severity == Severity.INFO


def _measured_by(snap, tok_s: float, source: str):
    """`snap` whose roofline says its speed came from `source`."""
    roof = {**(snap.roofline or {}), "measured_tok_s": tok_s, "measured_source": source}
    return snap.model_copy(update={"roofline": roof})


ACTIVE = "--active decode probe: one streamed request of 256 tokens to http://127.0.0.1:30000"
METRICS = (
    "engine metrics: http://127.0.0.1:30000/metrics: sglang:time_per_output_token_seconds mean"
)


def test_speeds_measured_by_different_methods_are_compared_like_with_like(pair):
    """The baseline's 48.0 tok/s came from the log, today's 20 tok/s from the metrics histogram (an average
    since the engine started, prefill-heavy): not a regression by itself. Both snapshots carry their engine
    log, so the log figures are compared (34.5 vs 48.0: still critical, and it says so)."""
    good, bad, _, _ = pair
    now = _measured_by(bad, 20.0, METRICS)
    speed = by_id(bl.compare(good, now))["regression.decode_speed"]
    assert speed.severity == Severity.CRITICAL
    assert "decode 34.5 tok/s vs 48.0 at the baseline (-28.1%)" in speed.observed
    assert "compared like with like: now by the engine metrics histogram" in speed.observed
    # an unchanged box whose headline figure switched method: the logs agree, ok
    same = _measured_by(good, 20.0, METRICS)
    assert by_id(bl.compare(good, same))["regression.decode_speed"].severity == Severity.OK


def test_different_methods_without_a_common_one_are_not_judged(pair, monkeypatch):
    good, _, _, _ = pair
    now = _measured_by(good, 20.0, ACTIVE)
    monkeypatch.setattr(
        bl, "log_speed", lambda snap: None
    )  # as if neither side kept its engine log
    found = by_id(bl.compare(good, now))
    speed = found["regression.decode_speed"]
    assert speed.severity == Severity.UNKNOWN  # was critical: 20.0 vs 48.0 read as -58%
    assert speed.observed == (
        "decode 20.0 tok/s vs 48.0 at the baseline, measured now by the --active decode probe, at the "
        "baseline by the engine log: different methods are not compared"
    )
    assert "Measure both the same way" in speed.fix
    assert bl.method_of(ACTIVE) == "active" and bl.method_of(METRICS) == "metrics"
    assert bl.method_of("median of 3 single-stream decode log line(s) (engine_logs)") == "log"


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gpuaudit.tui", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


@pytest.mark.slow  # the CLI in subprocesses
def test_the_cli_pins_a_baseline_and_every_output_carries_the_regression(pair, tmp_path):
    _, _, good_path, bad_path = pair
    env = {**os.environ, bl.ENV_DIR: str(tmp_path / "baselines")}
    r = cli("baseline", "set", str(good_path), env=env)
    assert r.returncode == 0, r.stderr
    assert (
        r.stdout.startswith("baseline for root@pve-gpu01: known-good") and "48.0 tok/s" in r.stdout
    )
    r = cli("baseline", "show", env=env)
    assert "root@pve-gpu01\tknown-good" in r.stdout

    health = cli("--replay", str(bad_path), "--health", env=env)
    assert health.returncode == 1, health.stderr  # a speed regression fails --health
    assert health.stdout.startswith("CRITICAL [host] regression.decode_speed (owner engine)")

    prom = tmp_path / "gpuaudit.prom"
    r = cli("--replay", str(bad_path), "--prom", str(prom), env=env)
    text = prom.read_text()
    assert 'check="regression.decode_speed"' in text and 'check="regression.driver"' in text
    line = next(ln for ln in text.splitlines() if 'check="regression.decode_speed"' in ln)
    assert line.endswith(" 4")  # critical
    assert "gpuaudit_decode_baseline_tokens_per_second 48" in text  # the pinned speed
    assert "gpuaudit_decode_tokens_per_second 34.5" in text  # the measured one

    doc = json.loads(cli("--replay", str(bad_path), "--json", env=env).stdout)
    ids = {f["id"]: f["severity"] for f in doc["findings"]}
    assert ids["regression.decode_speed"] == "critical" and ids["regression.driver"] == "warning"

    plan = cli("--replay", str(bad_path), "--plan", env=env).stdout
    assert "[CRITICAL] Decode speed regressed since the last-known-good baseline" in plan

    r = cli("baseline", "compare", str(bad_path), env=env)
    assert r.returncode == 1 and "CRITICAL regression.decode_speed" in r.stdout

    # the known-good snapshot itself: nothing critical, nothing regressed
    health = cli("--replay", str(good_path), "--health", env=env)
    assert health.returncode == 0 and "regression." not in health.stdout, health.stdout


@pytest.mark.slow  # the CLI in subprocesses
def test_usage_errors_are_one_line(tmp_path):
    env = {**os.environ, bl.ENV_DIR: str(tmp_path / "b")}
    r = cli("baseline", "set", str(tmp_path / "missing.json"), env=env)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    r = cli("baseline", env=env)
    assert r.returncode == 2 and "Traceback" not in r.stderr


def _says(template: str, text: str) -> bool:
    pattern = re.sub(r"\\\{[^}]*\\\}", ".+", re.escape(template))
    return re.fullmatch(pattern, text, flags=re.S) is not None


def test_every_regression_finding_is_a_catalogue_row_with_its_text_or_a_declared_variant(
    pair, monkeypatch
):
    """regression.* are catalogue rows (probes/catalogue.py DERIVED): listed by --list-checks and
    docs/CHECKS.md, complete, and every finding the comparison makes says its row's text or a variant's."""
    from gpuaudit.probes.catalogue import DERIVED, REGISTRY
    from gpuaudit.probes.core.judge.checks import OWNERS
    from gpuaudit.tui.cli.list_checks import catalogue_rows

    rows = {c.id: c for c in DERIVED}
    assert set(rows) == {*bl.GROUPS, bl.SPEED_ID}
    assert not set(rows) & {c.id for p in REGISTRY for c in p.checks}
    listed = {c.id for c in catalogue_rows()}
    doc = (ROOT / "docs" / "CHECKS.md").read_text()
    for c in rows.values():
        assert c.id in listed and f"### `{c.id}`" in doc
        assert c.owner in OWNERS and c.title and c.why and c.fix and c.no_input
    good, bad, _, _ = pair
    slow_unmeasured = _measured_by(bad, 20.0, ACTIVE)
    found = [
        *bl.compare(good, bad),
        *bl.compare(good, good),
        *bl.compare(good, bad.model_copy(update={"roofline": {}})),
    ]
    monkeypatch.setattr(bl, "log_speed", lambda snap: None)
    found += bl.compare(good, slow_unmeasured)
    variants_seen = set()
    for f in found:
        row = rows[f.id]
        texts = [(row.title, row.why, row.fix)] + [
            (m.title or row.title, m.why or row.why, m.fix or row.fix)
            for m in row.variants.values()
        ]
        match = [
            t for t in texts if _says(t[0], f.title) and _says(t[1], f.why) and _says(t[2], f.fix)
        ]
        assert match, (f.id, f.title, f.why, f.fix)
        assert f.owner == row.owner and f.probe == bl.PROBE_ID
        variants_seen |= {
            name
            for name, m in row.variants.items()
            if (m.title or row.title, m.why or row.why, m.fix or row.fix) in match
        }
    assert {"slower", "not_measured", "methods_differ"} <= variants_seen
