"""A last-known-good baseline per host, and what changed since it.

`gpuaudit-tui baseline set SNAPSHOT` pins a good snapshot for its host (a copy under the user data dir,
`baselines/<host>.json`; `$GPUAUDIT_BASELINE_DIR` overrides). Every later audit of that host is compared with it
(`apply_baseline`): driver, CUDA, kernel, BIOS/VBIOS, engine / torch / NCCL / Triton versions, host and engine
knobs, and the measured single-stream decode speed (± DEFAULT_THRESHOLD). What changed becomes `regression.*`
findings of a "baseline" probe result, so --json, --plan, --health, --prom and the TUI carry them like any other.

Severity: a decode speed below the baseline by more than the threshold is critical (a speed regression fails
--health); every change beside it is a warning (the suspects, named with their old and new values); a change while
the speed held (or rose) is info; a change when either side's speed was not measured is a warning (nothing says
it is harmless); an unchanged fact is ok; a fact read on one side only is unknown. The facts come from raw
records by stable command ids (probes/core/fleet/peers.py readers), so snapshots of older releases compare too.
"""

from __future__ import annotations

import json
import os
import re
import socket
import statistics
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gpuaudit.probes.core.errors import ParseError, SnapshotError
from gpuaudit.probes.core.fleet.peers import CONTAINER_FACTS, FACTS, usable_records
from gpuaudit.probes.core.judge.checks import (
    Verdict,
    critical,
    info,
    ok,
    render,
    unknown,
    warning,
)
from gpuaudit.probes.core.judge.regression import BY_ID as ROWS
from gpuaudit.probes.core.models import AuditRun, Finding, ProbeResult, Severity
from gpuaudit.probes.core.parsers.engine import (
    parse_engine_logs,
    parse_throughput_lines,
    serving_engine,
)
from gpuaudit.snapshots import store
from gpuaudit.snapshots.schema import Snapshot

ENV_DIR = "GPUAUDIT_BASELINE_DIR"
DEFAULT_THRESHOLD = 0.05
"""±5 %: AMD's cluster validation suite flags a change of more than 5 % from the previous run."""
PROBE_ID = "baseline"

# regression id -> the facts it compares. The rows (title, owner, why, fix, variants) are the catalogue's:
# probes/core/judge/regression.py, listed by --list-checks and docs/CHECKS.md.
GROUPS: dict[str, tuple[str, ...]] = {
    "regression.driver": ("driver", "cuda"),
    "regression.kernel": ("kernel",),
    "regression.bios": ("bios", "vbios"),
    "regression.engine": ("container.engine", "engine"),
    "regression.torch": ("container.torch",),
    "regression.nccl": ("container.nccl",),
    "regression.triton": ("triton",),
    "regression.knobs": (
        "scaling_driver",
        "governor",
        "numa_balancing",
        "iommu_mode",
        "acs",
        "max_read_req",
        "persistence",
        "mig_mode",
        "gpu_link",
        "engine.args",
    ),
}
SPEED_ID = "regression.decode_speed"
ENGINE_KNOBS = (
    "kind",
    "tp",
    "pp",
    "dp",
    "ep",
    "dp_attention",
    "cuda_graphs_disabled",
    "cuda_graph_max_bs",
    "cuda_graph_mode",
    "attention_backend",
    "moe_backend",
    "custom_allreduce_disabled",
    "allreduce_flags",
    "model",
    "quantization",
    "kv_cache_dtype",
    "speculative",
    "speculative_steps",
    "speculative_draft_tokens",
)


class BaselineError(ValueError):
    """A baseline that cannot be set or read (one line for the CLI)."""


# ------------------------------------------------------------------------------------------ the store


def baseline_dir() -> Path:
    env = os.environ.get(ENV_DIR)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return platformdirs.user_data_path("gpuaudit-tui") / "baselines"


