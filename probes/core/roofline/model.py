"""What one decode step reads: a model's components from its config.json and its quantization config.

Pure: dicts in (the parsed JSON files), numbers out. Every component is a parameter count with the bytes per
parameter its precision costs, and how tensor parallelism treats it (split across ranks, or replicated on every
rank). PROBES.md §13.2 and ROOFLINE.md §4.3 are the method; the names mirror HF checkpoints (DeepSeek/GLM/Qwen/
Llama) so a quantization config's exclude patterns can be matched against them.
"""

from __future__ import annotations

import fnmatch
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
# The group size each format assumes when its config does not name one.
DEFAULT_GROUP = {"nvfp4": 16, "mxfp4": 32, "int4_g128": 128}

# Wrappers multimodal checkpoints put before the language model's module names; exclude lists are written with
# or without them, whatever the config.json nesting looks like (nvidia/Kimi-K2.5-NVFP4: "language_model.model.
# layers.3.self_attn*"; nvidia/Gemma-4-*-NVFP4: "model.language_model.layers.3.mlp*").
PREFIXES = ("language_model.", "model.language_model.", "language_model.model.")


class ModelConfigError(ValueError):
    """config.json does not describe a decoder this calculator knows (a missing key is named)."""


@dataclass(frozen=True, slots=True)
class Part:
    """One weight tensor of a component in every layer it appears in: priced per layer (exclude lists name layers)."""

    module: str
    """HF module name with `{i}` for the layer index, e.g. "model.layers.{i}.self_attn.o_proj"."""
    params: float
    """Parameters read per token in ONE layer (routed experts: the k active ones)."""
    layers: tuple[int, ...] = ()
    """The layers it appears in; () = once (the LM head)."""

    def modules(self) -> list[str]:
        return [self.module.format(i=i) for i in self.layers] if self.layers else [self.module]


@dataclass(frozen=True, slots=True)
class Component:
    """One part of the model the decode reads per token (attention, experts, embeddings, ...)."""

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
    """Bytes per parameter read, averaged over the parts and layers (formats can differ per layer)."""
    precision: str = "bf16"
    parts: tuple[Part, ...] = ()


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """The served model as the roofline needs it: its components and KV cache bytes per token."""

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
    """A checkpoint's weight format: the format of each module, its group size, the modules left unquantized."""

    algo: str
    bytes_per_param: float
    excluded: tuple[str, ...] = ()
    """fnmatch patterns (or `re:` regular expressions) of modules kept at the model dtype."""
    per_module: tuple[tuple[str, str], ...] = ()
    """MIXED_PRECISION checkpoints: (module prefix, algo) pairs; only these modules are quantized."""
    source: str = ""
    group_size: int | None = None
    """Weights per scale (NVFP4 16, MXFP4 32, INT4 32/64/128), from the config; None = the format's default."""
    zero_point: bool = False
    """INT4 with a zero point per group (AWQ, asymmetric GPTQ) besides the FP16 scale."""
    group_of: tuple[tuple[str, int], ...] = ()
    """MIXED_PRECISION: (module prefix, group size) where the per-module entry names one."""

    def format_of(self, module: str) -> str | None:
        """The quantization format of a module, or None when it stays at the model dtype.

        The module is tried with and without the wrappers multimodal checkpoints put before it (PREFIXES)."""
        names = candidates(module)
        if self.excluded and any(_excluded(self.excluded, n) for n in names):
            return None
        if self.per_module:
            for n in names:
                for prefix, algo in self.per_module:
                    if n == prefix or n.startswith(prefix + "."):
                        return algo
            return None
        return self.algo

    def bytes_of(self, fmt: str, module: str = "") -> float:
        """Bytes per weight of a format, scales (and zero points) included, at the config's group size."""
        group = self.group_size
        if self.group_of and module:
            names = candidates(module)
            group = next(
                (g for prefix, g in self.group_of for n in names if n.startswith(prefix)), group
            )
        if fmt == "nvfp4":
            return 0.5 + 1 / (group or 16)  # one FP8 (E4M3) scale per group
        if fmt == "mxfp4":
            return 0.5 + 1 / (group or 32)  # one E8M0 scale per 32
        if fmt == "int4_g128":
            g = group or 128
            return (
                0.5 + 2 / g + (0.5 / g if self.zero_point else 0.0)
            )  # FP16/BF16 scale (+ 4-bit zero)
        return QUANT_BYTES[fmt]


