"""nccl-tests `all_reduce_perf` output (owner: the nccl probe).

Handles the current format (`root` column, `#wrong` counts), the old one (no `root`, float `error`
column), multi-process runs, and noise lines (MPI/plugin messages) between the rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.parsing import parse_once


@dataclass(frozen=True, slots=True)
class PerfRow:
    """One message-size row of the all_reduce_perf table."""

    size_b: int
    count: int
    dtype: str
    time_us: float
    algbw: float
    busbw: float
    """Out-of-place bus bandwidth, GB/s."""
    busbw_inplace: float | None
    wrong: str | None
    """`#wrong` count (or the old format's error value) of the out-of-place run."""


@dataclass(frozen=True, slots=True)
class AllReducePerf:
    """An nccl-tests all_reduce_perf run: its GPUs, rows and average bus bandwidth."""

    n_gpus: int | None = None
    ranks: int = 0
    devices: tuple[str, ...] = ()
    rows: tuple[PerfRow, ...] = ()
    avg_busbw: float | None = None
    nccl_version: str | None = None
    out_of_bounds_ok: bool | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def peak_busbw(self) -> float | None:
        return max((r.busbw for r in self.rows), default=None)

    def errors(self) -> int:
        """Rows whose out-of-place check reported wrong values (#wrong > 0 / error > 1e-3)."""
        bad = 0
        for r in self.rows:
            try:
                if r.wrong not in (None, "N/A") and float(r.wrong) > (
                    1e-3 if "e" in r.wrong or "." in r.wrong else 0
                ):
                    bad += 1
            except ValueError:
                continue
        return bad


_NUM = r"[0-9]+(?:\.[0-9]+)?(?:e[-+]?[0-9]+)?"
# size count type redop [root] time algbw busbw wrong time algbw busbw wrong
_ROW = re.compile(
    rf"^\s*(\d+)\s+(\d+)\s+([a-z0-9_]+)\s+([a-z]+)\s+(?:(-?\d+)\s+)?({_NUM})\s+({_NUM})\s+({_NUM})\s+(\S+)"
    rf"(?:\s+({_NUM})\s+({_NUM})\s+({_NUM})\s+(\S+))?\s*$"
)


@parse_once
def parse_all_reduce_perf(text: str) -> AllReducePerf:
    """nccl-tests `all_reduce_perf` stdout -> AllReducePerf.

        # nThread 1 nGpus 2 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 ...
        #  Rank  0 Group  0 Pid  31706 on autodl-container-xxxxx device  0 [0000:b4:00] NVIDIA GeForce RTX 2080 Ti
                   8             2     float     sum      -1    12.25    0.00    0.00      0    12.00    0.00    0.00      0
        # Avg bus bandwidth    : 2.05774
    Raises ParseError when no result row is found.
    """
    n_gpus = None
    devices: list[str] = []
    rows: list[PerfRow] = []
    avg = None
    version = None
    oob = None
    for line in text.splitlines():
        if (m := re.search(r"nGpus\s+(\d+)", line)) and line.lstrip().startswith("#"):
            n_gpus = int(m.group(1))
        elif m := re.match(r"#\s+Rank\s+\d+.*?device\s+\d+\s+\[[^\]]*\]\s+(.*\S)", line):
            devices.append(m.group(1))
        elif m := re.search(r"Avg bus bandwidth\s*:\s*(" + _NUM + ")", line):
            avg = float(m.group(1))
        elif m := re.search(r"NCCL version\s+(\d+\.\d+\.\d+\S*)", line):
            version = m.group(1)
        elif m := re.search(r"Out of bounds values\s*:\s*\d+\s+(OK|FAILED)", line):
            oob = m.group(1) == "OK"
        elif not line.lstrip().startswith("#") and (m := _ROW.match(line)):
            g = m.groups()
            rows.append(
                PerfRow(
                    size_b=int(g[0]),
                    count=int(g[1]),
                    dtype=g[2],
                    time_us=float(g[5]),
                    algbw=float(g[6]),
                    busbw=float(g[7]),
                    wrong=g[8],
                    busbw_inplace=float(g[11]) if g[11] else None,
                )
            )
    if not rows:
        raise ParseError("no all_reduce_perf result rows")
    return AllReducePerf(
        n_gpus=n_gpus,
        ranks=len(devices),
        devices=tuple(devices),
        rows=tuple(rows),
        avg_busbw=avg,
        nccl_version=version,
        out_of_bounds_ok=oob,
    )


def human_size(n: int) -> str:
    """1048576 -> "1M", 8 -> "8B"."""
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div}{unit}"
    return f"{n}B"
