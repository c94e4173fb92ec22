"""`gpuaudit-tui fleet [SNAPSHOT|DIR ...]`: which node differs from its peers (files, directories, or the store).

On a terminal (stdin and stdout TTYs) without --json or --text it opens the fleet screen (`--tui` forces it);
otherwise text, `--json` for scripts. Exit 0 when every class agrees, 1 when a node is an outlier, 2 on a
usage error (an unreadable snapshot is listed as skipped, one line each, and does not stop the others).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gpuaudit.probes.core.fleet.documents import load_node, snapshot_files
from gpuaudit.probes.core.fleet.peers import ClassReport, Node, compare


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # type: ignore[override]
        raise ValueError(message)


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="gpuaudit-tui fleet",
        description="Compare nodes with their peers: group saved snapshots by "
        "class (GPU model x count x board) and name the nodes whose driver, kernel, BIOS, ... differ "
        "from the majority of their class.",
    )
    p.add_argument(
        "paths",
        nargs="*",
        metavar="SNAPSHOT|DIR",
        help="snapshot files or directories of them (default: the snapshot store)",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    view = p.add_mutually_exclusive_group()
    view.add_argument(
        "--tui",
        action="store_true",
        help="open the fleet screen (one row per node: worst severity per probe, outlier marks; "
        "sort with o, filter with /, Enter opens a node's dashboard); the default on a terminal",
    )
    view.add_argument(
        "--text", action="store_true", help="print the text report even on a terminal"
    )
    p.add_argument(
        "--snapshot-dir",
        metavar="DIR",
        type=lambda t: Path(t).expanduser(),
        help="the store to read by default",
    )
    return p


def render_text(reports: list[ClassReport], skipped: list[str]) -> str:
    lines = []
    for rep in reports:
        lines.append(
            f"{rep.klass}: {len(rep.nodes)} node(s), {len({o.node for o in rep.outliers})} differ"
        )
        for o in rep.outliers:
            lines.append(
                f"  {o.node}: {o.fact} = {o.value}   (majority {o.majority}, {o.agree} of {o.of})"
            )
    lines += [f"skipped {s}" for s in skipped]
    total = sum(len(r.outliers) for r in reports)
    lines.append(
        f"{sum(len(r.nodes) for r in reports)} node(s) in {len(reports)} class(es); "
        f"{total} outlier fact(s)" + ("" if total else ": every class agrees")
    )
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    try:
        args = parser().parse_args(argv)
        files = snapshot_files(args.paths, args.snapshot_dir)
    except ValueError as exc:
        print(f"gpuaudit-tui fleet: error: {exc}", file=sys.stderr)
        return 2
    if args.tui and args.json:
        print(
            "gpuaudit-tui fleet: error: --tui and --json are two outputs; choose one",
            file=sys.stderr,
        )
        return 2
    if args.tui or (not args.json and not args.text and sys.stdin.isatty() and sys.stdout.isatty()):
        from gpuaudit.tui import (
            interactive,  # the bridge to Textual, lazily: the text report never loads it
        )

        return interactive.show_fleet_documents(files)
    nodes, skipped = [], []
    seen: dict[str, int] = {}
    for path in files:
        try:
            node = load_node(path)
        except (OSError, ValueError) as exc:
            skipped.append(f"{path}: {exc}")
            continue
        if (
            node.name in seen
        ):  # two snapshots of one host, or hosts sharing a name: keep both, told apart
            node = Node(
                name=f"{node.name} ({path.stem})",
                source=node.source,
                klass=node.klass,
                facts=node.facts,
            )
        seen[node.name] = 1
        nodes.append(node)
    reports = compare(nodes)
    if args.json:
        doc = {
            "classes": [
                {
                    "class": r.klass,
                    "nodes": r.nodes,
                    "outliers": [
                        {
                            "node": o.node,
                            "fact": o.fact,
                            "value": o.value,
                            "majority": o.majority,
                            "agree": o.agree,
                            "of": o.of,
                        }
                        for o in r.outliers
                    ],
                }
                for r in reports
            ],
            "skipped": skipped,
        }
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        sys.stdout.write(render_text(reports, skipped))
    for s in skipped:
        print(f"gpuaudit-tui fleet: skipped {s}", file=sys.stderr)
    return 1 if any(r.outliers for r in reports) else 0