def candidates(module: str) -> tuple[str, ...]:
    """A module name as written for the text model, and under each multimodal wrapper (PREFIXES)."""
    out = [module]
    for prefix in PREFIXES:
        if module.startswith(prefix):
            out.append(module[len(prefix) :])
            out.append("model." + module[len(prefix) :])
    bare = module[len("model.") :] if module.startswith("model.") else None
    out += [p + module for p in ("language_model.",)]
    if bare is not None:
        out += ["model.language_model." + bare, "language_model.model." + bare, bare]
    return tuple(dict.fromkeys(out))


_WILD = re.compile(r"[*?[]")
"""fnmatch's special characters: a pattern without them matches its own text only."""

_Exclusions = tuple[frozenset[str], tuple[str, ...], re.Pattern[str] | None]
_COMPILED: dict[tuple[str, ...], _Exclusions] = {}
_LAST: tuple[tuple[str, ...], _Exclusions] | None = None
"""The list asked last, by identity: one audit asks about each of ~1,000 modules with the same tuple, and a dict
lookup hashes all of its hundreds of names every time (most of the roofline's time before)."""


def _excluded(patterns: tuple[str, ...], module: str) -> bool:
    """Whether an exclude list names `module`: a pattern matches the module or one of its dotted prefixes.

    Exclude lists are hundreds of per-layer names, most of them literal (GLM-5-NVFP4: 392 of 471): those are a set,
    looked up for the module and each dotted prefix of it; `NAME*` (the other 79 there) is a prefix; only the other
    wildcard (fnmatch) and `re:` patterns are one compiled alternation per list. The same answers as one alternation
    of them all (tests/roofline/test_exclude_match.py), at a fraction of its compile and match time (issue 30)."""
    literal, prefixes, rx = _exclusions(patterns)
    if prefixes and module.startswith(prefixes):
        return True
    if literal:
        if module in literal:
            return True
        dot = module.find(".")
        while dot != -1:
            if module[:dot] in literal:
                return True
            dot = module.find(".", dot + 1)
    return rx is not None and rx.match(module) is not None


def _exclusions(patterns: tuple[str, ...]) -> _Exclusions:
    """The literal names as a set and the other patterns compiled, once per list (by value: a fleet's nodes share
    one checkpoint's)."""
    global _LAST
    last = _LAST  # one read: another thread may replace it meanwhile
    if last is not None and last[0] is patterns:
        return last[1]
    compiled = _COMPILED.get(patterns)
    if compiled is None:
        literal = frozenset(p for p in patterns if not p.startswith("re:") and not _WILD.search(p))
        # `NAME*`: fnmatch's trailing `.*` matches every continuation, dots included
        prefixes = tuple(p[:-1] for p in patterns if _is_prefix(p))
        alts = []
        for p in patterns:
            if p.startswith("re:"):
                alts.append(f"(?:{p[3:]}).*")  # compressed-tensors: re.match, a prefix match
            elif p not in literal and not _is_prefix(p):
                t = fnmatch.translate(p)[4:-3]  # "(?s:...)\Z" -> the bare pattern
                alts.append(f"(?:{t})(?:\\..*)?")
        rx = re.compile("(?s:" + "|".join(alts) + ")\\Z") if alts else None
        compiled = _COMPILED[patterns] = (literal, prefixes, rx)
    _LAST = (patterns, compiled)
    return compiled


def _is_prefix(pattern: str) -> bool:
    """`NAME*` with no other fnmatch character: matches exactly the module names that start with NAME."""
    return (
        pattern.endswith("*") and not pattern.startswith("re:") and not _WILD.search(pattern[:-1])
    )


