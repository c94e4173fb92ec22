"""`gpuaudit-tui fleet [SNAPSHOT|DIR ...]`: which node differs from its peers (files, directories, or the store).

On a terminal (stdin and stdout TTYs) without --json or --text it opens the fleet screen (`--tui` forces it);
otherwise text, `--json` for scripts. Exit 0 only when every class agrees (every node compared with a peer,
nothing differs); 1 when a node is an outlier, a class has no majority on a fact (each side is listed), a node
is alone in its class or not comparable (its class could not be read: the reason is named); 2 on a usage
error or when no snapshot could be read (an unreadable snapshot is listed as skipped, one line each, and does
not stop the others).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from pathlib import Path

from gpuaudit.probes.core.fleet.documents import load_nodes, snapshot_files
from gpuaudit.probes.core.fleet.peers import FleetReport, Node, fleet_report
from gpuaudit.tui.cli import bridge
from gpuaudit.tui.cli.args import suggestion


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # type: ignore[override]
        prefix = "unrecognized arguments: "
        if message.startswith(prefix) and (words := message[len(prefix) :].split()):
            if words[0].startswith("-") and (
                near := suggestion(words[0].partition("=")[0], self._option_string_actions)
            ):
                message += f"; did you mean {near}?"  # issue 28: the nearest flag, as everywhere
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


def render_text(report: FleetReport, skipped: list[str]) -> str:
    lines = []
    for rep in report.classes:
        odd = len({o.node for o in rep.outliers})
        if len(rep.nodes) == 1:
            state = "no peer: nothing compared"
        elif rep.splits and not rep.outliers:
            state = f"no majority on {len(rep.splits)} fact(s)"
        else:
            state = f"{odd} differ" + (
                f", no majority on {len(rep.splits)} fact(s)" if rep.splits else ""
            )
        lines.append(f"{rep.klass}: {len(rep.nodes)} node(s), {state}")
        for o in rep.outliers:
            lines.append(
                f"  {o.node}: {o.fact} = {o.value}   (majority {o.majority}, {o.agree} of {o.of})"
            )
        for sp in rep.splits:
            lines.append(f"  no majority on {sp.fact}: {sp.text()}")
    for name, why in report.not_comparable:
        lines.append(f"not comparable: {name}: {why}")
    lines += [f"skipped {s}" for s in skipped]
    lines.append(report.verdict())
    return "\n".join(lines) + "\n"


def report_json(report: FleetReport, skipped: list[str]) -> dict:
    return {
        "classes": [
            {
                "class": r.klass,
                "nodes": r.nodes,
                "compared": r.compared,
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
                "no_majority": [
                    {
                        "fact": sp.fact,
                        "sides": [{"value": v, "nodes": list(ns)} for v, ns in sp.sides],
                    }
                    for sp in r.splits
                ],
            }
            for r in report.classes
        ],
        "not_comparable": [{"node": n, "why": w} for n, w in report.not_comparable],
        "alone": report.alone,
        "agrees": report.agrees,
        "verdict": report.verdict(),
        "skipped": skipped,
    }


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
    if not files:
        where = " ".join(args.paths) or "the snapshot store"
        print(f"gpuaudit-tui fleet: error: no snapshot file in {where}", file=sys.stderr)
        return 2
    if args.tui or (not args.json and not args.text and sys.stdin.isatty() and sys.stdout.isatty()):
        return bridge.interactive().show_fleet_documents(files)
    collecting = gc.isenabled()
    gc.disable()  # thousands of acyclic documents and facts: the cycle collector would only rescan them
    try:
        return _compare(args, files)
    finally:
        if collecting:
            gc.enable()


def _compare(args: argparse.Namespace, files: list[Path]) -> int:
    nodes, skipped = [], []
    seen: dict[str, int] = {}
    for path, node, why in load_nodes(files):  # in order; spread over the CPUs for a large fleet
        if node is None:
            skipped.append(f"{path}: {why}")
            continue
        if node.name in seen:  # two snapshots of one host, or hosts sharing a name: keep both
            node = Node(
                name=f"{node.name} ({path.stem})",
                source=node.source,
                klass=node.klass,
                facts=node.facts,
                not_comparable=node.not_comparable,
            )
        seen[node.name] = 1
        nodes.append(node)
    if not nodes:
        where = " ".join(args.paths) or "the snapshot store"
        why = f" ({len(skipped)} file(s) unreadable, first: {skipped[0]})" if skipped else ""
        print(f"gpuaudit-tui fleet: error: no usable snapshot in {where}{why}", file=sys.stderr)
        return 2
    report = fleet_report(nodes)
    if args.json:
        sys.stdout.write(json.dumps(report_json(report, skipped), indent=2) + "\n")
    else:
        sys.stdout.write(render_text(report, skipped))
    for s in skipped:
        print(f"gpuaudit-tui fleet: skipped {s}", file=sys.stderr)
    return report.exit_status()
