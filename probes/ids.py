"""The ten probe ids, in the order of the catalogue and the JSON contract, without loading any probe.

`--probes` is validated against this tuple and `--help` lists it; loading the catalogue costs ~0.3-0.5 s, which
the command line's first paint of the TUI must not pay (issue 30). A test holds it equal to
probes/catalogue.py's PROBE_IDS.
"""

from __future__ import annotations

PROBE_IDS: tuple[str, ...] = (
    "firmware",
    "container",
    "driver",
    "kernel",
    "pcie",
    "power",
    "nccl",
    "numa",
    "python",
    "nvlink",
)
