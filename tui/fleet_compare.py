"""`gpuaudit-tui fleet [SNAPSHOT|DIR ...]`: which node differs from its peers (files, directories, or the store).

On a terminal (stdin and stdout TTYs) without --json or --text it opens the fleet screen (`--tui` forces it);
otherwise text, `--json` for scripts. Exit 0 when every class agrees, 1 when a node is an outlier, 2 on a
usage error (an unreadable snapshot is listed as skipped, one line each, and does not stop the others).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
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
    view = p.add_mutually_exclusive_group()
    view.add_argument("--tui", action="store_true",
                      help="open the fleet screen (one row per node: worst severity per probe, outlier marks; "
                      "sort with o, filter with /, Enter opens a node's dashboard); the default on a terminal")
    view.add_argument("--text", action="store_true", help="print the text report even on a terminal")
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


def load_document(path: Path) -> dict:
    """A snapshot file as a dict; ValueError (one line) for what is not one."""
    if path.stat().st_size > MAX_SNAPSHOT_BYTES:
        raise ValueError("larger than 256 MiB")
    try:
        doc = json.loads(path.read_bytes())
    except RecursionError:
        raise ValueError("nested too deeply to be a snapshot") from None
    if not isinstance(doc, dict) or "probes" not in doc:
        raise ValueError("not a gpuaudit snapshot")
    return doc


def node_name(doc: dict, path: str) -> str:
    """The host's recorded hostname, else the snapshot's name, else the file's stem."""
    state = (doc.get("target_states") or {}).get("host") or {}
    return str(state.get("hostname") or doc.get("name") or Path(path).stem)


def load_node(path: Path) -> Node:
    doc = load_document(path)
    return node_from_records(node_name(doc, str(path)), str(path), host_records(doc))


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
    if args.tui and args.json:
        print("gpuaudit-tui fleet: error: --tui and --json are two outputs; choose one", file=sys.stderr)
        return 2
    if args.tui or (not args.json and not args.text and sys.stdin.isatty() and sys.stdout.isatty()):
        return show_screen(files)
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


def show_screen(files: list[Path]) -> int:
    """The fleet screen over saved snapshots; the exit status is the text report's (1 when any outlier)."""
    from gpuaudit.tui.app import KNOWN_THEMES
    from gpuaudit.tui.fleet_app import FleetApp
    from gpuaudit.tui.fleet_model import FleetModel
    from gpuaudit.tui.theme_store import ThemeStore

    print(f"gpuaudit-tui fleet: reading {len(files)} snapshot(s)…", file=sys.stderr, flush=True)
    skipped: list[str] = []

    def documents() -> Iterator[tuple[str, dict]]:  # one at a time: 1,000 parsed snapshots need not coexist
        for path in files:
            try:
                yield str(path), load_document(path)
            except (OSError, ValueError) as exc:
                skipped.append(f"{path}: {exc}")

    model = FleetModel.from_documents(documents(), title="fleet")
    model.skipped = skipped
    store = ThemeStore()
    theme = store.load()
    status = FleetApp(model, theme=theme if theme in KNOWN_THEMES else None, theme_store=store).run()
    for s in skipped:
        print(f"gpuaudit-tui fleet: skipped {s}", file=sys.stderr)
    return model.exit_status() if status is None else status
