"""Typed facts of the nvlink probe (host; the container reads only its fabric state)."""

from __future__ import annotations

from gpuaudit.probes.core.record import Record

VOLATILE_FACTS = frozenset({"error_counters", "fm_messages"})
"""Counters and the service's last log lines change on an unchanged machine."""


class NvlinkFacts(Record, frozen=True):
    gpu_names: list[str] = []
    links: dict[int, list[tuple[int, bool, float | None]]] = {}
    """GPU index -> (link, active, GB/s) from `nvlink -s`."""
    link_names: dict[int, str] = {}
    """GPU index -> product name as `nvlink -s` lists it (the expected link count is looked up by index)."""
    links_read: bool = False
    """`nvlink -s` listed at least one GPU (an empty output says nothing)."""
    all_inactive_gpus: list[int] = []
    nvlink_mig_refused: bool = False
    """`nvlink -s` answered "Nvlink queries are not supported for Devices in MIG mode"."""
    mig_enabled: list[int] | None = None
    """GPU indexes with MIG mode Enabled (from the driver CSV or the XML); None when neither was read."""
    topo_nv_pairs: int | None = None
    """GPU pairs with an NV# cell in topo -m; None when topo was not readable."""
    fabric: list[tuple[int, str | None, str | None]] = []
    """(index, fabric.state, fabric.status); None values = N/A."""
    fabric_read: bool = False
    fabric_unreadable: list[int] = []
    """GPU indexes whose fabric state nvidia-smi answered with an error token ("[Unknown Error]")."""
    fm_present: bool | None = None
    fm_active: str | None = None
    fm_messages: list[str] = []
    fm_version: str | None = None
    nvswitch_functions: int | None = None
    nvswitch_models: list[str] = []
    """The switch model lspci names for each NVSwitch function ("H100 NVSwitch", or the device id)."""
    ib_umad: bool | None = None
    error_counters: dict[int, dict[int, dict[str, int]]] = {}
    xid74: int | None = None
    smi_error: str | None = None
    problems: dict[str, str] = {}
