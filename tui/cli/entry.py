"""Command line: parses arguments, maps every usage/input error to one line + exit 2, dispatches.

Imports stay lazy: `--help` and `--json` never import Textual (and `--help` not even asyncssh).
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:  # imported lazily at run time: `--help` stays light
    from gpuaudit.probes.core.run.request import AuditRequest


EXIT_USAGE = 2
EXIT_RULE = (
    "Exit status: 0 audited, nothing reached --fail-on; 1 a finding reached --fail-on; 2 bad usage or input "
    "(nothing audited); 3 a requested target could not be audited (unreachable, refused, container not found), "
    "even when findings were made too: an incomplete audit never passes. --hosts exits with the worst host's status."
)
"""The one exit rule of every mode (--json, --plan, --prom, --health, --resume, --replay, --hosts): tui/cli/headless.py applies it."""
FAIL_ON = ("critical", "warning", "never")
SUBCOMMANDS = ("diff", "snapshots", "fleet")


class CliError(Exception):
    """A usage or input error: printed as one line, exit 2."""


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports errors as a single stderr line (no usage dump, no traceback)."""

    def error(self, message: str) -> NoReturn:
        raise CliError(message + self._nearest(message))

    def _nearest(self, message: str) -> str:
        """`--jsn` -> "; did you mean --json?", `dif a b` -> "; did you mean `diff`?" (tui/cli/preflight.py)."""
        from gpuaudit.tui.cli.preflight import suggestion

        prefix = "unrecognized arguments: "
        if not message.startswith(prefix) or not (words := message[len(prefix) :].split()):
            return ""
        word = words[0]
        if not word.startswith("-"):
            near = suggestion(word, SUBCOMMANDS)
            return (
                f"; did you mean `{near}`?" if near else f"; subcommands: {', '.join(SUBCOMMANDS)}"
            )
        near = suggestion(word.partition("=")[0], self._option_string_actions)
        return f"; did you mean {near}?" if near else ""


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


class _LazyVersion(argparse.Action):
    """--version without importing `probes` for every run: its __init__ loads the whole catalogue (~0.3 s)."""

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[no-untyped-def]
        from gpuaudit.probes.core.version import __version__

        print(f"gpuaudit-tui {__version__}")
        parser.exit()


THEME_NAMES = ("gpuaudit-dark", "gpuaudit-light", "gpuaudit-high-contrast")
"""Kept here, not imported: `--help` must not import Textual (a test holds it equal to themes.THEMES)."""
PROBE_NAMES = (
    "firmware",
    "container",
    "driver",
    "kernel",
    "pcie",
    "power",
    "nccl",
    "numa",
    "python",
    "nvlink",
)
"""Kept here, not imported: loading the catalogue costs ~0.3 s (a test holds it equal to probes.PROBE_IDS)."""
HELP_EPILOG = f"""\
examples:
  gpuaudit-tui                              audit this machine in the TUI
  gpuaudit-tui --demo                       the bundled case study, illustrative
  gpuaudit-tui --json > audit.json          headless: the snapshot as JSON
  gpuaudit-tui --host root@10.0.0.5 --container pct:101
  gpuaudit-tui --host pve1 --container docker:sglang --plan
  gpuaudit-tui diff before.json after.json  what changed between two snapshots
  gpuaudit-tui snapshots                    list saved snapshots

ssh: --host/--container take [user@]host[:port] or an alias of ~/.ssh/config
  (HostName, User, Port, IdentityFile, ProxyJump and the agent are honoured);
  host keys are checked against ~/.ssh/known_hosts (or --known-hosts).
probes (--probes): {", ".join(PROBE_NAMES[:6])},
  {", ".join(PROBE_NAMES[6:])}
themes (--theme): {", ".join(THEME_NAMES)},
  or a built-in Textual theme

"""