def host_key(snapshot: Snapshot | AuditRun) -> str:
    """The host a snapshot audited: its host target's spec ("root@10.0.0.5", "pve-gpu01"); a local audit is this
    machine's name."""
    host = next((t for t in snapshot.targets if t.role == "host"), None)
    if host is None:
        raise BaselineError("the snapshot has no host target")
    spec = host.spec
    if host.kind == "local" or spec == "local":
        spec = f"local-{socket.gethostname()}"
    elif host.kind in ("replay", "directory"):
        spec = host.label or spec
    return spec


def _file(key: str, directory: Path | None = None) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._@-]+", "_", key).strip("._") or "host"
    return (directory or baseline_dir()) / f"{safe[:120]}.json"


def set_baseline(snapshot: Snapshot, directory: Path | None = None) -> tuple[str, Path]:
    """Pin `snapshot` as its host's last-known-good (a private copy, 0600 in a 0700 directory)."""
    key = host_key(snapshot)
    path = _file(key, directory)
    try:
        store.write_atomic(path, snapshot.model_dump_json(indent=1).encode())
    except (OSError, SnapshotError) as exc:
        raise BaselineError(f"cannot write the baseline {path}: {exc}") from None
    return key, path


def load_baseline(key: str, directory: Path | None = None) -> Snapshot | None:
    path = _file(key, directory)
    if not path.exists():
        return None
    try:
        return store.load(path)
    except SnapshotError as exc:
        raise BaselineError(f"baseline unreadable: {exc}") from None


def clear_baseline(key: str, directory: Path | None = None) -> bool:
    path = _file(key, directory)
    if path.exists():
        path.unlink()
        return True
    return False


def list_baselines(directory: Path | None = None) -> list[Path]:
    d = directory or baseline_dir()
    return sorted(d.glob("*.json")) if d.is_dir() else []


# ------------------------------------------------------------------------------------------ the facts


def _pyenv_package(records: Mapping[str, str], name: str) -> str | None:
    found = set()
    for ln in records.get("pyenv", "").splitlines():
        if ln.startswith("{"):
            try:
                doc = json.loads(ln)
            except ValueError:
                continue
            version = (doc.get("packages") or {}).get(name) if isinstance(doc, dict) else None
            if isinstance(version, str):
                found.add(version)
    return ", ".join(sorted(found)) or None


def _engine_args(records: Mapping[str, str]) -> str | None:
    text = records.get("engine_procs")
    if not text:
        return None
    try:
        cfg = serving_engine(text).config  # the one owner-aware choice of the engine
    except ParseError:
        return None
    if cfg is None:
        return None
    parts = []
    for k in ENGINE_KNOBS:
        v = getattr(cfg, k, None)
        if v in (None, False, (), ""):
            continue
        parts.append(f"{k}={' '.join(v) if isinstance(v, tuple) else v}")
    return "; ".join(parts)


def _read(
    table: Mapping[str, Callable[[Mapping[str, str]], str | None]], r: Mapping[str, str]
) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for key, read in table.items():
        try:
            out[key] = read(r)
        except Exception:  # noqa: BLE001 - an odd recording leaves one fact unread
            out[key] = None
    return out


def facts_of(snapshot: Snapshot) -> dict[str, str | None]:
    """Every compared fact of a snapshot, from its raw records."""
    doc = snapshot.model_dump(mode="json")
    host = usable_records(doc, "host")
    roles = {t.role for t in snapshot.targets}
    container = usable_records(doc, "container") if "container" in roles else {}
    facts = _read(FACTS, host)
    facts.update(_read(CONTAINER_FACTS, container) if container else {})
    engine_side = container if container.get("engine_procs") else host
    facts["triton"] = _pyenv_package(container or host, "triton")
    facts["engine.args"] = _engine_args(engine_side) or _engine_args(host)
    return facts


METHODS = {
    "active": "--active decode probe",
    "metrics": "engine metrics histogram",
    "log": "engine log",
}


