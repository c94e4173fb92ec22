"""Container probe: LXC/Docker GPU passthrough (cgroup allow-list, device nodes, majors), GPU visibility,
/dev/shm, memlock, CPU quota and memory limits — host config and container view compared."""

from __future__ import annotations

from gpuaudit.probes.container.checks import CHECKS
from gpuaudit.probes.container.extract import extract
from gpuaudit.probes.container.facts import ContainerFacts
from gpuaudit.probes.container.summary import summarize
from gpuaudit.probes.core.declared import COMMANDS as DECLARED
from gpuaudit.probes.core.declared import TITLES
from gpuaudit.probes.core.sources import with_presence
from gpuaudit.probes.core.spec import Probe

PROBE_ID = "container"
COMMANDS = DECLARED[PROBE_ID]

__all__ = ["CHECKS", "COMMANDS", "ContainerFacts", "PROBE", "PROBE_ID", "extract", "summarize"]

PROBE = with_presence(
    Probe(
        id=PROBE_ID,
        title=TITLES[PROBE_ID],
        commands=COMMANDS,
        extract=extract,
        checks=CHECKS,
        summarize=summarize,
        volatile_facts=frozenset({"nr_periods", "nr_throttled"}),
    )
)
