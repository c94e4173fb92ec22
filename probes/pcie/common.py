"""Small helpers shared by the pcie verdicts."""

from __future__ import annotations

from collections import Counter

from gpuaudit.probes.core.judge.checks import Ctx, Verdict, source_problem, unknown
from gpuaudit.probes.pcie.facts import PcieFacts


def counts(values: list[str]) -> str:
    """["512 B", "512 B", "4096 B"] -> "4096 B on 1 GPU, 512 B on 2 GPUs"."""
    return ", ".join(
        f"{k} on {n} GPU{'s' if n != 1 else ''}"
        for k, n in sorted(Counter(values).items(), key=lambda kv: str(kv[0]))
    )


def why_unusable(ctx: Ctx, command_id: str) -> str:
    """Why an optional source gave no data on the host."""
    facts = ctx.of("host")
    return source_problem(ctx.outputs.get("host", {}).get(command_id), facts) or "no data"


def no_gpu_found(ctx: Ctx, *command_ids: str) -> Verdict:
    """The data read names no GPU while GPU presence was not proven either way: say what was read, never 'ok'."""
    return unknown(
        "no NVIDIA GPU in " + ", ".join(command_ids) + " and GPU presence not determined "
        f"(proc_driver_version: {why_unusable(ctx, 'proc_driver_version')}; "
        f"pci_nvidia_sysfs: {why_unusable(ctx, 'pci_nvidia_sysfs')})"
    )


def first_upstream(h: PcieFacts, gpu: str) -> str | None:
    path = h.parents.get(gpu) or []
    return path[0] if path else None
