"""The catalogue of checks: every PROBES.md check is a declared row, rows are complete, ids the plan names exist."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from gpuaudit.probes.catalogue import DERIVED, REGISTRY
from gpuaudit.probes.core.judge.checks import OWNERS, Check
from gpuaudit.probes.core.judge.plan import IMPACT, RELATIONS
from gpuaudit.probes.core.sources import SOURCES

ROOT = Path(__file__).resolve().parents[2]
PROBES_MD = ROOT.parent / "shared" / "PROBES.md"
CHECKS: list[Check] = [c for p in REGISTRY for c in p.checks]
IDS = {c.id for c in CHECKS}
ALIASES = {a for c in CHECKS for a in c.aliases}


def probes_md_ids() -> list[str]:
    if not PROBES_MD.exists():
        pytest.skip("../shared/PROBES.md not beside the repository")
    return re.findall(r"^### `([a-z]+\.[a-z0-9_]+)`", PROBES_MD.read_text(), flags=re.M)


def test_every_probes_md_check_is_a_row_or_a_declared_alias():
    missing = [i for i in probes_md_ids() if i not in IDS and i not in ALIASES]
    assert not missing, f"PROBES.md checks with no row: {missing}"


def test_ids_are_unique_and_rows_complete():
    assert len(IDS) == len(CHECKS), "duplicate check ids"
    for c in CHECKS:
        assert c.owner in OWNERS and c.title and c.why and c.fix, c.id
        assert c.id.split(".")[0] in {p.id for p in REGISTRY}


@pytest.mark.parametrize("probe", REGISTRY, ids=lambda p: p.id)
def test_every_source_a_check_reads_is_declared_by_its_probe(probe):
    declared = {c.id for c in probe.commands}
    for check in probe.checks:
        for cid in (*check.sources, *check.any_of):
            assert cid in SOURCES, f"{check.id}: {cid} not in the source registry"
            assert cid in declared, f"{check.id}: {probe.id} does not declare {cid}"


def test_the_plan_names_only_checks_that_exist():
    named = {i for r in RELATIONS for i in r.ids} | set(IMPACT)
    assert not named - IDS, sorted(named - IDS)


def test_no_finding_is_built_outside_the_framework():
    hits = subprocess.run(
        ["grep", "-rnP", "--include=*.py", r"\bfinding\((?!s\))", "probes"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    assert [h for h in hits if "def finding(" not in h] == []


def test_list_checks_json_has_every_field():
    import json

    out = subprocess.run(
        [sys.executable, "-m", "gpuaudit.tui", "--list-checks", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["checks"]
    assert {r["id"] for r in rows} == IDS | {c.id for c in DERIVED}
    for r in rows:
        assert {"id", "probe", "owner", "title", "why", "fix", "sources", "aliases"} <= set(r)
