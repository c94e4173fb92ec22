"""The serving engine's own Prometheus page (`GET /metrics`), read from inside its container, read-only.

`ENGINE_METRICS_SHELL` (isolated python3 -I -S -B, stdlib only) finds the API server of this network namespace
(a root-owned one first under a root audit; several owners or ports: nothing read), takes its port (and an
explicit IPv4 `--host`) from its command line (SGLang default 30000, vLLM 8000) and GETs the page: 5 s for the
whole GET, at most 4 MB. SGLang serves /metrics only with `--enable-metrics`.

Parsed: time per output token / inter-token latency histograms (vLLM `vllm:inter_token_latency_seconds`,
`vllm:request_time_per_output_token_seconds`, older `vllm:time_per_output_token_seconds`; SGLang
`sglang:inter_token_latency_seconds`, older `sglang:time_per_output_token_seconds`), running and waiting requests,
vLLM's tokens-per-engine-step histogram (`vllm:iteration_tokens_total`, the evidence that decode ran one request
at a time) and speculative decoding acceptance (vLLM `vllm:spec_decode_num_drafts_total` /
`..._num_accepted_tokens_total`; SGLang `sglang:spec_accept_length`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.parsers.reader_lines import (  # the readers' command lines, declared apart (issue 30)
    DECODE_PROBE_SHELL as DECODE_PROBE_SHELL,
)
from gpuaudit.probes.core.parsers.reader_lines import (
    DECODE_PROMPT as DECODE_PROMPT,
)
from gpuaudit.probes.core.parsers.reader_lines import (
    DECODE_TOKENS as DECODE_TOKENS,
)
from gpuaudit.probes.core.parsers.reader_lines import (
    ENGINE_METRICS_SHELL as ENGINE_METRICS_SHELL,
)
from gpuaudit.probes.core.parsers.reader_lines import (
    FETCH_DEADLINE_S as FETCH_DEADLINE_S,
)
from gpuaudit.probes.core.parsers.reader_lines import (
    MAX_BYTES as MAX_BYTES,
)
from gpuaudit.probes.core.parsing import parse_once


@dataclass(frozen=True, slots=True)
class DecodeProbe:
    """The single-stream decode request the metrics reader sent to the engine, and what it measured."""

    url: str
    tok_s: float | None = None
    tpot_s: float | None = None
    ttft_s: float | None = None
    tokens: int = 0
    refused: str | None = None
    """Why nothing was sent (engine busy, load unknown) or the request failed."""
    pids: tuple[int, ...] = ()
    """The engine's processes the request went to (`@@pids`)."""


@parse_once
def parse_decode_probe(text: str) -> DecodeProbe | None:
    """Output of `DECODE_PROBE_SHELL` -> the measured time per output token (time to first token excluded).

    Tokens after the first chunk: with one token per chunk, the span between the first and the last chunk
    covers tokens - 1 of them (a chunk carrying several tokens — speculative decoding — is spread evenly).
    None when no engine runs here (`@@none`); raises ParseError on an incomplete output.
    """
    first = text.strip().split("\n", 1)[0].strip()
    if first == "@@none":
        return None
    if first.startswith("@@ambiguous "):
        return DecodeProbe("", refused=f"{_ambiguous(first)}: nothing sent")
    m = re.search(r"^@@pid (\d+) (\S+)$", text, flags=re.M)
    if not m or "@@end" not in text:
        raise ParseError("decode probe: output incomplete (no @@pid/@@end section)")
    url = m.group(2)
    pids = _pids(text, int(m.group(1)))
    refused = re.search(r"^@@(?:refused|failed) (.+)$", text, flags=re.M)
    if refused:
        return DecodeProbe(url, refused=refused.group(1).strip(), pids=pids)
    d = re.search(
        r"^@@decode model=(.*) tokens=(\d+) chunks=(\d+) ttft_s=([\d.]+) span_s=([\d.]+)"
        r"(?: running_during=(\d+|\?))?$",
        text,
        flags=re.M,
    )
    if not d:
        tail = [ln for ln in text[m.end() : text.rfind("@@end")].splitlines() if ln.strip()]
        return DecodeProbe(
            url, refused=f"request failed: {tail[-1][:200] if tail else 'no output'}"
        )
    tokens, chunks = int(d.group(2)), int(d.group(3))
    if d.group(6) not in (None, "?") and int(d.group(6)) > 1:
        return DecodeProbe(
            url,
            refused=f"another request ran during the measurement ({d.group(6)} running): "
            "figure discarded",
        )
    span = float(d.group(5))
    after_first = tokens - tokens / chunks
    if after_first <= 0 or span <= 0:
        return DecodeProbe(url, refused=f"{tokens} token(s) in {chunks} chunk(s): no decode span")
    tpot = span / after_first
    return DecodeProbe(
        url, tok_s=1 / tpot, tpot_s=tpot, ttft_s=float(d.group(4)), tokens=tokens, pids=pids
    )


