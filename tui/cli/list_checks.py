"""`gpuaudit-tui --list-checks [--json]`: the catalogue of checks, without running anything."""

from __future__ import annotations

import json
import sys

from gpuaudit.probes.catalogue import DERIVED, REGISTRY
from gpuaudit.probes.core.judge.checks import Check


def catalogue_rows() -> list[Check]:
    return [c for p in REGISTRY for c in p.checks] + list(DERIVED)


def as_dict(check: Check) -> dict[str, object]:
    return {
        "id": check.id,
        "probe": check.probe,
        "owner": check.owner,
        "title": check.title,
        "why": check.why,
        "fix": check.fix,
        "expected": check.expected,
        "sources": list(check.sources),
        "any_of": list(check.any_of),
        "optional": [e if isinstance(e, str) else f"{e[0]}:{e[1]}" for e in check.optional],
        "fails_as_answer": [
            e if isinstance(e, str) else f"{e[0]}:{e[1]}" for e in check.fails_as_answer
        ],
        "roles": sorted(check.roles),
        "cross_target": check.cross,
        "needs_gpu": check.needs_gpu,
        "aliases": list(check.aliases),
        "no_input": check.no_input,
        "variants": {
            name: {
                **{k: v for k, v in (("title", m.title), ("why", m.why), ("fix", m.fix)) if v},
                "params": list(m.fields()),
            }
            for name, m in check.variants.items()
        },
    }


def main(as_json: bool) -> int:
    rows = catalogue_rows()
    if as_json:
        sys.stdout.write(json.dumps({"checks": [as_dict(c) for c in rows]}, indent=2) + "\n")
        return 0
    width = max((len(c.id) for c in rows), default=10)
    for c in rows:
        sources = ", ".join([*c.sources, *(f"{'|'.join(c.any_of)}" for _ in [0] if c.any_of)])
        if c in DERIVED:
            sources = "compared with the host's baseline snapshot"
        sys.stdout.write(f"{c.id:<{width}}  {c.owner:<9}  {c.title}  [{sources}]\n")
    sys.stdout.write(f"{len(rows)} checks\n")
    return 0
