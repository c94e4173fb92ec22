"""Typed facts of the NCCL probe: topology, P2P, IOMMU/ACS, engine NCCL setup, active test rows."""

from __future__ import annotations

from gpuaudit.probes.core.record import Record


class NcclFacts(Record, frozen=True):
    gpu_names: list[str] = []
    topo: dict[str, str] | None = None
    """"0-1" -> "SYS" / "NODE" / "PHB" / "PXB" / "PIX" / "NV18" (GPU pairs, i < j); None = not read."""
    gpu_count: int | None = None
    """GPUs in the `topo -m` matrix (1 = no pair to judge)."""
    gpu_numa: list[str] = []
    p2p_read: dict[str, str] | None = None
    p2p_write: dict[str, str] | None = None
    iommu_translated: bool | None = None
    """The IOMMU translates the GPU functions' DMA (combiners.gpu_iommu_translation); None = not known."""
    iommu_detail: str = ""
    """What `iommu_translated` was read from ("GPU functions' domains: identity×16", "kernel command line iommu=pt")."""
    acs_redirect: list[str] | None = None
    """Bridges above the GPUs with ACS request/completion redirect on (combiners.gpu_acs_redirect); None = not known."""
    acs_detail: str = ""
    """How many bridges were judged, or why ACS could not be told."""
    cpu_vendor: str | None = None
    engine_listed: bool = False
    """The process scan (engine_procs) answered: no engine_kind then proves no engine runs here."""
    engine_kind: str | None = None
    engine_tp: int | None = None
    custom_allreduce_disabled: bool | None = None
    allreduce_flags: list[str] = []
    engine_env: dict[str, str] = {}
    engine_env_readable: bool | None = None
    engine_nccl_libs: list[str] = []
    system_nccl: list[str] = []
    torch_nccl: str | None = None
    allreduce: list[dict[str, float]] = []
    """Active test rows: size_b, time_us, busbw (out-of-place)."""
    allreduce_gpus: int | None = None
    allreduce_peak: float | None = None
    allreduce_note: str | None = None
    log_sources: list[str] | None = None
    """Where each engine API server's log was read ("journal sglang.service", "file /var/log/x", "none (pipe:[1])");
    None = not read, [] = no engine running."""
    nccl_channels: list[tuple[int, int, str]] = []
    """(src device, dst device, transport "P2P"/"SHM"/"NET"/...) from NCCL_DEBUG=INFO lines."""
    problems: dict[str, str] = {}


VOLATILE = frozenset({"allreduce", "allreduce_peak", "allreduce_note", "nccl_channels"})
"""Measured or log-derived: differ between two runs on an unchanged machine."""
