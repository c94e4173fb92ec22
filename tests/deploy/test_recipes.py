"""The shipped deployment recipes are checked: systemd units verify, the DaemonSet matches the Kubernetes API
types (the Slurm health check: test_slurm.py)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "docs" / "deploy"
BEFORE = ROOT / "snapshots" / "examples" / "case-study-before.json"
REQUIRE = os.environ.get("GPUAUDIT_REQUIRE_SSHD") == "1"


def test_systemd_units_verify(tmp_path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.fail("systemd-analyze missing") if REQUIRE else pytest.skip(
            "systemd-analyze missing"
        )
    exe = shutil.which("gpuaudit-tui") or sys.executable
    for name in ("gpuaudit.service", "gpuaudit.timer"):
        text = (DEPLOY / "systemd" / name).read_text().replace("/usr/local/bin/gpuaudit-tui", exe)
        (tmp_path / name).write_text(text)
    proc = subprocess.run(
        [analyze, "verify", str(tmp_path / "gpuaudit.service"), str(tmp_path / "gpuaudit.timer")],
        capture_output=True,
        text=True,
        env={**os.environ, "SYSTEMD_LOG_LEVEL": "warning"},
    )
    problems = [
        ln
        for ln in (proc.stdout + proc.stderr).splitlines()
        if "gpuaudit" in ln and "Documentation" not in ln
    ]  # verify also lints unrelated system units
    assert proc.returncode == 0 and not problems, proc.stdout + proc.stderr


def test_systemd_timer_is_persistent_and_the_service_least_privileged(tmp_path):
    timer = "\n".join(
        ln
        for ln in (DEPLOY / "systemd" / "gpuaudit.timer").read_text().splitlines()
        if ln[:1] != "#"
    )
    assert "OnCalendar=" in timer and "Persistent=true" in timer
    assert "OnBootSec" not in timer and "OnUnitActiveSec" not in timer  # Persistent= ignores those
    service = (DEPLOY / "systemd" / "gpuaudit.service").read_text()
    (bounding,) = [ln for ln in service.splitlines() if ln.startswith("CapabilityBoundingSet=")]
    assert set(bounding.split("=", 1)[1].split()) == {
        "CAP_SYS_PTRACE",
        "CAP_DAC_READ_SEARCH",
        "CAP_SYSLOG",
        "CAP_SYS_ADMIN",
    }
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.fail("systemd-analyze missing") if REQUIRE else pytest.skip(
            "systemd-analyze missing"
        )
    exe = shutil.which("gpuaudit-tui") or sys.executable
    unit = tmp_path / "gpuaudit.service"
    unit.write_text(service.replace("/usr/local/bin/gpuaudit-tui", exe))
    proc = subprocess.run(
        [analyze, "security", "--offline=yes", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    m = re.search(
        r"Overall exposure level for gpuaudit.service: ([\d.]+)", proc.stdout + proc.stderr
    )
    assert m, proc.stdout + proc.stderr
    assert float(m[1]) <= 5.0, f"exposure {m[1]} (docs/deploy/README.md says 4.9)"


def _check_against_model(obj, model_name: str, path: str = "") -> list[str]:
    """Every key of the manifest must be a field of the Kubernetes API type (recursively), with a compatible kind."""
    import kubernetes.client.models as models

    cls = getattr(models, model_name)
    errors: list[str] = []
    by_json = {v: k for k, v in cls.attribute_map.items()}
    for key, value in obj.items():
        attr = by_json.get(key)
        if attr is None:
            errors.append(f"{path}.{key}: not a field of {model_name}")
            continue
        errors += _check_value(value, cls.openapi_types[attr], f"{path}.{key}")
    return errors


def _check_value(value, kind: str, path: str) -> list[str]:
    if kind.lower().startswith("list["):  # client generations spell it list[X] or List[X]
        if not isinstance(value, list):
            return [f"{path}: expected a list"]
        return [e for i, v in enumerate(value) for e in _check_value(v, kind[5:-1], f"{path}[{i}]")]
    if kind.lower().startswith(("dict(", "dict[")):
        return [] if isinstance(value, dict) else [f"{path}: expected a mapping"]
    if kind in ("str", "int", "bool", "float", "object", "datetime"):
        ok = {"str": (str,), "int": (int,), "bool": (bool,), "float": (int, float)}.get(
            kind, (object,)
        )
        return (
            []
            if isinstance(value, ok)
            else [f"{path}: expected {kind}, got {type(value).__name__}"]
        )
    if not isinstance(value, dict):
        return [f"{path}: expected a {kind} object"]
    return _check_against_model(value, kind, path)


def test_kubernetes_daemonset_matches_the_api_types():
    yaml = pytest.importorskip("yaml")
    pytest.importorskip("kubernetes")
    doc = yaml.safe_load((DEPLOY / "kubernetes" / "gpuaudit-daemonset.yaml").read_text())
    assert doc["apiVersion"] == "apps/v1" and doc["kind"] == "DaemonSet"
    assert _check_against_model(doc, "V1DaemonSet") == []
    pod = doc["spec"]["template"]["spec"]
    (ctr,) = pod["containers"]
    mounts = {m["name"]: m for m in ctr["volumeMounts"]}
    writable = {n for n, m in mounts.items() if not m.get("readOnly")}
    assert writable <= {"textfile", "tmp"}, (
        "only the textfile directory (and a tmpfs) may be writable"
    )
    assert ctr["securityContext"]["readOnlyRootFilesystem"] is True
    assert ctr["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert pod["automountServiceAccountToken"] is False
    assert "--prom /textfile/gpuaudit.prom" in " ".join(ctr["args"])


def test_a_typo_in_a_manifest_is_caught():
    pytest.importorskip("kubernetes")
    assert _check_against_model({"metadata": {"nmae": "x"}}, "V1DaemonSet")


# The Slurm health check: tests/deploy/test_slurm.py (an empty environment, and a real slurmd).
