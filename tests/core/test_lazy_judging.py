"""The probes' judging halves load after an audit's commands leave (issue 30).

probes/core/declared.py holds each probe's title and commands; the catalogue's probes name their package
(`judged_by`) and import it on first use of extract, checks, summarize or volatile_facts; the runner imports them
once the first command's output is in. These tests hold the declarations equal to the packages, the lazy probe
equal to the eager one, and the order of events: no probe package, check or parser (but the command lines) is
imported before the first command is sent.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest
from gpuaudit.probes.catalogue import REGISTRY
from gpuaudit.probes.core.collect.schedule import launch_rank
from gpuaudit.probes.core.declared import COMMANDS, TITLES
from gpuaudit.probes.core.run.runner import hang_prone_tool
from gpuaudit.probes.core.sources import use, with_presence
from gpuaudit.probes.core.spec import Probe
from gpuaudit.probes.ids import PROBE_IDS

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.fast


def package(probe_id: str):
    return importlib.import_module(f"gpuaudit.probes.{probe_id}")


def test_the_declarations_name_the_ten_probes_in_order():
    assert tuple(TITLES) == PROBE_IDS == tuple(COMMANDS)
    assert tuple(p.id for p in REGISTRY) == PROBE_IDS


@pytest.mark.parametrize("probe_id", PROBE_IDS)
def test_a_catalogue_probe_is_its_package_probe(probe_id):
    lazy = next(p for p in REGISTRY if p.id == probe_id)
    eager = with_presence(
        package(probe_id).PROBE
    )  # the catalogue gives each probe the presence sources
    assert lazy.title == eager.title
    assert [(c.id, c.shell, c.on) for c in lazy.commands] == [
        (c.id, c.shell, c.on) for c in eager.commands
    ]
    assert lazy.extract is eager.extract and lazy.summarize is eager.summarize
    assert lazy.checks is eager.checks and lazy.volatile_facts == eager.volatile_facts
    assert lazy == eager


def test_the_firmware_declaration_is_its_extract_table():
    from gpuaudit.probes.firmware.extract import TABLE

    declared = [c.id for c in COMMANDS["firmware"]]
    assert declared == [row.source for row in TABLE] + ["cpu_hypervisor_flag"]


def test_a_lazy_probe_loads_on_first_use_and_stays_immutable():
    probe = Probe(
        id="kernel", title="K", commands=use("uname_r"), judged_by="gpuaudit.probes.kernel"
    )
    assert "not loaded" in repr(probe)
    wider = probe.replace(commands=use("uname_r", "proc_cmdline"))
    assert "not loaded" in repr(wider) and len(wider.commands) == 2
    assert probe.checks is package("kernel").PROBE.checks  # loads
    assert "loaded" in repr(probe) and "not loaded" not in repr(probe)
    fewer = probe.replace(checks=probe.checks[:1])
    assert fewer.checks == probe.checks[:1] and fewer.extract is probe.extract
    with pytest.raises(FrozenInstanceError):
        probe.title = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Probe(id="x", title="x", commands=())
    with pytest.raises(TypeError):
        Probe(id="x", title="x", commands=(), extract=len, judged_by="gpuaudit.probes.kernel")


JUDGING_HALF = ("checks", "extract", "facts", "summary")

# A child: the audit's own modules as the CLI imports them, then a Canned transport that answers every line at
# once and notes, for each line it is asked to run, whether any judging module is loaded by then.
ORDER_SCRIPT = r"""
import asyncio, json, sys
from gpuaudit.tui.cli import commands, early_setup  # noqa: F401
from gpuaudit.tui.cli import headless  # noqa: F401
from gpuaudit.probes.catalogue import REGISTRY
from gpuaudit.probes.core.collect.transport import LocalTransport, RawResult
from gpuaudit.probes.core.models import Target
from gpuaudit.probes.core.run.runner import Audit, TargetBinding

IDS = [p.id for p in REGISTRY]
HALF = ("checks", "extract", "facts", "summary")

def judging_loaded():
    return sorted(m for m in sys.modules if m == "gpuaudit.probes.core.judge.probe"
                  or any(m == f"gpuaudit.probes.{p}.{h}" for p in IDS for h in HALF))

at_import = judging_loaded()
parsers = sorted(m for m in sys.modules if m.startswith("gpuaudit.probes.core.parsers."))
seen = []

class Canned(LocalTransport):
    async def run(self, line, **kw):
        seen.append(bool(judging_loaded()))
        await asyncio.sleep(0.05)  # the target's time: the judging halves load meanwhile
        mark = (kw["marker"] + "\n").encode() if kw.get("marker") else b""  # what the login prints first
        out = b"0\ntimeout=yes\nhost\n" if "id -u" in line else b""
        return RawResult(exit_status=0, stdout=mark + out, stderr=mark)

async def main():
    audit = Audit([TargetBinding(Target(role="host", spec="local", kind="local", label="host"), Canned())],
                  list(REGISTRY))
    events = [type(e).__name__ async for e in audit.events()]
    await audit.aclose()
    return events