def _match(pattern: str, module: str) -> bool:
    return _excluded((pattern,), module)


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
            group=_group(q.get("group_size")),
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
            group=_group(qc.get("group_size")) or _ct_group(qc),
        )
    if method == "compressed-tensors":
        weights = [
            g.get("weights") or {}
            for g in (qc.get("config_groups") or {}).values()
            if isinstance(g, dict)
        ]
        bits = {w.get("num_bits") for w in weights}
        types = {str(w.get("type")) for w in weights}
        group = _ct_group(qc)
        src = "config.json compressed-tensors"
        if bits == {4} and "float" in types:
            return _quant_from("nvfp4", excluded, src, group=group)
        if bits == {4}:
            symmetric = all(w.get("symmetric", True) for w in weights)
            return _quant_from("int4_g128", excluded, src, group=group, zero=not symmetric)
        if bits == {8}:
            return _quant_from("fp8" if "float" in types else "int8", excluded, src)
        return None
    if method in ("awq", "gptq", "awq_marlin", "gptq_marlin"):
        wbits = int(qc.get("bits") or qc.get("w_bit") or 4)
        group = _group(qc.get("group_size") or qc.get("q_group_size"))
        zero = method.startswith("awq") or qc.get("sym") is False or bool(qc.get("zero_point"))
        return _quant_from(
            "int4_g128" if wbits == 4 else "int8",
            excluded,
            f"config.json {method}",
            group=group,
            zero=zero,
        )
    return _quant_from(method, excluded, "config.json quantization_config")


def _group(value: Any) -> int | None:
    return (
        int(value) if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
    )


def _ct_group(qc: dict[str, Any]) -> int | None:
    """compressed-tensors: config_groups.*.weights.group_size (all groups alike, else the first)."""
    for g in (qc.get("config_groups") or {}).values():
        if isinstance(g, dict) and isinstance(g.get("weights"), dict):
            found = _group(g["weights"].get("group_size"))
            if found:
                return found
    return None


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


def _quant_from(
    algo: str,
    excluded: list[Any],
    source: str,
    layers: Any = None,
    *,
    group: int | None = None,
    zero: bool = False,
) -> Quant | None:
    if algo.lower() == "mixed_precision" and isinstance(layers, dict):
        pairs = tuple(
            (str(m), k)
            for m, v in layers.items()
            if isinstance(v, dict) and (k := _quant_key(str(v.get("quant_algo") or ""))) is not None
        )
        groups = tuple(
            (str(m), g)
            for m, v in layers.items()
            if isinstance(v, dict) and (g := _group(v.get("group_size")))
        )
        return (
            Quant(
                algo="mixed",
                bytes_per_param=0.0,
                excluded=tuple(str(e) for e in excluded),
                per_module=pairs,
                source=source,
                group_of=groups,
            )
            if pairs
            else None
        )
    key = _quant_key(algo)
    if key is None:
        return None
    q = Quant(
        algo=key,
        bytes_per_param=QUANT_BYTES[key],
        excluded=tuple(str(e) for e in excluded),
        source=source,
        group_size=group,
        zero_point=zero,
    )
    return Quant(
        algo=q.algo,
        bytes_per_param=q.bytes_of(key),
        excluded=q.excluded,
        source=source,
        group_size=group,
        zero_point=zero,
    )


