"""Builders of crafted (synthetic) snapshots for the snapshot tests; real recordings are in snapshots/examples/case-study."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from gpuaudit.probes.core.models import CommandRecord, Finding, ProbeResult, Target, TargetState
from gpuaudit.snapshots.schema import Snapshot

REPO = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 1, 10, 9, 0, tzinfo=UTC)


def rec(
    cid: str,
    stdout: str = "",
    *,
    role: str = "host",
    probe: str = "kernel",
    exit_status: int | None = 0,
    **kw,
) -> CommandRecord:
    return CommandRecord(
        target=role,
        probe_id=probe,
        command_id=cid,
        command=f"echo {cid}",
        exit_status=exit_status,
        stdout=stdout,
        started_at=T0,
        **kw,
    )


def fnd(
    fid: str, severity: str, observed: str = "", targets: tuple[str, ...] = ("host",)
) -> Finding:
    probe = fid.split(".")[0]
    return Finding(
        id=fid,
        severity=severity,
        probe=probe,
        targets=list(targets),
        title=f"title of {fid}",
        observed=observed,
    )


def probe(pid: str, *, records=(), facts=None, findings=(), status: str = "done") -> ProbeResult:
    return ProbeResult(
        probe_id=pid,
        title=pid.capitalize(),
        status=status,
        records=list(records),
        facts=facts or {},
        findings=list(findings),
    )


def snap(
    *probes: ProbeResult,
    container: str | None = "pct:101",
    created: datetime = T0,
    name: str | None = None,
    host: str = "root@127.0.0.1:1",
    mode: str = "live",
) -> Snapshot:
    targets = [Target(role="host", spec=host, kind="ssh", label=f"host ({host})")]
    states = {"host": TargetState(role="host", state="connected", is_root=True, hostname="pve1")}
    if container:
        kind = (
            container.split(":")[0] if container.startswith(("pct:", "docker:", "lxc:")) else "ssh"
        )
        targets.append(
            Target(role="container", spec=container, kind=kind, label=f"container ({container})")
        )
        states["container"] = TargetState(
            role="container", state="connected", is_root=True, hostname="ct"
        )
    return Snapshot(
        created_at=created,
        name=name,
        mode=mode,
        targets=targets,
        target_states=states,
        probes=list(probes),
        findings=[f for p in probes for f in p.findings],
    )


def kernel_probe(
    release: str = "6.8.12-9-pve", balancing: str = "1", severity: str = "warning"
) -> ProbeResult:
    return probe(
        "kernel",
        records=[rec("uname_r", release + "\n"), rec("numa_balancing", balancing + "\n")],
        facts={"host": {"release": release, "numa_balancing": int(balancing), "problems": {}}},
        findings=[fnd("kernel.numa_balancing", severity, f"kernel.numa_balancing={balancing}")],
    )
