#!/usr/bin/env python3
"""Build the demo snapshots snapshots/examples/case-study-{before,after}.json from raw recordings.

The recordings live in snapshots/examples/case-study/<before|after>/<host|container>/<command_id>.out
(+ .err, .exit). They go through the REAL parsers and rules (the same runner and DirectoryTransport as
probes.core.run.session.directory_bindings), so the
demo shows exactly what the tool says about those outputs. Re-runnable: the output is deterministic
(fixed timestamps, no durations), and a missing recording reads as "command not found" (the tool is not
installed), except the ids listed in the folder's NOT-RECORDED.txt: the recording predates those sources,
and they read as "not recorded" (nothing ran), never as a failed command.

Usage: python scripts/build_case_study.py [--check]   (--check: exit 1 if the committed files differ)
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpuaudit.probes.catalogue import REGISTRY  # noqa: E402
from gpuaudit.probes.core.collect.replay_transport import (  # noqa: E402
    NOT_RECORDED_LIST,
    DirectoryTransport,
)
from gpuaudit.probes.core.models import AuditRun, Severity, Target  # noqa: E402
from gpuaudit.probes.core.run.runner import Audit, AuditOptions, TargetBinding  # noqa: E402
from gpuaudit.probes.core.sources import SOURCES  # noqa: E402
from gpuaudit.snapshots.schema import Snapshot  # noqa: E402
from gpuaudit.tui.cli.headless import collect  # noqa: E402
from gpuaudit.tui.cli.session_setup import AuditSetup  # noqa: E402

EXAMPLES = ROOT / "snapshots" / "examples"
RECORDINGS = EXAMPLES / "case-study"
NOTE = (
    "DEMO: illustrative example modelled on a real case (Proxmox host with 8x RTX PRO 6000 Blackwell and "
    "an LXC container serving GLM-5 NVFP4 with SGLang at ~10 tok/s single stream) - not a capture of a real "
    "machine"
)
NOTE_AFTER = (
    " - decode speed not re-measured after the fixes (the case study measured none; the engine log since "
    "its restart has no decode batch)"
)
"""The after phase says what it did not measure, never repeating the before figure."""
PHASES = {
    "before": datetime(2026, 1, 10, 9, 0, tzinfo=UTC),
    "after": datetime(2026, 1, 24, 9, 0, tzinfo=UTC),
}
TARGETS = {
    "host": Target(role="host", spec="root@pve-gpu01", kind="ssh", label="host (root@pve-gpu01)"),
    "container": Target(role="container", spec="pct:101", kind="pct", label="container (pct:101)"),
}
WRAP = {"container": "pct exec 101 --"}
HOSTNAMES = {"host": "pve-gpu01", "container": "sglang-ct101"}


def build(phase: str, recordings: Path = RECORDINGS) -> Snapshot:
    """One demo snapshot from `<recordings>/<phase>/{host,container}/` through the real probes."""
    created = PHASES[phase]
    for role in ("host", "container"):
        check_not_recorded(recordings / phase / role)
    # Both targets always exist (a role without a folder yet reads as "nothing installed"), labelled
    # like the case study: the files stand in for the machines.
    bindings = [
        TargetBinding(
            target=TARGETS[role],
            wrap_prefix=WRAP.get(role),
            transport=DirectoryTransport(recordings / phase / role, label=role),
        )
        for role in ("host", "container")
    ]
    note = NOTE + (NOTE_AFTER if phase == "after" else "")
    setup = AuditSetup(Audit(bindings, list(REGISTRY), AuditOptions()), mode="demo", note=note)
    run = asyncio.run(collect(setup))  # the headless front end's fold, without its progress line
    return _normalise(run, created, phase)


def check_not_recorded(folder: Path) -> None:
    """Every id of the folder's NOT-RECORDED.txt is a source id and has no recording (ValueError otherwise)."""
    listed = DirectoryTransport(folder).not_recorded
    unknown = sorted(listed - set(SOURCES))
    recorded = sorted(c for c in listed if any(folder.glob(f"{c}.*")))
    if unknown or recorded:
        raise ValueError(
            f"{folder / NOT_RECORDED_LIST}: "
            + "; ".join(
                part
                for part in (
                    f"not a source id: {', '.join(unknown)}" if unknown else "",
                    f"recorded after all: {', '.join(recorded)}" if recorded else "",
                )
                if part
            )
        )


def _normalise(run: AuditRun, created: datetime, phase: str) -> Snapshot:
    """Fixed times and hostnames so that rebuilding gives byte-identical files."""
    probes = [
        p.model_copy(
            update={
                "started_at": created,
                "duration_s": 0.0,
                "records": [
                    r.model_copy(update={"started_at": created, "duration_s": 0.0})
                    for r in p.records
                ],
            }
        )
        for p in run.probes
    ]
    states = {
        role: s.model_copy(update={"hostname": HOSTNAMES.get(role, s.hostname)})
        for role, s in run.target_states.items()
    }
    run = run.model_copy(
        update={
            "probes": probes,
            "target_states": states,
            "started_at": created,
            "finished_at": created,
        }
    )
    return Snapshot.from_run(run, name=f"case-study-{phase}", created_at=created)


def render(snapshot: Snapshot) -> str:
    return snapshot.model_dump_json(indent=1) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--check", action="store_true", help="compare with the committed files instead of writing"
    )
    args = ap.parse_args(argv)
    stale = []
    for phase in PHASES:
        if not (RECORDINGS / phase).is_dir():
            print(
                f"warning: no recordings in {RECORDINGS / phase}: every command reads as not installed",
                file=sys.stderr,
            )
        text = render(build(phase))
        out = EXAMPLES / f"case-study-{phase}.json"
        if args.check:
            if not out.exists() or out.read_text() != text:
                stale.append(out.name)
            continue
        out.write_text(text)
        snap = Snapshot.model_validate_json(text)
        bad = sorted({f.id for f in snap.findings if f.severity.rank >= Severity.WARNING.rank})
        print(
            f"wrote {out.relative_to(ROOT)}: {len(snap.records)} records, {len(snap.findings)} findings; "
            f"warning or worse: {', '.join(bad) or 'none'}",
            file=sys.stderr,
        )
    if stale:
        print(
            f"stale: {', '.join(stale)} (run python scripts/build_case_study.py)", file=sys.stderr
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
