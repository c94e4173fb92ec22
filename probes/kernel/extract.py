"""Raw outputs of one target -> KernelFacts: one small reader per source; never raises."""

from __future__ import annotations

import re
from collections.abc import Callable

from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.judge.checks import missing_tool_name, tool_hint
from gpuaudit.probes.core.judge.combiners import VENDORS, kernel_cmdline
from gpuaudit.probes.core.judge.probe import Reads, read_table
from gpuaudit.probes.core.models import CommandRecord, Role
from gpuaudit.probes.core.parsers.engine import parse_engine_status
from gpuaudit.probes.core.parsers.system import (
    parse_bracketed_choice,
    parse_cpuinfo_id,
    parse_grep_h,
    parse_int,
    parse_node_list,
    parse_uname,
)
from gpuaudit.probes.core.parsing import first_line, one_value, parse_once
from gpuaudit.probes.core.spec import Outputs, record_problem
from gpuaudit.probes.kernel.facts import KernelFacts

Data = dict[str, object]
Problems = dict[str, str]


@parse_once
def parse_numa_balancing(text: str) -> int | None:
    """`/proc/sys/kernel/numa_balancing`: "1" (on), "0" (off); None when not a number."""
    return parse_int(text)


@parse_once
def parse_grub_cmdline(text: str) -> list[str]:
    """`grep -E '^GRUB_CMDLINE_LINUX(_DEFAULT)?=' /etc/default/grub` -> the tokens of both variables.

    GRUB_CMDLINE_LINUX_DEFAULT="quiet amd_iommu=on iommu=pt"
    GRUB_CMDLINE_LINUX=""
    """
    tokens: list[str] = []
    for line in text.splitlines():
        m = re.match(r'^GRUB_CMDLINE_LINUX(?:_DEFAULT)?=(["\']?)(.*)\1\s*$', line.strip())
        if m:
            tokens.extend(m.group(2).split())
    return tokens


@parse_once
def parse_tuned_active(text: str) -> str | None:
    """`tuned-adm active` -> "throughput-performance"; "No current active profile." -> "none"."""
    m = re.search(r"Current active profile:\s*(\S+)", text)
    if m:
        return m.group(1)
    return "none" if "no current active profile" in text.lower() else None


def _engine_swap(t: str, d: Data, p: Problems) -> None:
    try:
        d["engine_swap_kb"] = {
            f"pid {x.pid} {x.cmd.split(' ')[0] if x.cmd else ''}".strip(): x.swap_kb
            for x in parse_engine_status(t).procs
            if x.swap_kb is not None
        }
    except ParseError as exc:
        p["engine_proc_status"] = str(exc)


def _journal(t: str, d: Data, p: Problems) -> None:
    lines = [ln for ln in t.splitlines() if ln.strip()]
    d["journal_read"] = any("Linux version" in ln for ln in lines)
    d["journal_lines"] = [ln for ln in lines if "Linux version" not in ln]
    if not d["journal_read"]:
        p["journal_kernel_faults"] = (
            "this boot's kernel log is not in the journal (no 'Linux version' line)"
        )


def _cpu(t: str, d: Data, p: Problems) -> None:
    cpu = parse_cpuinfo_id(t)
    d.update(
        cpu_vendor=VENDORS.get(cpu.vendor or "", cpu.vendor),  # one spelling: "AMD", "Intel"
        cpu_family=cpu.family,
        cpu_model=cpu.model,
        cpu_model_name=cpu.model_name,
    )
    if cpu.vendor is None:
        p["cpuinfo_id"] = "no vendor_id in /proc/cpuinfo"


def _set(field: str, parse: Callable[[str], object]) -> Callable[[str], Data]:
    """A `Reads` parser that gives one field."""
    return lambda t: {field: parse(t)}


def _release(t: str, d: Data, p: Problems) -> None:
    _, why = one_value(t)
    if why:
        p["uname_r"] = why  # a two-line `uname -r` is malformed, not its first line
    else:
        d["release"] = parse_uname(t).release


