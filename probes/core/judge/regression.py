"""The regression.* rows of the catalogue: a pseudo-probe judged against the host's last-known-good baseline.

These checks read no command of their own: `gpuaudit-tui baseline set SNAPSHOT` pins a known-good snapshot per
host, and every later audit of that host is compared with it (snapshots/baseline.py `compare`), fact by fact
from the raw records of both snapshots. The findings belong to the audit's "baseline" result; their text is the
row's own or one of its declared variants (messages as data), like every other check's. They are listed by
`--list-checks` and docs/CHECKS.md through probes/catalogue.py `DERIVED`.
"""

from __future__ import annotations

from gpuaudit.probes.core.judge.checks import Check, Ctx, Message, Owner, Verdict, unknown

COMPARED = (
    "compared with the host's last-known-good baseline snapshot (`gpuaudit-tui baseline set`), fact by "
    "fact from the records of both audits"
)


def _compared_elsewhere(ctx: Ctx) -> Verdict:
    """Never called by the probes' framework: the baseline comparison (snapshots/baseline.py) judges these."""
    return unknown(COMPARED)


_WHY_CHANGE = (
    "A version or setting change the operator may not have noticed is the commonest cause of a decode "
    "regression (driver upgrade -28%, engine upgrade -16%, a kernel library 30% slower at batch 1: vLLM and "
    "SGLang issue trackers)."
)
_FIX_CHANGE = (
    "If decode got slower, roll this change back first (or re-pin the baseline with `gpuaudit-tui baseline "
    "set` once the new state is known good)."
)
_UNREAD = Message(
    why="A fact read in only one of the two audits cannot be compared.",
    fix="Audit both the same way (same targets, same rights).",
)


def _change(fid: str, title: str, owner: Owner, what: str) -> Check:
    return Check(
        id=fid,
        title=title,
        owner=owner,
        why=_WHY_CHANGE,
        fix=_FIX_CHANGE,
        verdict=_compared_elsewhere,
        expected=f"{what} as at the host's last-known-good baseline",
        no_input=COMPARED,
        variants={"unread": _UNREAD},
    )


DECODE_SPEED = Check(
    id="regression.decode_speed",
    title="Decode speed against the last-known-good baseline",
    owner="engine",
    why=(
        "A single-stream decode speed is the box's end-to-end health figure: a drop beyond run-to-run noise "
        "means something on the decode path changed. Speeds are compared like with like (the engine log's "
        "figure on both sides when the headline figures were measured differently)."
    ),
    fix="Nothing to do while it holds; when it drops, roll back what changed since the baseline first.",
    verdict=_compared_elsewhere,
    expected="within the threshold (default ±5%) of the baseline's single-stream decode speed",
    no_input=COMPARED,
    variants={
        "slower": Message(
            title="Decode speed regressed since the last-known-good baseline",
            fix="Changed since the baseline: {suspects}.",
        ),
        "slower_unexplained": Message(
            title="Decode speed regressed since the last-known-good baseline",
            fix="Nothing the audit compares changed: look at the model, the prompt mix and the GPUs' "
            "clocks and temperatures.",
        ),
        "not_measured": Message(
            why="Single-stream decode is measured from the engine's metrics or log (or --active).",
            fix="Keep the engine's log/metrics readable, or audit with --active on an idle engine.",
        ),
        "methods_differ": Message(
            why="Single-stream decode is measured from the engine's metrics or log (or --active); figures "
            "of different methods differ by method, not by the box (the metrics histogram averages since "
            "the engine started, --active excludes the time to first token).",
            fix="Measure both the same way: re-pin the baseline from an audit measured like this one "
            "(`gpuaudit-tui baseline set`), or audit with the baseline's method.",
        ),
    },
)

CHECKS: tuple[Check, ...] = (
    _change(
        "regression.driver",
        "NVIDIA driver / CUDA changed since baseline",
        "host",
        "driver and CUDA",
    ),
    _change("regression.kernel", "Kernel changed since baseline", "host", "the kernel release"),
    _change("regression.bios", "BIOS / VBIOS changed since baseline", "bios", "BIOS and VBIOS"),
    _change(
        "regression.engine",
        "Serving engine version changed since baseline",
        "engine",
        "the serving engine's version",
    ),
    _change("regression.torch", "torch changed since baseline", "container", "torch"),
    _change("regression.nccl", "NCCL changed since baseline", "container", "NCCL"),
    _change("regression.triton", "Triton changed since baseline", "container", "Triton"),
    _change(
        "regression.knobs",
        "Host or engine knobs changed since baseline",
        "host",
        "CPU scaling, NUMA balancing, IOMMU, ACS, MaxReadReq, persistence, MIG, GPU links and the engine's "
        "arguments",
    ),
    DECODE_SPEED,
)
BY_ID: dict[str, Check] = {c.id: c for c in CHECKS}
