"""Which target's facts a python check reads: the judged Python, the GPUs it runs on, the serving engine.

The checks are judged once, on the container when it was audited (else the host); the engine or the GPU
list may have been read on the other target only (an engine on the host, nvidia-smi missing in the container).
"""

from __future__ import annotations

from gpuaudit.probes.core.judge.checks import Ctx
from gpuaudit.probes.core.models import Role
from gpuaudit.probes.core.parsers.engine import engine_listing_problem
from gpuaudit.probes.python.facts import PythonFacts
from gpuaudit.probes.python.parsers import GPU_SOURCE

FIRST_OF: tuple[Role, ...] = ("container", "host")
NO_ENGINE = "no serving engine found (no SGLang/vLLM/TGI server process)"


def _ordered(ctx: Ctx) -> list[tuple[Role, PythonFacts]]:
    judged: Role = ctx.role or "host"
    rest: list[Role] = [r for r in FIRST_OF if r != judged and ctx.of(r) is not None]
    return [(judged, ctx.f)] + [(r, ctx.of(r)) for r in rest]


def gpus(ctx: Ctx) -> tuple[Role, PythonFacts] | None:
    """The target whose GPU list (compute capabilities, driver) was read, the judged one first."""
    return next(((r, f) for r, f in _ordered(ctx) if f.compute_caps), None)


def gpu_problem(ctx: Ctx) -> str:
    return (
        "; ".join(
            f"{r}: {GPU_SOURCE} {p}" for r, _f in _ordered(ctx) if (p := ctx.problem(GPU_SOURCE, r))
        )
        or "no GPU listed by nvidia-smi"
    )


def engine(ctx: Ctx) -> tuple[Role, PythonFacts] | None:
    """The target whose process scan found the engine's API server, the judged one first."""
    return next(((r, f) for r, f in _ordered(ctx) if f.engine_kind), None)


def no_engine(ctx: Ctx) -> str | None:
    """`applies`: "not applicable" only when every target's process scan answered and none found an engine."""
    facts = [f for _r, f in _ordered(ctx)]
    return NO_ENGINE if all(f.engine_listed and not f.engine_kind for f in facts) else None


def engine_missing(ctx: Ctx) -> str:
    """Why the engine could not be judged although `no_engine` did not prove its absence."""
    listings = {
        r: (ctx.problem("engine_procs", r) or (None if f.engine_listed else "not collected"))
        for r, f in _ordered(ctx)
    }
    return engine_listing_problem(listings, found=False) or NO_ENGINE
