"""`gpuaudit-tui diff A B` (exit 0 identical, 1 different, 2 error) and `gpuaudit-tui snapshots` (the store)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from gpuaudit.probes.core.text import neutralise
from gpuaudit.snapshots import store
from gpuaudit.snapshots.diff import diff_snapshots
from gpuaudit.snapshots.listing import counts_text, list_snapshots
from gpuaudit.tui.cli.args import CliError, OneLineParser
from gpuaudit.tui.cli.preflight import output_file_problem
from gpuaudit.tui.cli.share_outputs import write_html
from gpuaudit.tui.views.diff_report import print_report

EXIT_SAME, EXIT_DIFFERENT = 0, 1


def _parser(name: str):
    if name == "diff":
        p = OneLineParser(
            prog="gpuaudit-tui diff",
            description="What changed from snapshot A to snapshot B (by name in the store, or by path). "
            "Exit 0 identical, 1 different, 2 error (an unreadable file included). Volatile facts "
            "(declared per probe), timings and raw text alone do not count unless --all-facts/--raw. "
            "A command one side never recorded (a replay says 'not recorded') is not a change.",
        )
        p.add_argument(
            "old",
            metavar="A",
            help="the earlier snapshot: a name in the store (see `gpuaudit-tui snapshots`) "
            "or a path to a snapshot file",
        )
        p.add_argument("new", metavar="B", help="the later snapshot, the same way")
        p.add_argument(
            "--raw", action="store_true", help="show unified diffs of the raw outputs that differ"
        )
        p.add_argument(
            "--all-facts",
            action="store_true",
            help="also show volatile facts (counters, pids, temperatures), timings and raw text changes; "
            "by default they are hidden and do not make snapshots differ",
        )
        p.add_argument("--json", action="store_true", help="print the diff as JSON on stdout")
        p.add_argument(
            "--html",
            metavar="FILE",
            help="also write B's self-contained HTML report with this diff (tui/views/html.py)",
        )
    else:
        p = OneLineParser(
            prog="gpuaudit-tui snapshots",
            description="List saved snapshots: name, date, targets, kernel, driver, findings by severity.",
        )
        p.add_argument("--json", action="store_true", help="print the list as JSON on stdout")
        p.add_argument(
            "--examples", action="store_true", help="also list the bundled case-study examples"
        )
    p.add_argument(
        "--snapshot-dir",
        metavar="DIR",
        help="snapshot store (default: user data dir; env GPUAUDIT_SNAPSHOT_DIR)",
    )
    return p


def main(name: str, argv: list[str]) -> int:
    args = _parser(name).parse_args(argv)
    directory = Path(args.snapshot_dir).expanduser() if args.snapshot_dir else None
    return run_diff(args, directory) if name == "diff" else run_list(args, directory)


def run_diff(args, directory: Path | None) -> int:
    if args.html:  # errors before work (issue 28)
        if (why := output_file_problem("--html", Path(args.html))) is not None:
            raise CliError(why)

    _, old = store.load_ref(args.old, directory)
    _, new = store.load_ref(args.new, directory)
    diff = diff_snapshots(old, new, raw_diff=args.raw, all_facts=args.all_facts)
    if args.json:
        payload = diff.model_dump(mode="json", exclude_none=False)
        payload["identical"] = diff.identical
        sys.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    else:
        print_report(diff, show_unified=args.raw)
    if args.html:
        # the report's diff has the defaults (not --raw/--all-facts), as the HTML has always shown it
        shown = diff if not (args.raw or args.all_facts) else diff_snapshots(old, new)
        report = write_html(new, Path(args.html), old=old, diff=shown)
        print(f"wrote {report}", file=sys.stderr)
    return EXIT_SAME if diff.identical else EXIT_DIFFERENT


def _columns() -> int | None:
    """$COLUMNS when it is a sane width, else None."""

    try:
        width = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        return None
    return width if 20 <= width <= 1000 else None


def run_list(args, directory: Path | None) -> int:

    directory = directory or store.default_dir()
    infos = list_snapshots(directory, examples=args.examples)
    if args.json:
        sys.stdout.write(
            json.dumps(
                {"directory": str(directory), "snapshots": [i.to_json() for i in infos]}, indent=2
            )
            + "\n"
        )
        return 0

    # Rich only for the table (the rest of the CLI, --json included, never loads it)
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    # COLUMNS wins; piped output without it is read by scripts and people alike: don't fold names at 80 columns
    console = Console(highlight=False, width=_columns() or (None if sys.stdout.isatty() else 200))
    if not infos:
        console.print(f"no snapshots in {directory} (save one with: gpuaudit-tui --json --save)")
        return 0
    table = Table(title=f"snapshots in {directory}", title_justify="left", box=None, pad_edge=False)
    for col in ("name", "date (UTC)", "targets", "kernel", "driver", "findings"):
        table.add_column(col, overflow="fold", no_wrap=col in ("date (UTC)", "kernel", "driver"))

    def plain(
        text: str,
    ) -> str:  # names, targets, kernel and driver come from files and targets: never markup
        return escape(neutralise(text))

    for i in infos:
        if i.error:
            table.add_row(
                plain(i.name),
                "",
                "",
                "",
                "",
                f"[red]unreadable: {plain(i.error.split(': ', 1)[-1])}[/]",
            )
            continue
        recorded = (
            " [dim](example)[/]"
            if i.example
            else " [dim](recorded: demo)[/]"
            if i.mode == "demo"
            else (" [dim](recorded: replay)[/]" if i.mode == "replay" else "")
        )
        name = plain(i.name) + recorded
        table.add_row(
            name,
            i.created_at.strftime("%Y-%m-%d %H:%M") if i.created_at else "",
            plain(", ".join(t.split("=", 1)[-1] for t in i.targets)),
            plain(i.kernel or "?"),
            plain(i.driver or "?"),
            counts_text(i.counts, short=True),
        )
    console.print(table)
    console.print("findings: C critical, W warning, U unknown, I info, OK ok", style="dim")
    return 0
