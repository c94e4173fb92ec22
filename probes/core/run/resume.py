"""Resume a snapshot: answer its good records from the recording, run only what failed live.

The runner re-judges every probe over the merged records, so a resumed snapshot is what a complete
audit would have said. A record is re-run when it never produced a normal exit: an error (target
failed, connection lost, needs root, cancelled), a timeout, or no exit status. Commands the snapshot
never recorded (a probe newer than the recording) are run too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gpuaudit.probes.core.collect.replay_transport import ReplayTransport
from gpuaudit.probes.core.collect.transport import (
    PREFLIGHT_ID,
    Gate,
    RawResult,
    Transport,
    TransportBase,
)
from gpuaudit.probes.core.models import CommandRecord, Role, Target, TargetState
from gpuaudit.probes.core.run.runner import TargetBinding
from gpuaudit.probes.core.spec import Probe

NOT_RERUN = "not re-run: the resumed snapshot had no live connection for this target"


def needs_rerun(rec: CommandRecord) -> bool:
    """Failed, timed out or cancelled: anything that is not a command's own normal answer."""
    return rec.error is not None or rec.timed_out or rec.exit_status is None


def good_records(records: Iterable[CommandRecord]) -> dict[Role, dict[str, CommandRecord]]:
    """role -> command_id -> the first usable record."""
    out: dict[Role, dict[str, CommandRecord]] = {}
    for rec in records:
        if not needs_rerun(rec):
            out.setdefault(rec.target, {}).setdefault(rec.command_id, rec)
    return out


def rerun_plan(
    records: Iterable[CommandRecord],
    probes: Sequence[Probe],
    roles: Iterable[Role],
    *,
    active: bool = False,
) -> dict[Role, list[str]]:
    """role -> the command ids that must run live (in probe order, each once)."""
    good = good_records(records)
    plan: dict[Role, list[str]] = {}
    for role in roles:
        ids: dict[str, None] = {}
        for probe in probes:
            for cmd in probe.commands_for(role):
                if (active or not cmd.active) and cmd.id not in good.get(role, {}):
                    ids[cmd.id] = None
        plan[role] = list(ids)
    return plan


class ResumeTransport(TransportBase):
    """Recorded answers first; the live transport (if any) for the rest, preflight included."""

    def __init__(
        self,
        good: Mapping[str, CommandRecord],
        live: Transport | None,
        *,
        state: TargetState | None = None,
        owns_live: bool = True,
        label: str = "resume",
    ) -> None:
        self.label = label
        self.live = live
        self.owns_live = owns_live
        """False for a container entered through the host: the host's binding connects and closes."""
        self._replay = ReplayTransport(good.values(), label=label)
        self._good = good
        self._state = state
        self.ran_live: list[str] = []

    @property
    def live_lines(self) -> bool:
        """Its live part really runs lines: their outputs carry the start marker."""
        return self.live is not None and self.live.executes_lines

    async def connect(self) -> None:
        if self.live is not None and self.owns_live:
            await self.live.connect()

    def has_recorded(self, command_id: str) -> bool:
        return command_id in self._good

    async def run(
        self,
        line: str,
        *,
        command_id: str,
        timeout_s: float,
        max_bytes: int,
        gate: Gate | None = None,
        marker: str | None = None,
        session: Any = None,
    ) -> RawResult:
        if command_id in self._good:
            return await self._replay.run(
                line, command_id=command_id, timeout_s=timeout_s, max_bytes=max_bytes
            )
        if self.live is not None:
            if command_id != PREFLIGHT_ID:
                self.ran_live.append(command_id)
            return await self.live.run(
                line, command_id=command_id, timeout_s=timeout_s, max_bytes=max_bytes
            )
        if command_id == PREFLIGHT_ID:  # nothing to run here: report the recorded identity
            is_root = (
                self._state.is_root if self._state and self._state.is_root is not None else True
            )
            hostname = (self._state.hostname if self._state else None) or self.label
            return RawResult(
                exit_status=0, stdout=f"{0 if is_root else 1000}\n{hostname}\n".encode()
            )
        return RawResult(exit_status=None, error=NOT_RERUN)

    async def aclose(self) -> None:
        if self.live is not None and self.owns_live:
            await self.live.aclose()


def resume_bindings(
    targets: Sequence[Target],
    records: Sequence[CommandRecord],
    plan: Mapping[Role, list[str]],
    live: Sequence[TargetBinding] = (),
    states: Mapping[str, TargetState] | None = None,
) -> list[TargetBinding]:
    """One binding per recorded target; a live transport only where the plan has something to run.

    `live` holds bindings built from the snapshot's target specs (or the CLI's overrides); a
    container entered through its host keeps that route, and the host then connects for it too.
    """
    live_by_role = {b.target.role: b for b in live}
    states = states or {}
    good = good_records(records)

    def wanted(role: Role) -> bool:
        return bool(plan.get(role)) or any(b.via == role and plan.get(b.target.role) for b in live)

    out = []
    for t in targets:
        lb = live_by_role.get(t.role)
        use_live = lb is not None and wanted(t.role)
        transport = ResumeTransport(
            good.get(t.role, {}),
            lb.transport if use_live else None,  # type: ignore[union-attr]
            state=states.get(t.role),
            owns_live=lb is None or lb.via is None,
            label=f"resume:{t.role}",
        )
        out.append(
            TargetBinding(
                target=lb.target if lb else t,
                transport=transport,
                wrap_prefix=lb.wrap_prefix if lb else None,
                via=lb.via if use_live and lb else None,
            )
        )
    return out