def _layer_sets(
    cfg: dict[str, Any], L: int, experts: int
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(dense layers, MoE layers) by index: exclude lists and mixed-precision maps name layers."""
    if not experts:
        return tuple(range(L)), ()
    if cfg.get("first_k_dense_replace") is not None:
        k = min(L, _int(cfg, "first_k_dense_replace"))
        return tuple(range(k)), tuple(range(k, L))
    if cfg.get("interleave_moe_layer_step"):  # Llama 4: every step-th layer is MoE
        step = max(_int(cfg, "interleave_moe_layer_step"), 1)
        moe = tuple(i for i in range(L) if (i + 1) % step == 0)
        return tuple(i for i in range(L) if i not in moe), moe
    only = {int(i) for i in cfg.get("mlp_only_layers") or [] if isinstance(i, int)}
    step = _int(cfg, "decoder_sparse_step", default=1) or 1
    moe = tuple(i for i in range(L) if i not in only and (i + 1) % step == 0)
    return tuple(i for i in range(L) if i not in moe), moe


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
    k = (
        _int(cfg, "num_experts_per_tok", "experts_per_token", "moe_topk", "top_k", default=0)
        if experts
        else 0
    )
    dense_ids, moe_ids = _layer_sets(cfg, L, experts)
    all_ids = tuple(range(L))
    notes: list[str] = []
    comps: list[Component] = []
    pre = "model.layers.{i}."

    mla = cfg.get("kv_lora_rank") is not None
    if mla:
        comps += _mla(cfg, h, heads, all_ids)
        kv_lora, rope = _int(cfg, "kv_lora_rank"), _int(cfg, "qk_rope_head_dim", default=64)
        kv_per_token_elems, kv_split = L * (kv_lora + rope), 1
        notes.append(
            "MLA: the latent KV cache and the q_a/kv_a projections are replicated on every TP rank"
        )
    else:
        hd = _int(cfg, "head_dim", default=h // heads)
        comps.append(
            _component(
                "attention q/o",
                "split",
                Part(pre + "self_attn.q_proj", h * heads * hd, all_ids),
                Part(pre + "self_attn.o_proj", heads * hd * h, all_ids),
            )
        )
        comps.append(
            _component(
                "attention k/v",
                "kv",
                Part(pre + "self_attn.k_proj", h * kv_heads * hd, all_ids),
                Part(pre + "self_attn.v_proj", h * kv_heads * hd, all_ids),
            )
        )
        kv_per_token_elems, kv_split = L * 2 * kv_heads * hd, kv_heads
    kv_cap = None
    if cfg.get("index_topk") is not None and cfg.get("index_n_heads") is not None:
        comps.append(_indexer(cfg, h, all_ids))
        kv_cap = _int(cfg, "index_topk")
        notes.append(
            f"DSA: at most {kv_cap} context tokens' KV read per step; the indexer is replicated"
        )

    inter = _int(cfg, "intermediate_size", "ffn_dim", "n_inner", default=4 * h)
    if dense_ids:
        comps.append(_mlp("dense MLP", "split", pre + "mlp", h, inter, dense_ids))
    if moe_ids:
        moe_inter = _int(cfg, "moe_intermediate_size", "expert_intermediate_size", default=inter)
        routed = _mlp(
            f"routed experts ({k} of {experts})",
            "experts",
            pre + "mlp.experts.0",
            h,
            moe_inter,
            moe_ids,
            times=k,
        )
        comps.append(
            Component(
                routed.name,
                routed.module,
                routed.params,
                routed.params * experts / max(k, 1),
                routed.tp,
                parts=routed.parts,
            )
        )
        shared_width = _shared_width(cfg, moe_inter)
        if shared_width:
            name = (
                "shared_expert" if cfg.get("shared_expert_intermediate_size") else "shared_experts"
            )
            comps.append(
                _mlp("shared experts", "split", pre + f"mlp.{name}", h, shared_width, moe_ids)
            )
        router = "mlp.router" if str(cfg.get("model_type", "")) == "gpt_oss" else "mlp.gate"
        comps.append(_component("router", "replicated", Part(pre + router, h * experts, moe_ids)))
    comps.append(_component("LM head", "split", Part("lm_head", V * h)))
    notes.append("input embeddings are a lookup (one row per token), not read in full")

    quant = parse_quant(cfg, hf_quant)
    comps = [_priced(c, quant, dtype, dtype_name) for c in comps]
    if quant is not None:
        notes.append(
            f"weights: {quant.algo}"
            + (f" (group {quant.group_size})" if quant.group_size else "")
            + f" from {quant.source}; each module's format read from its exclude list / per-module map"
        )
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


def _component(name: str, tp: str, *parts: Part) -> Component:
    params = sum(p.params * max(len(p.layers), 1) for p in parts)
    return Component(name, parts[0].modules()[0], params, params, tp, parts=tuple(parts))


def _mlp(
    name: str, tp: str, base: str, h: int, width: int, layers: tuple[int, ...], times: int = 1
) -> Component:
    """gate, up and down projections of a gated MLP (`times` of them: the active routed experts)."""
    return _component(
        name,
        tp,
        *(
            Part(f"{base}.{proj}", times * h * width, layers)
            for proj in ("gate_proj", "up_proj", "down_proj")
        ),
    )


def _priced(c: Component, quant: Quant | None, dtype: float, dtype_name: str) -> Component:
    # routers and the LM head stay at the model dtype unless a per-module map names them (checkpoints keep them
    # in BF16: ModelOpt excludes lm_head, DeepSeek's FP8 and AWQ/GPTQ checkpoints leave it unquantized)
    keep = c.name in ("router", "LM head") and not (quant is not None and quant.per_module)
    base = "bf16" if dtype == 2.0 and "16" in dtype_name or dtype_name == "auto" else dtype_name
    total = 0.0
    by_format: dict[str, float] = {}
    for part in c.parts:
        for module in part.modules():
            fmt = quant.format_of(module) if quant is not None and not keep else None
            b = quant.bytes_of(fmt, module) if quant is not None and fmt is not None else dtype
            total += part.params * b
            by_format[fmt or base] = by_format.get(fmt or base, 0.0) + part.params
    if not c.params:
        return c
    bpp = total / c.params
    if len(by_format) == 1:
        precision = next(iter(by_format))
    else:
        precision = " + ".join(
            f"{f} {100 * n / c.params:.0f}%"
            for f, n in sorted(by_format.items(), key=lambda kv: -kv[1])
        )
    return Component(c.name, c.module, c.params, c.all_params, c.tp, bpp, precision, parts=c.parts)


def _shared_width(cfg: dict[str, Any], moe_inter: int) -> int:
    """Total intermediate width of a MoE layer's shared expert(s) (0 = none)."""
    if str(cfg.get("model_type", "")).startswith("llama4"):
        return moe_inter  # Llama 4: every MoE layer has one shared expert as wide as a routed one
    if cfg.get("shared_expert_intermediate_size"):
        return _int(cfg, "shared_expert_intermediate_size")
    return moe_inter * _int(cfg, "n_shared_experts", "num_shared_experts", default=0)


def _mla(cfg: dict[str, Any], h: int, heads: int, ids: tuple[int, ...]) -> list[Component]:
    q_lora = cfg.get("q_lora_rank")
    kv_lora = _int(cfg, "kv_lora_rank")
    nope, rope = (
        _int(cfg, "qk_nope_head_dim", default=128),
        _int(cfg, "qk_rope_head_dim", default=64),
    )
    v = _int(cfg, "v_head_dim", default=nope)
    pre = "model.layers.{i}.self_attn."
    replicated = [Part(pre + "kv_a_proj_with_mqa", h * (kv_lora + rope), ids)]
    if q_lora:
        q_lora = int(q_lora)
        replicated.insert(0, Part(pre + "q_a_proj", h * q_lora, ids))
        q = Part(pre + "q_b_proj", q_lora * heads * (nope + rope), ids)
    else:
        q = Part(pre + "q_proj", h * heads * (nope + rope), ids)
    split = [
        q,
        Part(pre + "kv_b_proj", kv_lora * heads * (nope + v), ids),
        Part(pre + "o_proj", heads * v * h, ids),
    ]
    return [
        _component("attention (q_b, kv_b, o)", "split", *split),
        _component("attention (q_a, kv_a)", "replicated", *replicated),
    ]


def _indexer(cfg: dict[str, Any], h: int, ids: tuple[int, ...]) -> Component:
    q_lora = _int(cfg, "q_lora_rank", default=h)
    n, d = _int(cfg, "index_n_heads"), _int(cfg, "index_head_dim", default=128)
    pre = "model.layers.{i}.self_attn.indexer."
    return _component(
        "DSA indexer",
        "replicated",
        Part(pre + "wq_b", q_lora * n * d, ids),
        Part(pre + "wk", h * d, ids),
        Part(pre + "weights_proj", h * n, ids),
    )