def method_of(source: str | None) -> str | None:
    """How a roofline's measured speed was obtained, from its provenance (older snapshots included):
    "active" (one streamed request, time to first token excluded), "metrics" (the engine's time-per-output-token
    histogram since it started), "log" (median of single-stream decode log lines); None when not recorded."""
    if not source:
        return None
    if source.startswith("--active"):
        return "active"
    if source.startswith("engine metrics"):
        return "metrics"
    if "engine_logs" in source or "log line" in source:
        return "log"
    return None


def log_speed(snapshot: Snapshot) -> float | None:
    """The engine log's single-stream figure (median of decode lines with one running request), recomputed from
    the snapshot's own engine_logs record on the engine's side: the method every audit can compare."""
    doc = snapshot.model_dump(mode="json")
    for role in ("container", "host"):
        text = usable_records(doc, role).get("engine_logs")
        if not text:
            continue
        try:
            samples = [
                s
                for lg in parse_engine_logs(text)
                for s in parse_throughput_lines(lg.throughput_lines)
            ]
        except ParseError:
            continue
        single = [s.tok_s for s in samples if s.running == 1]
        if single:
            return float(statistics.median(single))
    return None


def measured_speed(snapshot: Snapshot) -> tuple[float | None, str | None]:
    roof = snapshot.roofline or {}
    value = roof.get("measured_tok_s")
    return (
        (float(value), roof.get("measured_source"))
        if isinstance(value, (int, float))
        else (
            None,
            None,
        )
    )


# ------------------------------------------------------------------------------------------ the comparison


def _finding(fid: str, v: Verdict) -> Finding:
    """A regression finding: its catalogue row's text, or the declared variant the comparison picked."""
    row = ROWS[fid]
    title, why, fix = render(row, v)
    return Finding(
        id=fid,
        severity=Severity(v.severity),
        probe=PROBE_ID,
        owner=row.owner,
        targets=["host"],
        title=title,
        observed=v.observed,
        expected=v.expected or row.expected,
        why=why,
        fix=fix,
    )


