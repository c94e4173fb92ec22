"""bios.row_for's attribute index against the linear scan it replaced (the first matching row of ROWS wins)."""

from __future__ import annotations

import pytest
from gpuaudit.probes.firmware.bios import GENERIC_VENDORS, base_name, row_for
from gpuaudit.probes.firmware.bios_map import ROWS, MapRow

pytestmark = pytest.mark.fast


def linear_row_for(name: str, vendor: str | None) -> MapRow | None:
    """The reference: the scan over ROWS before the index (kept here as the oracle)."""
    for row in ROWS:
        if vendor is not None and row.vendor not in GENERIC_VENDORS and row.vendor != vendor:
            continue
        if row.attribute == name or (
            row.vendor == "supermicro" and base_name(name) == row.attribute
        ):
            return row
    return None


NAMES = sorted(
    {r.attribute for r in ROWS}
    | {f"{r.attribute}_{s}" for r in ROWS for s in ("002A", "00B1", "12", "x02A", "002a")}
    | {"", "_", "Unknown_002A", "NoSuchAttribute"}
)
VENDORS = [None, *sorted({r.vendor for r in ROWS}), "nonesuch"]


@pytest.mark.parametrize("vendor", VENDORS)
def test_index_picks_the_row_the_linear_scan_picks(vendor: str | None) -> None:
    wrong = [n for n in NAMES if row_for(n, vendor) is not linear_row_for(n, vendor)]
    assert not wrong, wrong[:5]


def test_a_supermicro_suffix_reaches_its_row() -> None:
    sm = next(r for r in ROWS if r.vendor == "supermicro")
    assert row_for(sm.attribute + "_002A", "supermicro") is not None
    assert linear_row_for(sm.attribute + "_002A", "supermicro") is not None
