"""An independent per-tensor calculation of the bytes one TP rank reads per decoded token (batch 1, context 0).

Written separately from probes/core/roofline/model.py on purpose: it lists every weight tensor of every layer by
its Hugging Face name, normalises the EXCLUDE PATTERNS (not the module names) by stripping the multimodal
wrappers, and prices each tensor from the quantization config's bit width and group size. The roofline must agree
with it on every real config in tests/fixtures/models.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Any


def _cfg(config: dict[str, Any]) -> dict[str, Any]:
    inner = config.get("text_config")
    return inner if isinstance(inner, dict) and "num_hidden_layers" in inner else config


def _norm(pattern: str) -> str:
    for wrapper, repl in (
        ("language_model.model.", "model."),
        ("model.language_model.", "model."),
        ("language_model.", ""),
    ):
        if pattern.startswith(wrapper):
            return repl + pattern[len(wrapper) :]
    return pattern


def _matcher(patterns: list[str]):
    """name -> excluded?, each pattern compiled once (regular expressions: re.match; globs: the normalised
    pattern or anything under it)."""
    regexes = [re.compile(p[3:]) for p in patterns if p.startswith("re:")]
    globs = [_norm(p) for p in patterns if not p.startswith("re:")]
    compiled = [re.compile(fnmatch.translate(q)) for q in globs]
    compiled += [re.compile(fnmatch.translate(q + ".*")) for q in globs]

    def excluded(name: str) -> bool:
        if any(rx.match(name) or rx.match("language_model." + name) for rx in regexes):
            return True
        return any(rx.match(name) for rx in compiled)

    return excluded


def _format(config: dict[str, Any], hf_quant: dict[str, Any] | None):
    """(bytes per quantized weight, exclude patterns), or (None, []) for an unquantized checkpoint."""
    if hf_quant:
        q = hf_quant["quantization"]
        algo, group = q["quant_algo"].upper(), q.get("group_size") or 16
        bits = {"NVFP4": 4 + 8 / group, "FP8": 8.0}[algo]
        return bits / 8, list(q.get("exclude_modules") or [])
    qc = _cfg(config).get("quantization_config") or config.get("quantization_config")
    if not qc:
        return None, []
    ignore = list(
        qc.get("ignore") or qc.get("modules_to_not_convert") or qc.get("ignored_layers") or []
    )
    method = qc["quant_method"]
    if method == "fp8":
        return 1.0, ignore
    if method == "mxfp4":
        return (4 + 8 / 32) / 8, ignore
    if method == "modelopt":
        w = next(iter(qc["config_groups"].values()))["weights"] if "config_groups" in qc else {}
        return (4 + 8 / (w.get("group_size") or 16)) / 8, ignore
    if method == "compressed-tensors":
        w = next(iter(qc["config_groups"].values()))["weights"]
        if w["type"] == "float" and w["num_bits"] == 4:
            return (4 + 8 / w["group_size"]) / 8, ignore
        assert w["num_bits"] == 4 and w["symmetric"], w
        return (4 + 16 / w["group_size"]) / 8, ignore  # INT4 + one BF16 scale per group
    raise AssertionError(method)


def tensors(config: dict[str, Any]) -> list[tuple[str, float, str]]:
    """(HF module name, parameters read per token, how TP shares it) for every weight a decode step reads."""
    c = _cfg(config)
    L, h, V = c["num_hidden_layers"], c["hidden_size"], c["vocab_size"]
    H = c["num_attention_heads"]
    E = c.get("n_routed_experts") or c.get("num_experts") or c.get("num_local_experts") or 0
    k = c.get("num_experts_per_tok") or 0
    if c.get("first_k_dense_replace") is not None:
        dense = set(range(c["first_k_dense_replace"]))
    elif E:
        dense = set()
    else:
        dense = set(range(L))
    out: list[tuple[str, float, str]] = []
    for i in range(L):
        a = f"model.layers.{i}.self_attn."
        if c.get("kv_lora_rank"):
            r, nope, rope = c["kv_lora_rank"], c["qk_nope_head_dim"], c["qk_rope_head_dim"]
            v, ql = c["v_head_dim"], c.get("q_lora_rank")
            out.append((a + "q_a_proj", h * ql, "replicated"))
            out.append((a + "q_b_proj", ql * H * (nope + rope), "split"))
            out.append((a + "kv_a_proj_with_mqa", h * (r + rope), "replicated"))
            out.append((a + "kv_b_proj", r * H * (nope + v), "split"))
            out.append((a + "o_proj", H * v * h, "split"))
            if c.get("index_n_heads"):
                n, d = c["index_n_heads"], c["index_head_dim"]
                out.append((a + "indexer.wq_b", ql * n * d, "replicated"))
                out.append((a + "indexer.wk", h * d, "replicated"))
                out.append((a + "indexer.weights_proj", h * n, "replicated"))
        else:
            d = c.get("head_dim") or h // H
            kvh = c.get("num_key_value_heads") or H
            out.append((a + "q_proj", h * H * d, "split"))
            out.append((a + "k_proj", h * kvh * d, "kv"))
            out.append((a + "v_proj", h * kvh * d, "kv"))
            out.append((a + "o_proj", H * d * h, "split"))
        m = f"model.layers.{i}.mlp."
        if i in dense:
            for p in ("gate_proj", "up_proj", "down_proj"):
                out.append((m + p, h * c["intermediate_size"], "split"))
            continue
        w = c.get("moe_intermediate_size") or c["intermediate_size"]
        for p in ("gate_proj", "up_proj", "down_proj"):
            out.append((m + "experts.0." + p, k * h * w, "split"))
        shared = (c.get("n_shared_experts") or 0) * w
        if c.get("model_type", "").startswith("llama4"):
            shared = w
        for p in ("gate_proj", "up_proj", "down_proj") if shared else ():
            out.append((m + "shared_experts." + p, h * shared, "split"))
        out.append((m + "gate", h * E, "router"))
    out.append(("lm_head", V * h, "head"))
    return out


def bytes_per_rank(
    config: dict[str, Any], hf_quant: dict[str, Any] | None, tp: int
) -> tuple[float, float]:
    """(bytes one rank reads per token, unique bytes over all ranks); routers and the LM head stay BF16."""
    qbytes, patterns = _format(config, hf_quant)
    excluded = _matcher(patterns)
    c = _cfg(config)
    kvh = c.get("num_key_value_heads") or c["num_attention_heads"]
    per_rank = unique = 0.0
    for name, params, how in tensors(config):
        if how in ("router", "head") or qbytes is None or excluded(name):
            b = 2.0
        else:
            b = qbytes
        share = {
            "split": 1 / tp,
            "head": 1 / tp,
            "kv": 1 / min(tp, kvh),
            "replicated": 1.0,
            "router": 1.0,
        }[how]
        per_rank += params * b * share
        unique += params * b
    return per_rank, unique
