"""Every path of the command line but the dashboard: subcommands, documents, the fleet, headless, --resume.

tui/cli/commands.py imports this module only when one of them was asked for, so that `gpuaudit-tui`,
`--demo`, `--replay F` and `--host H` reach the TUI without loading the probe catalogue, the engine's runner,
the snapshot schema, json_schema, the fleet or headless modules first: the app paints its first frame sooner
(issue 30). What it imports here it imported at module level in commands.py before.
"""

from __future__ import annotations

import argparse
import sys

from gpuaudit.probes.core.run.request import AuditRequest
from gpuaudit.snapshots.json_schema import render as render_json_schema
from gpuaudit.tui.cli import baseline as baseline_cli
from gpuaudit.tui.cli import bridge, docs, fleet_hosts, headless, list_checks


def baseline(argv: list[str]) -> int:
    """`baseline ...` (`fleet DIR` never comes here: tui/cli/entry.py dispatches it before commands.py loads)."""
    return baseline_cli.main(argv[1:])


def document(args: argparse.Namespace) -> int:
    """--json-schema, --list-checks, --docs: print and exit, nothing audited."""
    if args.json_schema:
        sys.stdout.write(render_json_schema(args.json_schema))
        return 0
    if args.list_checks:
        return list_checks.main(args.json)
    return docs.main(args.docs)


def audit(request: AuditRequest) -> int:
    """--hosts (the fleet report or screen) and the headless outputs (--json, --plan, --prom, --health, --html)."""
    if request.hosts:
        return fleet_hosts.main(request)
    return headless.main(request)


def resume_then_show(request: AuditRequest) -> int:
    """--resume on a terminal: resumed headless, then the stored result shown in the TUI."""
    return headless.run_then_show(request, bridge.interactive().run_app)
