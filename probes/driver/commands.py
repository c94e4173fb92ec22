"""The driver probe's id and the read-only commands it declares."""

from __future__ import annotations

from gpuaudit.probes.core.models import Role
from gpuaudit.probes.core.sources import use

PROBE_ID = "driver"
BOTH: frozenset[Role] = frozenset({"host", "container"})
HOST: frozenset[Role] = frozenset({"host"})

QUERY_FIELDS = ("index", "name", "pci.bus_id", "compute_cap", "driver_version", "persistence_mode", "compute_mode",
                "mig.mode.current", "ecc.mode.current", "ecc.errors.uncorrected.volatile.total",
                "remapped_rows.pending", "remapped_rows.failure")

COMMANDS = (
    use('proc_driver_version', 'smi_table', 'smi_query_driver', 'uname_r', 'nvidia_lib_files') +
    use('modinfo_nvidia', 'dkms_status', 'dmesg_nvrm', 'persistenced_active', 'nvidia_modprobe_opts') +
    use('nvcc_version')
)
