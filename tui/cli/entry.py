"""Command line: parses arguments, maps every usage/input error to one line + exit 2, dispatches.

Imports stay lazy: `--help` and `--json` never import Textual (and `--help` not even asyncssh).
"""

from __future__ import annotations

import argparse
import atexit
import gc
import os
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from gpuaudit.probes.core.errors import GpuAuditError
from gpuaudit.probes.core.version import __version__
from gpuaudit.probes.ids import PROBE_IDS  # not the catalogue: it costs ~0.3-0.5 s to load
from gpuaudit.tui.cli import code_cache
from gpuaudit.tui.cli.args import SUBCOMMANDS, CliError, OneLineParser
from gpuaudit.tui.cli.bmc_args import add_bmc_arguments

if TYPE_CHECKING:  # imported lazily at run time: `--help` stays light
    pass


EXIT_USAGE = 2
EXIT_RULE = (
    "Exit status: 0 audited, nothing reached --fail-on; 1 a finding reached --fail-on; 2 bad usage or input "
    "(nothing audited); 3 a requested target could not be audited (unreachable, refused, container not found), "
    "even when findings were made too: an incomplete audit never passes. --hosts exits with the worst host's status. "
    "4 --save, --prom, --html or --resume's store could not be written after the audit (stdout's output is complete); "
    "130 interrupted; 143 terminated (SIGTERM)."
)
"""The one exit rule of every mode (--json, --plan, --prom, --health, --resume, --replay, --hosts): tui/cli/headless.py applies it."""
FAIL_ON = ("critical", "warning", "never")
SCHEMA_DOCUMENTS = ("snapshot", "diff", "fleet", "fleet-hosts", "checks")
"""Kept here, not imported (--help stays light): a test holds it equal to snapshots/json_schema.py DOCUMENTS."""


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
    """--version: printed before anything else of the CLI loads."""

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[no-untyped-def]
        print(f"gpuaudit-tui {__version__}")
        parser.exit()