def build_parser() -> OneLineParser:
    p = OneLineParser(
        prog="gpuaudit-tui",
        description="Read-only, parallel audit of a GPU inference server (host + container):\n"
        "ten probes, live TUI or headless JSON. Subcommands: `diff A B`, `snapshots`.",
        epilog=HELP_EPILOG + textwrap.fill(EXIT_RULE, width=78, break_on_hyphens=False),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--version", action=_LazyVersion, nargs=0, help="show program's version number and exit"
    )
    out = p.add_argument_group("output")
    out.add_argument(
        "--json", action="store_true", help="headless: print the snapshot as JSON on stdout"
    )
    out.add_argument(
        "--plan", action="store_true", help="print the action plan as Markdown (no TUI)"
    )
    out.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        default="critical",
        help="exit 1 when a finding reaches this severity (default: critical)",
    )
    out.add_argument(
        "--save",
        nargs="?",
        const="",
        default=None,
        metavar="NAME",
        help="also store the snapshot (default name: host, kernel, driver, UTC time)",
    )
    out.add_argument(
        "--snapshot-dir",
        metavar="DIR",
        type=lambda text: Path(text).expanduser(),
        help="snapshot store (default: user data dir; env GPUAUDIT_SNAPSHOT_DIR)",
    )
    tg = p.add_argument_group("targets")
    tg.add_argument(
        "--host",
        metavar="[USER@]HOST[:PORT]",
        help="the GPU host over SSH (default: this machine, no SSH)",
    )
    tg.add_argument(
        "--container",
        metavar="SPEC",
        help="the container: [user@]host[:port] (own SSH), pct:ID, lxc:NAME or docker:NAME (through the host)",
    )
    tg.add_argument(
        "--hosts",
        metavar="FILE",
        help="fleet: audit every host of an inventory (one [user@]host[:port] per line or Ansible INI); "
        "on a terminal a live fleet screen (Enter: a node's dashboard), else a table or --json",
    )
    tg.add_argument(
        "--max-connections",
        type=positive_int,
        default=32,
        metavar="N",
        help="fleet: targets connected at once (default 32)",
    )
    ssh = p.add_argument_group("ssh")
    ssh.add_argument(
        "--known-hosts",
        metavar="FILE",
        help="known_hosts file to verify host keys against (default ~/.ssh/known_hosts)",
    )
    ssh.add_argument(
        "--identity",
        metavar="FILE",
        help="private key to log in with (default: agent and ~/.ssh/config)",
    )
    ssh.add_argument(
        "--accept-new-host-keys",
        action="store_true",
        help="accept and record keys of hosts never seen before (a changed key is always refused)",
    )
    ssh.add_argument(
        "--max-channels",
        type=positive_int,
        default=8,
        metavar="N",
        help="concurrent commands per SSH connection (default 8; sshd's MaxSessions is 10)",
    )
    ssh.add_argument(
        "--connections",
        type=positive_int,
        default=2,
        metavar="N",
        help="SSH connections per target, each with --max-channels commands at once (default 2; a fleet uses 1 per host)",
    )
    ssh.add_argument(
        "--no-sessions",
        dest="sessions",
        action="store_false",
        help="one SSH channel (and one login shell, one container wrapper call) per command instead of a "
        "long-lived worker session per target (python3 on the target; without it this is the fallback)",
    )
    run = p.add_argument_group("audit")
    run.add_argument("--probes", metavar="IDS", help="comma-separated subset, e.g. pcie,power")
    run.add_argument(
        "--timeout",
        type=positive_float,
        default=20.0,
        metavar="SECONDS",
        help="per-command timeout (default 20)",
    )
    run.add_argument(
        "--max-output",
        type=positive_int,
        default=8 * 1024 * 1024,
        metavar="BYTES",
        help="per-stream output cap, beyond it the command is killed and marked truncated (default 8 MiB)",
    )
    run.add_argument(
        "--output-budget",
        type=positive_int,
        default=256 * 1024 * 1024,
        metavar="BYTES",
        help="output kept over the whole audit; past it outputs are cut and marked truncated, later "
        "commands are not run (default 256 MiB)",
    )
    run.add_argument(
        "--sudo",
        action="store_true",
        help="run root-only commands through `sudo -n` (never prompts)",
    )
    run.add_argument(
        "--python",
        metavar="PATH",
        help="interpreter the python probe inspects (default: the serving engine's, else python3)",
    )
    run.add_argument(
        "--active",
        action="store_true",
        help="also run load-generating checks (nccl-tests); never on production by default",
    )
    src = p.add_argument_group("recordings")
    src.add_argument(
        "--replay",
        metavar="FILE",
        help="re-judge a saved snapshot's raw outputs with today's rules (no machine contacted)",
    )
    src.add_argument(
        "--resume",
        metavar="FILE",
        help="re-run only what failed in a snapshot and save the merged result",
    )
    src.add_argument(
        "--yes",
        action="store_true",
        help="--resume: connect to the targets the snapshot names without giving them as --host/--container",
    )
    src.add_argument(
        "--demo",
        action="store_true",
        help="the bundled case-study recording (illustrative example)",
    )
    out.add_argument(
        "--prom",
        metavar="FILE",
        type=lambda text: Path(text).expanduser(),
        help="also write the audit as Prometheus metrics for node_exporter's textfile collector "
        "(atomic; alone, runs headless and prints nothing; fleet mode: one file, a `node` label)",
    )
    out.add_argument(
        "--health",
        action="store_true",
        help="print one line (worst finding, its owner and fix) for Slurm/NHC/Node Problem Detector; "
        "exit status as below",
    )
    out.add_argument(
        "--list-checks",
        action="store_true",
        help="list every check (id, owner, title, sources) and exit; with --json every field",
    )
    ui = p.add_argument_group("interface")
    ui.add_argument("--theme", metavar="NAME", help="TUI theme (remembered)")
    return p


