"""What the command line does once its arguments parsed: validates them, builds the AuditRequest, dispatches.

Imported by tui/cli/entry.py only after argparse has handled --help and --version. No Textual here: the TUI
is reached through tui/interactive.py alone. The dashboard's path (`gpuaudit-tui`, `--demo`, `--replay F`,
`--host H`) imports only what validating the arguments needs: the headless audit (--json, --plan, --prom,
--health, --html, and --resume) loads tui/cli/headless.py, every other path (the subcommands, --json-schema,
--list-checks, --docs, --hosts) tui/cli/text_modes.py, each imported only for it, so that the catalogue, the
runner, the snapshot schema and the headless modules do not load before the TUI's first frame, and a headless
audit loads neither the documents' modules (json_schema, diff) nor the fleet's (issue 30). `--probes` is
checked against probes/ids.py, which a test holds equal to the catalogue.
"""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import TYPE_CHECKING

from gpuaudit.probes.core.collect.ssh_config import config_override
from gpuaudit.probes.core.collect.targets import known_hosts_problem
from gpuaudit.probes.core.run.request import AuditRequest
from gpuaudit.probes.ids import PROBE_IDS
from gpuaudit.tui.cli import bridge
from gpuaudit.tui.cli.args import CliError
from gpuaudit.tui.cli.bmc_setup import bmc_request_fields, check_bmc_args
from gpuaudit.tui.cli.preflight import problems

if TYPE_CHECKING:
    from gpuaudit.probes.core.collect.early import EarlyStart


def run(argv: list[str], args: argparse.Namespace | None) -> int:
    """A subcommand (args None: `fleet`, `diff`, `snapshots`, `baseline` parse their own) or an audit."""
    if args is None:  # entry.py sends `fleet` to fleet_compare itself, before this module loads
        return _text_modes().subcommand(argv)
    if args.json_schema or args.list_checks or args.docs is not None:
        return _text_modes().document(args)
    _check_combinations(args)
    for why in problems(args):  # errors before work: output paths, key files, --container
        raise CliError(why)
    request = audit_request(args)
    if request.hosts:  # the fleet report or screen
        return _text_modes().fleet(request)
    if request.json or request.plan or request.prom or request.health or request.html:
        early = _early(request)  # the SSH handshakes and logins run while headless.py loads
        return _headless().main(request, early)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):  # cron, CI, a pipe: never hang on a screen
        raise CliError(
            "the interactive TUI needs a terminal (stdin and stdout); use --json, --plan, --prom or --health"
        )
    if request.resume:  # resumed headless, then the stored result shown in the TUI
        return _headless().run_then_show(request, bridge.interactive().run_app)
    return bridge.interactive().main(request)


def _text_modes() -> ModuleType:
    """tui/cli/text_modes.py, imported now: the subcommands, the documents (json_schema, diff) and the fleet."""
    with _loading("gpuaudit.tui.cli.text_modes"):
        from gpuaudit.tui.cli import text_modes

    return text_modes


def _early(request: AuditRequest) -> EarlyStart | None:
    """tui/cli/early_setup.py, imported now (the SSH transports: the dashboard paints without them), and the early
    start of the request's SSH targets (collect/early.py), or None."""
    from gpuaudit.tui.cli import early_setup

    return early_setup.begin(request)


def _headless() -> ModuleType:
    """tui/cli/headless.py, imported now: the catalogue, the engine, the snapshot (the dashboard needs none first;
    a headless audit needs nothing of text_modes: no json_schema, diff, fleet or list of checks)."""
    with _loading("gpuaudit.tui.cli.headless"):
        from gpuaudit.tui.cli import headless

    return headless


@contextmanager
def _loading(module: str) -> Iterator[None]:
    """What tui/cli/entry.py does for this module, for the modules loaded after it: no cyclic collection while
    they load (hundreds of modules and models make only long-lived objects), then those objects frozen out of
    later collections (issue 30: the audit's gen-0 collections walked them, ~7 ms of CPU per audit). Only when the
    module first loads: a caller in-process (tests) calling main() again must not freeze what it holds then."""
    first = module not in sys.modules
    if first:
        gc.disable()
    try:
        yield
    finally:
        if first:
            gc.freeze()
            gc.enable()


