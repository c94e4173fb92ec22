"""What one decode step reads: a model's components from its config.json and its quantization config.

Pure: dicts in (the parsed JSON files), numbers out. Every component is a parameter count with the bytes per
parameter its precision costs, and how tensor parallelism treats it (split across ranks, or replicated on every
rank). PROBES.md §13.2 and ROOFLINE.md §4.3 are the method; the names mirror HF checkpoints (DeepSeek/GLM/Qwen/
Llama) so a quantization config's exclude patterns can be matched against them.
"""

from __future__ import annotations

import fnmatch
import math
import re
from dataclasses import dataclass, field
from typing import Any

DTYPE_BYTES = {
    "float32": 4.0,
    "float16": 2.0,
    "bfloat16": 2.0,
    "fp16": 2.0,
    "bf16": 2.0,
    "float8_e4m3fn": 1.0,
    "fp8": 1.0,
    "fp8_e4m3": 1.0,
    "fp8_e5m2": 1.0,
    "auto": 2.0,
}

# Bytes per weight of each quantization format, scales included (PROBES.md §13.1):
QUANT_BYTES = {
    "nvfp4": 0.5 + 1 / 16,  # 4-bit + one FP8 scale per 16 weights = 0.5625
    "mxfp4": 0.5 + 1 / 32,  # 4-bit + one 8-bit scale per 32 = 0.53125
    "fp8": 1.0,  # block scales (128x128 FP32) add < 0.03 %
    "int8": 1.0,
    "int4_g128": 0.5 + 2.5 / 128,  # AWQ/GPTQ: 4-bit + FP16 scale and 4-bit zero per 128 = 0.5195
}


class ModelConfigError(ValueError):
    """config.json does not describe a decoder this calculator knows (a missing key is named)."""


@dataclass(frozen=True, slots=True)
class Component:
    name: str
    module: str
    """A representative module name, matched against the quantization config's exclude list."""
    params: float
    """Parameters read per token over the whole model (routed experts: the k active ones)."""
    all_params: float
    """Parameters stored (routed experts: all E)."""
    tp: str
    """How TP shares it: "split" (each rank reads 1/TP), "kv" (split over min(TP, KV heads)), "replicated",
    "experts" (routed: 1/TP of each active expert, or whole experts under EP)."""
    bytes_per_param: float = 2.0
    precision: str = "bf16"


@dataclass(frozen=True, slots=True)
class ModelSpec:
    family: str
    """config's model_type (e.g. glm_moe_dsa, deepseek_v3, qwen2_moe, llama)."""
    layers: int
    hidden: int
    vocab: int
    components: tuple[Component, ...]
    kv_bytes_per_token: float
    """KV cache bytes read per token of context (whole model, before any TP split), at the engine's KV dtype."""
    kv_split: int
    """How many ranks the KV cache can be split over (KV heads; 1 for MLA's latent, replicated on every rank)."""
    kv_read_cap: int | None = None
    """DSA top-k: at most this many context tokens are read per step."""
    experts_active: int = 0
    experts_total: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)


def _get(cfg: dict[str, Any], *names: str, default: Any = None, required: bool = False) -> Any:
    for n in names:
        if cfg.get(n) is not None:
            return cfg[n]
    if required:
        raise ModelConfigError(f"config.json has no {' / '.join(names)}")
    return default


def _int(
    cfg: dict[str, Any], *names: str, default: int | None = None, required: bool = False
) -> int:
    value = _get(cfg, *names, default=default, required=required)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
        raise ModelConfigError(f"config.json: {names[0]} is not a count ({value!r})")
    return int(value)


def text_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """Multimodal checkpoints nest the language model's config (text_config / language_config)."""
    for key in ("text_config", "language_config", "llm_config"):
        inner = cfg.get(key)
        if (
            isinstance(inner, dict)
            and "num_hidden_layers" in inner
            and "num_hidden_layers" not in cfg
        ):
            return {
                **inner,
                "quantization_config": cfg.get("quantization_config")
                or inner.get("quantization_config"),
            }
    return cfg


