"""The decode bounds for one stream (batch 1), each with the steps that produce it (PROBES.md §13.3, ROOFLINE.md §4.3).

* naive:      unique active bytes ÷ aggregate bandwidth of every GPU (how "309 tok/s" is usually computed)
* tp_aware:   bytes ONE rank reads per token (split parts ÷ TP + replicated parts) ÷ one GPU's bandwidth (η = 1)
* tp_aware_eta: the same at the usable fraction η of peak bandwidth
* comm_aware: t_mem(η) + 2 × layers × all-reduce latency (TP > 1)
* published_eta: the same at a published MEASURED bandwidth (DCGM's floor for the SKU), when one is published
* speculative decoding (MTP, EAGLE, n-gram) multiplies every bound by the tokens accepted per step, as its own
  step (the draft's own cost is left out, so a bound stays a bound)

Pipeline parallelism does not divide a single stream's bytes (stages run one after another), so only TP (and EP
for routed experts) divide them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuaudit.probes.core.models import empty_list
from gpuaudit.probes.core.record import Record, field
from gpuaudit.probes.core.roofline.gpus import GpuSpec
from gpuaudit.probes.core.roofline.model import ModelSpec

ETA_DEFAULT = 0.8
ALLREDUCE_US = {
    # small-message all-reduce latency defaults, µs, when nccl-tests (--active) did not measure it
    "pcie": (
        24.0,
        "NCCL ~24 µs at 256 B-64 KB on 8 PCIe Gen5 GPUs behind switches (rtx6kpro measurements, "
        "docs/ROOFLINE-METHOD.md §3)",
    ),
    "nvlink": (8.0, "NVLink/NVSwitch small-message minimum latency 8 µs (llm-analysis default)"),
}
CUSTOM_ALLREDUCE_US = {
    # the engine's own one-shot all-reduce kernel (not NCCL) for small messages
    "pcie_oneshot": (
        7.5,
        "custom PCIe one-shot all-reduce 7.5-9 µs at <= 8 KB on GPUs behind switches (rtx6kpro "
        "hardware/pcie-bandwidth.md, docs/ROOFLINE-METHOD.md §3)",
    ),
    "pcie_2gpu": (
        6.0,
        "engine custom all-reduce on 2 PCIe GPUs (vLLM/SGLang enable it for 2 PCIe ranks): one-shot 6-9 µs "
        "(rtx6kpro, docs/ROOFLINE-METHOD.md §3)",
    ),
}


class Step(Record):
    label: str
    value: str
    how: str = ""


class Bounds(Record):
    """tok/s figures; None when an input is missing (never a guessed number)."""

    naive: float | None = None
    tp_aware: float | None = None
    tp_aware_eta: float | None = None
    comm_aware: float | None = None
    published_eta: float | None = None
    """comm-aware at a published measured bandwidth (GpuSpec.measured_gbs), tok/s."""
    published_eta_value: float | None = None
    published_eta_source: str = ""
    speculative: float | None = None
    """Tokens per step the bounds above were multiplied by (speculative decoding); None = off."""
    allreduce_us: float | None = None
    bytes_per_gpu: float | None = None
    unique_active_bytes: float | None = None
    steps: list[Step] = field(default_factory=empty_list)
    missing: list[str] = field(default_factory=empty_list)


@dataclass(frozen=True, slots=True)
class Layout:
    """How the model is spread over the GPUs: tensor, pipeline and expert parallel sizes."""

    gpus: int
    tp: int
    pp: int = 1
    ep: int | None = None


def gb(x: float) -> str:
    return f"{x / 1e9:.2f} GB"


def rank_share(tp_mode: str, layout: Layout, kv_split: int, spec: ModelSpec) -> tuple[float, str]:
    """The fraction of a component ONE rank reads, and why."""
    tp = max(layout.tp, 1)
    if tp_mode == "split":
        return 1 / tp, f"÷ TP {tp}"
    if tp_mode == "kv":
        n = min(tp, max(kv_split, 1))
        return 1 / n, f"÷ min(TP, KV heads) = {n}"
    if tp_mode == "experts" and layout.ep and layout.ep > 1 and spec.experts_active:
        per_rank = math.ceil(spec.experts_active / layout.ep)
        return per_rank / spec.experts_active, (
            f"EP {layout.ep}: the busiest rank holds ≥ {per_rank} of the "
            f"{spec.experts_active} active experts"
        )
    if tp_mode == "experts":
        return 1 / tp, f"÷ TP {tp} (each active expert split over the ranks)"
    return 1.0, "replicated on every rank"


def compute(
    spec: ModelSpec,
    layout: Layout,
    gpu: GpuSpec | None,
    *,
    interconnect: str | None,
    eta: float = ETA_DEFAULT,
    allreduce_us: float | None = None,
    allreduce_source: str = "",
    accept_len: float | None = None,
    accept_source: str = "",
) -> Bounds:
    b = Bounds()
    steps = b.steps
    per_gpu = 0.0
    unique = 0.0
    for c in spec.components:
        share, why = rank_share(c.tp, layout, spec.kv_split, spec)
        read = c.params * c.bytes_per_param
        unique += read
        per_gpu += read * share
        steps.append(
            Step(
                label=c.name,
                value=gb(read * share),
                how=f"{c.params / 1e9:.3f} B params × {c.bytes_per_param:g} B ({c.precision}) {why}",
            )
        )
    b.bytes_per_gpu, b.unique_active_bytes = per_gpu, unique
    steps.append(
        Step(
            label="bytes per rank per token (ctx 0)", value=gb(per_gpu), how="sum of the rows above"
        )
    )
    kv_share = 1 / min(max(layout.tp, 1), max(spec.kv_split, 1))
    steps.append(
        Step(
            label="KV cache per 1K tokens of context, per rank",
            value=gb(spec.kv_bytes_per_token * 1000 * kv_share),
            how=(
                "latent KV replicated on every rank"
                if spec.kv_split == 1
                else f"split over {1 / kv_share:.0f} ranks"
            )
            + (f"; DSA reads at most {spec.kv_read_cap} tokens" if spec.kv_read_cap else "")
            + " (bounds below at context 0)",
        )
    )
    if gpu is None:
        b.missing.append("GPU memory bandwidth (GPU model not in the table)")
        return b
    bw = gpu.bandwidth_gbs * 1e9
    steps.append(
        Step(
            label="peak bandwidth per GPU",
            value=f"{gpu.bandwidth_gbs:g} GB/s",
            how=f"{gpu.model}: {gpu.source}",
        )
    )
    b.naive = layout.gpus * bw / unique
    steps.append(
        Step(
            label="naive bound",
            value=f"{b.naive:.0f} tok/s",
            how=f"{layout.gpus} × {gpu.bandwidth_gbs:g} GB/s ÷ {gb(unique)} unique active bytes",
        )
    )
    b.tp_aware = bw / per_gpu
    steps.append(
        Step(
            label="TP-aware bound (η = 1)",
            value=f"{b.tp_aware:.0f} tok/s",
            how=f"{gpu.bandwidth_gbs:g} GB/s ÷ {gb(per_gpu)}",
        )
    )
    t_mem = per_gpu / (eta * bw)
    b.tp_aware_eta = 1 / t_mem
    steps.append(
        Step(
            label=f"TP-aware bound (η = {eta:g})",
            value=f"{b.tp_aware_eta:.0f} tok/s",
            how=f"t_mem = {gb(per_gpu)} ÷ ({eta:g} × {gpu.bandwidth_gbs:g} GB/s) = {t_mem * 1e3:.2f} ms",
        )
    )
    t_comm = 0.0
    if layout.tp <= 1:
        b.comm_aware = b.tp_aware_eta
        steps.append(Step(label="communication", value="0 ms", how="TP 1: no all-reduce per layer"))
    else:
        if allreduce_us is None:
            if interconnect not in ALLREDUCE_US:
                b.missing.append(
                    "interconnect (nvidia-smi topo -m not read): no all-reduce latency"
                )
                return _speculative(b, accept_len, accept_source)
            allreduce_us, allreduce_source = ALLREDUCE_US[interconnect]
        b.allreduce_us = allreduce_us
        n_ar = 2 * spec.layers
        t_comm = n_ar * allreduce_us * 1e-6
        b.comm_aware = 1 / (t_mem + t_comm)
        steps.append(
            Step(
                label="communication per token",
                value=f"{t_comm * 1e3:.2f} ms",
                how=f"2 × {spec.layers} layers = {n_ar} all-reduces × {allreduce_us:g} µs ({allreduce_source})",
            )
        )
        steps.append(
            Step(
                label=f"comm-aware bound (η = {eta:g})",
                value=f"{b.comm_aware:.0f} tok/s",
                how=f"1 ÷ ({t_mem * 1e3:.2f} ms + {t_comm * 1e3:.2f} ms)",
            )
        )
    if gpu.measured_gbs:
        t_pub = per_gpu / (gpu.measured_gbs * 1e9)
        b.published_eta = 1 / (t_pub + t_comm)
        b.published_eta_value = gpu.measured_gbs / gpu.bandwidth_gbs
        b.published_eta_source = gpu.measured_source
        steps.append(
            Step(
                label=f"comm-aware bound at published η = {b.published_eta_value:.2f}",
                value=f"{b.published_eta:.0f} tok/s",
                how=f"1 ÷ ({gb(per_gpu)} ÷ {gpu.measured_gbs:g} GB/s + {t_comm * 1e3:.2f} ms); "
                f"{gpu.measured_source}",
            )
        )
    return _speculative(b, accept_len, accept_source)


BOUND_LABELS = {
    "naive": "naive (all GPUs' bandwidth)",
    "tp_aware": "TP-aware, η = 1",
    "tp_aware_eta": "TP-aware, η = 0.8",
    "comm_aware": "with all-reduce latency",
    "published_eta": "with all-reduce, published η",
}
"""Each bound key in plain words: what the TUI's roofline tab, --plan and --html print beside its figure."""


def _speculative(b: Bounds, accept_len: float | None, source: str) -> Bounds:
    """Speculative decoding: every bound × the tokens accepted per step (its own step)."""
    if not accept_len or accept_len <= 1:
        return b
    b.speculative = accept_len
    for key in ("naive", "tp_aware", "tp_aware_eta", "comm_aware", "published_eta"):
        value = getattr(b, key)
        if value is not None:
            setattr(b, key, value * accept_len)
    b.steps.append(
        Step(
            label="speculative decoding",
            value=f"× {accept_len:.2f} tokens per step",
            how=f"{source}; every bound above × {accept_len:.2f} (the draft's own cost left out)",
        )
    )
    if b.comm_aware is not None:
        b.steps.append(
            Step(
                label="comm-aware bound with speculative decoding",
                value=f"{b.comm_aware:.0f} tok/s",
                how=f"{b.comm_aware / accept_len:.0f} tok/s per step × {accept_len:.2f}",
            )
        )
    return b
