"""--prom: the exposition is valid (promtool), scraped by a real node_exporter textfile collector, alert rules tested."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from deploy.promkit import node_exporter, tool
from gpuaudit.probes.core.fleet.prometheus import (
    escape_label,
    from_snapshot,
    render,
    write_textfile,
)
from gpuaudit.snapshots.schema import Snapshot
from sshd_server import free_port

ROOT = Path(__file__).resolve().parents[2]
BEFORE = ROOT / "snapshots" / "examples" / "case-study-before.json"
RULES = ROOT / "docs" / "deploy" / "prometheus"


def before_text() -> str:
    return render({None: from_snapshot(Snapshot.model_validate_json(BEFORE.read_text()))})


def series(text: str) -> dict[str, float]:
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def test_every_check_is_one_series_with_the_severity_rank_and_its_owner():
    text = before_text()
    snap = Snapshot.model_validate_json(BEFORE.read_text())
    checks = [s for s in series(text) if s.startswith("gpuaudit_check_severity{")]
    assert len(checks) == len(snap.findings)
    crit = [f for f in snap.findings if f.severity.value == "critical"]
    assert crit, "the case study has a critical finding"
    f = crit[0]
    key = (
        f'gpuaudit_check_severity{{check="{f.id}",probe="{f.probe}",target="{"+".join(f.targets)}",'
        f'owner="{f.owner or ""}"}}'
    )
    assert series(text)[key] == 4
    assert 'gpuaudit_node_info{driver="590.48.01",cuda="13.1",kernel="6.8.12-9-pve"' in text
    assert series(text)['gpuaudit_target_up{target="container"}'] == 1


def test_label_values_are_escaped():
    assert escape_label('a"b\\c\nd') == 'a\\"b\\\\c\\nd'


def test_promtool_finds_the_exposition_clean():
    proc = subprocess.run(
        [tool("promtool"), "check", "metrics"], input=before_text(), capture_output=True, text=True
    )
    assert proc.returncode == 0 and not proc.stdout.strip() and not proc.stderr.strip(), (
        proc.stdout + proc.stderr
    )


def test_alert_rules_check_and_unit_tests_pass():
    promtool = tool("promtool")
    for args in (
        ["check", "rules", "gpuaudit.rules.yml"],
        ["test", "rules", "gpuaudit.rules.test.yml"],
    ):
        proc = subprocess.run([promtool, *args], cwd=RULES, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_write_is_atomic_and_leaves_no_temp_file(tmp_path):
    target = tmp_path / "gpuaudit.prom"
    target.write_text("old\n")
    write_textfile(target, "gpuaudit_x 1\n")
    assert target.read_text() == "gpuaudit_x 1\n" and os.listdir(tmp_path) == ["gpuaudit.prom"]
    assert oct(target.stat().st_mode & 0o777) == "0o644"


def test_node_exporter_scrapes_the_cli_output(tmp_path):
    exporter = tool("prometheus-node-exporter")
    textdir = tmp_path / "textfile"
    textdir.mkdir()
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpuaudit.tui",
            "--replay",
            str(BEFORE),
            "--prom",
            str(textdir / "gpuaudit.prom"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert cli.returncode in (0, 1), cli.stderr
    assert cli.stdout == ""  # --prom alone prints nothing
    port = free_port()
    proc = node_exporter(exporter, port, textdir)
    try:
        body = ""
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
                    body = resp.read().decode()
                break
            except OSError:
                time.sleep(0.1)
        scraped = series(body)
        assert scraped.get("node_textfile_scrape_error") == 0, body[:2000]
        assert scraped['gpuaudit_findings{severity="critical",target="container"}'] == 1
        crit = [
            k for k, v in scraped.items() if k.startswith("gpuaudit_check_severity{") and v == 4
        ]
        assert len(crit) == 1 and 'check="python.cuda_graphs"' in crit[0]
        assert any(k.startswith("gpuaudit_last_run_timestamp_seconds") for k in scraped)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
