"""The runner: events, isolation of failures, dedup, timeouts, re-run, target failure."""

from __future__ import annotations

import re

from gpuaudit.probes.core.collect.transport import LocalTransport, RawResult
from gpuaudit.probes.core.judge.checks import BOTH, Check, info
from gpuaudit.probes.core.models import Role, Target
from gpuaudit.probes.core.run.events import (
    AuditFinished,
    ProbeFinished,
    TargetFailed,
    fold_events,
    initial_run,
)
from gpuaudit.probes.core.run.runner import Audit, AuditOptions, TargetBinding
from gpuaudit.probes.core.spec import Command, Outputs, Probe
from pydantic import BaseModel


class Facts(BaseModel):
    outs: dict[str, str] = {}


def make_probe(pid: str, *commands: Command, explode: bool = False) -> Probe:
    def extract(outputs: Outputs, role: Role) -> Facts:
        if explode:
            raise ValueError("parser bug")
        return Facts(outs={k: v.stdout for k, v in outputs.items()})

    seen = Check(
        id=f"{pid}.seen",
        title="seen",
        owner="host",
        why="",
        fix="",
        verdict=lambda ctx: info(",".join(sorted(ctx.f.outs))),
        roles=BOTH,
        no_input="a test probe: lists the outputs it was given",
    )
    return Probe(id=pid, title=pid, commands=commands, extract=extract, checks=(seen,))


class CountingTransport(LocalTransport):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    async def run(self, line, **kw) -> RawResult:
        self.lines.append(line)
        return await super().run(line, **kw)


def local_binding(transport=None) -> list[TargetBinding]:
    return [
        TargetBinding(
            Target(role="host", spec="local", kind="local", label="host"),
            transport or LocalTransport(),
        )
    ]


async def collect(audit: Audit, **kw) -> list:
    events = [e async for e in audit.events(**kw)]
    await audit.aclose()
    return events


async def test_events_fold_to_final_state_and_failures_are_isolated():
    good = make_probe("good", Command("a", "echo a"), Command("b", "echo b"))
    bad = make_probe("bad", Command("c", "echo c"), explode=True)
    audit = Audit(local_binding(), [good, bad])
    events = await collect(audit)
    assert isinstance(events[-1], AuditFinished)
    run = fold_events(initial_run(audit.targets, [("good", "good"), ("bad", "bad")]), events)
    assert run.probe("good").status == "done"
    assert run.probe("good").findings[0].observed == "a,b"
    assert run.probe("bad").status == "failed" and "parser bug" in run.probe("bad").error
    assert len(run.probe("bad").records) == 1


async def test_same_line_in_two_probes_runs_once():
    t = CountingTransport()
    p1 = make_probe("p1", Command("x", "echo shared"))
    p2 = make_probe("p2", Command("y", "echo shared"))
    await collect(Audit(local_binding(t), [p1, p2]))
    assert sum("echo shared" in ln for ln in t.lines) == 1


async def test_timeout_is_recorded_and_other_commands_finish():
    p = make_probe("p", Command("slow", "sleep 30", timeout_s=0.5), Command("fast", "echo fast"))
    events = await collect(Audit(local_binding(), [p]))
    result = next(e.result for e in events if isinstance(e, ProbeFinished))
    recs = {r.command_id: r for r in result.records}
    assert recs["slow"].timed_out and recs["slow"].exit_status is None
    assert recs["fast"].stdout == "fast\n"


async def test_needs_root_is_skipped_without_root(monkeypatch):
    async def not_root(self, line, **kw):
        marker = (
            re.search(r"@@gpuaudit-[0-9a-f]+@@", line)[0].encode() + b"\n"
        )  # what the wrapper prints first
        if kw.get("command_id") == "preflight":
            return RawResult(exit_status=0, stdout=marker + b"1000\nbox\n", stderr=marker)
        return RawResult(exit_status=0, stdout=marker + b"ran\n", stderr=marker)

    monkeypatch.setattr(LocalTransport, "run", not_root)
    p = make_probe("p", Command("root_only", "cat /root/x", needs_root=True))
    events = await collect(Audit(local_binding(), [p]))
    rec = next(e.result for e in events if isinstance(e, ProbeFinished)).records[0]
    assert rec.error and rec.error.startswith("needs root")


async def test_unreachable_container_leaves_host_complete():
    from gpuaudit.probes.core.collect.ssh_transport import SshOptions
    from gpuaudit.probes.core.collect.targets import parse_container_spec, parse_host_spec
    from gpuaudit.probes.core.run.session import live_bindings
    from sshd_server import free_port

    host = parse_host_spec(None)
    container = parse_container_spec(f"nobody@127.0.0.1:{free_port()}", host=host)
    p = make_probe("p", Command("a", "echo a", on=frozenset({"host", "container"})))
    audit = Audit(
        live_bindings(
            host, container, SshOptions(use_ssh_config=False, use_agent=False, connect_timeout_s=3)
        ),
        [p],
    )
    events = await collect(audit)
    failed = [e for e in events if isinstance(e, TargetFailed)]
    assert failed and failed[0].role == "container" and "refused" in failed[0].reason
    recs = {
        r.target: r for r in next(e.result for e in events if isinstance(e, ProbeFinished)).records
    }
    assert recs["host"].stdout == "a\n"
    assert recs["container"].error.startswith("target failed")


async def test_rerun_one_probe_reuses_the_connection():
    class CountingConnects(LocalTransport):
        connects = 0

        async def connect(self) -> None:
            CountingConnects.connects += 1

    p1 = make_probe("p1", Command("a", "echo a"))
    p2 = make_probe("p2", Command("b", "echo b"))
    audit = Audit(local_binding(CountingConnects()), [p1, p2])
    first = [e async for e in audit.events()]
    again = [e async for e in audit.events(probe_ids=["p2"])]
    await audit.aclose()
    assert CountingConnects.connects == 1
    assert [e.result.probe_id for e in again if isinstance(e, ProbeFinished)] == ["p2"]
    assert len([e for e in first if isinstance(e, ProbeFinished)]) == 2


async def test_active_commands_only_with_active_flag():
    p = make_probe("p", Command("load", "echo load", active=True), Command("passive", "echo p"))
    ev = await collect(Audit(local_binding(), [p]))
    ids = {r.command_id for r in next(e.result for e in ev if isinstance(e, ProbeFinished)).records}
    assert ids == {"passive"}
    ev = await collect(Audit(local_binding(), [p], AuditOptions(active=True)))
    ids = {r.command_id for r in next(e.result for e in ev if isinstance(e, ProbeFinished)).records}
    assert ids == {"passive", "load"}


def test_truncated_or_statusless_output_is_not_a_usable_answer():
    from gpuaudit.probes.core.models import CommandRecord
    from gpuaudit.probes.core.spec import record_problem

    base = dict(target="host", probe_id="p", command_id="c", command="x")
    assert record_problem(CommandRecord(**base, exit_status=0, stdout="a\n")) is None
    assert "truncated" in record_problem(
        CommandRecord(**base, exit_status=None, stdout="a" * 10, truncated=True)
    )
    assert "no exit status" in record_problem(
        CommandRecord(**base, exit_status=None, stdout="partial")
    )


async def test_local_overflow_is_killed_without_an_exit_status():
    p = make_probe("p", Command("flood", "yes"))
    events = await collect(Audit(local_binding(), [p], AuditOptions(max_bytes=4096)))
    rec = next(e.result for e in events if isinstance(e, ProbeFinished)).records[0]
    assert rec.truncated and rec.exit_status is None and len(rec.stdout) == 4096
