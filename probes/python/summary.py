"""The python pane's key-facts line."""

from __future__ import annotations

from gpuaudit.probes.core.spec import FactsByTarget


def summarize(facts: FactsByTarget) -> str:
    ordered = [facts[r] for r in ("container", "host") if r in facts]
    parts = []
    if ordered and ordered[0].torch:
        parts.append(f"torch {ordered[0].torch}")
    if (e := next((f for f in ordered if f.engine_kind), None)) is not None:
        parts.append(
            f"{e.engine_kind} TP={e.tp}" + (" eager" if e.cuda_graphs_disabled else " graphs")
        )
    if (g := next((f for f in ordered if f.compute_caps), None)) is not None:
        parts.append("sm_" + "/".join(sorted({c.replace(".", "") for c in g.compute_caps})))
    return " · ".join(parts)
