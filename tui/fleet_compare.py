"""`gpuaudit-tui fleet [SNAPSHOT|DIR ...]`: which node differs from its peers (files, directories, or the store).

Text by default, `--json` for scripts. Exit 0 when every class agrees, 1 when a node is an outlier, 2 on a
usage error (an unreadable snapshot is listed as skipped, one line each, and does not stop the others).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gpuaudit.probes.core.peers import ClassReport, Node, compare, node_from_records

MAX_SNAPSHOT_BYTES = 256 * 1024 * 1024


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # type: ignore[override]
        raise ValueError(message)


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="gpuaudit-tui fleet", description="Compare nodes with their peers: group saved snapshots by "
                "class (GPU model x count x board) and name the nodes whose driver, kernel, BIOS, ... differ "
                "from the majority of their class.")
    p.add_argument("paths", nargs="*", metavar="SNAPSHOT|DIR",
                   help="snapshot files or directories of them (default: the snapshot store)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--snapshot-dir", metavar="DIR", type=lambda t: Path(t).expanduser(), help="the store to read by default")
    return p


def snapshot_files(paths: list[str], store: Path | None) -> list[Path]:
    if not paths:
        from gpuaudit.snapshots.store import default_dir

        paths = [str(store or default_dir())]
    files: list[Path] = []
    for text in paths:
        path = Path(text).expanduser()
        if path.is_dir():
            files += sorted(p for p in path.glob("*.json") if p.is_file())
        elif path.is_file():
            files.append(path)
        else:
            raise ValueError(f"{path}: no such file or directory")
    return files


def host_records(doc: dict) -> dict[str, str]:
    """command id -> stdout of every usable host record of a snapshot document."""
    out: dict[str, str] = {}
    for probe in doc.get("probes") or []:
        for r in probe.get("records") or []:
            if (isinstance(r, dict) and r.get("target") == "host" and r.get("exit_status") == 0 and not r.get("error")
                    and not r.get("timed_out") and not r.get("truncated") and isinstance(r.get("stdout"), str)):
                out.setdefault(str(r.get("command_id")), r["stdout"])
    return out


def load_node(path: Path) -> Node:
    if path.stat().st_size > MAX_SNAPSHOT_BYTES:
        raise ValueError("larger than 256 MiB")
    try:
        doc = json.loads(path.read_bytes())
    except RecursionError:
        raise ValueError("nested too deeply to be a snapshot") from None
    if not isinstance(doc, dict) or "probes" not in doc:
        raise ValueError("not a gpuaudit snapshot")
    state = (doc.get("target_states") or {}).get("host") or {}
    name = state.get("hostname") or doc.get("name") or path.stem
    return node_from_records(str(name), str(path), host_records(doc))


def render_text(reports: list[ClassReport], skipped: list[str]) -> str:
    lines = []
    for rep in reports:
        lines.append(f"{rep.klass}: {len(rep.nodes)} node(s), {len({o.node for o in rep.outliers})} differ")
        for o in rep.outliers:
            lines.append(f"  {o.node}: {o.fact} = {o.value}   (majority {o.majority}, {o.agree} of {o.of})")
    lines += [f"skipped {s}" for s in skipped]
    total = sum(len(r.outliers) for r in reports)
    lines.append(f"{sum(len(r.nodes) for r in reports)} node(s) in {len(reports)} class(es); "
                 f"{total} outlier fact(s)" + ("" if total else ": every class agrees"))
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    try:
        args = parser().parse_args(argv)
        files = snapshot_files(args.paths, args.snapshot_dir)
    except ValueError as exc:
        print(f"gpuaudit-tui fleet: error: {exc}", file=sys.stderr)
        return 2
    nodes, skipped = [], []
    seen: dict[str, int] = {}
    for path in files:
        try:
            node = load_node(path)
        except (OSError, ValueError) as exc:
            skipped.append(f"{path}: {exc}")
            continue
        if node.name in seen:  # two snapshots of one host, or hosts sharing a name: keep both, told apart
            node = Node(name=f"{node.name} ({path.stem})", source=node.source, klass=node.klass, facts=node.facts)
        seen[node.name] = 1
        nodes.append(node)
    reports = compare(nodes)
    if args.json:
        doc = {"classes": [{"class": r.klass, "nodes": r.nodes,
                            "outliers": [{"node": o.node, "fact": o.fact, "value": o.value, "majority": o.majority,
                                          "agree": o.agree, "of": o.of} for o in r.outliers]} for r in reports],
               "skipped": skipped}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        sys.stdout.write(render_text(reports, skipped))
    for s in skipped:
        print(f"gpuaudit-tui fleet: skipped {s}", file=sys.stderr)
    return 1 if any(r.outliers for r in reports) else 0
