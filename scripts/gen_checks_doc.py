#!/usr/bin/env python3
"""Write docs/CHECKS.md, the checks reference, from the catalogue (`gpuaudit-tui --list-checks --json`).

Every finding id the tool emits is a row here, with who fixes it, why it matters, the fix, what "ok" expects
and the commands it reads (sources: `probes/core/sources.py`). The file is generated: never edit it by hand;
tests/core/test_checks_doc.py fails when it is stale.

Usage: python scripts/gen_checks_doc.py [--check]   (--check: exit 1 if docs/CHECKS.md differs)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "CHECKS.md"


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def render() -> str:
    from gpuaudit.probes.core.sources import SOURCES
    from gpuaudit.tui.cli.list_checks import as_dict, catalogue_rows

    rows = [as_dict(c) for c in catalogue_rows()]
    lines = [
        "# Checks reference",
        "",
        "Generated from the catalogue by `python scripts/gen_checks_doc.py` (the same rows as",
        "`gpuaudit-tui --list-checks --json`); do not edit by hand. Finding ids never change once released;",
        "an alias is another id the same check answers for. Severities: `critical` breaks or badly slows",
        "serving, `warning` costs performance or robustness, `info` is worth knowing, `ok` is a claim backed by",
        "the named commands, `unknown` says which command could not answer and why (never a guess).",
        "A check's other texts are its named variants; `{name}` in one is filled from what was read.",
        "The decode roofline's method is [ROOFLINE-METHOD.md](ROOFLINE-METHOD.md).",
        "",
    ]
    probes: dict[str, list[dict]] = {}
    for r in rows:
        probes.setdefault(str(r["probe"]), []).append(r)
    lines.append(f"{len(rows)} checks in {len(probes)} probes.")
    lines.append("")
    for probe, checks in probes.items():
        lines += [f"## {probe}", ""]
        for r in checks:
            lines += [f"### `{r['id']}` — {_cell(r['title'])}", ""]
            meta = [f"owner: **{r['owner']}**", f"on: {', '.join(r['roles'])}"]
            if r["cross_target"]:
                meta.append("one finding over host and container")
            if r["needs_gpu"]:
                meta.append("needs an NVIDIA GPU")
            if r["aliases"]:
                meta.append("aliases: " + ", ".join(f"`{a}`" for a in r["aliases"]))
            lines += ["- " + " · ".join(meta)]
            for key, label in (("why", "Why"), ("fix", "Fix"), ("expected", "Expected")):
                if r[key]:
                    lines.append(f"- {label}: {_cell(r[key])}")
            reads = []
            for cid in r["sources"]:
                reads.append(_source(cid, SOURCES))
            if r["any_of"]:
                reads.append("one of " + ", ".join(_source(c, SOURCES) for c in r["any_of"]))
            if reads:
                lines.append("- Reads: " + "; ".join(reads))
            elif r.get("no_input"):
                lines.append(f"- Reads no command: {_cell(r['no_input'])}")
            if r["variants"]:
                lines.append(
                    "- Other texts it can say (variant: the row's title/why/fix replaced):"
                )
                for name, v in r["variants"].items():
                    parts = [
                        f"{label} {_cell(v[key])}"
                        for key, label in (("title", "title:"), ("why", "why:"), ("fix", "fix:"))
                        if key in v
                    ]
                    lines.append(f"  - `{name}` — " + " · ".join(parts))
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _source(cid: str, sources) -> str:
    src = sources.get(cid)
    if src is None:
        return f"`{cid}`"
    shell = _cell(src.shell)
    if len(shell) > 90:
        shell = shell[:87] + "..."
    root = " (root)" if src.needs_root else ""
    return f"`{cid}`{root}: `{shell}`"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when docs/CHECKS.md is stale")
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        if not OUT.exists() or OUT.read_text() != text:
            print(
                f"stale: {OUT.relative_to(ROOT)} (run python scripts/gen_checks_doc.py)",
                file=sys.stderr,
            )
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