events = asyncio.run(main())
print(json.dumps({"at_import": at_import, "parsers": parsers, "seen": seen, "events": events[-1],
                  "after": judging_loaded()}))
"""


def test_no_judging_module_loads_before_the_first_commands_leave():
    proc = subprocess.run(
        [sys.executable, "-c", ORDER_SCRIPT], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.splitlines()[-1])
    assert got["at_import"] == [], got["at_import"]
    # the command lines the catalogue declares, and nothing of the parsing code (fails with any parser module)
    assert set(got["parsers"]) == {
        "gpuaudit.probes.core.parsers.lines",
        "gpuaudit.probes.core.parsers.engine_lines",
        "gpuaudit.probes.core.parsers.reader_lines",
    }, got["parsers"]
    seen = got["seen"]
    assert len(seen) > 50 and not seen[0], seen[:5]
    first_loaded = seen.index(True) if True in seen else len(seen)
    assert first_loaded > 40, f"judging loaded before the {first_loaded}th line of {len(seen)} left"
    assert got["events"] == "AuditFinished"
    expected = {f"gpuaudit.probes.{p}.{h}" for p in PROBE_IDS for h in JUDGING_HALF}
    assert expected | {"gpuaudit.probes.core.judge.probe"} <= set(got["after"])


EARLY_SCRIPT = r"""
import json, sys
from gpuaudit.tui.cli import commands, early_setup, entry  # noqa: F401
from gpuaudit.probes.core.collect.targets import parse_container_spec, parse_host_spec

host = parse_host_spec("auditor@127.0.0.1:2222")
parse_container_spec("pct:101", host=host)
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] == "pydantic" or m.endswith("core.models"))))
"""


def test_the_early_connect_needs_no_pydantic():
    """What runs before the SSH handshakes begin (the CLI's entry, the request, the targets' specs, the early
    connect's own modules) loads no pydantic: the models (~0.09 s) load while the handshakes run (issue 30)."""
    proc = subprocess.run(
        [sys.executable, "-c", EARLY_SCRIPT], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.splitlines()[-1]) == []


# A child: a host whose preflight answers late (a slow login) and a container that answers at once. The
# container's first output must not start the judging imports while the host's answer is on its way: each step of
# it would wait behind a module's import, and the host's commands (nvidia-smi -q, the slowest) with it.
LATE_PREFLIGHT_SCRIPT = r"""
import asyncio, json, sys
from gpuaudit.tui.cli import commands, early_setup  # noqa: F401
from gpuaudit.tui.cli import headless  # noqa: F401
from gpuaudit.probes.catalogue import REGISTRY
from gpuaudit.probes.core.collect.transport import LocalTransport, RawResult
from gpuaudit.probes.core.models import Target
from gpuaudit.probes.core.run.runner import Audit, TargetBinding

def judging_loaded():
    return "gpuaudit.probes.core.judge.probe" in sys.modules

host_lines = []

class Canned(LocalTransport):
    def __init__(self, role, preflight_s):
        super().__init__()
        self.role, self.preflight_s = role, preflight_s

    async def run(self, line, **kw):
        preflight = "id -u" in line
        if self.role == "host" and not preflight:
            host_lines.append((judging_loaded(), line))
        await asyncio.sleep(self.preflight_s if preflight else 0.05)
        mark = (kw["marker"] + "\n").encode() if kw.get("marker") else b""
        out = b"0\ntimeout=yes\n" + self.role.encode() + b"\n" if preflight else b""
        return RawResult(exit_status=0, stdout=mark + out, stderr=mark)

async def main():
    bindings = [
        TargetBinding(Target(role=role, spec="local", kind="local", label=role), Canned(role, delay))
        for role, delay in (("host", 0.6), ("container", 0.0))
    ]
    audit = Audit(bindings, list(REGISTRY))
    events = [type(e).__name__ async for e in audit.events()]
    await audit.aclose()
    return events

events = asyncio.run(main())
print(json.dumps({"host_lines": host_lines, "last": events[-1], "after": judging_loaded()}))
"""


def test_the_judging_imports_wait_for_every_targets_preflight():
    proc = subprocess.run(
        [sys.executable, "-c", LATE_PREFLIGHT_SCRIPT],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.splitlines()[-1])
    host_lines = got["host_lines"]
    assert len(host_lines) > 20, host_lines
    late = [line for loaded, line in host_lines if loaded]
    # the host's commands left before the imports began (on the old tree they began at the container's first
    # output, 0.55 s before the host's preflight answered, and all 73 host commands left after); the few that
    # leave later waited by design for a slot of their hang-prone tool (nvidia-smi), freed as others end
    assert all(hang_prone_tool(line) for line in late), late
    assert len(late) <= len(host_lines) // 4, f"{len(late)} of {len(host_lines)} left after"
    assert not any(loaded for loaded, line in host_lines if launch_rank(line) == 0)
    assert got["last"] == "AuditFinished" and got["after"]