def parse_probe_ids(text: str | None) -> list[str] | None:
    """`pcie,power` -> ["pcie", "power"], validated against the registry."""
    if text is None:
        return None
    ids = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [i for i in ids if i not in PROBE_IDS]
    if not ids:
        raise CliError("--probes: empty list")
    if unknown:
        raise CliError(
            f"--probes: unknown probe id(s) {', '.join(unknown)}; known: {', '.join(PROBE_IDS)}"
        )
    return ids


def validate_python_path(text: str | None) -> None:
    if text is None:
        return
    bad = set(" \t\n'\"`$;&|<>()\\*?!{}[]")
    if not text or any(c in bad for c in text) or not text.startswith(("/", "python")):
        raise CliError(
            f"--python {text!r}: give an absolute interpreter path without spaces, quotes or shell characters"
        )


def _check_combinations(args: argparse.Namespace) -> None:
    sources = [n for n in ("replay", "resume", "demo", "hosts") if getattr(args, n)]
    if len(sources) > 1:
        raise CliError(f"--{sources[0]} and --{sources[1]} cannot be combined")
    if (args.replay or args.demo) and (args.host or args.container):
        raise CliError("--replay/--demo contact no machine; drop --host/--container")
    if args.json and args.plan:
        raise CliError("--json and --plan are two outputs; choose one")
    if args.container is not None and not args.container.strip():
        raise CliError(
            "--container is empty: give pct:ID, lxc:NAME, docker:NAME or [user@]host[:port]"
        )
    check_bmc_args(args)  # --bmc (issue 27)
    if args.share is not None and not (
        args.json or args.plan or args.html or args.save is not None
    ):
        raise CliError("--share applies to --json, --plan, --html and --save; give one of them")
    if args.hosts and (args.share is not None or args.html):
        raise CliError("--share/--html are per audit; --hosts is not supported with them yet")
    if args.hosts and (args.host or args.container):
        raise CliError("--hosts audits the inventory's hosts; drop --host/--container")
    if args.hosts and (args.plan or args.save is not None):
        raise CliError(
            "--hosts prints a fleet report (table or --json); --plan/--save are per-host"
        )
    if (
        args.host or args.container or args.hosts or args.resume
    ):  # checked once, before any target is contacted
        if (
            why := known_hosts_problem(args.known_hosts, accept_new=args.accept_new_host_keys)
        ) is not None:
            raise CliError(why)
        if (
            note := config_override()[1]
        ) is not None:  # said once here, not once per failing target
            print(f"gpuaudit-tui: warning: {note}", file=sys.stderr)


def audit_request(args: argparse.Namespace) -> AuditRequest:
    """The one place the Namespace becomes the typed, frozen request every layer below reads (probes/core/run/request.py).

    Validates --probes and --python on the way (CliError, exit 2)."""
    probe_ids = parse_probe_ids(args.probes)
    validate_python_path(args.python)
    return AuditRequest(
        host=args.host,
        container=args.container,
        hosts=args.hosts,
        max_connections=args.max_connections,
        probe_ids=None if probe_ids is None else tuple(probe_ids),
        timeout=args.timeout,
        max_output=args.max_output,
        sudo=args.sudo,
        python=args.python,
        active=args.active,
        expect_gpus=getattr(args, "expect_gpus", None),
        known_hosts=args.known_hosts,
        identity=args.identity,
        accept_new_host_keys=args.accept_new_host_keys,
        max_channels=args.max_channels,
        connections=args.connections,
        sessions=args.sessions,
        output_budget=args.output_budget,
        replay=args.replay,
        resume=args.resume,
        demo=args.demo,
        yes=args.yes,
        json=args.json,
        plan=args.plan,
        prom=args.prom,
        health=args.health,
        fail_on=args.fail_on,
        save=args.save,
        snapshot_dir=args.snapshot_dir,
        theme=args.theme,
        html=args.html,
        share=args.share,
        **bmc_request_fields(args),
    )
