"""What a roofline needs from the engine's command line, read from real SGLang/vLLM launch lines.

Each fixture is a launch command as an operator posted it (tests/fixtures/engine/launch-lines/SOURCES.md),
split the way the kernel keeps it in /proc/<pid>/cmdline (shell quoting removed, leading VAR=value dropped).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from gpuaudit.probes.core.parsers.engine import parse_engine_args

LINES = Path(__file__).resolve().parents[1] / "fixtures/engine/launch-lines"


def argv(name: str) -> list[str]:
    words = shlex.split((LINES / name).read_text().replace("\\\n", " "))
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        words.pop(0)
    return words


# (file, kind, model, tp, pp, dp, ep, kv dtype, speculative, steps, draft tokens, port, port is default)
CASES = [
    (
        "sglang-qwen35-fp8-eagle-tp8.sh",
        "sglang",
        "/data2/Qwen/Qwen3.5-397B-A17B-FP8",
        8,
        1,
        1,
        None,
        None,
        "EAGLE",
        3,
        4,
        9000,
        False,
    ),
    (
        "sglang-llama33-70b-eagle3-abbreviated.sh",
        "sglang",
        "meta-llama/Llama-3.3-70B-Instruct",
        8,
        1,
        1,
        None,
        None,
        "EAGLE3",
        8,
        64,
        30000,
        False,
    ),
    (
        "sglang-glm46-fp8-tp-size-eagle.sh",
        "sglang",
        "zai-org/GLM-4.6-FP8",
        8,
        1,
        1,
        None,
        None,
        "EAGLE",
        3,
        4,
        8000,
        False,
    ),
    (
        "sglang-deepseek-r1-dp-attention-nextn.sh",
        "sglang",
        "/data2/deepseek-ai/DeepSeek-R1",
        16,
        1,
        8,
        None,
        None,
        "EAGLE",
        1,
        2,
        2233,
        False,
    ),
    (
        "sglang-gpt-oss-tp4-ep4-dp4-attention.sh",
        "sglang",
        "openai/gpt-oss-120b",
        4,
        1,
        4,
        4,
        None,
        None,
        None,
        None,
        30000,
        True,
    ),
    (
        "sglang-deepseek-v3-tp8-eager-dp-attention.sh",
        "sglang",
        "/mnt/model/",
        8,
        1,
        1,
        None,
        None,
        None,
        None,
        None,
        30000,
        True,
    ),
    (
        "vllm-qwen36-27b-nvfp4-mtp.sh",
        "vllm",
        "unsloth/Qwen3.6-27B-NVFP4",
        1,
        1,
        1,
        None,
        "nvfp4",
        "mtp",
        2,
        None,
        8000,
        False,
    ),
    (
        "vllm-llama31-405b-tp8-pp2-draft-model.sh",
        "vllm",
        "/models/Meta-Llama-3.1-405B-Instruct",
        8,
        2,
        1,
        None,
        None,
        "draft model",
        5,
        None,
        8000,
        True,
    ),
    (
        "vllm-deepseek-r1-api-server-mtp.sh",
        "vllm",
        "deepseek-ai/DeepSeek-R1",
        8,
        1,
        1,
        None,
        None,
        "speculative (method not named)",
        1,
        None,
        8000,
        True,
    ),
    (
        "vllm-glm46-fp8-expert-parallel.sh",
        "vllm",
        "zai-org/GLM-4.6-FP8",
        8,
        1,
        1,
        8,
        None,
        None,
        None,
        None,
        8000,
        True,
    ),
    (
        "vllm-glm52-nvfp4-spec-shorthand.sh",
        "vllm",
        "RedHatAI/GLM-5.2-NVFP4-FP8",
        4,
        1,
        1,
        None,
        "fp8",
        "dspark",
        7,
        None,
        8000,
        True,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_roofline_inputs_from_real_launch_lines(case):
    name, kind, model, tp, pp, dp, ep, kv, spec, steps, draft, port, default = case
    cfg = parse_engine_args(argv(name))
    assert cfg is not None
    got = (
        cfg.kind,
        cfg.model,
        cfg.tp,
        cfg.pp,
        cfg.dp,
        cfg.ep,
        cfg.kv_cache_dtype,
        cfg.speculative,
        cfg.speculative_steps,
        cfg.speculative_draft_tokens,
        cfg.port,
        cfg.port_is_default,
    )
    assert got == (kind, model, tp, pp, dp, ep, kv, spec, steps, draft, port, default)


def test_graph_allreduce_and_attention_details():
    aiter = parse_engine_args(argv("sglang-qwen35-fp8-eagle-tp8.sh"))
    assert aiter is not None and aiter.allreduce_flags == ("--enable-aiter-allreduce-fusion",)
    assert aiter.speculative_topk == 1 and not aiter.custom_allreduce_disabled
    abbrev = parse_engine_args(argv("sglang-llama33-70b-eagle3-abbreviated.sh"))
    assert (
        abbrev is not None
        and abbrev.speculative_draft_model == "/sgl-workspace/EAGLE3-LLaMA3.3-Instruct-70B"
    )
    assert abbrev.cuda_graph_max_bs == 1
    nextn = parse_engine_args(argv("sglang-deepseek-r1-dp-attention-nextn.sh"))
    assert (
        nextn is not None
        and nextn.dp_attention
        and nextn.speculative_draft_model.endswith("DeepSeek-V3-0324-NextN")
    )
    eager = parse_engine_args(argv("sglang-deepseek-v3-tp8-eager-dp-attention.sh"))
    assert (
        eager is not None
        and eager.cuda_graphs_disabled
        and eager.graph_flag == "--disable-cuda-graph"
        and eager.dp_attention
    )
    mtp = parse_engine_args(argv("vllm-qwen36-27b-nvfp4-mtp.sh"))
    assert mtp is not None and mtp.cuda_graph_mode == "PIECEWISE" and not mtp.cuda_graphs_disabled
    assert mtp.attention_backend == "FLASHINFER" and mtp.speculative_draft_model is None


def test_vllm_cudagraph_mode_none_disables_graphs():
    cfg = parse_engine_args(
        ["vllm", "serve", "m", "--compilation-config", '{"cudagraph_mode": "NONE"}']
    )
    assert cfg is not None and cfg.cuda_graphs_disabled and cfg.graph_flag == "cudagraph_mode=NONE"
