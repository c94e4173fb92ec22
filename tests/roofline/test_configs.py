"""Every real config in tests/fixtures/models priced by the roofline AND by an independent per-tensor calculation
(tests/roofline/per_tensor.py): bytes per rank must agree within 0.1 %; the four layouts the first version
mispriced are checked by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gpuaudit.probes.core.roofline.bounds import Layout, compute
from gpuaudit.probes.core.roofline.gpus import gpu_spec
from gpuaudit.probes.core.roofline.model import model_spec
from roofline.per_tensor import bytes_per_rank

MODELS = Path(__file__).resolve().parents[1] / "fixtures" / "models"
HYBRID = {"qwen3.5-35b-a3b"}  # linear attention: unknown by design (test_bounds)
RTX = gpu_spec("NVIDIA RTX PRO 6000 Blackwell Server Edition")


def load(name: str):
    d = MODELS / name
    hq = d / "hf_quant_config.json"
    return json.loads((d / "config.json").read_text()), (
        json.loads(hq.read_text()) if hq.exists() else None
    )


ALL = sorted(p.name for p in MODELS.iterdir() if p.is_dir() and p.name not in HYBRID)


def test_the_fixture_set_is_the_one_the_sources_name():
    sources = (MODELS / "SOURCES.md").read_text()
    assert len(ALL) >= 15
    for name in ALL:
        assert f"| {name} |" in sources, f"{name} has no row in SOURCES.md"


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("tp", [1, 8])
def test_bytes_per_rank_agree_with_the_per_tensor_calculation(name, tp):
    config, hq = load(name)
    spec = model_spec(config, hq)
    b = compute(spec, Layout(gpus=tp, tp=tp), RTX, interconnect="pcie")
    want, unique = bytes_per_rank(config, hq, tp)
    assert b.bytes_per_gpu == pytest.approx(want, rel=1e-3), name
    assert b.unique_active_bytes == pytest.approx(unique, rel=1e-3), name


def part(spec, name: str):
    return next(c for c in spec.components if c.name.startswith(name))


def test_nvfp4_with_a_quantized_attention_output_projection_deepseek_v31():
    # nvidia/DeepSeek-V3.1-NVFP4 excludes q_a, q_b, kv_a, kv_b in every layer but NOT o_proj: o_proj is NVFP4
    s = model_spec(*load("deepseek-v3.1-nvfp4"))
    attn = part(s, "attention (q_b")
    q_b, kv_b, o = 1536 * 128 * 192, 512 * 128 * 256, 128 * 128 * 7168
    assert attn.params == 61 * (q_b + kv_b + o)
    assert attn.bytes_per_param * attn.params == pytest.approx(61 * ((q_b + kv_b) * 2 + o * 0.5625))
    assert "nvfp4" in attn.precision and "bf16" in attn.precision


def test_an_exclude_list_with_the_language_model_prefix_matches_kimi_k25_nvfp4():
    # nvidia/Kimi-K2.5-NVFP4: "language_model.model.layers.N.self_attn*" must keep attention BF16
    s = model_spec(*load("kimi-k2.5-nvfp4"))
    assert part(s, "attention (q_b").precision == "bf16"
    assert part(s, "attention (q_a").precision == "bf16"
    assert part(s, "routed").precision == "nvfp4"


def test_int4_group_size_comes_from_the_config_kimi_k25():
    # moonshotai/Kimi-K2.5: compressed-tensors INT4, symmetric, group 32 -> 4 bit + one BF16 scale per 32
    s = model_spec(*load("kimi-k2.5-int4"))
    routed = part(s, "routed")
    assert routed.bytes_per_param == pytest.approx(0.5 + 2 / 32)
    assert part(s, "attention (q_b").precision == "bf16"  # re:.*self_attn.* ignored
    assert part(s, "shared").precision == "bf16" and part(s, "dense MLP").precision == "bf16"


def test_gpt_oss_reads_experts_per_token_and_prices_mxfp4():
    s = model_spec(*load("gpt-oss-120b"))
    assert s.experts_active == 4 and s.experts_total == 128
    assert part(s, "routed").bytes_per_param == pytest.approx(0.5 + 1 / 32)
    assert part(s, "attention q/o").precision == "bf16"  # model.layers.*.self_attn not converted
    # 36 layers x 4 experts x 3 x 2880 x 2880 = 3.58 B routed; 5.13 B active without the embedding lookup
    assert sum(c.params for c in s.components) == pytest.approx(5.13e9, rel=0.01)


def test_per_layer_exclusions_glm51_keeps_layers_0_and_1_bf16():
    s = model_spec(*load("glm-5.1-nvfp4"))
    routed = part(s, "routed")
    # routed experts live in layers 3..77; none of them is excluded
    assert routed.precision == "nvfp4"
    assert part(s, "shared").precision == "bf16"  # model.layers.N.mlp.shared_experts* excluded
