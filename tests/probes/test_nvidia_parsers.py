"""Parsers of probes/core/parsers/nvidia_smi.py and nvidia_misc.py on every real sample in tests/fixtures/nvidia."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.parsers import nvidia_misc as nm
from gpuaudit.probes.core.parsers import nvidia_smi as ns

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "nvidia"


def files(folder: str) -> list[Path]:
    return sorted((FIX / folder).glob("*.txt"))


def read(folder: str, name: str) -> str:
    return (FIX / folder / name).read_text()


# ---------------------------------------------------------------- every sample parses


@pytest.mark.parametrize("path", files("nvidia-smi"), ids=lambda p: p.name)
def test_every_smi_table_parses(path):
    t = ns.parse_smi_table(path.read_text())
    assert t.error or t.gpus


@pytest.mark.parametrize("path", files("nvidia-smi-q"), ids=lambda p: p.name)
def test_every_smi_q_parses(path):
    text = path.read_text()
    gpus = ns.parse_smi_q(text)
    if re.search(
        r"^GPU [0-9A-Fa-f]{4,8}:", text, re.M
    ):  # a full -q: one block per GPU, each with fields
        assert gpus and all(len(g) > 1 for g in gpus)
    else:  # a -d fragment: read as a tree with real keys
        assert not gpus and any(k for k in ns.parse_q_tree(text) if k)


@pytest.mark.parametrize("path", files("nvidia-smi-query-gpu-csv"), ids=lambda p: p.name)
def test_every_query_csv_parses(path):
    assert ns.parse_query_gpu_csv(path.read_text())


@pytest.mark.parametrize("path", files("nvidia-smi-topo-m"), ids=lambda p: p.name)
def test_every_topo_parses(path):
    t = ns.parse_topo_m(path.read_text())
    assert t.gpus and all(g in t.cpu_affinity for g in t.gpus)


@pytest.mark.parametrize("path", files("nvidia-smi-nvlink-s"), ids=lambda p: p.name)
def test_every_nvlink_s_parses(path):
    assert len(ns.parse_nvlink_s(path.read_text())) >= 2


@pytest.mark.parametrize("path", files("proc-driver-nvidia-version"), ids=lambda p: p.name)
def test_every_proc_version_parses(path):
    assert nm.parse_proc_driver_version(path.read_text()) is not None


@pytest.mark.parametrize("path", files("modinfo-nvidia"), ids=lambda p: p.name)
def test_every_modinfo_parses(path):
    mi = nm.parse_modinfo(path.read_text())
    assert mi.version and mi.license and mi.open_module is not None


@pytest.mark.parametrize("path", files("nvcc-version"), ids=lambda p: p.name)
def test_every_nvcc_parses(path):
    assert nm.parse_nvcc_version(path.read_text())


@pytest.mark.parametrize("path", files("dmesg-xid"), ids=lambda p: p.name)
def test_every_dmesg_parses(path):
    text = path.read_text()
    events, problems = nm.parse_xid_events(text), nm.parse_nvrm_problems(text)
    if re.search(r"NVRM: Xid \(", text):
        assert events and all(e.code > 0 for e in events)
    assert isinstance(problems, list)


@pytest.mark.parametrize(
    "path", files("systemctl-status-nvidia-fabricmanager"), ids=lambda p: p.name
)
def test_every_fm_status_parses(path):
    assert nm.parse_systemctl_status(path.read_text()).active in ("active", "failed")


# ---------------------------------------------------------------- specific values


def test_table_rtx_pro_6000_ws():
    t = ns.parse_smi_table(
        read("nvidia-smi", "rtx-pro-6000-blackwell-ws-580-gnome-shell-process.txt")
    )
    assert (t.driver_version, t.cuda_version) == ("580.95.05", "13.0")
    g = t.gpus[0]
    assert (
        g.name,
        g.persistence,
        g.bus_id,
        g.memory_total_mib,
        g.compute_mode,
        g.mig_mode,
        g.ecc_uncorrected,
    ) == ("NVIDIA RTX PRO 6000 Blac...", "On", "00000000:01:00.0", 97887, "Default", "N/A", "Off")


def test_table_kmd_umd_header_and_mig():
    t = ns.parse_smi_table(
        read("nvidia-smi", "rtx-pro-6000-server-610-kmd-umd-header-mig-in-k8s-pod.txt")
    )
    assert (t.driver_version, t.cuda_version, len(t.gpus), t.gpus[0].mig_mode) == (
        "610.43.02",
        "13.3",
        1,
        "Enabled",
    )


def test_table_h100_hgx_and_old_layout():
    t = ns.parse_smi_table(read("nvidia-smi", "h100-sxm-hgx-8gpu-565.txt"))
    assert (
        len(t.gpus) == 8
        and t.gpus[7].bus_id == "00000000:DB:00.0"
        and t.gpus[0].ecc_uncorrected == "0"
    )
    old = ns.parse_smi_table(read("nvidia-smi", "gtx680-470-old-layout.txt"))
    assert (old.driver_version, old.cuda_version, old.gpus[0].persistence) == (
        "470.256.02",
        "11.4",
        "Off",
    )
    assert len(ns.parse_smi_table(read("nvidia-smi", "rtx-a6000-9gpu-550.txt")).gpus) == 9


@pytest.mark.parametrize(
    "name,kind",
    [
        ("err-driver-library-mismatch-570.txt", ns.SMI_ERR_MISMATCH),
        ("err-driver-library-mismatch-460-old.txt", ns.SMI_ERR_MISMATCH),
        ("err-couldnt-communicate-460.txt", ns.SMI_ERR_NO_DRIVER),
        ("err-no-devices-found-rtx5090.txt", ns.SMI_ERR_NO_DEVICES),
        ("err-unknown-error-device-handle-2024.txt", ns.SMI_ERR_DEVICE_HANDLE),
        ("h100-sxm-hgx-8gpu-565.txt", None),
    ],
)
def test_error_banners(name, kind):
    text = read("nvidia-smi", name)
    assert ns.smi_error_kind(text) == kind
    assert (ns.detect_smi_error(text) is None) == (kind is None)


def test_mismatch_banner_library_version():
    text = read("nvidia-smi", "err-driver-library-mismatch-570.txt")
    assert ns.detect_smi_error(text) == "Failed to initialize NVML: Driver/library version mismatch"
    assert ns.nvml_library_version(text) == "570.124"
    with pytest.raises(ParseError):
        ns.parse_query_gpu_csv(text, ["index"])


def test_query_csv_header_units_and_missing_tokens():
    rows = ns.parse_query_gpu_csv(
        read("nvidia-smi-query-gpu-csv", "a100-sxm4-4gpu-index-name-mem-computecap-driver.txt")
    )
    assert len(rows) == 4 and rows[3] == {
        "index": "3",
        "name": "NVIDIA A100-SXM4-80GB",
        "memory.total": "81920",
        "compute_cap": "8.0",
        "driver_version": "580.105.08",
    }
    a100 = ns.parse_query_gpu_csv(
        read("nvidia-smi-query-gpu-csv", "a100-pcie-2gpu-name-busid-vbios-mem-appclocks.txt")
    )
    assert (
        a100[1]["pci.bus_id"] == "00000000:8A:00.0"
        and a100[0]["utilization.gpu"] == "0"
        and a100[0]["clocks.applications.memory"] == "1215"
    )
    win = ns.parse_query_gpu_csv(
        read("nvidia-smi-query-gpu-csv", "rtx2080ti-windows-nounits-unknown-error-value.txt")
    )
    assert win[0]["power.draw"] == "228.82" and win[0]["power.default_limit"] is None
    l40s = ns.parse_query_gpu_csv(
        read("nvidia-smi-query-gpu-csv", "l40s-8gpu-idle-gen1-of-gen4-x16.txt")
    )
    assert len(l40s) == 8 and l40s[5]["pcie.link.gen.max"] == "4"


def test_query_csv_noheader_synthetic():
    # synthetic: the noheader,nounits shape the probes request
    rows = ns.parse_query_gpu_csv(
        "0, Enabled, [N/A]\n1, Disabled, N/A\n", ["index", "persistence_mode", "fabric.state"]
    )
    assert rows == [
        {"index": "0", "persistence_mode": "Enabled", "fabric.state": None},
        {"index": "1", "persistence_mode": "Disabled", "fabric.state": None},
    ]
    with pytest.raises(ParseError):
        ns.parse_query_gpu_csv("0, Enabled\n", ["index"])
    assert ns.parse_query_gpu_csv("", ["index"]) == []


def test_smi_q_values():
    text = read("nvidia-smi-q", "h100-sxm-hgx-8gpu-565.txt")
    head, gpus = ns.parse_smi_q_header(text), ns.parse_smi_q(text)
    assert (head["Driver Version"], head["CUDA Version"], head["Attached GPUs"]) == (
        "565.57.01",
        "12.7",
        "8",
    )
    assert len(gpus) == 8 and gpus[0]["_bus_id"] == "00000000:18:00.0"
    g = gpus[0]
    assert ns.q_get(g, "Product Name") == "NVIDIA H100 80GB HBM3"
    assert ns.q_get(g, "MIG Mode", "Current") == "Disabled"
    assert (ns.q_get(g, "Fabric", "State"), ns.q_get(g, "Fabric", "Status")) == (
        "Completed",
        "Success",
    )
    assert ns.q_get(g, "Remapped Rows", "Remapping Failure Occurred") == "No"
    assert ns.q_get(g, "ECC Errors", "Volatile", "DRAM Uncorrectable") == "0"
    gtx = ns.parse_smi_q(read("nvidia-smi-q", "gtx680-470-clocks-throttle-reasons.txt"))
    assert ns.q_get(gtx[0], "Persistence Mode") == "Disabled"
    frag = ns.parse_q_tree(read("nvidia-smi-q", "v100-sxm2-32gb-c4130-hw-power-brake-fragment.txt"))
    assert ns.q_get(frag, "Clocks Throttle Reasons", "HW Slowdown") == "Active"


XML = FIX / "nvidia-smi-q-x"


@pytest.mark.parametrize("path", sorted(XML.glob("*.xml")), ids=lambda p: p.name)
def test_every_q_xml_parses(path):
    x = ns.parse_smi_q_xml(path.read_text())
    assert x.driver_version and x.gpus and all(g.product_name and g.bus_id for g in x.gpus)
    for g in x.gpus:
        assert g.clock_events_element and set(g.clock_events) >= {
            "hw_slowdown",
            "sw_power_cap",
            "gpu_idle",
        }
        assert g.pcie_gen_max and g.pcie_width_max and g.power_limit_w and g.bar1_total_mib
        assert g.errors == {}  # these real captures read every field they print


def test_q_xml_schemas_across_branches():
    mig = ns.parse_smi_q_xml((XML / "netdata-a100-sxm4-mig.xml").read_text()).gpus[
        0
    ]  # R510, MIG on
    assert (mig.mig_current, mig.mig_pending, mig.mig_devices, mig.ecc_current) == (
        "Enabled",
        "Enabled",
        2,
        "Enabled",
    )
    assert (
        mig.ecc_volatile_uncorrected is None and mig.notes["ecc_volatile_uncorrected"] == "N/A"
    )  # not 0
    assert (
        mig.clock_events_element == "clocks_throttle_reasons"
        and mig.temp_slowdown_c == 89
        and mig.temp_shutdown_c == 92
    )
    a100 = ns.parse_smi_q_xml(
        (XML / "telegraf-a100-sxm4-v12.xml").read_text()
    )  # R535 gpu_power_readings
    g = a100.gpus[0]
    assert (a100.driver_version, a100.cuda_version, g.clock_events_element) == (
        "535.54.03",
        "12.2",
        "clocks_event_reasons",
    )
    assert (g.power_draw_w, g.power_limit_w, g.power_default_limit_w, g.power_max_limit_w) == (
        67.03,
        500.0,
        500.0,
        500.0,
    )
    assert (g.pcie_gen_current, g.pcie_gen_max, g.pcie_width_max, g.bar1_total_mib) == (
        4,
        4,
        16,
        131072,
    )
    assert (
        g.remap_pending is None and g.notes["remap_pending"] == "N/A"
    )  # "<remapped_rows>N/A" under MIG
    ada = ns.parse_smi_q_xml((XML / "telegraf-rtx-4000-sff-ada-v13.xml").read_text()).gpus[
        0
    ]  # R595 workstation
    assert (ada.product_brand, ada.product_architecture, ada.ecc_current, ada.remap_failure) == (
        "NVIDIA RTX",
        "Ada Lovelace",
        "Disabled",
        "No",
    )
    assert ada.clock_events["gpu_idle"] is True and ada.clock_events["hw_slowdown"] is False
    assert (ada.pcie_gen_current, ada.pcie_gen_max, ada.gsp_firmware_version, ada.tlimit_c) == (
        1,
        4,
        "595.84",
        49,
    )
    p100 = ns.parse_smi_q_xml((XML / "netdata-tesla-p100.xml").read_text()).gpus[0]
    assert (p100.ecc_aggregate_corrected, p100.retired_dbe, p100.retired_pending) == (3, 0, "No")
    geforce = ns.parse_smi_q_xml((XML / "netdata-rtx-4090-driver-535.xml").read_text()).gpus[0]
    assert (geforce.pcie_gen_max, geforce.pcie_gen_device_max, geforce.pcie_gen_host_max) == (
        3,
        4,
        3,
    )
    assert geforce.mig_current is None and geforce.notes["mig_current"] == "N/A"


def test_q_xml_error_tokens_are_none_with_a_reason():
    # a real capture with three values replaced by the tokens drivers print when a read fails
    text = (XML / "telegraf-tesla-t4.xml").read_text()
    text = text.replace(
        "<current_ecc>Enabled</current_ecc>", "<current_ecc>[Unknown Error]</current_ecc>", 1
    )
    text = text.replace(
        "<clocks_throttle_reason_hw_slowdown>Not Active",
        "<clocks_throttle_reason_hw_slowdown>[Unknown Error]",
        1,
    )
    text = re.sub(
        r"<power_draw>[^<]*</power_draw>",
        "<power_draw>[Insufficient Permissions]</power_draw>",
        text,
        count=1,
    )
    g = ns.parse_smi_q_xml(text).gpus[0]
    assert g.ecc_current is None and g.errors["ecc_current"] == "[Unknown Error]"
    assert g.clock_events["hw_slowdown"] is None and "clock_events.hw_slowdown" in g.errors
    assert g.power_draw_w is None and g.errors["power_draw_w"] == "[Insufficient Permissions]"
    assert "mig_current" not in g.errors  # N/A = not supported, not an error


def test_q_xml_rejects_banners_and_non_xml():
    with pytest.raises(ParseError):
        ns.parse_smi_q_xml(read("nvidia-smi", "err-driver-library-mismatch-570.txt"))
    with pytest.raises(ParseError):
        ns.parse_smi_q_xml("not xml")
    with pytest.raises(ParseError):
        ns.parse_smi_q_xml("")


def test_topo_values():
    t = ns.parse_topo_m(read("nvidia-smi-topo-m", "h100-hgx-8gpu-8nic-pix-nv18.txt"))
    assert (
        len(t.gpus) == 8
        and t.links[("GPU0", "GPU7")] == "NV18"
        and t.links[("GPU0", "NIC0")] == "PIX"
    )
    assert (
        t.cpu_affinity["GPU4"] == "48-95,144-191"
        and t.numa_affinity["GPU4"] == "1"
        and t.nic_names["NIC7"] == "mlx5_7"
    )
    tabs = ns.parse_topo_m(read("nvidia-smi-topo-m", "a100-sxm4-4gpu-nv12-roce-nic-raw-tabs.txt"))
    assert tabs.nvlink_pairs()[("GPU0", "GPU3")] == 12 and tabs.numa_affinity["GPU0"] == "1"
    sys4090 = ns.parse_topo_m(read("nvidia-smi-topo-m", "rtx4090-8gpu-all-sys-tabs.txt"))
    assert sys4090.nvlink_pairs() == {} and sys4090.links[("GPU6", "NIC0")] == "PHB"
    assert (
        ns.parse_topo_m(read("nvidia-smi-topo-m", "a30-4gpu-nv4-pairs-1nic-2numa.txt")).links[
            ("GPU2", "GPU3")
        ]
        == "NV4"
    )


@pytest.mark.parametrize(
    "name",
    [
        "b300-sxm6-8gpu-nv18-9nic-590-underline-header-esc.txt",
        "b300-sxm6-8gpu-nv18-9nic-590-underline-header-esc-lost-in-paste.txt",
    ],
)
def test_topo_underlined_header_590(name):
    # drivers 590/595 underline the header row with SGR escapes even when stdout is a file
    t = ns.parse_topo_m(read("nvidia-smi-topo-m", name))
    assert len(t.gpus) == 8 and len(t.devices) == 17 and t.links[("GPU0", "GPU7")] == "NV18"
    assert (
        len(t.nvlink_pairs()) == 56
        and t.numa_affinity["GPU7"] == "1"
        and t.nic_names["NIC8"] == "mlx5_bond_0"
    )


def test_topo_p2p_underlined_header():
    # the p2p matrix gets the same underline (" \t\x1b[4mGPU0\tGPU1\t\x1b[0m" on 590+): real H100 capture, header re-underlined
    text = read("nvidia-smi-topo-p2p", "h100-8gpu-p2p-r-all-ok.txt")
    lines = text.splitlines(keepends=True)
    i = next(i for i, ln in enumerate(lines) if "GPU0" in ln)
    lines[i] = lines[i].replace("GPU0", "\x1b[4mGPU0", 1).rstrip("\n") + "\x1b[0m\n"
    t = ns.parse_topo_m("".join(lines))
    assert len(t.gpus) == 8 and t.links[("GPU0", "GPU1")] == "OK"


@pytest.mark.parametrize(
    "text", ["", "\n\n", "\tGPU0\tGPU1\tCPU Affinity\n", "Legend:\n  X = Self\n"]
)
def test_topo_empty_or_headless_is_an_error_never_no_nvlink(text):
    # an unread topology must not look like a PCIe-only box (no NV# pairs) to nvlink/nccl
    with pytest.raises(ParseError):
        ns.parse_topo_m(text)


def test_text_parsers_read_through_escapes():
    table = read("nvidia-smi", "h100-sxm-hgx-8gpu-565.txt").replace(
        "NVIDIA-SMI", "\x1b[1mNVIDIA-SMI\x1b[0m", 1
    )
    assert ns.parse_smi_table(table).driver_version == "565.57.01"
    assert ns.strip_escapes("\x1b[4mGPU0\x1b[0m [MiB] [ms] [N/A]") == "GPU0 [MiB] [ms] [N/A]"


def test_nvlink_s_values():
    h100 = ns.parse_nvlink_s(read("nvidia-smi-nvlink-s", "h100-pcie-2gpu-bridge-12of18-active.txt"))
    assert [(g.index, g.active_links, len(g.links)) for g in h100] == [(0, 12, 18), (1, 12, 18)]
    assert h100[0].links[0].speed_gbs == 26.562 and not h100[0].links[4].active
    a100 = ns.parse_nvlink_s(
        read("nvidia-smi-nvlink-s", "a100-sxm4-4gpu-12links-25gbs-raw-tabs.txt")
    )
    assert len(a100) == 4 and all(
        g.active_links == 12 and g.links[11].speed_gbs == 25.0 for g in a100
    )
    pcie = ns.parse_nvlink_s(
        read("nvidia-smi-nvlink-s", "a100-pcie-2gpu-no-nvlink-all-links-inactive.txt")
    )
    assert [g.all_inactive for g in pcie] == [True, True] and pcie[
        1
    ].uuid == "GPU-14ac2834-0d81-0508-69eb-e25264c08d21"


def test_nvlink_errors_synthetic():
    text = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-x)\n\t Link 0: Replay Errors: 0\n\t Link 0: CRC Errors: 3\n"
    assert ns.parse_nvlink_errors(text) == {0: {0: {"Replay Errors": 0, "CRC Errors": 3}}}


def test_misc_values():
    p = nm.parse_proc_driver_version(
        read("proc-driver-nvidia-version", "open-565.57.01-ubuntu24.04.txt")
    )
    assert (p.version, p.open_module, p.arch) == ("565.57.01", True, "x86_64")
    old = nm.parse_proc_driver_version(
        read("proc-driver-nvidia-version", "proprietary-384.98-ubuntu-2017.txt")
    )
    assert (old.version, old.open_module) == ("384.98", False)
    mi = nm.parse_modinfo(read("modinfo-nvidia", "ubuntu-590.44.01-dkms-p2p-head-partial.txt"))
    assert (mi.version, mi.open_module, mi.vermagic_kernel, mi.dkms) == (
        "590.44.01",
        True,
        "6.8.0-90-generic",
        True,
    )
    assert "NVreg_DeviceFileMode" in mi.params
    prop = nm.parse_modinfo(
        read("modinfo-nvidia", "ubuntu-545.29.02-proprietary-grep-v-parm-alias.txt")
    )
    assert (prop.license, prop.open_module) == ("NVIDIA", False)
    assert (
        nm.parse_nvcc_version(
            read("nvcc-version", "cuda-13.0-V13.0.88-host-with-8x-rtx5060ti-580.txt")
        )
        == "13.0"
    )
    assert nm.parse_nvcc_version(read("nvcc-version", "cuda-7.5-2015.txt")) == "7.5"


def test_xid_values():
    casc = nm.parse_xid_events(read("dmesg-xid", "xid31-mmu-fault-then-xid62-xid45-cascade.txt"))
    assert (
        [x.code for x in casc[:3]] == [31, 62, 45]
        and casc[0].pci == "0000:0a:00"
        and len(casc) == 10
    )
    assert [
        x.code for x in nm.parse_xid_events(read("dmesg-xid", "xid63-row-remapper-a100.txt"))
    ] == [63]
    nvl = nm.parse_xid_events(
        read("dmesg-xid", "xid45-caused-by-previous-xid149-xid145-nvlink.txt")
    )
    assert {x.code for x in nvl} == {45} and "previous Xid 149" in nvl[0].detail
    api = read("dmesg-xid", "api-mismatch-client-570.148.08-vs-kernel-570.148.06.txt")
    assert nm.parse_nvrm_problems(api) == ["NVRM API mismatch (user-space vs kernel module)"]
    assert nm.parse_nvrm_loaded_version(api) == "570.148.06"
    assert "GPU has fallen off the bus" in nm.parse_nvrm_problems(
        read("dmesg-xid", "fallen-off-bus-old-2014.txt")
    )
    assert (
        nm.parse_xid_events(read("dmesg-xid", "pcie-bandwidth-limited-by-gen4-switch-dmesg.txt"))
        == []
    )


def test_fabricmanager_status_values():
    ok = nm.parse_systemctl_status(
        read("systemctl-status-nvidia-fabricmanager", "active-running-b200-bottlerocket-nvlsm.txt")
    )
    assert (ok.active, ok.sub, ok.failed_start) == ("active", "running", False)
    pre = nm.parse_systemctl_status(
        read("systemctl-status-nvidia-fabricmanager", "journal-failed-pre-nvl5-2x-rtx4090.txt")
    )
    assert pre.active == "failed" and "Detected Pre-NVL5 system" in pre.messages
    assert any("nothing to do" in m for m in pre.messages)
    gone = nm.parse_systemctl_status(
        "Unit nvidia-fabricmanager.service could not be found.\n"
    )  # synthetic
    assert gone.present is False


def test_lib_dkms_modprobe_synthetic():
    libs = nm.parse_lib_versions(
        "/usr/lib/x86_64-linux-gnu/libcuda.so.590.48.01\n/usr/lib/x86_64-linux-gnu/libcuda.so.1\n"
        "/usr/local/cuda-13.0/compat/libcuda.so.580.65.06\n/usr/lib64/libnvidia-ml.so.590.48.01\n"
    )
    assert libs["libcuda"] == [
        ("/usr/lib/x86_64-linux-gnu/libcuda.so.590.48.01", "590.48.01"),
        ("/usr/local/cuda-13.0/compat/libcuda.so.580.65.06", "580.65.06"),
    ]
    assert libs["libnvidia-ml"] == [("/usr/lib64/libnvidia-ml.so.590.48.01", "590.48.01")]
    d = nm.parse_dkms_status(
        "nvidia/590.48.01, 6.8.12-9-pve, x86_64: installed\nnvidia, 525.125.06, 6.1.0-10-amd64, x86_64: built\n"
    )
    assert [(e.version, e.kernel, e.state) for e in d] == [
        ("590.48.01", "6.8.12-9-pve", "installed"),
        ("525.125.06", "6.1.0-10-amd64", "built"),
    ]
    assert nm.parse_modprobe_options("options nvidia NVreg_DynamicPowerManagement=0x02 # x\n") == {
        "nvidia": {"NVreg_DynamicPowerManagement": "0x02"}
    }


def test_query_csv_keeps_error_tokens_apart_from_not_supported():
    rows = ns.parse_query_gpu_csv(
        "0, [Unknown Error], [N/A], [GPU is lost]\n", ["index", "a", "b", "c"]
    )
    assert (
        rows[0]["a"] is None and rows[0]["b"] is None and ns.csv_row_errors(rows[0]) == {"a", "c"}
    )
    assert ns.csv_value_missing("[Insufficient Permissions]") and ns.csv_value_error(
        "[Insufficient Permissions]"
    )
    assert not ns.csv_value_error("[N/A]")
    assert ns.csv_row_errors(ns.parse_query_gpu_csv("0, 1\n", ["index", "a"])[0]) == set()


def test_nvlink_errors_gpu_without_counter_lines():
    assert ns.parse_nvlink_errors("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n") == {0: {}}


# ---------------------------------------------------------------- table classes (issue 12, item 6)


@pytest.mark.parametrize(
    "name", ["v100-sxm2-580-exclusive-process.txt", "t4-530-exclusive-process-mps.txt"]
)
def test_table_e_process_is_exclusive_process(name):
    assert [g.compute_mode for g in ns.parse_smi_table(read("nvidia-smi", name)).gpus] == [
        "Exclusive_Process"
    ]


def test_table_err_cells_are_sensor_errors():
    fan = ns.parse_smi_table(read("nvidia-smi", "rtx4000ada-err-fan-gpu14-fragment.txt"))
    assert [(g.index, g.bus_id, g.sensor_errors) for g in fan.gpus] == [
        (13, "00000000:C9:00.0", []),
        (14, "00000000:CC:00.0", ["fan"]),
    ]
    power = ns.parse_smi_table(read("nvidia-smi", "v100-pcie-azure-err-power-fragment.txt"))
    assert power.gpus[0].sensor_errors == ["power"]
    assert all(
        not g.sensor_errors
        for g in ns.parse_smi_table(read("nvidia-smi", "h100-sxm-hgx-8gpu-565.txt")).gpus
    )


def test_query_csv_header_with_camel_case_names():
    # header names as nvidia-smi prints them for these fields (camelCase parts are part of the name)
    rows = ns.parse_query_gpu_csv(
        "index, encoder.stats.sessionCount, encoder.stats.averageFps, fabric.cliqueId\n"
        "0, 0, 0, 4294967295\n"
    )
    assert rows == [
        {
            "index": "0",
            "encoder.stats.sessionCount": "0",
            "encoder.stats.averageFps": "0",
            "fabric.cliqueId": "4294967295",
        }
    ]
    # a noheader row of capitalised values is still data, not a header
    assert (
        ns.parse_query_gpu_csv("Enabled, Default\n", ["persistence_mode", "compute_mode"])[0][
            "compute_mode"
        ]
        == "Default"
    )


def _underlined(text: str) -> str:
    """Every line wrapped in SGR bold/reset, as a colouring terminal (or a 590+ header row) writes it."""
    return "".join(
        f"\x1b[1m{ln.rstrip(chr(10))}\x1b[0m\n" if ln.strip() else ln
        for ln in text.splitlines(keepends=True)
    )


@pytest.mark.parametrize(
    "folder,parse",
    [
        ("nvidia-smi", lambda t: ns.parse_smi_table(t)),
        ("nvidia-smi-q", lambda t: (ns.parse_smi_q(t), ns.parse_q_tree(t))),
        ("nvidia-smi-topo-m", lambda t: ns.parse_topo_m(t)),
        ("nvidia-smi-topo-p2p", lambda t: ns.parse_topo_m(t)),
        ("nvidia-smi-nvlink-s", lambda t: ns.parse_nvlink_s(t)),
        ("nvidia-smi-query-gpu-csv", lambda t: ns.parse_query_gpu_csv(t)),
    ],
)
def test_every_text_parser_reads_through_escapes(folder, parse):
    for path in files(folder):
        text = path.read_text()
        assert parse(_underlined(text)) == parse(text), path.name
