"""NVIDIA data center driver branches: designation, end of life, newest CUDA major without forward compatibility.

Data only (the check is probes/driver/lifecycle.py). Dated, with its sources; NOT fetched at run time (the audit
never leaves the targets).

How to update (when NVIDIA publishes a new branch or moves a date):
1. Open the newest "Supported Drivers and CUDA Toolkit Versions" page of the NVIDIA Data Center Drivers guide
   (https://docs.nvidia.com/datacenter/tesla/drivers/ -> the newest version in the version menu; its
   `releases.json` holds the same table) and the forum thread of current releases for the newest new-feature branch.
2. Add or change the row in BRANCHES (a branch that leaves the table is end of life: keep its row with its date).
3. Set AS_OF to the date you read the pages and add the page to SOURCES; run tests/probes/test_driver_lifecycle.py.
"""

from __future__ import annotations

from datetime import date

AS_OF = date(2026, 12, 3)
"""When the sources below were read."""

SOURCES = (
    "https://docs.nvidia.com/datacenter/tesla/drivers/620/supported-drivers-and-cuda-toolkit-versions.html",
    "https://docs.nvidia.com/datacenter/tesla/drivers/615/supported-drivers-and-cuda-toolkit-versions.html",
    "https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html (R580 era)",
    "https://forums.developer.nvidia.com/t/current-graphics-driver-releases/28500 (590.48.01: new feature branch)",
    "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/ (minimum driver per CUDA major)",
)

LTSB, PB, NFB = "long-term support", "production", "new feature"

BRANCHES: dict[int, tuple[str, date | None, int]] = {
    # branch: (designation, end of life (None: none promised), newest CUDA major without the compat package)
    470: (LTSB, date(2024, 7, 31), 11),
    525: (PB, date(2023, 11, 30), 12),
    535: (LTSB, date(2026, 6, 30), 12),
    545: (NFB, None, 12),
    550: (PB, date(2025, 2, 28), 12),
    555: (NFB, None, 12),
    560: (NFB, None, 12),
    565: (NFB, None, 12),
    570: (PB, date(2026, 2, 28), 12),
    575: (NFB, None, 12),
    580: (LTSB, date(2028, 6, 30), 13),
    590: (NFB, None, 13),
    595: (PB, date(2027, 3, 31), 13),
    610: (NFB, date(2026, 8, 31), 13),
    620: (LTSB, date(2029, 9, 30), 13),
}
"""R535/R580/R595/R610 from the 615 page, R580/R595/R620 from the 620 page (R580's EOL moved from August to June
2028 between the two guides; the newer is kept), R570 (February 2026) from the R580-era page, which also lists
R575, R565, R560, R550 and R525 among the end-of-life branches. End of life is the month NVIDIA names; the last
day of that month is used."""

MIN_DRIVER_FOR_CUDA_MAJOR: dict[int, str] = {11: "450.80.02", 12: "525.60.13", 13: "580.65.06"}
"""Linux minimum driver of each CUDA major (CUDA toolkit release notes, table 'CUDA Toolkit and minimum required
driver version for minor version compatibility')."""
