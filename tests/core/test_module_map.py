"""AGENTS.md's module map lists every module with its docstring's first line (scripts/module_map.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("module_map", ROOT / "scripts" / "module_map.py")
assert spec and spec.loader
module_map = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module_map)


def test_agents_md_module_map_is_current():
    text = (ROOT / "AGENTS.md").read_text()
    assert module_map.block() in text, "run: python scripts/module_map.py --write"


def test_every_module_says_what_it_is_for():
    missing = [
        str(p.relative_to(ROOT)) for p in module_map.modules() if not module_map.first_line(p)
    ]
    assert not missing, f"modules without a docstring: {missing}"
