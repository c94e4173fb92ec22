"""Kernel probe: running kernel version and runtime knobs (NUMA balancing, ...)."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import BaseModel

from probes.core.models import Finding, Role
from probes.core.parsing import first_line, version_tuple
from probes.core.spec import Command, FactsByTarget, Outputs, Probe, finding, record_problem

PROBE_ID = "kernel"


class KernelFacts(BaseModel, frozen=True):
    release: str | None = None
    """`uname -r`, e.g. "6.8.12-9-pve"."""
    numa_balancing: int | None = None
    numa_nodes: int | None = None
    problems: dict[str, str] = {}
    """command_id -> why its output could not be used ("needs root", "tool not installed", ...)."""


COMMANDS = (
    Command("uname_r", "uname -r", on=frozenset({"host", "container"})),
    Command("numa_balancing", "cat /proc/sys/kernel/numa_balancing"),
    Command("node_list", "ls -d /sys/devices/system/node/node[0-9]*"),
)


def parse_numa_balancing(text: str) -> int | None:
    """`/proc/sys/kernel/numa_balancing`: "1" (on), "0" (off); None when not a number."""
    line = first_line(text)
    return int(line) if line.isdigit() else None


def extract(outputs: Outputs, role: Role) -> KernelFacts:
    problems = {cid: p for cid, rec in outputs.items() if (p := record_problem(rec))}
    release = first_line(outputs["uname_r"].stdout) if "uname_r" in outputs and "uname_r" not in problems else None
    bal = parse_numa_balancing(outputs["numa_balancing"].stdout) if "numa_balancing" in outputs and "numa_balancing" not in problems else None
    nodes = None
    if "node_list" in outputs and "node_list" not in problems:
        nodes = len([ln for ln in outputs["node_list"].stdout.splitlines() if ln.strip()])
    return KernelFacts(release=release or None, numa_balancing=bal, numa_nodes=nodes, problems=problems)


def judge(facts: FactsByTarget) -> Iterator[Finding]:
    host: KernelFacts | None = facts.get("host")
    if host is None:
        return
    ev = [("host", "numa_balancing"), ("host", "node_list")]
    if host.numa_balancing is None:
        yield finding(PROBE_ID, "numa_balancing", "unknown", "NUMA balancing could not be read",
                      observed=host.problems.get("numa_balancing", "unknown"), evidence=ev)
    elif host.numa_balancing and (host.numa_nodes or 1) > 1:
        yield finding(PROBE_ID, "numa_balancing", "warning", "Automatic NUMA balancing is on",
                      observed=f"kernel.numa_balancing={host.numa_balancing} with {host.numa_nodes} NUMA nodes",
                      expected="kernel.numa_balancing=0 on a multi-node GPU server",
                      why="The kernel unmaps pages to sample access patterns and migrates them, adding page faults and jitter to pinned GPU feeder threads.",
                      fix="sysctl -w kernel.numa_balancing=0 and persist it in /etc/sysctl.d/.", evidence=ev)
    else:
        yield finding(PROBE_ID, "numa_balancing", "ok", "NUMA balancing off or not applicable",
                      observed=f"kernel.numa_balancing={host.numa_balancing}, {host.numa_nodes} node(s)", evidence=ev)


def summarize(facts: FactsByTarget) -> str:
    host = facts.get("host")
    return f"kernel {host.release}" if host and host.release else ""


PROBE = Probe(id=PROBE_ID, title="Kernel", commands=COMMANDS, extract=extract, judge=judge, summarize=summarize)
