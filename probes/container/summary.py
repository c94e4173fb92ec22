"""The container pane's key-facts line."""

from __future__ import annotations

from gpuaudit.probes.container.configs import gib, match_config
from gpuaudit.probes.container.facts import ContainerFacts
from gpuaudit.probes.core.spec import FactsByTarget


def summarize(facts: FactsByTarget) -> str:
    host: ContainerFacts | None = facts.get("host")
    ctr: ContainerFacts | None = facts.get("container")
    if host is None:
        return ""
    parts = []
    if ctr is not None:
        cfg, _how = match_config(host, ctr) if host.configs else (None, "")
        kind = ctr.kind or "container"
        parts.append(f"{kind} CT {cfg.vmid}" if cfg else kind)
        if ctr.gpus is not None:
            parts.append(f"{len(ctr.gpus)}/{len(host.gpus) if host.gpus is not None else '?'} GPUs")
        if ctr.shm_bytes is not None:
            parts.append(f"shm {gib(ctr.shm_bytes)}")
    elif host.configs is not None and host.is_pve:
        parts.append(
            f"{sum(1 for c in host.configs.values() if c.has_nvidia)} GPU container config(s)"
        )
    return " · ".join(parts)
