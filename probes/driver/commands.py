"""The driver probe's id and the read-only commands it declares."""

from __future__ import annotations

from probes.core.models import Role
from probes.core.spec import Command

PROBE_ID = "driver"
BOTH: frozenset[Role] = frozenset({"host", "container"})
HOST: frozenset[Role] = frozenset({"host"})

QUERY_FIELDS = ("index", "name", "pci.bus_id", "compute_cap", "driver_version", "persistence_mode", "compute_mode",
                "mig.mode.current", "ecc.mode.current", "ecc.errors.uncorrected.volatile.total",
                "remapped_rows.pending", "remapped_rows.failure")

COMMANDS = (
    Command("proc_driver_version", "cat /proc/driver/nvidia/version", on=BOTH,
            description="loaded kernel module version and flavour (the host's, even inside a container)"),
    Command("smi_table", "nvidia-smi", on=BOTH, description="header versions (max CUDA) and error banners"),
    Command("smi_query_driver", f"nvidia-smi --query-gpu={','.join(QUERY_FIELDS)} --format=csv,noheader,nounits",
            on=BOTH, description="per-GPU driver state"),
    Command("modinfo_nvidia", "modinfo nvidia", on=HOST, description="on-disk module for the running kernel"),
    Command("uname_r", "uname -r", on=BOTH),
    Command("dkms_status", "dkms status", on=HOST),
    Command("dmesg_nvrm", "dmesg | grep -E 'NVRM|nvidia' || test $? -eq 1", on=HOST, needs_root=True,
            description="Xid events and driver failures since boot (grep exit 1 = no match)"),
    Command("persistenced_active", "systemctl is-active nvidia-persistenced", on=HOST),
    Command("nvidia_modprobe_opts",
            "grep -rhE '^[[:space:]]*options[[:space:]]+nvidia' /etc/mod*.d/ || test $? -eq 1", on=HOST),
    Command("nvidia_lib_files",
            "find /usr/lib /usr/lib64 /usr/local -maxdepth 4 \\( -name 'libcuda.so.*' -o -name 'libnvidia-ml.so.*' \\) "
            "2>/dev/null; true", on=BOTH, description="versioned user-space driver libraries (incl. cuda compat)"),
    Command("nvcc_version", "nvcc --version", on=frozenset[Role]({"container"})),
)
