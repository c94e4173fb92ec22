"""What the GPU model and MIG mode say about NVLink: SKU classes, expected links and switches, applicability."""

from __future__ import annotations

import re
from typing import Literal

from gpuaudit.probes.nvlink.facts import NvlinkFacts

SkuClass = Literal["pcie_none", "pcie_bridge", "sxm", "unknown"]

# Links per GPU on the baseboard, and NVSwitch chips per HGX baseboard (PROBES.md §10).
SXM_LINKS = (
    ("B200", 18),
    ("B100", 18),
    ("H200", 18),
    ("H100", 18),
    ("H800", 8),
    ("A100", 12),
    ("A800", 8),
    ("V100", 6),
)
NVSWITCHES = (("A100", 6), ("A800", 6), ("H100", 4), ("H200", 4), ("H800", 4))


SWITCH_BOARD = (
    ("H100 NVSwitch", 4, "HGX H100/H200"),
    ("22a3", 4, "HGX H100/H200"),
    ("A100 NVSwitch", 6, "HGX A100"),
    ("1af1", 6, "HGX A100"),
)
"""NVSwitch model (as lspci names it, or its device id) -> switches on its baseboard."""


def switches_expected(f: NvlinkFacts) -> tuple[int, str] | None:
    """(switch count, board) the listed NVSwitch model implies, when lspci named one generation."""
    found = {
        (n, board)
        for m in f.nvswitch_models
        for key, n, board in SWITCH_BOARD
        if key.lower() in m.lower()
    }
    return next(iter(found)) if len(found) == 1 else None


def sku_class(name: str) -> SkuClass:
    """What NVLink a product name implies: none (PCIe board), optional bridge, baseboard (SXM/HGX), unknown."""
    n = name.upper()
    if re.search(
        r"RTX PRO|GEFORCE|RTX [2-5]0\d0|L40|\bL4\b|L20|\bA10\b|A16|\bA2\b|\bT4\b|RTX \d000 ADA|TITAN",
        n,
    ):
        return "pcie_none"
    if (
        re.search(r"SXM|HBM3|\bB200\b|\bB100\b|GB200|\bH200\b(?! NVL)|H800|\bH20\b", n)
        and "PCIE" not in n
    ):
        return "sxm"
    if re.search(r"PCIE|H100 NVL|H200 NVL|\bA30\b|\bA40\b|RTX A[456]000|QUADRO RTX [68]000", n):
        return "pcie_bridge"
    return "unknown"


def expected_links(name: str) -> int | None:
    n = name.upper()
    return next((k for key, k in SXM_LINKS if key in n), None)


def expected_for(f: NvlinkFacts, index: int) -> int | None:
    """Links GPU `index` should have up: looked up by its GPU index (never its position in a listing that may
    start past GPU 0 or skip a GPU), from the name `nvlink -s` gave it; one model on the board answers for all."""
    name = f.link_names.get(index)
    if name is None and len(set(f.gpu_names)) == 1:
        name = f.gpu_names[0]
    return expected_links(name) if name and sku_class(name) == "sxm" else None


def classes(f: NvlinkFacts) -> set[SkuClass]:
    return {sku_class(n) for n in f.gpu_names}


def describe(f: NvlinkFacts) -> str:
    names = sorted(set(f.gpu_names))
    return f"{len(f.gpu_names)}× {names[0]}" if len(names) == 1 else ", ".join(names)


def active_links(links: list[tuple[int, bool, float | None]]) -> int:
    return sum(1 for _, active, _ in links if active)


def judged_links(f: NvlinkFacts) -> dict[int, list[tuple[int, bool, float | None]]]:
    """The `nvlink -s` listing without the GPUs in MIG mode (nvidia-smi reports no NVLink for those)."""
    mig = set(f.mig_enabled or ())
    return {i: ls for i, ls in f.links.items() if i not in mig}


def active_total(f: NvlinkFacts) -> int:
    return sum(active_links(ls) for ls in judged_links(f).values())


def has_nvlink(f: NvlinkFacts) -> bool | None:
    """NVLink present per nvlink -s or topo; None when neither was readable."""
    if not f.links_read and f.topo_nv_pairs is None:
        return None
    return active_total(f) > 0 or bool(f.topo_nv_pairs)


def is_nvswitch_system(f: NvlinkFacts) -> bool | None:
    """HGX/DGX with NVSwitch: SXM GPUs (more than 4, or NVSwitch bridges seen, or a fabric state reported)."""
    if not f.gpu_names:
        return None
    if "sxm" not in classes(f):
        return False
    fabric_reported = any(state for _, state, _ in f.fabric)
    return bool(f.nvswitch_functions) or fabric_reported or len(f.gpu_names) >= 8


def is_nvl5(f: NvlinkFacts) -> bool:
    return any(re.search(r"\bB200\b|\bB100\b|GB200|B300", n.upper()) for n in f.gpu_names)


def pcie_only_reason(f: NvlinkFacts) -> str | None:
    """Why NVLink does not apply here (a PCIe board), or None when it may."""
    cls = classes(f)
    if cls and cls <= {"pcie_none"}:
        return "PCIe board without NVLink (" + ", ".join(sorted(set(f.gpu_names)))[:80] + ")"
    if cls and cls <= {"pcie_none", "pcie_bridge"} and has_nvlink(f) is False:
        return "PCIe boards without an NVLink bridge installed"
    return None


def mig_reason(f: NvlinkFacts) -> str | None:
    """Why the link checks do not apply: every GPU in MIG mode (nvidia-smi refuses NVLink queries then, and MIG
    instances do no peer-to-peer over NVLink), or None. Judged from MIG mode itself, never from missing links."""
    every = bool(f.mig_enabled) and (
        not f.gpu_names or len(set(f.mig_enabled or ())) >= len(f.gpu_names)
    )
    if f.nvlink_mig_refused or every:
        which = (
            f"GPU {', '.join(map(str, f.mig_enabled))} in MIG mode"
            if f.mig_enabled
            else "GPUs in MIG mode"
        )
        return f"{which}: nvidia-smi does not report NVLink for MIG devices and MIG instances use no NVLink P2P"
    return None


def link_checks_reason(f: NvlinkFacts) -> str | None:
    """Why presence/link/error checks do not apply: a PCIe-only board or MIG mode."""
    return pcie_only_reason(f) or mig_reason(f)
