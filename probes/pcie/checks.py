"""The pcie probe's rows of the catalogue: one per PROBES.md `pcie.*` check (pcie.bar1 is firmware.bar1_large_bar's)."""

from __future__ import annotations

from gpuaudit.probes.core.judge.checks import HOST, Check, Message
from gpuaudit.probes.pcie import checks_config as cfg
from gpuaudit.probes.pcie import checks_link as link

CHECKS: tuple[Check, ...] = (
    Check(
        "pcie.link_capability",
        "GPU link capability",
        "hardware",
        "A slot, riser, retimer or BIOS setting caps the link; x8 or one generation less halves host-to-device and "
        "P2P bandwidth.",
        "Check slot wiring/risers and the BIOS PCIe link speed setting for those slots.",
        link.link_capability,
        any_of=("smi_query_pcie", "lspci_vvv"),
        roles=HOST,
        needs_gpu=True,
        variants={
            "gpu_links_can_reach_full": Message(title="GPU links can reach full speed"),
            "gpu_link_capped_below_what": Message(
                title="GPU link capped below what the GPU supports"
            ),
        },
    ),
    Check(
        "pcie.link_current_under_load",
        "GPU link under load",
        "hardware",
        "A busy GPU retrains to its maximum; staying low under load points at signal integrity (riser, retimer, slot) "
        "or a BIOS cap.",
        "Reseat/replace risers, check the slot's BIOS speed.",
        link.link_current_under_load,
        sources=("smi_query_pcie",),
        roles=HOST,
        needs_gpu=True,
        variants={
            "full_speed_under_load": Message(title="GPU links at full speed under load"),
            "full_speed": Message(title="GPU links at full speed"),
            "gpu_link_downtrained_busy": Message(title="GPU link downtrained while busy"),
            "gpus_idle_links_power_save": Message(
                title="GPUs idle: links in power-save",
                why="NVIDIA GPUs drop the link to Gen1 when idle and retrain when busy.",
            ),
        },
    ),
    Check(
        "pcie.max_read_req",
        "GPU Max Read Request Size",
        "bios",
        "MRRS caps each read request the GPU issues; small requests mean more TLP headers and tags for the same "
        "bandwidth. It affects GPU copy-engine reads of host memory (model load, host-to-device copies, KV-cache "
        "restore from host), not steady-state decode from weights already in VRAM.",
        "BIOS 'PCIe Max Read Request' = 4096 (or Auto) where offered; note pci=pcie_bus_perf lowers MRRS to MPS. "
        "Runtime setpci changes are non-persistent and risky on production.",
        cfg.max_read_req,
        sources=("lspci_vvv",),
        roles=HOST,
        needs_gpu=True,
        optional=("proc_cmdline",),
        variants={
            "gpu_maxreadreq_4096_bytes": Message(title="GPU MaxReadReq 4096 bytes"),
            "gpu_maxreadreq_bytes": Message(title="GPU MaxReadReq {mrrs} bytes"),
            "gpu_maxreadreq_bytes_can_raised": Message(
                title="GPU MaxReadReq {mrrs} bytes can be raised"
            ),
        },
    ),
    Check(
        "pcie.max_payload",
        "GPU Max Payload Size",
        "bios",
        "MPS bounds write and completion payloads; a smaller value raises header overhead.",
        "BIOS PCIe MPS = Auto/max, or kernel pci=pcie_bus_safe (keeps MRRS untouched).",
        cfg.max_payload,
        sources=("lspci_vvv",),
        roles=HOST,
        needs_gpu=True,
        optional=("lspci_tv",),
        variants={
            "gpu_max_payload_size_consistent": Message(title="GPU Max Payload Size consistent"),
            "max_payload_size_below_capability": Message(
                title="Max Payload Size below capability or inconsistent on a GPU path"
            ),
        },
    ),
    Check(
        "pcie.acs",
        "ACS redirect on GPU paths",
        "bios",
        "ACS redirect sends GPU-to-GPU traffic up to the root complex/IOMMU; with a translated IOMMU this has caused "
        "NCCL hangs and very slow P2P on RTX PRO 6000 systems.",
        "BIOS ACS = Disabled when no VM passthrough is needed, or pci=disable_acs_redir=<bridges> / pci=config_acs=...; "
        "pair with iommu=pt.",
        cfg.acs,
        sources=("lspci_vvv",),
        roles=HOST,
        applies=cfg.fewer_than_two_gpus,
        needs_gpu=True,
        optional=("lspci_tv", "smi_query_pcie", "sys_pci_nvidia"),
        variants={
            "acs_redirect_on_bridges_between": Message(
                title="ACS redirect on bridges between GPUs"
            ),
            "no_acs_redirect_on_gpu": Message(title="No ACS redirect on GPU paths"),
            "acs_redirect_on_switch_ports": Message(
                title="ACS redirect on switch ports between GPUs"
            ),
        },
    ),
    Check(
        "pcie.aspm",
        "ASPM on GPU links",
        "bios",
        "ASPM adds exit latency on every link wake; RTX PRO 6000 builders attribute 'Surprise Link Down' lock-ups to "
        "link power management.",
        "pcie_aspm=off (or policy performance) and BIOS ASPM = Disabled.",
        cfg.aspm,
        any_of=("lspci_vvv", "aspm_policy"),
        roles=HOST,
        needs_gpu=True,
        optional=(
            "lspci_tv",
            "smi_query_pcie",
            "sys_pci_nvidia",
        ),
        variants={
            "aspm_off_on_gpu_links": Message(title="ASPM off on GPU links"),
            "pcie_link_power_management_on": Message(
                title="PCIe link power management on GPU links"
            ),
        },
    ),
    Check(
        "pcie.port_pm",
        "GPU upstream port runtime PM",
        "host",
        "A suspending root port while the GPU retrains between Gen1 and Gen5 has caused link drops in community "
        "RTX PRO 6000 reports.",
        "pcie_port_pm=off if link-down errors are logged.",
        link.port_pm,
        sources=("sys_pci_nvidia",),
        roles=HOST,
        needs_gpu=True,
        variants={
            "gpu_upstream_ports_stay_powered": Message(title="GPU upstream ports stay powered"),
            "gpu_upstream_ports_may_runtime": Message(
                title="GPU upstream ports may runtime-suspend"
            ),
        },
    ),
    Check(
        "pcie.link_errors",
        "PCIe errors on GPU links",
        "hardware",
        "AER errors are lost transactions (uncorrectable) or retransmissions (correctable) and precede link drops.",
        "Check risers, retimers, Gen5 cabling and slot seating; lower the link speed in BIOS to test.",
        link.link_errors,
        any_of=("sys_pci_nvidia", "lspci_vvv"),
        roles=HOST,
        needs_gpu=True,
        variants={
            "no_pcie_errors_on_gpu": Message(title="No PCIe errors on GPU links"),
            "uncorrectable_pcie_errors_on_gpu": Message(
                title="Uncorrectable PCIe errors on GPU links",
                why="Non-fatal/fatal AER errors are lost transactions and precede link drops.",
            ),
            "correctable_pcie_errors_recorded_since": Message(
                title="Correctable PCIe errors recorded since boot",
                why=(
                    "Correctable errors are retransmissions (lost bandwidth); growing counts "
                    "point at signal integrity."
                ),
                fix="Compare with a later audit; investigate cabling if the counts grow.",
            ),
        },
    ),
    Check(
        "pcie.tags_ordering",
        "10-bit tags and relaxed ordering",
        "bios",
        "More outstanding tags help saturate Gen5 links; enable 'PCIe Ten Bit Tag Support' in BIOS if offered and the "
        "GPU requests are disabled.",
        "BIOS 'PCIe Ten Bit Tag Support' = Enabled/Auto on Gen5 platforms that offer it.",
        cfg.tags_ordering,
        sources=("lspci_vvv",),
        roles=HOST,
        needs_gpu=True,
    ),
    Check(
        "pcie.topology_map",
        "GPU topology",
        "host",
        "Several GPUs behind one switch uplink share one x16 for host traffic (loads, KV offload).",
        "Nothing to fix by itself; spread GPUs that load or offload heavily across root ports.",
        cfg.topology_map,
        any_of=("lspci_tv", "lspci_vvv", "sys_pci_nvidia"),
        roles=HOST,
        needs_gpu=True,
        optional=("smi_query_pcie",),
        variants={
            "shared_uplink": Message(
                title="{n_gpu_bdfs} GPU(s) on {n_roots} root port(s), some behind a shared uplink"
            ),
            "gpus_on_root_ports": Message(title="{n_gpu_bdfs} GPU(s) on {n_roots} root port(s)"),
        },
    ),
)
