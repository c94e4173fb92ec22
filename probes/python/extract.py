"""The python probe's outputs -> PythonFacts: one parser per source, each into its own fields (never raises)."""

from __future__ import annotations

from typing import Any

from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.judge.combiners import engine_fill
from gpuaudit.probes.core.judge.probe import Reads, read_table
from gpuaudit.probes.core.models import Role
from gpuaudit.probes.core.parsers.engine import (
    EngineSummary,
    log_source_labels,
    parse_engine_logs,
    parse_engine_status,
    parse_throughput_lines,
    serving_engine,
)
from gpuaudit.probes.core.parsers.pyenv import parse_pyenv_json
from gpuaudit.probes.core.spec import Outputs
from gpuaudit.probes.python.facts import PythonFacts
from gpuaudit.probes.python.parsers import GPU_SOURCE, median, parse_gpu_cc, parse_jit_dirs


def gpu_fields(text: str) -> dict[str, Any]:
    rows = parse_gpu_cc(text)
    if not rows:
        raise ParseError((text.strip().splitlines() or ["empty output"])[0][:120])
    return {
        "gpus": [r[0] for r in rows],
        "compute_caps": [r[1] or "?" for r in rows],
        "driver": rows[0][2],
    }


def pyenv_fields(text: str) -> dict[str, Any]:
    env = parse_pyenv_json(text)
    return {
        "interpreter": env.interpreter,
        "python": env.python,
        "torch": env.torch,
        "torch_cuda": env.torch_cuda,
        "arch_list": env.arch_list,
        "torch_error": env.torch_error,
        "packages": env.packages,
    }


def engine_fields(text: str) -> dict[str, Any]:
    eng = serving_engine(text)  # the shared combiner: derived once per listing
    out: dict[str, Any] = {"engine_listed": True, "engine_procs": len(eng.procs)}
    if eng.procs:
        out.update(engine_env=eng.env, engine_env_readable=eng.env_readable)
    return out | layout_fields(eng)


def layout_fields(eng: EngineSummary) -> dict[str, Any]:
    """The API server's command line: what the engine runs and how it is laid out (roofline inputs)."""
    cfg = eng.config
    if eng.main is None or cfg is None:
        return {}
    return dict(
        engine_kind=cfg.kind,
        engine_pid=eng.main.pid,
        engine_args=list(eng.main.argv)[:80],
        model=cfg.model,
        quantization=cfg.quantization,
        tp=cfg.tp,
        pp=cfg.pp,
        dp=cfg.dp,
        ep=cfg.ep,
        dp_attention=cfg.dp_attention,
        kv_cache_dtype=cfg.kv_cache_dtype,
        speculative=cfg.speculative,
        speculative_steps=cfg.speculative_steps,
        speculative_topk=cfg.speculative_topk,
        speculative_draft_tokens=cfg.speculative_draft_tokens,
        speculative_draft_model=cfg.speculative_draft_model,
        cuda_graphs_disabled=cfg.cuda_graphs_disabled,
        graph_flag=cfg.graph_flag,
        cuda_graph_mode=cfg.cuda_graph_mode,
        cuda_graph_max_bs=cfg.cuda_graph_max_bs,
        custom_allreduce_disabled=cfg.custom_allreduce_disabled,
        allreduce_flags=list(cfg.allreduce_flags),
        engine_port=cfg.port,
        engine_port_is_default=cfg.port_is_default,
        attention_backend=cfg.attention_backend,
        moe_backend=cfg.moe_backend,
    )


def status_fields(text: str) -> dict[str, Any]:
    rep = parse_engine_status(text)
    return {
        "proc_threads": [
            (
                p.cmd.split(" ")[0] if p.cmd else f"pid {p.pid}",
                p.threads or 0,
                len(p.cpus) if p.cpus is not None else None,
            )
            for p in rep.procs
        ],
        "cpus_online": len(rep.online) if rep.online else None,
    }


def log_fields(text: str) -> dict[str, Any]:
    logs = parse_engine_logs(text)
    samples = [s for lg in logs for s in parse_throughput_lines(lg.throughput_lines)]
    return {
        "log_sources": log_source_labels(logs),
        "throughput": [(s.tok_s, s.running) for s in samples],
        "decode_single_stream_tok_s": median([s.tok_s for s in samples if s.running == 1]),
        "decode_accept_len": median([s.accept_len for s in samples if s.accept_len is not None]),
    }


def jit_fields(text: str) -> dict[str, Any]:
    return {"jit_dirs": parse_jit_dirs(text)}


TABLE: tuple[Reads, ...] = (
    Reads(GPU_SOURCE, gpu_fields),
    Reads("pyenv", pyenv_fields),
    Reads("engine_procs", fill=engine_fill(engine_fields)),
    Reads("engine_proc_status", status_fields),
    Reads("engine_logs", log_fields),
    Reads("jit_cache_dirs", jit_fields),
)
"""Source -> the parser that fills its fields, run by the framework (`read_table`): a source that failed, or whose
output does not parse, is in `problems`."""


def extract(outputs: Outputs, role: Role) -> PythonFacts:
    read = read_table(outputs, TABLE)
    return PythonFacts.of(read.fields, problems=read.problems)


FIELD_SOURCES: dict[str, tuple[str, ...]] = {
    "gpus": ("smi_query_driver",),
    "compute_caps": ("smi_query_driver",),
    "driver": ("smi_query_driver",),
    "interpreter": ("pyenv",),
    "python": ("pyenv",),
    "torch": ("pyenv",),
    "torch_cuda": ("pyenv",),
    "arch_list": ("pyenv",),
    "torch_error": ("pyenv",),
    "packages": ("pyenv",),
    "engine_listed": ("engine_procs",),
    "engine_kind": ("engine_procs",),
    "engine_pid": ("engine_procs",),
    "engine_args": ("engine_procs",),
    "model": ("engine_procs",),
    "quantization": ("engine_procs",),
    "tp": ("engine_procs",),
    "pp": ("engine_procs",),
    "dp": ("engine_procs",),
    "ep": ("engine_procs",),
    "dp_attention": ("engine_procs",),
    "kv_cache_dtype": ("engine_procs",),
    "speculative": ("engine_procs",),
    "speculative_steps": ("engine_procs",),
    "speculative_topk": ("engine_procs",),
    "speculative_draft_tokens": ("engine_procs",),
    "speculative_draft_model": ("engine_procs",),
    "cuda_graphs_disabled": ("engine_procs",),
    "graph_flag": ("engine_procs",),
    "cuda_graph_mode": ("engine_procs",),
    "cuda_graph_max_bs": ("engine_procs",),
    "custom_allreduce_disabled": ("engine_procs",),
    "allreduce_flags": ("engine_procs",),
    "engine_port": ("engine_procs",),
    "engine_port_is_default": ("engine_procs",),
    "attention_backend": ("engine_procs",),
    "moe_backend": ("engine_procs",),
    "engine_env": ("engine_procs",),
    "engine_env_readable": ("engine_procs",),
    "engine_procs": ("engine_procs",),
    "proc_threads": ("engine_proc_status",),
    "cpus_online": ("engine_proc_status",),
    "log_sources": ("engine_logs",),
    "throughput": ("engine_logs",),
    "decode_single_stream_tok_s": ("engine_logs",),
    "decode_accept_len": ("engine_logs",),
    "jit_dirs": ("jit_cache_dirs",),
}
"""Each fact field -> the sources it is read from (provenance; the read-tracking test holds verdicts to
their checks' declarations through it). () = from the records' wrapping, not a source's output."""
