"""Which findings explain a single-stream gap (PROBES.md §13.5) — only those whose mechanism applies in the same
snapshot, ordered by a published cost where one exists.

A finding at warning or worse is listed only when the path it slows is on the decode path of THIS box: an
all-reduce finding needs TP > 1; ACS redirect needs a GPU pair whose peer-to-peer path it changes (a pair behind
a PCIe switch, PIX/PXB in `nvidia-smi topo -m`; when every pair already crosses the root complex, redirecting
changes nothing); CPU-side findings weigh most when the engine runs eager (every step is launched by the CPU).
When measured decode reaches NEAR_BOUND of the comm-aware bound, nothing is listed: the box is near its bound.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

NEAR_BOUND = 0.8
"""Measured ÷ comm-aware bound at or above which the plan says the box is near its bound."""


@dataclass(frozen=True, slots=True)
class Explainer:
    """One known cause of decode speed below the roofline bound, with its published cost."""

    id: str
    mechanism: str
    """"graphs", "allreduce", "acs", "kernels", "cpu" or "measurement"."""
    cost: float | None = None
    """Fraction of single-stream speed a published measurement lost to it (ordering); None = not published."""
    cost_note: str = ""


EXPLAINERS: tuple[Explainer, ...] = (
    Explainer(
        "python.cuda_graphs",
        "graphs",
        0.9,
        "eager decode on 8x RTX PRO 6000 reported at 2-4 tok/s total vs ~50 with graphs "
        "(vllm#56892; rtx6kpro models/glm5.md)",
    ),
    Explainer(
        "nccl.p2p_matrix",
        "allreduce",
        0.32,
        "P2P off: Kimi-K2.5 single stream 65 -> 44 tok/s on the same box (rtx6kpro models/kimi-k25.md)",
    ),
    Explainer(
        "nccl.iommu_acs_gate",
        "allreduce",
        0.32,
        "P2P through the IOMMU/root complex: as P2P off (rtx6kpro models/kimi-k25.md)",
    ),
    Explainer("nccl.transport_observed", "allreduce"),
    Explainer("firmware.iommu_mode", "allreduce"),
    Explainer("pcie.acs", "acs"),
    Explainer("python.torch_arch_support", "kernels"),
    Explainer("python.flashinfer_sm120", "kernels"),
    Explainer("python.attention_backend", "kernels"),
    Explainer("power.cpu_scaling_driver", "cpu"),
    Explainer("power.cpu_cstates", "cpu"),
    Explainer("power.cpu_effective_freq", "cpu"),
    Explainer("python.measured_throughput", "measurement"),
)


@dataclass(frozen=True, slots=True)
class Context:
    """What the snapshot says about the decode path."""

    tp: int | None = None
    eager: bool | None = None
    """The engine runs without CUDA graphs (None: no engine read)."""
    switch_pairs: bool | None = None
    """Some GPU pair is joined through a PCIe switch (PIX/PXB); None = topology not read."""


def applies(e: Explainer, ctx: Context) -> str | None:
    """Why the mechanism applies here, or None when it does not."""
    if e.mechanism == "allreduce":
        if ctx.tp is not None and ctx.tp <= 1:
            return None
        return f"TP {ctx.tp}: every layer all-reduces" if ctx.tp else "all-reduce path"
    if e.mechanism == "acs":
        if ctx.tp is not None and ctx.tp <= 1:
            return None
        if ctx.switch_pairs is False:
            return None  # every pair already crosses the root complex: redirect changes no path
        return (
            "GPU pairs behind a PCIe switch: ACS redirect sends their P2P through the root complex"
        )
    if e.mechanism == "cpu":
        return (
            "the engine runs eager: the CPU launches every kernel of every step"
            if ctx.eager
            else "host-side share of each step"
        )
    if e.mechanism == "graphs":
        return "CUDA graphs off: every step launches each kernel from Python"
    return "applies to any decode"


def explanations(
    findings: Iterable[tuple[str, str, str]], ctx: Context, ratio: float | None
) -> tuple[list[dict[str, str]], bool]:
    """(id, severity, title) of the findings at warning or worse -> (explanations in order, near bound)."""
    if ratio is not None and ratio >= NEAR_BOUND:
        return [], True
    bad = {i: (sev, title) for i, sev, title in findings}
    rows = []
    for order, e in enumerate(EXPLAINERS):
        if e.id not in bad:
            continue
        why = applies(e, ctx)
        if why is None:
            continue
        cost = e.cost
        if e.mechanism == "cpu" and not ctx.eager:
            rank = 2.0  # graphs on: host overhead is a small share of a step, after everything else
        elif cost is not None:
            rank = -cost
        else:
            rank = 0.0
        rows.append((rank, order, e, why))
    rows.sort(key=lambda r: (r[0], r[1]))
    out = []
    for _, _, e, why in rows:
        row = {"id": e.id, "severity": bad[e.id][0], "title": bad[e.id][1], "why": why}
        if e.cost is not None:
            row["cost"] = f"~{100 * e.cost:.0f}% of single-stream speed: {e.cost_note}"
        out.append(row)
    return out, False


def switch_pairs(links: dict[tuple[str, str], str]) -> bool | None:
    """From `nvidia-smi topo -m` links: is any GPU pair joined through a PCIe switch (PIX/PXB)?"""
    gpu_links = [k for (a, b), k in links.items() if a.startswith("GPU") and b.startswith("GPU")]
    if not gpu_links:
        return None
    return any(k in ("PIX", "PXB") for k in gpu_links)