@dataclass(frozen=True, slots=True)
class Quant:
    """A checkpoint's weight format: default bytes/param for quantized modules, and the modules left unquantized."""

    algo: str
    bytes_per_param: float
    excluded: tuple[str, ...] = ()
    """fnmatch patterns (or `re:` regular expressions) of modules kept at the model dtype."""
    per_module: tuple[tuple[str, str], ...] = ()
    """MIXED_PRECISION checkpoints: (module prefix, algo) pairs; only these modules are quantized."""
    source: str = ""

    def format_of(self, module: str) -> str | None:
        """The quantization format of a module, or None when it stays at the model dtype."""
        if any(_match(p, module) for p in self.excluded):
            return None
        if self.per_module:
            return next(
                (
                    algo
                    for prefix, algo in self.per_module
                    if module == prefix or module.startswith(prefix + ".")
                ),
                None,
            )
        return self.algo


def _match(pattern: str, module: str) -> bool:
    if pattern.startswith("re:"):
        return (
            re.fullmatch(pattern[3:], module) is not None
            or re.match(pattern[3:], module) is not None
        )
    return (
        fnmatch.fnmatchcase(module, pattern)
        or fnmatch.fnmatchcase(module, pattern + ".*")
        or module == pattern
    )


def parse_quant(config: dict[str, Any], hf_quant: dict[str, Any] | None) -> Quant | None:
    """The weight format from hf_quant_config.json (ModelOpt) or config.json's quantization_config; None = unquantized."""
    if hf_quant and isinstance(hf_quant.get("quantization"), dict):
        q = hf_quant["quantization"]
        algo = str(q.get("quant_algo") or "").lower()
        return _quant_from(
            algo,
            q.get("exclude_modules") or q.get("ignore") or [],
            "hf_quant_config.json",
            q.get("quantized_layers"),
        )
    qc = config.get("quantization_config")
    if not isinstance(qc, dict):
        return None
    method = str(qc.get("quant_method") or "").lower()
    excluded = (
        qc.get("modules_to_not_convert")
        or qc.get("ignored_layers")
        or qc.get("ignore")
        or qc.get("exclude_modules")
        or []
    )
    if method == "modelopt":
        return _quant_from(
            str(qc.get("quant_algo") or "").lower(),
            excluded,
            "config.json quantization_config",
            qc.get("quantized_layers"),
        )
    if method == "compressed-tensors":
        bits = {
            g.get("weights", {}).get("num_bits")
            for g in (qc.get("config_groups") or {}).values()
            if isinstance(g, dict)
        }
        types = {
            str(g.get("weights", {}).get("type"))
            for g in (qc.get("config_groups") or {}).values()
            if isinstance(g, dict)
        }
        if bits == {4} and "float" in types:
            return _quant_from("nvfp4", excluded, "config.json compressed-tensors")
        if bits == {4}:
            return _quant_from("int4_g128", excluded, "config.json compressed-tensors")
        if bits == {8}:
            return _quant_from(
                "fp8" if "float" in types else "int8", excluded, "config.json compressed-tensors"
            )
        return None
    if method in ("awq", "gptq", "awq_marlin", "gptq_marlin"):
        wbits = int(qc.get("bits") or qc.get("w_bit") or 4)
        return _quant_from("int4_g128" if wbits == 4 else "int8", excluded, f"config.json {method}")
    return _quant_from(method, excluded, "config.json quantization_config")


def _quant_key(algo: str) -> str | None:
    algo = algo.lower().replace("-", "_")
    return (
        "nvfp4"
        if "nvfp4" in algo or algo == "fp4"
        else "mxfp4"
        if "mxfp4" in algo
        else "fp8"
        if "fp8" in algo
        else "int4_g128"
        if "w4" in algo or "int4" in algo or "awq" in algo
        else "int8"
        if "int8" in algo or "w8" in algo
        else None
    )


def _quant_from(algo: str, excluded: list[Any], source: str, layers: Any = None) -> Quant | None:
    if algo.lower() == "mixed_precision" and isinstance(layers, dict):
        pairs = tuple(
            (str(m), k)
            for m, v in layers.items()
            if isinstance(v, dict) and (k := _quant_key(str(v.get("quant_algo") or ""))) is not None
        )
        return (
            Quant(
                algo="mixed",
                bytes_per_param=0.0,
                excluded=tuple(str(e) for e in excluded),
                per_module=pairs,
                source=source,
            )
            if pairs
            else None
        )
    key = _quant_key(algo)
    if key is None:
        return None
    return Quant(
        algo=key,
        bytes_per_param=QUANT_BYTES[key],
        excluded=tuple(str(e) for e in excluded),
        source=source,
    )