TABLE: tuple[Reads, ...] = (
    Reads("uname_r", fill=_release),
    Reads("proc_cmdline", _set("cmdline", lambda t: list(kernel_cmdline(t).args))),
    Reads("cpuinfo_id", fill=_cpu),
    Reads("numa_balancing", _set("numa_balancing", parse_numa_balancing)),
    Reads("node_list", _set("numa_nodes", lambda t: len(parse_node_list(t)) or None)),
    Reads("zone_reclaim", _set("zone_reclaim", parse_int)),
    Reads("thp_enabled", _set("thp_enabled", parse_bracketed_choice)),
    Reads("thp_defrag", _set("thp_defrag", parse_bracketed_choice)),
    Reads("clocksource", _set("clocksource", lambda t: first_line(t) or None)),
    Reads(
        "proc_swaps",
        _set("swap_devices", lambda t: len([ln for ln in t.splitlines()[1:] if ln.strip()])),
    ),
    Reads("engine_proc_status", fill=_engine_swap),
    Reads("uvm_disable_hmm", _set("uvm_disable_hmm", lambda t: first_line(t) or None)),
    Reads("tuned_active", _set("tuned_profile", parse_tuned_active)),
    Reads(
        "cpu_vulnerabilities",
        _set(
            "vulnerabilities",
            lambda t: {p.rsplit("/", 1)[-1]: v[0] for p, v in parse_grep_h(t).items() if v},
        ),
    ),
    Reads("grub_cmdline", _set("grub_cmdline", parse_grub_cmdline)),
    Reads("etc_kernel_cmdline", _set("etc_kernel_cmdline", lambda t: first_line(t).split())),
    Reads("journal_kernel_faults", fill=_journal),
)
"""Source -> reader, run by the framework (`read_table`)."""

PIPED = ("journal_kernel_faults",)
"""`tool | grep`: the pipe's status is grep's, so a missing tool only shows on stderr."""


def _usability(rec: CommandRecord) -> str | None:
    """record_problem, except that a piped grep's exit 1 (no line matched) is an answer, judged by the reader."""
    if rec.command_id in PIPED and rec.exit_status == 1 and not rec.error and not rec.timed_out:
        return None
    return record_problem(rec)


def extract(outputs: Outputs, role: Role) -> KernelFacts:
    problems: Problems = {}
    for cid in PIPED:
        rec = outputs.get(cid)
        if rec is not None and re.search(r"not found", rec.stderr) and not rec.stdout.strip():
            problems[cid] = tool_hint(missing_tool_name(rec))
    read = read_table(
        {cid: r for cid, r in outputs.items() if cid not in problems}, TABLE, usability=_usability
    )
    return KernelFacts.of(read.fields, problems={**problems, **read.problems})


FIELD_SOURCES: dict[str, tuple[str, ...]] = {
    "release": ("uname_r",),
    "cmdline": ("proc_cmdline",),
    "cpu_vendor": ("cpuinfo_id",),
    "cpu_family": ("cpuinfo_id",),
    "cpu_model": ("cpuinfo_id",),
    "cpu_model_name": ("cpuinfo_id",),
    "numa_balancing": ("numa_balancing",),
    "numa_nodes": ("node_list",),
    "zone_reclaim": ("zone_reclaim",),
    "thp_enabled": ("thp_enabled",),
    "thp_defrag": ("thp_defrag",),
    "clocksource": ("clocksource",),
    "swap_devices": ("proc_swaps",),
    "engine_swap_kb": ("engine_proc_status",),
    "uvm_disable_hmm": ("uvm_disable_hmm",),
    "tuned_profile": ("tuned_active",),
    "vulnerabilities": ("cpu_vulnerabilities",),
    "grub_cmdline": ("grub_cmdline",),
    "etc_kernel_cmdline": ("etc_kernel_cmdline",),
    "journal_lines": ("journal_kernel_faults",),
    "journal_read": ("journal_kernel_faults",),
}
"""Each fact field -> the sources it is read from (provenance; the read-tracking test holds verdicts to
their checks' declarations through it). () = from the records' wrapping, not a source's output."""
