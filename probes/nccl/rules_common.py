"""Helpers shared by the NCCL rules: fact picking, engine lookup, interconnect, IOMMU/ACS gate."""

from __future__ import annotations

import re
from typing import Any

from gpuaudit.probes.core.models import Role
from gpuaudit.probes.core.parsers.engine import engine_listing_problem
from gpuaudit.probes.core.spec import FactsByTarget
from gpuaudit.probes.nccl.facts import NcclFacts


def _pick(facts: FactsByTarget, attr: str, prefer: tuple[Role, ...] = ("host", "container")) -> tuple[Role | None, Any]:
    """First target (in `prefer` order) whose fact is set."""
    for role in prefer:
        f = facts.get(role)
        if f is not None and getattr(f, attr):
            return role, getattr(f, attr)
    return None, None


def _problem(facts: FactsByTarget, cid: str, prefer: tuple[Role, ...] = ("host", "container")) -> str:
    for role in prefer:
        f = facts.get(role)
        if f is not None and cid in f.problems:
            return f"{role}: {f.problems[cid]}"
    return "not collected"


def _engine(facts: FactsByTarget) -> tuple[Role | None, NcclFacts | None]:
    """The target whose engine discovery found the serving engine (container first)."""
    for role in ("container", "host"):
        f = facts.get(role)
        if f is not None and (f.engine_kind or f.engine_env_readable is not None):
            return role, f
    return None, None


def _engine_unlisted(facts: FactsByTarget) -> str | None:
    """Why "no serving engine" cannot be claimed (a target's engine_procs failed and none found an engine), else None."""
    return engine_listing_problem({r: f.problems.get("engine_procs") for r, f in facts.items()},
                                  found=any(f.engine_kind for f in facts.values()))


def _interconnect(topo: dict[str, str]) -> str:
    if topo and all(v.startswith("NV") for v in topo.values()):
        return "nvlink"
    if any(v.startswith("NV") for v in topo.values()):
        return "mixed"
    return "pcie"


def _iommu_translated(f: NcclFacts) -> bool | None:
    """True when DMA is translated by the IOMMU (not passthrough), False when off/pt, None when unknown."""
    if f.cmdline is not None and re.search(r"\biommu=pt\b|\b(?:amd_iommu|intel_iommu)=off\b|\biommu=off\b", f.cmdline):
        return False
    if f.iommu_groups is None:
        return None
    if f.iommu_groups == 0:
        return False
    if f.iommu_types:
        return any(t.startswith("DMA") for t in f.iommu_types)
    return True


def _gate(facts: FactsByTarget) -> tuple[str, str]:
    """The `nccl.iommu_acs_gate` verdict (severity, observed) shared with `nccl.env_vs_topology`."""
    host = facts.get("host")
    if host is None:
        return "unknown", "host not audited"
    translated = _iommu_translated(host)
    _er, eng = _engine(facts)
    p2p_off = bool(eng and eng.engine_env.get("NCCL_P2P_DISABLE") == "1")
    tp = (eng.engine_tp if eng else None) or 0
    redirect = host.acs_redirect
    if translated is False:
        return "ok", "IOMMU off or passthrough: GPU peer traffic is not translated"
    if translated is None:
        return "unknown", f"IOMMU state unreadable ({_problem(facts, 'sys_iommu_groups', ('host',))})"
    types = ", ".join(f"{k}×{v}" for k, v in host.iommu_types.items()) or "types unread"
    base = f"IOMMU translating ({host.iommu_groups} groups, {types})"
    if redirect is None:
        return "warning", f"{base}; ACS state unknown ({_problem(facts, 'lspci_acsctl', ('host',))})"
    if redirect and not p2p_off and tp > 1:
        return "critical", f"{base}; ACS redirect on {len(redirect)} function(s) ({', '.join(redirect[:4])}); engine TP={tp} with P2P allowed"
    if redirect:
        return "warning", f"{base}; ACS redirect on {len(redirect)} function(s); P2P {'disabled' if p2p_off else 'allowed'}, TP={tp or 'n/a'}"
    return "warning", f"{base}; no ACS redirect found"
