"""The paths of the command line that are neither the dashboard nor a headless audit: the subcommands
(`baseline`, `diff`, `snapshots`), the documents (--json-schema, --list-checks, --docs) and the fleet (--hosts).

tui/cli/commands.py imports this module only when one of them was asked for: `gpuaudit-tui`, `--demo`,
`--replay F` and `--host H` reach the TUI without it (the app paints its first frame sooner), and a headless
audit (`--json/--plan/--prom/--health --host H`, tui/cli/headless.py) loads neither json_schema and the snapshot
diff (~20 ms of imports and models) nor the fleet's inventories (issue 30).
"""

from __future__ import annotations

import argparse
import sys

from gpuaudit.probes.core.run.request import AuditRequest
from gpuaudit.snapshots.json_schema import render as render_json_schema
from gpuaudit.tui.cli import baseline as baseline_cli
from gpuaudit.tui.cli import docs, fleet_hosts, list_checks


def subcommand(argv: list[str]) -> int:
    """`baseline ...`, `diff ...`, `snapshots ...` (`fleet DIR` never comes here: tui/cli/entry.py dispatches it
    before commands.py loads)."""
    if argv[0] == "baseline":
        return baseline_cli.main(argv[1:])
    # diff and snapshots draw with Rich: loaded only for them (the documents and --hosts --json never pay for it)
    from gpuaudit.tui.cli import snapshot_commands

    return snapshot_commands.main(argv[0], argv[1:])


def document(args: argparse.Namespace) -> int:
    """--json-schema, --list-checks, --docs: print and exit, nothing audited."""
    if args.json_schema:
        sys.stdout.write(render_json_schema(args.json_schema))
        return 0
    if args.list_checks:
        return list_checks.main(args.json)
    return docs.main(args.docs)


def fleet(request: AuditRequest) -> int:
    """--hosts: every host of the inventory audited (the fleet report, or the fleet screen on a terminal)."""
    return fleet_hosts.main(request)
