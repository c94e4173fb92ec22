"""Published single-stream decode figures (batch 1, short context), each with the setup and its source.

Shown beside the bounds when the audited box matches (GPU model and count, model family, TP, speculative
decoding on/off); tests/roofline/test_references.py checks that no figure exceeds its comm-aware bound — a
published measurement above the bound means the bound is wrong. `model` names the checkpoint the figure was
measured on and `fixture` the real config folder (tests/fixtures/models) whose layout prices it.
"""

from __future__ import annotations

from dataclasses import dataclass

RTX6KPRO = "https://github.com/voipmonitor/rtx6kpro/blob/main/"


@dataclass(frozen=True, slots=True)
class Reference:
    """A published single-stream decode measurement the roofline is checked against."""

    model: str
    family: str
    """config.json model_type of the language model (what the roofline's ModelSpec.family says)."""
    fixture: str
    gpu: str
    """GpuSpec.model of the GPU table row."""
    gpus: int
    engine: str
    tp: int
    mtp: bool
    tok_s: float
    source: str
    """A URL."""
    setup: str
    accept_len: float | None = None
    """Speculative decoding: the published acceptance length (tokens per step), the upper end if a range."""
    allreduce: str = "nccl"
    """"nccl", or a key of bounds.CUSTOM_ALLREDUCE_US when the engine ran its own all-reduce."""


REFERENCES: tuple[Reference, ...] = (
    Reference(
        model="GLM-5 NVFP4 (lukealonso/GLM-5-NVFP4)",
        family="glm_moe_dsa",
        fixture="glm-5-nvfp4",
        gpu="RTX PRO 6000 Blackwell",
        gpus=8,
        engine="sglang",
        tp=8,
        mtp=False,
        tok_s=51.6,
        source=RTX6KPRO + "models/glm5.md",
        setup="SGLang b12x MoE backend, TP 8, MTP off, concurrency 1, context 0 (Mar 2026)",
    ),
    Reference(
        model="GLM-5 NVFP4 (lukealonso/GLM-5-NVFP4)",
        family="glm_moe_dsa",
        fixture="glm-5-nvfp4",
        gpu="RTX PRO 6000 Blackwell",
        gpus=8,
        engine="sglang",
        tp=8,
        mtp=False,
        tok_s=50.4,
        source=RTX6KPRO + "models/glm5.md",
        setup="SGLang cutlass MoE backend, TP 8, MTP off, concurrency 1, context 0",
    ),
    Reference(
        model="GLM-5 NVFP4 + MTP (festr2/GLM-5-NVFP4-MTP)",
        family="glm_moe_dsa",
        fixture="glm-5-nvfp4",
        gpu="RTX PRO 6000 Blackwell",
        gpus=8,
        engine="sglang",
        tp=8,
        mtp=True,
        tok_s=95.1,
        accept_len=2.80,
        source=RTX6KPRO + "models/glm5.md",
        setup="SGLang b12x, TP 8, NEXTN MTP on (accept length 2.19-2.80), concurrency 1, context 0",
    ),
    Reference(
        model="GLM-5 NVFP4 (lukealonso/GLM-5-NVFP4)",
        family="glm_moe_dsa",
        fixture="glm-5-nvfp4",
        gpu="RTX PRO 6000 Blackwell",
        gpus=8,
        engine="sglang",
        tp=8,
        mtp=False,
        tok_s=56.6,
        allreduce="pcie_oneshot",
        source=RTX6KPRO + "daily-summaries/2026-04/2026-04-01.md",
        setup="SGLang b12x with --enable-pcie-oneshot-allreduce + fusion (52.8 -> 56.6 tok/s), TP 8",
    ),
    Reference(
        model="Kimi-K2.5 INT4 (moonshotai/Kimi-K2.5)",
        family="kimi_k2",
        fixture="kimi-k2.5-int4",
        gpu="RTX PRO 6000 Blackwell",
        gpus=8,
        engine="vllm",
        tp=8,
        mtp=False,
        tok_s=90.0,
        source=RTX6KPRO + "models/kimi-k25.md",
        setup="vLLM, BF16 KV cache, FlashInfer FA2, DCP 1, TP 8, single batch, context 0",
    ),
    Reference(
        model="Kimi-K2.5 INT4 (moonshotai/Kimi-K2.5)",
        family="kimi_k2",
        fixture="kimi-k2.5-int4",
        gpu="RTX PRO 6000 Blackwell",
        gpus=8,
        engine="sglang",
        tp=8,
        mtp=False,
        tok_s=90.0,
        source=RTX6KPRO + "models/kimi-k25.md",
        setup="SGLang, BF16 KV cache, TP 8, single batch at 2K context",
    ),
    Reference(
        model="MiniMax-M2.5 FP8 (MiniMaxAI/MiniMax-M2.5)",
        family="minimax_m2",
        fixture="minimax-m2.5",
        gpu="RTX PRO 6000 Blackwell",
        gpus=4,
        engine="sglang",
        tp=4,
        mtp=False,
        tok_s=71.0,
        source=RTX6KPRO + "models/minimax-m25.md",
        setup="SGLang defaults, FP8, TP 4, single stream",
    ),
    Reference(
        model="MiniMax-M2.5 NVFP4",
        family="minimax_m2",
        fixture="minimax-m2.5-nvfp4",
        gpu="RTX PRO 6000 Blackwell",
        gpus=2,
        engine="vllm",
        tp=2,
        mtp=False,
        tok_s=85.0,
        allreduce="pcie_2gpu",
        source=RTX6KPRO + "models/minimax-m25.md",
        setup="vLLM, NVFP4, TP 2, single stream (priced with nvidia/MiniMax-M2.5-NVFP4's layout)",
    ),
)


def matching(gpu: str, gpus: int, family: str, tp: int, speculative: bool) -> list[Reference]:
    """The published figures measured on the same GPU model and count, model family, TP and MTP on/off."""
    return [
        r
        for r in REFERENCES
        if r.gpu == gpu
        and r.gpus == gpus
        and r.family == family
        and r.tp == tp
        and r.mtp == speculative
    ]
