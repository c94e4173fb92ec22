"""Typed facts of the python probe: the inspected Python, the GPUs it must run on, the serving engine."""

from __future__ import annotations

from gpuaudit.probes.core.record import Record


class JitDir(Record, frozen=True):
    path: str
    fs: str | None = None
    writable: bool = False
    entries: list[str] = []


class PythonFacts(Record, frozen=True):
    gpus: list[str] = []
    compute_caps: list[str] = []
    driver: str | None = None
    interpreter: str | None = None
    python: str | None = None
    torch: str | None = None
    torch_cuda: str | None = None
    arch_list: list[str] | None = None
    torch_error: str | None = None
    packages: dict[str, str] = {}
    engine_listed: bool = False
    """The process scan (engine_procs) gave a usable answer: an empty engine_kind then proves no engine runs here."""
    engine_kind: str | None = None
    engine_pid: int | None = None
    engine_args: list[str] = []
    # The engine's layout, as its command line says (the roofline's inputs, PROBES.md §13.1).
    model: str | None = None
    quantization: str | None = None
    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    ep: int | None = None
    dp_attention: bool | None = None
    kv_cache_dtype: str | None = None
    """As given on the command line; None = the engine's default ("auto": the model's dtype)."""
    speculative: str | None = None
    """Speculative decoding / MTP method; None = not configured."""
    speculative_steps: int | None = None
    speculative_topk: int | None = None
    speculative_draft_tokens: int | None = None
    speculative_draft_model: str | None = None
    cuda_graphs_disabled: bool | None = None
    graph_flag: str | None = None
    cuda_graph_mode: str | None = None
    cuda_graph_max_bs: int | None = None
    custom_allreduce_disabled: bool | None = None
    allreduce_flags: list[str] = []
    engine_port: int | None = None
    engine_port_is_default: bool | None = None
    attention_backend: str | None = None
    moe_backend: str | None = None
    engine_env: dict[str, str] = {}
    engine_env_readable: bool | None = None
    engine_procs: int = 0
    proc_threads: list[tuple[str, int, int | None]] | None = None
    """(process title, Threads, allowed CPU count) per engine process; None = not read."""
    cpus_online: int | None = None
    log_sources: list[str] | None = None
    throughput: list[tuple[float, int | None]] = []
    """(tok/s, running requests) from the engine's log, oldest first."""
    decode_single_stream_tok_s: float | None = None
    """Median of the log's decode samples at one running request (the measured side of the roofline)."""
    decode_accept_len: float | None = None
    """Median tokens accepted per step when speculative decoding logs it (the MTP multiplier)."""
    jit_dirs: list[JitDir] | None = None
    problems: dict[str, str] = {}


VOLATILE = frozenset(
    {
        "engine_pid",
        "engine_procs",
        "proc_threads",
        "throughput",
        "decode_single_stream_tok_s",
        "decode_accept_len",
    }
)
"""Facts that change on an unchanged machine: pids, a /proc scan's race with exiting workers, log samples."""