def compare(
    baseline: Snapshot, current: Snapshot, threshold: float = DEFAULT_THRESHOLD
) -> list[Finding]:
    """The regression.* findings of `current` against its host's last-known-good `baseline`."""
    base_f, cur_f = facts_of(baseline), facts_of(current)
    base_v, base_src = measured_speed(baseline)
    cur_v, cur_src = measured_speed(current)
    base_m, cur_m = method_of(base_src), method_of(cur_src)
    mismatch = None
    if base_v and cur_v and base_m != cur_m:
        # like with like: the engine log's figure is recomputable on both sides; else the speeds are not compared
        base_log, cur_log = log_speed(baseline), log_speed(current)
        methods = (
            f"now by the {METHODS.get(cur_m or '', 'an unrecorded method')}, at the baseline by the "
            f"{METHODS.get(base_m or '', 'an unrecorded method')}"
        )
        if base_log and cur_log:
            base_v, cur_v = base_log, cur_log
            base_src = cur_src = (
                "engine log (single-stream decode lines), compared like with like: " + methods
            )
        else:
            mismatch = (
                f"decode {cur_v:.1f} tok/s vs {base_v:.1f} at the baseline, measured {methods}: "
                "different methods are not compared"
            )
            base_v = cur_v = None
    when = baseline.created_at.strftime("%Y-%m-%d %H:%M UTC") if baseline.created_at else "?"
    name = f"baseline {baseline.name or '(unnamed)'} of {when}"
    ratio = cur_v / base_v if base_v and cur_v else None
    slower = ratio is not None and ratio < 1 - threshold
    held = ratio is not None and not slower
    speed_text = (
        f"decode {cur_v:.1f} tok/s vs {base_v:.1f} at the baseline ({100 * (ratio - 1):+.1f}%)"
        if ratio is not None
        else "decode speed not measured on both sides"
    )
    out: list[Finding] = []
    for fid, keys in GROUPS.items():
        changed, unread, same = [], [], []
        for k in keys:
            a, b = base_f.get(k), cur_f.get(k)
            if a is None and b is None:
                continue
            if a is None or b is None:
                unread.append(f"{k}: {'not read at the baseline' if a is None else 'not read now'}")
            elif a != b:
                changed.append(f"{k}: {a} -> {b}")
            else:
                same.append(f"{k} {b}")
        if changed:
            observed = "; ".join(changed) + f" ({speed_text})"
            expected = f"as at the {name}: " + "; ".join(c.split(" -> ")[0] for c in changed)
            verdict = info(observed, expected) if held else warning(observed, expected)
            out.append(_finding(fid, verdict))
        elif unread:
            out.append(_finding(fid, unknown("; ".join(unread), name, variant="unread")))
        elif same:
            out.append(_finding(fid, ok("; ".join(same), f"as at the {name}")))
    within = f"within ±{100 * threshold:.0f}%"
    if ratio is None:
        observed = mismatch or (
            "now: "
            + (f"{cur_v:.1f} tok/s" if cur_v else "not measured")
            + "; baseline: "
            + (f"{base_v:.1f} tok/s" if base_v else "not measured")
        )
        variant = "methods_differ" if mismatch else "not_measured"
        out.append(
            _finding(SPEED_ID, unknown(observed, f"{within} of the {name}", variant=variant))
        )
    else:
        observed = f"{speed_text}; now: {cur_src or 'source not recorded'}"
        expected = f"{within} of {base_v:.1f} tok/s ({name}: {base_src or 'source not recorded'})"
        suspects = [f.id for f in out if f.severity in (Severity.WARNING, Severity.INFO)]
        if slower and suspects:
            verdict = critical(observed, expected, variant="slower", suspects=", ".join(suspects))
        elif slower:
            verdict = critical(observed, expected, variant="slower_unexplained")
        elif ratio <= 1 + threshold:
            verdict = ok(observed, expected)
        else:
            verdict = info(observed, expected)
        out.append(_finding(SPEED_ID, verdict))
    return out


def apply_baseline(
    run: AuditRun,
    *,
    directory: Path | None = None,
    threshold: float = DEFAULT_THRESHOLD,
) -> AuditRun:
    """`run` with a "baseline" probe result holding the regression.* findings when its host has a baseline."""
    if any(p.probe_id == PROBE_ID for p in run.probes):
        return run
    try:
        key = host_key(run)
        baseline = load_baseline(key, directory)
    except BaselineError as exc:
        return _with(run, [], f"baseline not read: {exc}")
    if baseline is None:
        return run
    current = Snapshot.from_run(run)
    findings = compare(baseline, current, threshold)
    bad = sum(1 for f in findings if f.severity.rank >= Severity.WARNING.rank)
    speed, _ = measured_speed(baseline)
    facts = {
        "baseline": baseline.name,
        "baseline_created_at": baseline.created_at.isoformat() if baseline.created_at else None,
        "baseline_tok_s": speed,
        "threshold": threshold,
    }
    return _with(
        run,
        findings,
        f"{key}: {bad} change(s) since the baseline of {baseline.created_at:%Y-%m-%d}",
        facts,
    )


def _with(
    run: AuditRun, findings: list[Finding], summary: str, facts: dict[str, Any] | None = None
) -> AuditRun:
    result = ProbeResult(
        probe_id=PROBE_ID,
        title="Last-known-good baseline",
        status="done",
        facts={"host": facts or {}},
        findings=findings,
        summary=summary,
    )
    return run.model_copy(update={"probes": [*run.probes, result]})


def parse_threshold(text: Any) -> float:
    """ "5", "5%" or "0.05" -> 0.05."""
    s = str(text).strip().rstrip("%")
    value = float(s)
    return value / 100 if value >= 1 or str(text).strip().endswith("%") else value
