"""Roofline arithmetic on real public model configs (tests/fixtures/models, SOURCES.md), checked against values
computed by hand in each test (PROBES.md §13, ROOFLINE.md §4.3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gpuaudit.probes.core.roofline.bounds import Layout, compute
from gpuaudit.probes.core.roofline.gpus import gpu_spec
from gpuaudit.probes.core.roofline.model import ModelConfigError, model_spec

MODELS = Path(__file__).resolve().parents[1] / "fixtures" / "models"


def spec(name: str, kv: str | None = None):
    d = MODELS / name
    hq = d / "hf_quant_config.json"
    return model_spec(
        json.loads((d / "config.json").read_text()),
        json.loads(hq.read_text()) if hq.exists() else None,
        kv,
    )


def part(s, name: str):
    return next(c for c in s.components if c.name.startswith(name))


def test_dense_gqa_llama_31_8b_on_one_h100():
    s = spec("llama-3.1-8b")
    # 32 layers, h 4096, 32 heads x 128, 8 KV heads, FFN 14336, vocab 128256, BF16
    attn_qo = 32 * 2 * 4096 * 4096  # q and o: 1.0737e9
    attn_kv = 32 * 2 * 4096 * 8 * 128  # k and v: 0.2684e9
    mlp = 32 * 3 * 4096 * 14336  # gate, up, down: 5.6371e9
    head = 128256 * 4096  # LM head read in full: 0.5253e9 (input embedding is a lookup)
    total_bytes = 2 * (attn_qo + attn_kv + mlp + head)  # 15.0091e9 B
    assert part(s, "attention q/o").params == attn_qo and part(s, "attention k/v").params == attn_kv
    assert part(s, "dense MLP").params == mlp and part(s, "LM head").params == head
    b = compute(s, Layout(gpus=1, tp=1), gpu_spec("NVIDIA H100 80GB HBM3"), interconnect=None)
    assert b.bytes_per_gpu == pytest.approx(total_bytes)
    assert b.tp_aware == pytest.approx(3350e9 / total_bytes)  # 223.2 tok/s
    assert b.tp_aware == pytest.approx(223.2, abs=0.1)
    assert b.comm_aware == pytest.approx(
        0.8 * 3350e9 / total_bytes
    )  # TP 1: no all-reduce, 178.6 tok/s
    assert s.kv_bytes_per_token == 32 * 2 * 8 * 128 * 2  # 131072 B per token of context


def test_mla_moe_with_fp8_deepseek_v3_tp8_on_h200():
    s = spec("deepseek-v3")
    # 61 layers (3 dense), h 7168, 128 heads, q_lora 1536, kv_lora 512, nope 128, rope 64, v 128,
    # 256 routed experts of width 2048, top-8, 1 shared, vocab 129280; FP8 block weights (1 B), router/LM head BF16
    split = 61 * (1536 * 128 * 192 + 512 * 128 * 256 + 128 * 128 * 7168)  # q_b, kv_b, o: 10.4900e9
    replicated = 61 * (7168 * 1536 + 7168 * 576)  # q_a, kv_a: 0.9235e9
    dense = 3 * 3 * 7168 * 18432  # 1.1890e9
    routed = 58 * 8 * 3 * 7168 * 2048  # 20.4347e9 active
    shared = 58 * 1 * 3 * 7168 * 2048  # 2.5543e9
    router = 58 * 7168 * 256  # 0.1064e9
    head = 129280 * 7168  # 0.9267e9
    per_rank = (
        (split + dense + routed + shared) / 8 * 1.0 + replicated * 1.0 + router * 2 + head * 2 / 8
    )
    b = compute(s, Layout(gpus=8, tp=8), gpu_spec("NVIDIA H200"), interconnect="nvlink")
    assert (
        part(s, "attention (q_b").params == split and part(s, "attention (q_a").params == replicated
    )
    assert part(s, "routed").params == routed and part(s, "shared").params == shared
    assert b.bytes_per_gpu == pytest.approx(per_rank)  # 5.6127e9 B
    t_mem = per_rank / (0.8 * 4800e9)
    t_comm = 2 * 61 * 8e-6
    assert b.comm_aware == pytest.approx(1 / (t_mem + t_comm))  # ~408 tok/s
    assert (
        s.kv_bytes_per_token == 61 * 576 * 2 and s.kv_split == 1
    )  # latent KV, replicated under TP


def test_nvfp4_mla_dsa_glm5_tp8_on_rtx_pro_6000_the_case_study():
    s = spec("glm-5-nvfp4")
    # ModelOpt NVFP4 (0.5625 B) for routed/shared experts and dense MLP; attention, indexer, LM head excluded (BF16)
    split = 78 * (2048 * 64 * 256 + 512 * 64 * 448 + 64 * 256 * 6144)  # 11.6140e9, BF16, / TP
    replicated = 78 * (6144 * 576 + 6144 * 2048)  # 1.2575e9, BF16, every rank
    indexer = 78 * (2048 * 32 * 128 + 6144 * 128 + 6144 * 32)  # 0.7310e9, BF16, every rank
    dense = 3 * 3 * 6144 * 12288  # NVFP4, / TP
    routed = 75 * 8 * 3 * 6144 * 2048  # NVFP4, / TP
    shared = 75 * 3 * 6144 * 2048  # NVFP4, / TP
    router = 75 * 6144 * 256  # BF16, every rank
    head = 154880 * 6144  # BF16, / TP
    per_rank = (split * 2 + (dense + routed + shared) * 0.5625 + head * 2) / 8 + (
        replicated + indexer + router
    ) * 2
    assert part(s, "attention (q_b").precision == "bf16" and part(s, "routed").precision == "nvfp4"
    assert part(s, "shared").precision == "nvfp4" and part(s, "DSA indexer").precision == "bf16"
    b = compute(
        s,
        Layout(gpus=8, tp=8),
        gpu_spec("NVIDIA RTX PRO 6000 Blackwell Server Edition"),
        interconnect="pcie",
    )
    assert b.bytes_per_gpu == pytest.approx(per_rank)  # 9.19e9 B
    assert b.tp_aware == pytest.approx(1792e9 / per_rank)  # ~195 tok/s
    t_comm = 2 * 78 * 24e-6  # 156 NCCL all-reduces x 24 µs = 3.74 ms
    assert b.comm_aware == pytest.approx(1 / (per_rank / (0.8 * 1792e9) + t_comm))  # ~98 tok/s
    assert 90 < b.comm_aware < 100 and 190 < b.tp_aware < 200
    assert s.kv_bytes_per_token == 78 * 576 * 1  # the checkpoint's KV cache is FP8


def test_moe_with_shared_expert_llama4_scout_tp4():
    s = spec("llama-4-scout")
    # text_config: 48 layers, all MoE (interleave step 1), 16 experts top-1 of width 8192 + 1 shared of width 8192
    expert = 3 * 5120 * 8192
    assert part(s, "routed").params == 48 * 1 * expert and part(s, "shared").params == 48 * expert
    assert part(s, "routed").all_params == 48 * 16 * expert
    total_active = sum(
        c.params for c in s.components
    )  # ~16.1e9 + the 1.03e9 embedding lookup = "17B active"
    assert 16.0e9 < total_active < 16.2e9


def test_nvfp4_excludes_only_routers_attention_quantized_qwen3_moe():
    s = spec("qwen3-30b-a3b-nvfp4")
    assert part(s, "attention q/o").precision == "nvfp4" and part(s, "router").precision == "bf16"
    assert part(s, "LM head").precision == "bf16"


def test_hybrid_linear_attention_is_unknown_not_a_guess():
    with pytest.raises(ModelConfigError, match="linear_attention"):
        spec("qwen3.5-35b-a3b")


def test_missing_gpu_or_interconnect_leaves_the_figures_out():
    s = spec("glm-5-nvfp4")
    b = compute(
        s, Layout(gpus=8, tp=8), gpu_spec("NVIDIA Quadro Mystery 9000"), interconnect="pcie"
    )
    assert b.tp_aware is None and b.comm_aware is None and "bandwidth" in b.missing[0]
    b = compute(
        s,
        Layout(gpus=8, tp=8),
        gpu_spec("NVIDIA RTX PRO 6000 Blackwell Server Edition"),
        interconnect=None,
    )
    assert b.tp_aware is not None and b.comm_aware is None and "interconnect" in b.missing[0]


def test_config_without_layers_is_an_error_naming_the_key():
    with pytest.raises(ModelConfigError, match="num_hidden_layers"):
        model_spec({"hidden_size": 1})
