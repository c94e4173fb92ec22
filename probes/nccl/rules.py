"""judge(): every NCCL rule in display order."""

from __future__ import annotations

from collections.abc import Iterator

from gpuaudit.probes.core.models import Finding
from gpuaudit.probes.core.spec import FactsByTarget
from gpuaudit.probes.nccl.rules_active import _allreduce
from gpuaudit.probes.nccl.rules_engine import _amd_dual_socket, _custom_allreduce, _env_overrides, _library_in_use
from gpuaudit.probes.nccl.rules_topology import (
    _env_vs_topology,
    _iommu_acs_gate,
    _p2p_matrix,
    _topology_class,
    _transport_observed,
)


def judge(facts: FactsByTarget) -> Iterator[Finding]:
    yield from _p2p_matrix(facts)
    yield from _topology_class(facts)
    yield from _env_overrides(facts)
    yield from _library_in_use(facts)
    yield from _custom_allreduce(facts)
    yield from _amd_dual_socket(facts)
    yield from _iommu_acs_gate(facts)
    yield from _env_vs_topology(facts)
    yield from _transport_observed(facts)
    yield from _allreduce(facts)