THEME_NAMES = ("gpuaudit-dark", "gpuaudit-light", "gpuaudit-high-contrast")
"""Kept here, not imported: `--help` must not import Textual (a test holds it equal to themes.THEMES)."""
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
probes (--probes): {", ".join(PROBE_IDS[:6])},
  {", ".join(PROBE_IDS[6:])}
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
        help="fleet: audit every host of an inventory (one [user@]host[:port] per line, Ansible INI, or "
        "the JSON of `ansible-inventory -i SOURCE --list`); "
        "on a terminal a live fleet screen (Enter: a node's dashboard), else a table or --json",
    )
    tg.add_argument(
        "--max-connections",
        type=positive_int,
        default=32,
        metavar="N",
        help="fleet: targets connected at once (default 32)",
    )
    add_bmc_arguments(p)  # --bmc, --bmc-credentials, --bmc-ca, --bmc-insecure (issue 27)
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
        help="also run load-generating checks: nccl-tests, and one streamed 256-token request to the serving "
        "engine when it reports no running request (single-stream decode speed; load on a production server); "
        "never by default",
    )
    run.add_argument(
        "--expect-gpus",
        type=positive_int,
        metavar="N",
        help="the host should have N GPUs: fewer visible to the driver (or fewer than the PCI bus shows) is "
        "a critical naming the missing bus ids (driver.expected_gpus; also in --health and --prom)",
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
    out.add_argument(
        "--html",
        metavar="FILE",
        type=lambda text: Path(text).expanduser(),
        help="also write a self-contained HTML report (plan, findings with evidence, pictures, roofline; "
        "no script, nothing fetched); alone, runs headless",
    )
    out.add_argument(
        "--share",
        nargs="?",
        const="",
        default=None,
        metavar="MAPFILE",
        help="for sharing: hostnames, IPs, MACs, serials, UUIDs, user names mapped to placeholders in "
        "--json/--plan/--html/--save; the mapping goes to MAPFILE (default: the user data dir), never the output",
    )
    out.add_argument(
        "--json-schema",
        nargs="?",
        const="snapshot",
        choices=SCHEMA_DOCUMENTS,
        metavar="NAME",
        help=f"print the JSON Schema of a --json document and exit: {', '.join(SCHEMA_DOCUMENTS)} "
        "(default snapshot; docs/JSON.md is the field reference)",
    )
    out.add_argument(
        "--docs",
        nargs="?",
        const="",
        default=None,
        metavar="NAME",
        help="the documents findings cite (CHECKS, ROOFLINE-METHOD, JSON, ...), installed with the tool: "
        "alone, print their paths; with NAME, print that one and exit",
    )
    ui = p.add_argument_group("interface")
    ui.add_argument("--theme", metavar="NAME", help="TUI theme (remembered)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """The command line. Without `argv` (the console script, `python -m gpuaudit.tui`) the process ends as soon
    as the work is done (`exit_now`); with `argv` (tests, callers in-process) the exit status is returned."""
    if argv is None:
        exit_now(_main(sys.argv[1:], own_process=True))
    return _main(list(argv))


def exit_now(code: int) -> NoReturn:
    """End the process right after its outputs are flushed and the atexit handlers ran (issue 30).

    A finished audit holds tens of thousands of objects (pydantic models, records, the catalogue); the
    interpreter's own finalisation frees them one by one and collects the cycles, which cost 0.1–0.3 s of wall
    and CPU per run with nothing left to do. Files were closed and written atomically (store, --prom, --html)
    and the connections closed by the time the work returns. Textual restores the terminal before its app
    returns, but the TUI keeps the normal exit anyway (nothing to gain there)."""
    if "textual" in sys.modules:
        raise SystemExit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # `--json | head -c 100`: the reader left
            code = 141 if code == 0 else code  # 128 + SIGPIPE, as _main maps it
        except (OSError, ValueError):
            pass
    atexit._run_exitfuncs()  # what the interpreter would run: temporary ssh_config copies, logging
    os._exit(code)


PYDANTIC_PLUGINS_VAR = "PYDANTIC_DISABLE_PLUGINS"


def without_pydantic_plugins() -> None:
    """No third-party pydantic plugins in this process, unless the user set PYDANTIC_DISABLE_PLUGINS themselves.

    pydantic's documented switch (docs.pydantic.dev concepts/plugins, "Disabling plugins", pydantic#8767: `__all__`,
    `1` or `true` disables every plugin).
    Without it, the first model built scans the entry points of every installed distribution (importlib.metadata:
    ~8 ms of CPU per process with 144 distributions installed, more with more; issue 30), and any plugin found
    would be imported and handed every validation of the audit's models, whose data are the targets' outputs.
    gpuaudit-tui uses none. A value the user set (`__all__`, or a list of plugin names to skip) is kept as set.
    Local commands (the audit without --host) inherit the variable; none of them is a pydantic program."""
    os.environ.setdefault(PYDANTIC_PLUGINS_VAR, "__all__")


def _main(argv: list[str], own_process: bool = False) -> int:
    """`own_process`: the console script's process, which serves what dataclasses, typing and re compile from the
    installation's cache (tui/cli/code_cache.py), once past --help and --version (reading the file would cost them
    ~6 ms for a few argparse patterns)."""
    try:
        if argv and argv[0] == "fleet":
            if own_process:
                code_cache.install()
            # `fleet DIR` reads saved snapshots only: without the catalogue, the engine or SSH (issue 25: ~0.7 s
            # of a 1,000-snapshot run); lazy like the line below, for start-up time
            from gpuaudit.tui.cli import fleet_compare

            return fleet_compare.main(argv[1:])
        args = None if argv and argv[0] in SUBCOMMANDS else build_parser().parse_args(argv)
        # --help and --version exited above with argparse alone; the rest of the CLI (the catalogue, the engine,
        # SSH) loads only now, for start-up time. No cyclic garbage collection while it loads (~600 modules
        # make only long-lived objects; a collection would walk them all again), then those objects are frozen
        # out of later collections, which an audit's many short-lived records and events trigger, and the
        # youngest generation is collected every 20,000 allocations instead of 700: a fleet holds dozens of
        # hosts' records alive, and each early collection walked them (client CPU per host 0.93x, issue 30)
        # Once per process: a caller in-process (tests) calling main() again would freeze whatever it holds then,
        # cyclic garbage included, out of every later collection.
        first = "gpuaudit.tui.cli.commands" not in sys.modules
        if first:
            gc.disable()
            without_pydantic_plugins()
            if own_process:
                code_cache.install()
        try:
            from gpuaudit.tui.cli import commands
        finally:
            if first:
                gc.freeze()
                gc.set_threshold(20_000, 20, 100)
                gc.enable()

        return commands.run(argv, args)
    except CliError as exc:
        print(f"gpuaudit-tui: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("gpuaudit-tui: interrupted", file=sys.stderr)
        return 130
    except (
        BrokenPipeError
    ):  # `--json | head -c 100`: the reader left; no traceback, no "Exception ignored" at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a pipeline writer killed by the signal
    except Exception as exc:  # noqa: BLE001 - map domain errors, never a traceback
        if isinstance(exc, GpuAuditError):
            print(f"gpuaudit-tui: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        raise