def _pids(text: str, first: int) -> tuple[int, ...]:
    found = re.search(r"^@@pids ([\d,]+)$", text, flags=re.M)
    return tuple(int(p) for p in found.group(1).split(",") if p) if found else (first,)


def _ambiguous(line: str) -> str:
    return (
        "several engine API servers of different owners or ports in this network namespace "
        f"({line.split(' ', 1)[1][:300]}): which one is the engine is not proven"
    )


TPOT_NAMES = (
    "vllm:inter_token_latency_seconds",
    "vllm:request_time_per_output_token_seconds",
    "vllm:time_per_output_token_seconds",
    "sglang:inter_token_latency_seconds",
    "sglang:time_per_output_token_seconds",
)
RUNNING = ("vllm:num_requests_running", "sglang:num_running_reqs")
WAITING = ("vllm:num_requests_waiting", "sglang:num_queue_reqs")
FINISHED = ("vllm:e2e_request_latency_seconds", "sglang:e2e_request_latency_seconds")
"""Histograms observed once per finished request: their count is the requests finished since the engine started."""


@dataclass(frozen=True, slots=True)
class Histogram:
    """One Prometheus histogram of the engine's /metrics: sum, count and buckets."""

    name: str
    total: float
    count: float
    buckets: tuple[tuple[float, float], ...] = ()
    """(upper bound, cumulative count), summed over label sets (data-parallel engines), sorted."""

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count > 0 else None

    def at(self, le: float) -> float | None:
        return next((c for b, c in self.buckets if b == le), None)


@dataclass(frozen=True, slots=True)
class EngineMetrics:
    """The serving engine's Prometheus /metrics: the values and histograms the decode-speed checks read."""

    engine: str | None
    """"vllm" or "sglang" (by the metric prefix)."""
    url: str = ""
    tpot: Histogram | None = None
    running: float | None = None
    waiting: float | None = None
    iteration_tokens: Histogram | None = None
    accept_len: float | None = None
    generation_tokens: float | None = None
    samples: int = 0
    finished: float | None = None
    """Requests finished since the engine started (the count of its end-to-end latency histogram)."""
    finished_name: str = ""
    pids: tuple[int, ...] = ()
    """The engine's processes the page was read from (`@@pids`): the roofline checks the python probe's engine
    is one of them."""


@dataclass(frozen=True, slots=True)
class SingleStream:
    """The measured single-stream decode speed, with where it came from."""

    tok_s: float | None
    provenance: str
    accept_len: float | None = None


@dataclass
class _Acc:
    """What parse_prometheus gathers while it reads the samples."""

    values: dict[str, float] = field(default_factory=dict)
    hist: dict[str, dict[str, float]] = field(default_factory=dict)
    buckets: dict[str, dict[float, float]] = field(default_factory=dict)
    samples: dict[str, int] = field(default_factory=dict)
    """Label sets seen per name: a per-rank gauge (an average) is averaged over them, counters are summed."""


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
_LE = re.compile(r'le="([^"]+)"')


