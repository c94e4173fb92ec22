"""Pure parsers of the python probe's own outputs (GPU list, JIT cache listing) and the driver -> CUDA table."""

from __future__ import annotations

import re
from typing import Any

from gpuaudit.probes.core.parsers.nvidia_smi import parse_query_gpu_csv
from gpuaudit.probes.core.parsing import parse_once
from gpuaudit.probes.core.sources import SOURCES
from gpuaudit.probes.python.facts import JitDir

GPU_SOURCE = "smi_query_driver"
"""The driver probe's per-GPU line (it holds name, compute_cap, driver_version): read once, not a second query."""
GPU_FIELDS = (
    tuple(m.group(1).split(","))
    if (m := re.search(r"--query-gpu=(\S+)", SOURCES[GPU_SOURCE].shell))
    else ()
)

# Newest CUDA each driver branch supports (nvidia-smi's "CUDA Version"; CUDA release notes, table 3).
_DRIVER_CUDA = (
    (590, (13, 1)),
    (580, (13, 0)),
    (575, (12, 9)),
    (570, (12, 8)),
    (565, (12, 7)),
    (560, (12, 6)),
    (555, (12, 5)),
    (550, (12, 4)),
    (545, (12, 3)),
    (535, (12, 2)),
    (530, (12, 1)),
    (525, (12, 0)),
    (520, (11, 8)),
    (515, (11, 7)),
    (510, (11, 6)),
    (470, (11, 4)),
)


@parse_once
def parse_gpu_cc(text: str) -> list[tuple[str, str | None, str | None]]:
    """`smi_query_driver` (`nvidia-smi --query-gpu=index,name,pci.bus_id,compute_cap,driver_version,...`) -> rows.

        0, NVIDIA RTX PRO 6000 Blackwell Server Edition, 00000000:01:00.0, 12.0, 590.48.01, Enabled, ...
    -> [("NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0", "590.48.01")]
    Raises ParseError on an nvidia-smi error banner or a row of the wrong width.
    """
    rows = []
    for r in parse_query_gpu_csv(text, GPU_FIELDS):
        cc, drv = r.get("compute_cap") or "", r.get("driver_version") or ""
        rows.append(
            (
                r.get("name") or "?",
                cc if re.fullmatch(r"\d+\.\d+", cc) else None,
                drv if re.match(r"\d+\.", drv) else None,
            )
        )
    return rows


@parse_once
def parse_jit_dirs(text: str) -> list[JitDir]:
    """Output of the `jit_cache_dirs` source -> existing cache folders (illustrative sample):

    @@dir /root/.cache/flashinfer
    @@fs zfs
    @@writable
    0.5.3
    @@done
    """
    out: list[JitDir] = []
    cur: dict[str, Any] | None = None
    for ln in text.splitlines():
        if ln.startswith("@@dir "):
            if cur:
                out.append(JitDir(**cur))
            cur = {"path": ln[6:].strip(), "entries": []}
        elif cur is None or ln == "@@done":
            continue
        elif ln.startswith("@@fs"):
            cur["fs"] = ln[4:].strip() or None
        elif ln == "@@writable":
            cur["writable"] = True
        elif ln.strip():
            cur["entries"].append(ln.strip())
    if cur:
        out.append(JitDir(**cur))
    return out


def driver_max_cuda(driver: str | None) -> tuple[int, int] | None:
    """ "590.48.01" -> (13, 1): the newest CUDA the driver branch supports; None when unknown."""
    m = re.match(r"(\d+)\.", driver or "")
    if not m:
        return None
    branch = int(m.group(1))
    for b, cuda in _DRIVER_CUDA:
        if branch >= b:
            return cuda
    return None


def sm_of(cc: str) -> int | None:
    """ "12.0" -> 120; None for anything else."""
    m = re.fullmatch(r"(\d+)\.(\d+)", cc)
    return int(m.group(1)) * 10 + int(m.group(2)) if m else None


def median(values: list[float]) -> float | None:
    return sorted(values)[len(values) // 2] if values else None
