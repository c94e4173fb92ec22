"""Peak memory bandwidth per GPU model, each row with its source (vendor datasheets).

Matched against nvidia-smi's product name (`NVIDIA H100 80GB HBM3`, `NVIDIA RTX PRO 6000 Blackwell Server
Edition`, ...). Most specific patterns first; an unknown name is unknown, never a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GpuSpec:
    """One row of the GPU table: peak and measured memory bandwidth, with their sources."""

    pattern: str
    """Regular expression over the nvidia-smi product name (case-insensitive)."""
    model: str
    bandwidth_gbs: float
    """Peak memory bandwidth, GB/s (10^9 bytes per second)."""
    source: str
    measured_gbs: float | None = None
    """A published MEASURED memory-bandwidth figure (the realistic η), GB/s; None = none published."""
    measured_source: str = ""


# NVIDIA DCGM diag SKU table (DCGM 4.5+, nvvs/diag-skus.yaml.in): memory-bandwidth floors set at 0.75 x what
# `dcgmproftester -t 1005` measured on the SKU (ROOFLINE.md §4.5).
_DCGM = (
    "NVIDIA DCGM diag SKU table (nvvs/diag-skus.yaml.in, DCGM 4.5+), memory_bandwidth floor for device {dev}: "
    "{mbs} MB/s = η {eta:.2f} of the spec"
)

GPU_TABLE: tuple[GpuSpec, ...] = (
    GpuSpec(
        r"RTX PRO 6000 Blackwell.*Max-Q",
        "RTX PRO 6000 Blackwell Max-Q",
        1792,
        "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition datasheet: 96 GB GDDR7, 1792 GB/s",
        1530,
        _DCGM.format(dev="2bb4 (Max-Q)", mbs="1,530,000", eta=1530 / 1792),
    ),
    GpuSpec(
        r"RTX PRO 6000 Blackwell",
        "RTX PRO 6000 Blackwell",
        1792,
        "NVIDIA RTX PRO 6000 Blackwell Server/Workstation Edition datasheets: 96 GB GDDR7 512-bit, 1792 GB/s",
        1480,
        _DCGM.format(dev="2bb5 (Server Edition)", mbs="1,480,000", eta=1480 / 1792),
    ),
    GpuSpec(
        r"GB200", "GB200 (per B200 GPU)", 8000, "NVIDIA GB200 NVL72 datasheet: 8 TB/s HBM3e per GPU"
    ),
    GpuSpec(r"\bB200\b", "B200", 8000, "NVIDIA HGX B200 datasheet: 8 TB/s HBM3e per GPU"),
    GpuSpec(
        r"H200 NVL", "H200 NVL", 4800, "NVIDIA H200 datasheet: H200 NVL 141 GB HBM3e, 4.8 TB/s"
    ),
    GpuSpec(
        r"\bH200\b", "H200 SXM", 4800, "NVIDIA H200 datasheet: H200 SXM 141 GB HBM3e, 4.8 TB/s"
    ),
    GpuSpec(r"H100 NVL", "H100 NVL", 3900, "NVIDIA H100 datasheet: H100 NVL 94 GB HBM3, 3.9 TB/s"),
    GpuSpec(
        r"H100.*PCIe", "H100 PCIe", 2000, "NVIDIA H100 datasheet: H100 PCIe 80 GB HBM2e, 2.0 TB/s"
    ),
    GpuSpec(
        r"H100.*(HBM3|SXM)",
        "H100 SXM",
        3350,
        "NVIDIA H100 datasheet: H100 SXM 80 GB HBM3, 3.35 TB/s",
    ),
    GpuSpec(
        r"H800.*PCIe", "H800 PCIe", 2000, "NVIDIA H800 PCIe product brief: 80 GB HBM2e, 2.0 TB/s"
    ),
    GpuSpec(
        r"H800", "H800 SXM", 3350, "NVIDIA H800 SXM: 80 GB HBM3, 3.35 TB/s (H100 SXM memory system)"
    ),
    GpuSpec(
        r"A100.*SXM4.*80|A100 80GB SXM",
        "A100 80GB SXM",
        2039,
        "NVIDIA A100 datasheet: 80 GB SXM HBM2e, 2039 GB/s",
    ),
    GpuSpec(
        r"A100.*80GB.*PCIe|A100 80GB PCIe",
        "A100 80GB PCIe",
        1935,
        "NVIDIA A100 datasheet: 80 GB PCIe HBM2e, 1935 GB/s",
    ),
    GpuSpec(
        r"A100.*(SXM4-40|40GB)", "A100 40GB", 1555, "NVIDIA A100 datasheet: 40 GB HBM2, 1555 GB/s"
    ),
    GpuSpec(r"\bL40S\b", "L40S", 864, "NVIDIA L40S datasheet: 48 GB GDDR6, 864 GB/s"),
    GpuSpec(r"\bL40\b", "L40", 864, "NVIDIA L40 datasheet: 48 GB GDDR6, 864 GB/s"),
    GpuSpec(r"\bL4\b", "L4", 300, "NVIDIA L4 datasheet: 24 GB GDDR6, 300 GB/s"),
    GpuSpec(r"\bA10\b", "A10", 600, "NVIDIA A10 datasheet: 24 GB GDDR6, 600 GB/s"),
    GpuSpec(r"\bA40\b", "A40", 696, "NVIDIA A40 datasheet: 48 GB GDDR6, 696 GB/s"),
    GpuSpec(
        r"RTX 6000 Ada", "RTX 6000 Ada", 960, "NVIDIA RTX 6000 Ada datasheet: 48 GB GDDR6, 960 GB/s"
    ),
    GpuSpec(
        r"RTX 5090",
        "GeForce RTX 5090",
        1792,
        "NVIDIA GeForce RTX 5090 specifications: 32 GB GDDR7 512-bit, 1792 GB/s",
    ),
    GpuSpec(
        r"RTX 4090",
        "GeForce RTX 4090",
        1008,
        "NVIDIA GeForce RTX 4090 specifications: 24 GB GDDR6X, 1008 GB/s",
    ),
    GpuSpec(
        r"RTX 3090",
        "GeForce RTX 3090",
        936,
        "NVIDIA GeForce RTX 3090 specifications: 24 GB GDDR6X, 936 GB/s",
    ),
    GpuSpec(r"V100.*(SXM2|32GB)", "V100 SXM2", 900, "NVIDIA V100 datasheet: SXM2 HBM2, 900 GB/s"),
    GpuSpec(r"\bT4\b", "T4", 320, "NVIDIA T4 datasheet: 16 GB GDDR6, 320 GB/s"),
)


def gpu_spec(name: str) -> GpuSpec | None:
    """The table row for an nvidia-smi product name, or None (unknown GPU: no bandwidth is guessed)."""
    for spec in GPU_TABLE:
        if re.search(spec.pattern, name, flags=re.I):
            return spec
    return None