@parse_once
def parse_prometheus(text: str) -> EngineMetrics:
    """A Prometheus text page -> the figures above (label sets summed: one value per metric)."""
    acc = _Acc()
    n = 0
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            continue
        name, labels, raw = m.group(1), m.group(2) or "", m.group(3)
        try:
            value = float(raw)
        except ValueError:
            continue
        if math.isnan(value):
            continue
        n += 1
        if name.endswith("_bucket"):
            le = _LE.search(labels)
            if le:
                bound = math.inf if le.group(1) == "+Inf" else float(le.group(1))
                b = acc.buckets.setdefault(name[: -len("_bucket")], {})
                b[bound] = b.get(bound, 0.0) + value
            continue
        for suffix in ("_sum", "_count"):
            if name.endswith(suffix):
                h = acc.hist.setdefault(name[: -len(suffix)], {})
                h[suffix] = h.get(suffix, 0.0) + value
        acc.values[name] = acc.values.get(name, 0.0) + value
        acc.samples[name] = acc.samples.get(name, 0) + 1
    engine = (
        "vllm"
        if any(k.startswith("vllm:") for k in acc.values)
        else "sglang"
        if any(k.startswith("sglang:") for k in acc.values)
        else None
    )

    def hist(name: str) -> Histogram | None:
        h = acc.hist.get(name, {})
        buckets = acc.buckets.get(name, {})
        if "_count" not in h and not buckets:
            return None
        count = h.get("_count", buckets.get(math.inf, 0.0))  # a page cut short keeps its buckets
        return Histogram(name, h.get("_sum", 0.0), count, tuple(sorted(buckets.items())))

    tpot = next((t for n_ in TPOT_NAMES if (t := hist(n_)) is not None and t.count > 0), None)
    tpot = tpot or next((t for n_ in TPOT_NAMES if (t := hist(n_)) is not None), None)

    def first(names: tuple[str, ...]) -> float | None:
        return next((acc.values[k] for k in names if k in acc.values), None)

    done = next((f for n_ in FINISHED if (f := hist(n_)) is not None), None)
    accept = None
    drafts = acc.values.get("vllm:spec_decode_num_drafts_total")
    accepted = acc.values.get("vllm:spec_decode_num_accepted_tokens_total")
    if drafts and accepted is not None:
        accept = 1 + accepted / drafts
    elif acc.values.get("sglang:spec_accept_length"):
        # a per-rank average (data-parallel SGLang exports one per rank): the mean, not the sum
        accept = acc.values["sglang:spec_accept_length"] / acc.samples["sglang:spec_accept_length"]
    return EngineMetrics(
        engine=engine,
        tpot=tpot,
        running=first(RUNNING),
        waiting=first(WAITING),
        iteration_tokens=hist("vllm:iteration_tokens_total"),
        accept_len=accept,
        generation_tokens=first(("vllm:generation_tokens_total", "sglang:generation_tokens_total")),
        samples=n,
        finished=done.count if done is not None else None,
        finished_name=done.name if done is not None else "",
    )


@parse_once
def parse_engine_metrics(text: str) -> EngineMetrics | None:
    """Output of `ENGINE_METRICS_SHELL` -> the page's figures; None when no engine runs (`@@none`).

    Raises ParseError when the fetch failed (exit status named) or the page holds no vLLM/SGLang metric.
    """
    first = text.strip().split("\n", 1)[0].strip()
    if first == "@@none":
        return None
    if first.startswith("@@ambiguous "):
        raise ParseError(f"engine metrics: {_ambiguous(first)}: not read")
    m = re.search(r"^@@pid (\d+) (\S+)$", text, flags=re.M)
    if not m or "@@end" not in text:
        raise ParseError("engine metrics: output incomplete (no @@pid/@@end section)")
    url = m.group(2)
    pids = _pids(text, int(m.group(1)))
    pids_line = re.search(r"^@@pids ([\d,]+)$", text, flags=re.M)
    start = pids_line.end() if pids_line else m.end()
    body = text[start : text.rfind("@@end")]
    late = re.search(r"^@@late (.+)$", body, flags=re.M)
    if late:
        raise ParseError(f"engine metrics: {url}: {late.group(1).strip()}")
    metrics = parse_prometheus(body)
    if metrics.engine is None:
        tail = [ln.strip() for ln in body.strip().splitlines() if ln.strip()]
        why = tail[-1][:160] if tail else "empty page"
        raise ParseError(
            f"engine metrics: {url} gave no engine metrics ({why}; SGLang needs --enable-metrics)"
        )
    return EngineMetrics(
        engine=metrics.engine,
        url=url,
        tpot=metrics.tpot,
        running=metrics.running,
        waiting=metrics.waiting,
        iteration_tokens=metrics.iteration_tokens,
        accept_len=metrics.accept_len,
        generation_tokens=metrics.generation_tokens,
        samples=metrics.samples,
        finished=metrics.finished,
        finished_name=metrics.finished_name,
        pids=pids,
    )


