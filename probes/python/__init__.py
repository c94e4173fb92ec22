"""Python runtime and serving engine probe: torch build vs GPU arch, CUDA stack, engine flags and env.

Never creates a CUDA context (PROBES.md §0.2) and never runs the engine's interpreter (issue 29): package metadata,
torch's version file and compiled arch flags read as data, and the engine's /proc entries. The environment read is
`--python`'s, else the running engine's, else python3's.
The facts also carry what a decode roofline needs from the engine's command line and log (§13).
"""

from __future__ import annotations

from gpuaudit.probes.core.declared import COMMANDS as DECLARED
from gpuaudit.probes.core.declared import TITLES
from gpuaudit.probes.core.spec import Probe
from gpuaudit.probes.python.checks import CHECKS
from gpuaudit.probes.python.extract import extract
from gpuaudit.probes.python.facts import VOLATILE, JitDir, PythonFacts
from gpuaudit.probes.python.parsers import driver_max_cuda, parse_gpu_cc, parse_jit_dirs
from gpuaudit.probes.python.summary import summarize

PROBE_ID = "python"
COMMANDS = DECLARED[PROBE_ID]

PROBE = Probe(
    id=PROBE_ID,
    title=TITLES[PROBE_ID],
    commands=COMMANDS,
    extract=extract,
    checks=CHECKS,
    summarize=summarize,
    volatile_facts=VOLATILE,
)

__all__ = [
    "CHECKS",
    "COMMANDS",
    "PROBE",
    "PROBE_ID",
    "JitDir",
    "PythonFacts",
    "driver_max_cuda",
    "extract",
    "parse_gpu_cc",
    "parse_jit_dirs",
    "summarize",
]
