"""lspci -vvv / -tv parsers over every real corpus sample (tests/fixtures/system/lspci-*)."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpuaudit.probes.core.parsers.lspci import (
    acs_flags,
    normalize_bdf,
    parse_lspci_tree,
    parse_lspci_vvv,
    tree_path,
)

VVV = Path(__file__).parents[1] / "fixtures/system/lspci-vvv"
TV = Path(__file__).parents[1] / "fixtures/system/lspci-tv"


def one(name: str):
    devs = parse_lspci_vvv((VVV / name).read_text())
    return devs


@pytest.mark.parametrize("path", sorted(VVV.glob("*.txt")), ids=lambda p: p.name)
def test_every_vvv_sample_parses(path):
    text = path.read_text()
    devs = parse_lspci_vvv(text)
    headers = [ln for ln in text.splitlines() if ln[:1].strip() and ln[:2] != "# "]
    blocks = [ln for ln in headers if ":" in ln.split()[0] and "." in ln.split()[0]]
    assert len(devs) == len(blocks) and all(d.bdf.count(":") == 2 for d in devs)
    # every block with a LnkCap line yields a parsed link capability; AER status only where UESta was printed
    for d, chunk in zip(devs, _blocks(text)):
        assert ("LnkCap:" in chunk) == (
            d.lnkcap_speed is not None or "Speed unknown" in chunk.split("LnkCap:")[1][:40]
        )
        assert ("UESta:" in chunk) == (d.ue_status is not None)


def _blocks(text: str) -> list[str]:
    out: list[str] = []
    for ln in text.splitlines():
        first = ln.split()[0] if ln[:1].strip() else ""
        if first and ":" in first and "." in first and ln[:2] != "# ":
            out.append(ln + "\n")
        elif out:
            out[-1] += ln + "\n"
    return out


def test_normalize_bdf_keeps_vmd_domain():
    assert normalize_bdf("10000:01:00.0") == "10000:01:00.0"


def test_rtx6000ada_idle_gpu():
    (d,) = one("rtx6000ada-esc8000a-idle-2.5gt-downgraded.txt")
    assert d.bdf == "0000:01:00.0" and d.is_gpu
    assert (d.devcap_mps, d.devctl_mps, d.devctl_mrrs) == (256, 256, 512)
    assert (d.lnkcap_speed, d.lnkcap_width, d.lnksta_speed, d.lnksta_width) == (16.0, 16, 2.5, 16)
    assert d.speed_downgraded and not d.width_downgraded
    assert d.aspm_ctl == "Disabled" and d.tag10_req_cap is True and d.tag10_req_en is False
    assert d.rebar_current[1] == 64 << 30 and d.kernel_driver == "nvidia"


def test_rome_root_port_acs_enabled_and_old_ok_marker():
    (d,) = one("amd-rome-root-port-romed8-pve-8gt-downgraded-x4-ok-acs-enabled.txt")
    assert d.port_type == "Root Port" and d.is_bridge
    assert d.lnksta_speed == 8.0 and d.speed_downgraded and not d.width_downgraded
    assert d.acs_ctl["ReqRedir"] and d.acs_ctl["CmpltRedir"] and not d.acs_ctl["EgressCtrl"]


def test_connectx7_pf_and_vf():
    pf, vf = one("connectx7-pf-vf-maxreadreq4096-16gt-x8-downgraded-vf-speed-unknown.txt")
    assert pf.devctl_mrrs == 4096 and pf.devctl_mps == 512
    assert pf.speed_downgraded and pf.width_downgraded and pf.lnksta_width == 8
    assert vf.speed_unknown and vf.devctl_mrrs == 128 and vf.kernel_driver == "mlx5_vfio_pci"


def test_connectx7_aer_status_and_acs_off():
    (d,) = one("connectx7-esc8000a-32gt-acs-off-unsupreq.txt")
    assert d.ue_status == ["UnsupReq"] and d.ce_status == ["AdvNonFatalErr"]
    assert not any(d.acs_ctl.values())


def test_switch_downstream_port_and_h100_rebar():
    (sw,) = one("hpe-xd665-pex890xx-gen5-switch-downstream-port-acs-enabled.txt")
    assert sw.port_type == "Downstream Port" and sw.devcap_mps == 2048 and sw.devctl_mrrs == 128
    assert sw.acs_ctl["ReqRedir"]
    (h100,) = one("hpe-xd665-h100-sxm5-no-driver-bound-rebar-128g.txt")
    assert (h100.vendor_id, h100.device_id) == ("10de", "2330") and h100.is_gpu
    assert (
        h100.kernel_driver is None
        and h100.rebar_current[2] == 128 << 30
        and h100.lnksta_speed == 32.0
    )


def test_width_only_downgrade():
    (d,) = one("highpoint-ssd7540-x2-width-downgraded.txt")
    assert d.width_downgraded and not d.speed_downgraded and d.lnksta_width == 1


def test_grep_filtered_acsctl_lines():
    text = (VVV / "esc8000a-grep-acsctl-all-off.txt").read_text()
    assert parse_lspci_vvv(text) == []  # no device headers: nothing to attribute
    flags = [acs_flags(ln) for ln in text.splitlines() if "ACSCtl" in ln]
    assert len(flags) == 46 and not any(any(f.values()) for f in flags)


def test_access_denied_block_synthetic():
    # synthetic: what non-root lspci prints beyond the first 64 bytes
    text = "01:00.0 3D controller: NVIDIA Corporation Device 2bb5 (rev a1)\n\tCapabilities: <access denied>\n"
    (d,) = parse_lspci_vvv(text)
    assert d.access_denied and d.devctl_mrrs is None


def test_normalize_bdf():
    assert (
        normalize_bdf("00000000:8A:00.0") == "0000:8a:00.0"
        and normalize_bdf("01:00.0") == "0000:01:00.0"
    )


@pytest.mark.parametrize("path", sorted(TV.glob("*.txt")), ids=lambda p: p.name)
def test_every_tree_sample_parses(path):
    assert parse_lspci_tree(path.read_text())


def test_tree_asus_gpus_under_root_ports():
    n = parse_lspci_tree((TV / "asus-esc8000a-e12-genoa-4x-rtx6000ada.txt").read_text())
    gpus = sorted(b for b, x in n.items() if "RTX 6000 Ada" in x.name)
    assert gpus == ["0000:01:00.0", "0000:41:00.0", "0000:c1:00.0", "0000:e1:00.0"]
    assert tree_path(n, "0000:41:00.0") == ["0000:40:01.1"]


def test_tree_lenovo_h100_behind_switch_chain():
    n = parse_lspci_tree(
        (TV / "lenovo-sd665n-v3-genoa-4x-h100-sxm5-behind-cx7-switch.txt").read_text()
    )
    path = tree_path(n, "0000:c6:00.0")
    assert path[0] == "0000:c5:00.0" and path[-1] == "0000:c0:01.1" and len(path) == 5


def test_bus_tree_from_bridge_bus_lines_real_hpe_capture():
    """`lspci -vvv` alone gives the GPU paths: each bridge's `Bus: secondary=` is the bus below it."""
    from gpuaudit.probes.core.parsers.lspci import bus_tree

    text = (
        Path(__file__).parents[1]
        / "fixtures/system/lspci-vvv-filtered/hpe-xd665-two-h100-behind-pex890xx-no-tree.txt"
    ).read_text()
    devs = parse_lspci_vvv(text)
    up = next(d for d in devs if d.bdf == "0000:01:00.0")
    assert (up.secondary_bus, up.subordinate_bus) == (2, 6) and up.port_type == "Upstream Port"
    tree = bus_tree(devs)
    assert tree_path(tree, "0000:64:00.0") == ["0000:62:01.0", "0000:61:00.0", "0000:60:01.1"]
    assert tree["0000:00:01.1"].parent is None  # a root port sits on a root bus
    assert tree_path(tree, "0000:03:00.0") == ["0000:02:00.0", "0000:01:00.0", "0000:00:01.1"]