def model_spec(
    config: dict[str, Any],
    hf_quant: dict[str, Any] | None = None,
    kv_cache_dtype: str | None = None,
) -> ModelSpec:
    """Components, precisions and KV cost of a decoder from its config files. Raises ModelConfigError."""
    cfg = text_config(config)
    kinds = {str(t) for t in cfg.get("layer_types") or []} - {
        "full_attention",
        "sliding_attention",
        "attention",
    }
    if kinds:
        raise ModelConfigError(
            f"hybrid layers ({', '.join(sorted(kinds))}) are not modelled by this calculator"
        )
    L = _int(cfg, "num_hidden_layers", "n_layer", "num_layers", required=True)
    h = _int(cfg, "hidden_size", "d_model", "n_embd", required=True)
    V = _int(cfg, "vocab_size", required=True)
    heads = _int(cfg, "num_attention_heads", "n_head", required=True)
    kv_heads = _int(cfg, "num_key_value_heads", default=heads)
    dtype_name = str(_get(cfg, "torch_dtype", "dtype", default="bfloat16")).lower()
    dtype = DTYPE_BYTES.get(dtype_name, 2.0)
    experts = _int(
        cfg, "n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts", default=0
    )
    k = _int(cfg, "num_experts_per_tok", "moe_topk", "top_k", default=0) if experts else 0
    n_dense = _dense_layers(cfg, L, experts)
    n_moe = L - n_dense
    notes: list[str] = []
    comps: list[Component] = []
    dense_i, moe_i = 0, n_dense if n_moe else 0

    mla = cfg.get("kv_lora_rank") is not None
    if mla:
        comps += _mla(cfg, L, h, heads, moe_i)
        kv_lora, rope = _int(cfg, "kv_lora_rank"), _int(cfg, "qk_rope_head_dim", default=64)
        kv_per_token_elems, kv_split = L * (kv_lora + rope), 1
        notes.append(
            "MLA: the latent KV cache and the q_a/kv_a projections are replicated on every TP rank"
        )
    else:
        hd = _int(cfg, "head_dim", default=h // heads)
        comps.append(
            Component(
                "attention q/o",
                f"model.layers.{moe_i}.self_attn.q_proj",
                L * 2 * h * heads * hd,
                L * 2 * h * heads * hd,
                "split",
            )
        )
        comps.append(
            Component(
                "attention k/v",
                f"model.layers.{moe_i}.self_attn.k_proj",
                L * 2 * h * kv_heads * hd,
                L * 2 * h * kv_heads * hd,
                "kv",
            )
        )
        kv_per_token_elems, kv_split = L * 2 * kv_heads * hd, kv_heads
    kv_cap = None
    if cfg.get("index_topk") is not None and cfg.get("index_n_heads") is not None:
        comps.append(_indexer(cfg, L, h, moe_i))
        kv_cap = _int(cfg, "index_topk")
        notes.append(
            f"DSA: at most {kv_cap} context tokens' KV read per step; the indexer is replicated"
        )

    inter = _int(cfg, "intermediate_size", "ffn_dim", "n_inner", default=4 * h)
    if n_dense:
        comps.append(
            Component(
                "dense MLP",
                f"model.layers.{dense_i}.mlp.gate_proj",
                n_dense * 3 * h * inter,
                n_dense * 3 * h * inter,
                "split",
            )
        )
    if n_moe:
        moe_inter = _int(cfg, "moe_intermediate_size", "expert_intermediate_size", default=inter)
        expert = 3 * h * moe_inter
        comps.append(
            Component(
                f"routed experts ({k} of {experts})",
                f"model.layers.{moe_i}.mlp.experts.0.gate_proj",
                n_moe * k * expert,
                n_moe * experts * expert,
                "experts",
            )
        )
        shared = _shared(cfg, h, moe_inter)
        if shared:
            comps.append(
                Component(
                    "shared experts",
                    f"model.layers.{moe_i}.mlp.shared_experts.gate_proj",
                    n_moe * shared,
                    n_moe * shared,
                    "split",
                )
            )
        comps.append(
            Component(
                "router",
                f"model.layers.{moe_i}.mlp.gate",
                n_moe * h * experts,
                n_moe * h * experts,
                "replicated",
            )
        )
    comps.append(Component("LM head", "lm_head", V * h, V * h, "split"))
    notes.append("input embeddings are a lookup (one row per token), not read in full")

    quant = parse_quant(cfg, hf_quant)
    comps = [_priced(c, quant, dtype, dtype_name) for c in comps]
    ckpt_kv = (
        ((hf_quant or {}).get("quantization") or {}).get("kv_cache_quant_algo")
        if isinstance(hf_quant, dict)
        else None
    )
    kv_dtype = (
        kv_cache_dtype if kv_cache_dtype and kv_cache_dtype != "auto" else str(ckpt_kv or "auto")
    ).lower()
    kv_bytes = 1.0 if kv_dtype.startswith("fp8") else 0.5 if "fp4" in kv_dtype else dtype
    return ModelSpec(
        family=str(cfg.get("model_type") or "unknown"),
        layers=L,
        hidden=h,
        vocab=V,
        components=tuple(comps),
        kv_bytes_per_token=kv_per_token_elems * kv_bytes,
        kv_split=kv_split,
        kv_read_cap=kv_cap,
        experts_active=k,
        experts_total=experts,
        notes=tuple(notes),
    )


def _priced(c: Component, quant: Quant | None, dtype: float, dtype_name: str) -> Component:
    # routers and the LM head stay at the model dtype unless a per-module map names them (checkpoints keep them
    # in BF16: ModelOpt excludes lm_head, DeepSeek's FP8 and AWQ/GPTQ checkpoints leave it unquantized)
    keep = c.name in ("router", "LM head") and not (quant is not None and quant.per_module)
    fmt = quant.format_of(c.module) if quant is not None and not keep else None
    if fmt is not None:
        return Component(c.name, c.module, c.params, c.all_params, c.tp, QUANT_BYTES[fmt], fmt)
    precision = (
        "bf16" if dtype == 2.0 and "16" in dtype_name or dtype_name == "auto" else dtype_name
    )
    return Component(c.name, c.module, c.params, c.all_params, c.tp, dtype, precision)


def _dense_layers(cfg: dict[str, Any], L: int, experts: int) -> int:
    if not experts:
        return L
    if cfg.get("first_k_dense_replace") is not None:
        return min(L, _int(cfg, "first_k_dense_replace"))
    if cfg.get("interleave_moe_layer_step"):  # Llama 4: every step-th layer is MoE
        return L - L // max(_int(cfg, "interleave_moe_layer_step"), 1)
    if isinstance(cfg.get("mlp_only_layers"), list):
        return len(cfg["mlp_only_layers"])
    step = _int(cfg, "decoder_sparse_step", default=1) or 1
    return L - math.ceil(L / step) if step > 1 else 0


def _shared(cfg: dict[str, Any], h: int, moe_inter: int) -> int:
    if str(cfg.get("model_type", "")).startswith("llama4"):
        return (
            3 * h * moe_inter
        )  # Llama 4: every MoE layer has one shared expert as wide as a routed one
    if cfg.get("shared_expert_intermediate_size"):
        return 3 * h * _int(cfg, "shared_expert_intermediate_size")
    return 3 * h * moe_inter * _int(cfg, "n_shared_experts", "num_shared_experts", default=0)


def _mla(cfg: dict[str, Any], L: int, h: int, heads: int, i: int) -> list[Component]:
    q_lora = cfg.get("q_lora_rank")
    kv_lora = _int(cfg, "kv_lora_rank")
    nope, rope = (
        _int(cfg, "qk_nope_head_dim", default=128),
        _int(cfg, "qk_rope_head_dim", default=64),
    )
    v = _int(cfg, "v_head_dim", default=nope)
    replicated = L * h * (kv_lora + rope)  # kv_a_proj_with_mqa
    if q_lora:
        q_lora = int(q_lora)
        replicated += L * h * q_lora  # q_a_proj
        q = L * q_lora * heads * (nope + rope)
    else:
        q = L * h * heads * (nope + rope)
    split = q + L * kv_lora * heads * (nope + v) + L * heads * v * h  # q_b, kv_b, o_proj
    return [
        Component(
            "attention (q_b, kv_b, o)",
            f"model.layers.{i}.self_attn.kv_b_proj",
            split,
            split,
            "split",
        ),
        Component(
            "attention (q_a, kv_a)",
            f"model.layers.{i}.self_attn.kv_a_proj_with_mqa",
            replicated,
            replicated,
            "replicated",
        ),
    ]


def _indexer(cfg: dict[str, Any], L: int, h: int, i: int) -> Component:
    q_lora = _int(cfg, "q_lora_rank", default=h)
    n, d = _int(cfg, "index_n_heads"), _int(cfg, "index_head_dim", default=128)
    params = L * (q_lora * n * d + h * d + h * n)  # wq_b, wk, weights_proj
    return Component(
        "DSA indexer", f"model.layers.{i}.self_attn.indexer.wq_b", params, params, "replicated"
    )
