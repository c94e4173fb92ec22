"""The roofline of one audit: inputs read from the targets' records, the bounds, the measured speed, the gap.

Pure: an AuditRun in, a `Roofline` out. Every missing input is named and leaves its figure out (status
"unknown" when no bound can be computed) — never a guessed number.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Literal

from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.models import AuditRun, CommandRecord, Role, Severity, empty_list
from gpuaudit.probes.core.parsers.engine import (
    EngineConfig,
    EngineProc,
    parse_engine_logs,
    parse_throughput_lines,
    serving_engine,
)
from gpuaudit.probes.core.parsers.engine_metrics import (
    parse_decode_probe,
    parse_engine_metrics,
    single_stream,
)
from gpuaudit.probes.core.parsers.model_files import ModelFiles, parse_model_files
from gpuaudit.probes.core.parsers.nccl_tests import parse_all_reduce_perf
from gpuaudit.probes.core.parsers.nvidia_smi import gpu_model, parse_topo_m
from gpuaudit.probes.core.record import Record, field
from gpuaudit.probes.core.roofline.bounds import (
    CUSTOM_ALLREDUCE_US,
    ETA_DEFAULT,
    Layout,
    Step,
    compute,
)
from gpuaudit.probes.core.roofline.explain import Context, explanations, switch_pairs
from gpuaudit.probes.core.roofline.gpus import gpu_spec
from gpuaudit.probes.core.roofline.model import ModelConfigError, model_spec
from gpuaudit.probes.core.roofline.references import matching
from gpuaudit.probes.core.spec import record_problem


class Roofline(Record):
    status: Literal["ok", "partial", "unknown"] = "unknown"
    missing: list[str] = field(default_factory=empty_list)
    inputs: dict[str, str] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=empty_list)
    bounds: dict[str, float] = field(default_factory=dict)
    """naive / tp_aware / tp_aware_eta / comm_aware, tok/s."""
    measured_tok_s: float | None = None
    measured_source: str | None = None
    speculative_accept_len: float | None = None
    ratios: dict[str, float] = field(default_factory=dict)
    """measured ÷ each bound."""
    unexplained_ms_per_token: float | None = None
    explanations: list[dict[str, str]] = field(default_factory=empty_list)
    reference: dict[str, object] | None = None
    """The first published figure for the same setup (references below)."""
    references: list[dict[str, object]] = field(default_factory=empty_list)
    """Published single-stream figures for the same GPU model and count, model family, TP and MTP on/off."""
    published_eta: float | None = None
    """The published measured bandwidth fraction behind bounds["published_eta"], and its source."""
    published_eta_source: str | None = None
    near_bound: bool = False
    """Measured >= NEAR_BOUND of the comm-aware bound: the plan says the box is near its bound."""
    strip: str = ""


def _usable(records: Mapping[str, CommandRecord], cid: str) -> CommandRecord | None:
    rec = records.get(cid)
    return rec if rec is not None and record_problem(rec) is None else None


def _records_by_role(run: AuditRun) -> dict[Role, dict[str, CommandRecord]]:
    out: dict[Role, dict[str, CommandRecord]] = {}
    for p in run.probes:
        for r in p.records:
            out.setdefault(r.target, {}).setdefault(r.command_id, r)
    return out


def _engine(
    recs: dict[Role, dict[str, CommandRecord]], rf: Roofline
) -> tuple[Role, EngineConfig] | tuple[None, None]:
    for role in ("container", "host"):
        rec = _usable(recs.get(role, {}), "engine_procs")
        if rec is None:
            continue
        try:
            eng = serving_engine(rec.stdout)  # the python probe's reading, derived once
        except ParseError as exc:
            rf.missing.append(f"engine processes ({role}): {exc}")
            continue
        if eng.ambiguous is not None:
            rf.missing.append(f"engine processes ({role}): {eng.ambiguous}")
        if eng.main is not None and eng.config is not None:
            return role, eng.config
    if not rf.missing:
        rf.missing.append("no serving engine (SGLang/vLLM) found, or its process list was not read")
    return None, None


def _gpus(recs: dict[Role, dict[str, CommandRecord]]) -> tuple[str | None, int]:
    for role in ("host", "container"):
        rec = _usable(recs.get(role, {}), "smi_gpu_ids")
        if rec is not None and (found := gpu_model(rec.stdout))[0]:
            return found
    return None, 0


def _topology(recs: dict[Role, dict[str, CommandRecord]]) -> tuple[str | None, bool | None]:
    """(interconnect "nvlink"/"pcie", whether a GPU pair sits behind a PCIe switch) from topo -m."""
    for role in ("host", "container"):
        rec = _usable(recs.get(role, {}), "smi_topo_m")
        if rec is None:
            continue
        try:
            topo = parse_topo_m(rec.stdout)
            return ("nvlink" if topo.nvlink_pairs() else "pcie"), switch_pairs(topo.links)
        except (ParseError, ValueError):
            continue
    return None, None


def _interconnect(recs: dict[Role, dict[str, CommandRecord]]) -> str | None:
    return _topology(recs)[0]


def _judged_engine(records: Mapping[str, CommandRecord]) -> EngineProc | None:
    """The engine the python probe judged on this target (engine_procs' API server), if read."""
    rec = _usable(records, "engine_procs")
    if rec is None:
        return None
    try:
        return serving_engine(rec.stdout).main
    except ParseError:
        return None


def _engine_pid(records: Mapping[str, CommandRecord]) -> int | None:
    """The pid of the engine the python probe judged on this target, if read."""
    main = _judged_engine(records)
    return main.pid if main else None


def _other_process(files: ModelFiles, records: Mapping[str, CommandRecord]) -> str | None:
    """Why model files read from another process than the judged engine are not used (issue 29: the reader takes
    the first API server, which may be a user's look-alike), or None. Processes of the engine's owner (forked
    copies of its API server) are the engine; outputs without the pid (older recordings) are used as before."""
    main = None if files.pid is None else _judged_engine(records)
    if main is None or files.pid == main.pid or (main.uid is not None and files.uid == main.uid):
        return None
    return (
        f"not used: read from pid {files.pid} (uid {files.uid}), the engine the python probe judged is "
        f"pid {main.pid} (uid {main.uid})"
    )


def _measured(
    records: Mapping[str, CommandRecord], notes: dict[str, str] | None = None
) -> tuple[float | None, float | None, str | None]:
    """Single-stream decode speed, its speculative acceptance and its provenance: the engine's own metrics
    histogram when the requests it counts ran one at a time, else the median of the log's single-stream lines."""
    notes = notes if notes is not None else {}
    samples = []
    rec = _usable(records, "engine_logs")
    if rec is not None:
        try:
            logs = parse_engine_logs(rec.stdout)
            samples = [s for lg in logs for s in parse_throughput_lines(lg.throughput_lines)]
        except ParseError:
            samples = []
    log_accept = [s.accept_len for s in samples if s.running == 1 and s.accept_len]
    prec = _usable(records, "engine_decode_probe")  # --active only
    if prec is not None:
        try:
            probe = parse_decode_probe(prec.stdout)
        except ParseError as exc:
            probe = None
            notes["decode probe (--active)"] = str(exc)
        judged = _engine_pid(records)
        if probe is not None and probe.pids and judged is not None and judged not in probe.pids:
            notes["decode probe (--active)"] = (
                f"not used: the request went to pid {','.join(map(str, probe.pids))}, "
                f"the engine the python probe judged is pid {judged}"
            )
            probe = None
        if probe is not None and probe.tok_s is not None:
            return (
                probe.tok_s,
                None,
                f"--active decode probe: one streamed request of {probe.tokens} tokens to "
                f"{probe.url}, {1e3 * (probe.tpot_s or 0):.2f} ms per output token "
                f"(time to first token {probe.ttft_s:.2f} s excluded)",
            )
        if probe is not None:
            notes["decode probe (--active)"] = f"not measured: {probe.refused}"
    metrics_accept = None
    mrec = _usable(records, "engine_metrics")
    if mrec is not None:
        try:
            metrics = parse_engine_metrics(mrec.stdout)
        except ParseError as exc:
            metrics = None
            notes["engine metrics"] = str(exc)
        judged = _engine_pid(records)
        if (
            metrics is not None
            and metrics.pids
            and judged is not None
            and judged not in metrics.pids
        ):
            notes["engine metrics"] = (
                f"not used: the page was read from pid {','.join(map(str, metrics.pids))}, "
                f"the engine the python probe judged is pid {judged}"
            )
            metrics = None
        if metrics is not None:
            metrics_accept = metrics.accept_len
            ss = single_stream(metrics, [s.running for s in samples if s.running is not None])
            if ss.tok_s is not None:
                accept = ss.accept_len or (statistics.median(log_accept) if log_accept else None)
                return ss.tok_s, accept, f"engine metrics: {ss.provenance}"
            notes["engine metrics"] = f"not used for single stream: {ss.provenance}"
    single = [s for s in samples if s.running == 1]
    if not single:
        return None, None, None
    return (
        statistics.median(s.tok_s for s in single),
        statistics.median(log_accept) if log_accept else metrics_accept,
        f"median of {len(single)} single-stream decode log line(s) (engine_logs)",
    )


def roofline_for_run(run: AuditRun, *, eta: float = ETA_DEFAULT) -> Roofline:
    rf = Roofline()
    recs = _records_by_role(run)
    role, cfg = _engine(recs, rf)
    gpu_name, gpu_count = _gpus(recs)
    if gpu_name:
        rf.inputs["GPUs"] = f"{gpu_count}× {gpu_name} (smi_gpu_ids)"
    else:
        rf.missing.append("GPU model and count (smi_gpu_ids not read)")
    if role is None or cfg is None:
        return _finish(rf, run)
    engine_ctx = Context(tp=cfg.tp, eager=cfg.cuda_graphs_disabled)
    rf.inputs["engine"] = f"{cfg.kind} on the {role}: TP {cfg.tp}, PP {cfg.pp}, DP {cfg.dp}" + (
        f", EP {cfg.ep}" if cfg.ep else ""
    )
    if cfg.kv_cache_dtype:
        rf.inputs["KV cache dtype"] = cfg.kv_cache_dtype
    if cfg.speculative:
        rf.inputs["speculative decoding"] = cfg.speculative + (
            f", {cfg.speculative_steps} steps" if cfg.speculative_steps else ""
        )
    mrec = _usable(recs.get(role, {}), "engine_model_files")
    files = None
    if mrec is None:
        problem = record_problem(recs.get(role, {}).get("engine_model_files"))
        rf.missing.append(
            f"the model's config.json (engine_model_files: {problem or 'not collected'})"
        )
    else:
        try:
            files = parse_model_files(mrec.stdout)
            if files is None:
                rf.missing.append(
                    "the engine's model path (no --model/--model-path argument found)"
                )
            elif (other := _other_process(files, recs.get(role, {}))) is not None:
                rf.missing.append(f"model files: {other}")
                files = None
        except ParseError as exc:
            rf.missing.append(f"model files: {exc}")
    spec = None
    if files is not None:
        rf.inputs["model"] = f"{files.model} ({files.path or 'path not resolved'})"
        try:
            config = files.json("config.json")
            if config is None:
                raise ModelConfigError(f"no config.json in {files.path or files.model}")
            spec = model_spec(config, files.json("hf_quant_config.json"), cfg.kv_cache_dtype)
            rf.inputs["architecture"] = (
                f"{spec.family}: {spec.layers} layers, hidden {spec.hidden}"
                + (
                    f", {spec.experts_active} of {spec.experts_total} experts"
                    if spec.experts_total
                    else ""
                )
            )
            if files.total_size:
                rf.inputs["checkpoint size"] = (
                    f"{files.total_size / 1e9:.1f} GB (safetensors index metadata.total_size)"
                )
        except (ModelConfigError, ParseError) as exc:
            rf.missing.append(f"model config: {exc}")
    if spec is None:
        return _finish(rf, run, engine_ctx)
    gpu = gpu_spec(gpu_name) if gpu_name else None
    if gpu_name and gpu is None:
        rf.missing.append(f"memory bandwidth of {gpu_name} (not in the GPU table)")
    interconnect, switched = _topology(recs)
    ctx = Context(tp=cfg.tp, eager=cfg.cuda_graphs_disabled, switch_pairs=switched)
    rf.inputs["interconnect"] = interconnect or "unknown (smi_topo_m not read)"
    rf.inputs["η (usable bandwidth fraction)"] = f"{eta:g} (default; docs/ROOFLINE-METHOD.md §4)"
    layout = Layout(gpus=max(cfg.tp * cfg.pp, 1), tp=cfg.tp, pp=cfg.pp, ep=cfg.ep)
    notes: dict[str, str] = {}
    measured, log_accept, source = _measured(recs.get(role, {}), notes)
    rf.inputs.update(notes)
    rf.measured_tok_s, rf.measured_source = measured, source
    ar = allreduce_choice(cfg, interconnect) or measured_allreduce(recs, spec.hidden)
    if ar is not None:
        rf.inputs["all-reduce"] = f"{ar[0]:g} µs: {ar[1]}"
    accept, accept_source = acceptance(cfg, log_accept)
    rf.speculative_accept_len = accept
    if cfg.speculative and accept is None:
        rf.missing.append(
            f"speculative decoding ({cfg.speculative}) is on but its acceptance length is neither "
            "measured nor configured: the bounds are per step"
        )
    b = compute(
        spec,
        layout,
        gpu,
        interconnect=interconnect,
        eta=eta,
        allreduce_us=ar[0] if ar else None,
        allreduce_source=ar[1] if ar else "",
        accept_len=accept,
        accept_source=accept_source,
    )
    rf.steps = b.steps
    rf.missing += b.missing
    rf.bounds = {
        k: round(v, 1)
        for k, v in (
            ("naive", b.naive),
            ("tp_aware", b.tp_aware),
            ("tp_aware_eta", b.tp_aware_eta),
            ("comm_aware", b.comm_aware),
            ("published_eta", b.published_eta),
        )
        if v
    }
    if b.published_eta_value:
        rf.published_eta = round(b.published_eta_value, 3)
        rf.published_eta_source = b.published_eta_source
    if measured is None:
        rf.missing.append(
            "measured single-stream decode speed (no decode log line with one running request)"
        )
    if gpu is not None:
        refs = matching(gpu.model, gpu_count, spec.family, cfg.tp, bool(cfg.speculative))
        rf.references = [
            {
                "tok_s": r.tok_s,
                "model": r.model,
                "engine": r.engine,
                "setup": r.setup,
                "source": r.source,
            }
            for r in refs
        ]
        rf.reference = rf.references[0] if rf.references else None
    return _finish(rf, run, ctx)


def measured_allreduce(
    recs: dict[Role, dict[str, CommandRecord]], hidden: int
) -> tuple[float, str] | None:
    """--active nccl-tests: the all-reduce time at the smallest size >= one decode message (hidden x 2 B)."""
    for role in ("host", "container"):
        rec = _usable(recs.get(role, {}), "nccl_all_reduce_perf")
        if rec is None:
            continue
        try:
            perf = parse_all_reduce_perf(rec.stdout)
        except (ParseError, ValueError):
            continue
        message = 2 * hidden
        rows = sorted((r for r in perf.rows if r.time_us > 0), key=lambda r: r.size_b)
        row = next((r for r in rows if r.size_b >= message), rows[-1] if rows else None)
        if row is None or perf.errors():
            continue
        gpus = max(perf.n_gpus or 0, perf.ranks or 0) or "?"
        return row.time_us, (
            f"measured by nccl-tests (--active, nccl_all_reduce_perf on the {role}): {row.time_us:g} µs "
            f"at {row.size_b} B on {gpus} GPUs (a decode all-reduce carries {message} B)"
        )
    return None


def allreduce_choice(cfg: EngineConfig, interconnect: str | None) -> tuple[float, str] | None:
    """The engine's own all-reduce when it runs one instead of NCCL for decode-sized messages, else None."""
    if interconnect != "pcie" or cfg.tp <= 1 or cfg.kind not in ("sglang", "vllm"):
        return None
    flags = " ".join(cfg.allreduce_flags)
    if "pcie-oneshot-allreduce" in flags and "false" not in flags.lower():
        us, src = CUSTOM_ALLREDUCE_US["pcie_oneshot"]
        return us, f"{src}; the engine runs --enable-pcie-oneshot-allreduce"
    if cfg.tp == 2 and not cfg.custom_allreduce_disabled:
        return CUSTOM_ALLREDUCE_US["pcie_2gpu"]
    return None


def acceptance(cfg: EngineConfig, measured: float | None) -> tuple[float | None, str]:
    """Tokens per step for speculative decoding: measured (the engine's log/metrics), else the configured
    maximum (draft tokens + 1: every draft accepted), which keeps the bound a bound."""
    if not cfg.speculative:
        return None, ""
    if measured:
        return measured, f"{cfg.speculative}: measured acceptance length {measured:.2f}"
    if cfg.speculative_draft_tokens and (cfg.speculative_topk or 1) == 1:
        n = cfg.speculative_draft_tokens
        return float(
            n
        ), f"{cfg.speculative}: at most {n} tokens per step (--speculative-num-draft-tokens)"
    if cfg.speculative_steps:
        n = cfg.speculative_steps + 1
        return float(n), (
            f"{cfg.speculative}: at most {n} tokens per step ({cfg.speculative_steps} drafted + 1), "
            "acceptance not measured"
        )
    return None, ""


def _finish(rf: Roofline, run: AuditRun, ctx: Context | None = None) -> Roofline:
    if rf.measured_tok_s:
        rf.ratios = {k: round(rf.measured_tok_s / v, 3) for k, v in rf.bounds.items()}
        if "comm_aware" in rf.bounds:
            rf.unexplained_ms_per_token = round(
                1e3 / rf.measured_tok_s - 1e3 / rf.bounds["comm_aware"], 2
            )
    bad = [
        (f.id, f.severity.value, f.title)
        for f in run.findings
        if f.severity in (Severity.CRITICAL, Severity.WARNING)
    ]
    rf.explanations, rf.near_bound = explanations(
        bad, ctx or Context(), rf.ratios.get("comm_aware")
    )
    rf.status = "ok" if rf.bounds and not rf.missing else "partial" if rf.bounds else "unknown"
    rf.strip = strip_text(rf)
    return rf


def strip_text(rf: Roofline) -> str:
    """The one line for the dashboard, the plan screen and --plan: measured decode against the comm-aware bound at
    the default η and at a published measured η (the plan's next lines name both η and their sources; the η = 1
    bound is a detail line, not the headline). Fits 80 columns with the strip's prefix:

        decode 10.1 tok/s · 10% of comm-aware bound 98–100 tok/s
    """
    if not rf.bounds:
        return "roofline unknown: " + (rf.missing[0] if rf.missing else "no input")
    comm = rf.bounds.get("comm_aware")
    lo = comm or rf.bounds.get("tp_aware_eta") or rf.bounds.get("tp_aware") or 0.0
    pub = rf.bounds.get("published_eta")
    name = "comm-aware bound" if comm else "TP-aware bound"
    figures = [v for v in (lo, pub) if v]
    a, b = min(figures), max(figures)
    span = f"{a:.0f}–{b:.0f} tok/s" if round(a) != round(b) else f"{a:.0f} tok/s"
    spec = f" (×{rf.speculative_accept_len:.2f} spec)" if rf.speculative_accept_len else ""
    if rf.measured_tok_s is None:
        return f"decode ? tok/s (not measured) · {name} {span}{spec}"
    pct = [100 * rf.measured_tok_s / v for v in figures]
    lo_pct, hi_pct = min(pct), max(pct)
    share = f"{lo_pct:.0f}–{hi_pct:.0f}%" if round(lo_pct) != round(hi_pct) else f"{lo_pct:.0f}%"
    near = " · near its bound" if rf.near_bound else ""
    return f"decode {rf.measured_tok_s:.1f} tok/s · {share} of {name} {span}{spec}{near}"