def single_stream(m: EngineMetrics, log_running: list[int] | None = None) -> SingleStream:
    """Single-stream decode speed from the time-per-output-token histogram, only when the requests it counts ran
    one at a time; otherwise None with the reason (the caller then uses the engine's log).

    Evidence of one at a time, first that holds: the engine has finished one request since it started and
    none runs or waits now (its end-to-end latency histogram counts 1: nothing can have run beside it); vLLM —
    no engine step decoded 2-8 tokens (`vllm:iteration_tokens_total` buckets le=1 and le=8 equal: decode steps
    held one request, prefill steps many tokens); SGLang (no per-step histogram) — every decode line of the
    engine's log window says `#running-req` <= 1. Either way nothing is running or queued right now beyond one
    request. The histogram counts since the engine started.
    """
    h = m.tpot
    if h is None or not h.count:
        return SingleStream(None, "no time-per-output-token histogram samples on the metrics page")
    mean = h.mean or 0.0
    if mean <= 0:
        return SingleStream(None, f"{h.name}: zero mean")
    seen = f"{h.name}: mean {1e3 * mean:.1f} ms per token over {h.count:.0f} observation(s)"
    if (m.running or 0) > 1 or (m.waiting or 0) > 0:
        return SingleStream(
            None,
            f"{seen}, but {m.running or 0:.0f} running / {m.waiting or 0:.0f} waiting requests: "
            "not one at a time",
        )
    if (
        log_running and max(log_running) > 1
    ):  # any evidence of requests side by side refutes the rest
        return SingleStream(
            None, f"{h.name}: the log shows up to {max(log_running)} running requests"
        )
    it = m.iteration_tokens
    if m.finished == 1 and m.running == 0 and not m.waiting:
        proof = (
            f"the engine has finished one request since it started ({m.finished_name}_count 1) and "
            "none runs or waits: nothing ran beside it"
        )
    elif it is not None and it.buckets:
        one, eight = it.at(1.0), it.at(8.0)
        if one is None or eight is None or eight - one > 0:
            return SingleStream(
                None,
                f"{h.name}: vllm:iteration_tokens_total has steps of 2-8 tokens: requests were batched",
            )
        proof = (
            "vllm:iteration_tokens_total shows no step of 2-8 tokens (decode one request at a time)"
        )
    elif log_running:
        proof = f"every one of {len(log_running)} decode log line(s) shows one running request"
    else:
        done = (
            f"{m.finished:.0f} finished requests"
            if m.finished is not None
            else "no finished-request count"
        )
        steps = "no per-step histogram" if it is None else f"{it.name} without its buckets"
        return SingleStream(
            None,
            f"{seen}; nothing proves the requests it counts ran one at a time "
            f"({done}, {steps}, no decode log lines)",
        )
    return SingleStream(
        1 / mean,
        f"{m.url + ': ' if m.url else ''}{h.name} mean {1e3 * mean:.2f} ms over "
        f"{h.count:.0f} observation(s) since the engine started; {proof}",
        m.accept_len,
    )