def parse_probe_ids(text: str | None) -> list[str] | None:
    """`pcie,power` -> ["pcie", "power"], validated against the registry."""
    if text is None:
        return None
    from gpuaudit.probes import PROBE_IDS

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
    if args.hosts and (args.host or args.container):
        raise CliError("--hosts audits the inventory's hosts; drop --host/--container")
    if args.hosts and (args.plan or args.save is not None):
        raise CliError(
            "--hosts prints a fleet report (table or --json); --plan/--save are per-host"
        )
    if (
        args.host or args.container or args.hosts or args.resume
    ):  # checked once, before any target is contacted
        from gpuaudit.probes.core.collect.targets import known_hosts_problem

        if (
            why := known_hosts_problem(args.known_hosts, accept_new=args.accept_new_host_keys)
        ) is not None:
            raise CliError(why)
        from gpuaudit.probes.core.collect.ssh_config import config_override

        if (
            note := config_override()[1]
        ) is not None:  # said once here, not once per failing target
            print(f"gpuaudit-tui: warning: {note}", file=sys.stderr)


def audit_request(args: argparse.Namespace) -> AuditRequest:
    """The one place the Namespace becomes the typed, frozen request every layer below reads (probes/core/run/request.py).

    Validates --probes and --python on the way (CliError, exit 2)."""
    from gpuaudit.probes.core.run.request import AuditRequest

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
    )


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] == "fleet":
            from gpuaudit.tui.cli import fleet_compare

            return fleet_compare.main(argv[1:])
        if argv and argv[0] in SUBCOMMANDS:
            from gpuaudit.tui.cli import snapshot_commands

            return snapshot_commands.main(argv[0], argv[1:])
        args = build_parser().parse_args(argv)
        if args.list_checks:
            from gpuaudit.tui.cli import list_checks

            return list_checks.main(args.json)
        _check_combinations(args)
        from gpuaudit.tui.cli.preflight import problems

        for why in problems(args):  # errors before work: output paths, key files, --container
            raise CliError(why)
        request = audit_request(args)
        if request.hosts:
            from gpuaudit.tui.cli import fleet_hosts as fleet

            return fleet.main(request)
        if request.json or request.plan or request.prom or request.health:
            from gpuaudit.tui.cli import headless

            return headless.main(request)
        from gpuaudit.tui import interactive

        return interactive.main(request)
    except CliError as exc:
        print(f"gpuaudit-tui: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("gpuaudit-tui: interrupted", file=sys.stderr)
        return 130
    except (
        BrokenPipeError
    ):  # `--json | head -c 100`: the reader left; no traceback, no "Exception ignored" at exit
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a pipeline writer killed by the signal
    except Exception as exc:  # noqa: BLE001 - map domain errors, never a traceback
        from gpuaudit.probes.core.errors import GpuAuditError

        if isinstance(exc, GpuAuditError):
            print(f"gpuaudit-tui: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        raise
