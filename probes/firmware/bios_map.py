"""The per-vendor BIOS attribute map, as data: raw Redfish `Attributes` name -> one normalised setting.

Each row names the vendor family whose BMC uses the name, the attribute (Supermicro appends a per-build
`_XXXX` hex suffix: `Above4GDecoding_0041` matches the row `Above4GDecoding`), the normalised setting, how its
value is read (a `kind` from bios.py's value readers, or an explicit value table), and its source: the public
capture the name was seen in (a URL pinned to a commit; the same capture is under tests/fixtures/redfish) or,
where no public capture was found, the issue's list of names from the vendor tools' trackers (`observed=False`).

Names not in this table are kept raw and shown as such; a value a row cannot read is shown raw too. Nothing
is inferred from a name that merely looks similar.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LIBREDFISH = "https://github.com/NVIDIA/libredfish/blob/c094c9e68366039c2edc2313642fbcedc42e10de/tests/mockups/"
HPE_DL385 = LIBREDFISH + "hpe/redfish/v1/Systems/1/Bios/index.json"
DELL_R750 = LIBREDFISH + "dell/redfish/v1/Systems/System.Embedded.1/Bios/index.json"
LENOVO_SR670 = LIBREDFISH + "lenovo/redfish/v1/Systems/1/Bios/index.json"
SMC_821GE = LIBREDFISH + "supermicro/redfish/v1/Systems/1/Bios/index.json"
DGX_H100 = LIBREDFISH + "nvidia_viking/redfish/v1/Systems/DGX/Bios/index.json"
CISCO_C225 = (
    "https://github.com/akaliwod/iserver/blob/bf55df81e5599f128ee92230cc87bc3952ce017a/"
    "doc/redfish-tests-cisco-ucsc-c225-m6s/UriSystems.md"
)
DMTF_RACKMOUNT = (
    "https://github.com/DMTF/Redfish-Mockup-Server/blob/9a86585f5e93a6b102d5f32bcc20a6cd9fbe9474/"
    "public-rackmount1/Systems/437XR1138R2/Bios/index.json"
)
DELL_XE8545_SETTINGS = (
    "https://github.com/mlcommons/inference_results_v2.1/blob/main/closed/Dell/power/"
    "power-settings_XE8545-A100-SXM-40GBx4.md"
)
ISSUE_27 = (
    "issue 27: name reported by the vendor tools' trackers (AMD amd-perftune, weka bios_tool); "
    "no public capture found"
)

SETTINGS: dict[str, str] = {
    "determinism": "Determinism slider (power / performance)",
    "determinism_control": "Determinism control (auto / manual)",
    "power_profile": "System / workload power profile",
    "ppt_control": "Package power limit control",
    "ppt_w": "Package power limit (W)",
    "ctdp_w": "cTDP (W)",
    "nps": "NUMA nodes per socket",
    "l3_as_numa": "ACPI SRAT L3 cache as NUMA domain",
    "numa": "NUMA (memory not interleaved across sockets)",
    "node_interleave": "Node interleaving",
    "snc": "Sub-NUMA clustering",
    "df_cstates": "Data-fabric C-states",
    "apbdis": "APBDIS (1: data-fabric P-states fixed)",
    "fixed_soc_pstate": "Fixed SoC / Infinity Fabric P-state",
    "xgmi_width": "xGMI forced link width",
    "xgmi_max_width": "xGMI maximum link width",
    "xgmi_width_control": "xGMI link width control",
    "global_cstate": "Global C-state control",
    "package_cstate": "Package C-state limit",
    "c1e": "C1E",
    "aspm": "PCIe ASPM",
    "above_4g": "Above-4G decoding / MMIO above 4 GB",
    "rebar": "Resizable BAR",
    "ten_bit_tags": "PCIe ten-bit tags",
    "iommu": "IOMMU / VT-d",
    "sriov": "SR-IOV",
    "smt": "SMT / Hyper-Threading",
    "boost": "Core performance boost / Turbo",
    "cppc": "CPPC",
    "virtualization": "CPU virtualization (VT-x/AMD-V; Dell: with VT-d)",
}
"""Normalised setting id -> what it is (the BIOS pane's label)."""


@dataclass(frozen=True, slots=True)
class MapRow:
    """One vendor's BIOS attribute mapped to one normalised setting."""

    vendor: str
    """hpe, dell, lenovo, supermicro, cisco, ami (AMI Aptio / AMD CBS tokens, OpenBMC), dmtf (the DMTF mockup)."""
    attribute: str
    setting: str
    kind: str
    """onoff, nps, determinism, width, pstate, number, raw, table (see bios.py)."""
    source: str
    table: dict[str, str] = field(default_factory=dict)
    """kind="table": raw value (case-insensitive) -> normalised value."""
    observed: bool = True
    """False: the name comes from the issue's list, not from a capture in tests/fixtures/redfish."""


def _r(
    vendor: str,
    attribute: str,
    setting: str,
    kind: str,
    source: str,
    table: dict[str, str] | None = None,
    observed: bool = True,
) -> MapRow:
    return MapRow(vendor, attribute, setting, kind, source, dict(table or {}), observed)


HPE_WORKLOAD = {
    "GeneralPowerEfficientCompute": "power-efficient",
    "GeneralPeakFrequencyCompute": "peak-frequency",
    "GeneralThroughputCompute": "throughput",
    "HighPerformanceCompute": "hpc",
    "LowLatency": "low-latency",
    "Custom": "custom",
}
DELL_SYSPROFILE = {
    "PerfOptimized": "max-performance",
    "PerfPerWattOptimizedDapc": "power-efficient (DAPC)",
    "PerfPerWattOptimizedOs": "power-efficient (OS)",
    "Custom": "custom",
}
LENOVO_MODE = {
    "MaximumPerformance": "max-performance",
    "Efficiency_FavorPerformance": "efficiency (favor performance)",
    "Efficiency_FavorPower": "efficiency (favor power)",
    "CustomMode": "custom",
}

ROWS: tuple[MapRow, ...] = (
    # HPE iLO 5, ProLiant DL385 Gen10 Plus v2 (AMD EPYC 7763)
    _r(
        "hpe",
        "DeterminismControl",
        "determinism_control",
        "table",
        HPE_DL385,
        {"DeterminismCtrlAuto": "auto", "DeterminismCtrlManual": "manual"},
    ),
    _r("hpe", "PerformanceDeterminism", "determinism", "determinism", HPE_DL385),
    _r("hpe", "WorkloadProfile", "power_profile", "table", HPE_DL385, HPE_WORKLOAD),
    _r("hpe", "NumaMemoryDomainsPerSocket", "nps", "nps", HPE_DL385),
    _r("hpe", "LastLevelCacheAsNUMANode", "l3_as_numa", "onoff", HPE_DL385),
    _r("hpe", "DataFabricCStateEnable", "df_cstates", "onoff", HPE_DL385),
    _r("hpe", "InfinityFabricPstate", "fixed_soc_pstate", "pstate", HPE_DL385),
    _r("hpe", "XGMIForceLinkWidth", "xgmi_width", "width", HPE_DL385),
    _r("hpe", "XGMIMaxLinkWidth", "xgmi_max_width", "width", HPE_DL385),
    _r(
        "hpe",
        "MinProcIdlePower",
        "global_cstate",
        "table",
        HPE_DL385,
        {"C6": "enabled", "NoCState": "disabled"},
    ),
    _r(
        "hpe",
        "PackagePowerLimitControlMode",
        "ppt_control",
        "table",
        HPE_DL385,
        {"Auto": "auto", "Manual": "manual"},
    ),
    _r("hpe", "PackagePowerLimitValue", "ppt_w", "number", HPE_DL385),
    _r("hpe", "ProcAMDBoost", "boost", "onoff", HPE_DL385),
    _r("hpe", "ProcSMT", "smt", "onoff", HPE_DL385),
    _r("hpe", "ProcAmdIoVt", "iommu", "onoff", HPE_DL385),
    _r("hpe", "Sriov", "sriov", "onoff", HPE_DL385),
    # Dell iDRAC 9, PowerEdge R750 (Intel Xeon)
    _r("dell", "SysProfile", "power_profile", "table", DELL_R750, DELL_SYSPROFILE),
    _r("dell", "ProcCStates", "global_cstate", "onoff", DELL_R750),
    _r("dell", "ProcC1E", "c1e", "onoff", DELL_R750),
    _r("dell", "PcieAspmL1", "aspm", "onoff", DELL_R750),
    _r("dell", "MmioAbove4Gb", "above_4g", "onoff", DELL_R750),
    _r("dell", "LogicalProc", "smt", "onoff", DELL_R750),
    _r("dell", "ProcTurboMode", "boost", "onoff", DELL_R750),
    _r("dell", "SriovGlobalEnable", "sriov", "onoff", DELL_R750),
    _r("dell", "SubNumaCluster", "snc", "raw", DELL_R750),
    _r("dell", "NodeInterleave", "node_interleave", "onoff", DELL_R750),
    _r("dell", "ProcVirtualization", "virtualization", "onoff", DELL_R750),
    # Dell on AMD EPYC: names from the issue's list / a published Dell settings sheet
    _r("dell", "DeterminismSlider", "determinism", "determinism", ISSUE_27, observed=False),
    _r("dell", "DfCState", "df_cstates", "onoff", ISSUE_27, observed=False),
    _r("dell", "NumaNodesPerSocket", "nps", "nps", ISSUE_27, observed=False),
    _r("dell", "ApbDis", "apbdis", "onoff", DELL_XE8545_SETTINGS, observed=False),
    # Lenovo XCC, ThinkSystem SR670 V2 (Intel Xeon)
    _r(
        "lenovo",
        "OperatingModes_ChooseOperatingMode",
        "power_profile",
        "table",
        LENOVO_SR670,
        LENOVO_MODE,
    ),
    _r(
        "lenovo",
        "Processors_CStates",
        "global_cstate",
        "table",
        LENOVO_SR670,
        {"Autonomous": "enabled", "Legacy": "enabled", "Disabled": "disabled"},
    ),
    _r("lenovo", "Processors_C1EnhancedMode", "c1e", "onoff", LENOVO_SR670),
    _r("lenovo", "Power_ASPM", "aspm", "onoff", LENOVO_SR670),
    _r("lenovo", "Processors_HyperThreading", "smt", "onoff", LENOVO_SR670),
    _r("lenovo", "Processors_TurboMode", "boost", "onoff", LENOVO_SR670),
    _r("lenovo", "DevicesandIOPorts_SRIOV", "sriov", "onoff", LENOVO_SR670),
    _r("lenovo", "DevicesandIOPorts_IntelVTforDirectedIOVTd", "iommu", "onoff", LENOVO_SR670),
    _r("lenovo", "Processors_SNC", "snc", "raw", LENOVO_SR670),
    _r(
        "lenovo",
        "Memory_SocketInterleave",
        "numa",
        "table",
        LENOVO_SR670,
        {"NUMA": "enabled", "Non-NUMA": "disabled"},
    ),
    # Supermicro, SYS-821GE-TNHR (X13, Intel Xeon, HGX H100)
    _r("supermicro", "Above4GDecoding", "above_4g", "onoff", SMC_821GE),
    _r("supermicro", "Re_SizeBARSupport", "rebar", "onoff", SMC_821GE),
    _r("supermicro", "PCIeASPMSupport_Global_", "aspm", "onoff", SMC_821GE),
    _r("supermicro", "Hyper_Threading_ALL_", "smt", "onoff", SMC_821GE),
    _r("supermicro", "TurboMode", "boost", "onoff", SMC_821GE),
    _r("supermicro", "IntelVTforDirectedI_O_VT_d_", "iommu", "onoff", SMC_821GE),
    _r("supermicro", "NUMA", "numa", "onoff", SMC_821GE),
    _r("supermicro", "SNC", "snc", "raw", SMC_821GE),
    _r("supermicro", "PackageCState", "package_cstate", "raw", SMC_821GE),
    _r("supermicro", "EnhancedHaltState_C1E_", "c1e", "onoff", SMC_821GE),
    # Supermicro on AMD EPYC (H12/H13/H14): names from the issue's list
    _r("supermicro", "DFCstates", "df_cstates", "onoff", ISSUE_27, observed=False),
    _r("supermicro", "NUMANodesPerSocket", "nps", "nps", ISSUE_27, observed=False),
    _r(
        "supermicro",
        "DeterminismControl",
        "determinism_control",
        "table",
        ISSUE_27,
        {"Auto": "auto", "Manual": "manual"},
        observed=False,
    ),
    _r("supermicro", "xGMILinkWidthControl", "xgmi_width_control", "raw", ISSUE_27, observed=False),
    _r("supermicro", "PCIeTenBitTagSupport", "ten_bit_tags", "onoff", ISSUE_27, observed=False),
    # Cisco CIMC, UCS C225 M6S (AMD EPYC 7763): AMD CBS tokens + Cisco names
    _r("ami", "CbsCmnGnbSMUDfCstates", "df_cstates", "onoff", CISCO_C225),
    _r("ami", "CbsDfCmnDramNps", "nps", "nps", CISCO_C225),
    _r("ami", "CbsCmnDeterminismSlider", "determinism", "determinism", CISCO_C225),
    _r("ami", "CbsCmnApbdis", "apbdis", "onoff", CISCO_C225),
    _r("ami", "CbsCmnFixedSocPstate", "fixed_soc_pstate", "pstate", CISCO_C225),
    _r("ami", "CbsCmnCpuGlobalCstateCtrl", "global_cstate", "onoff", CISCO_C225),
    _r("ami", "CbsCmnGnbNbIOMMU", "iommu", "onoff", CISCO_C225),
    _r("ami", "CbsCmnGnbSMUCPPC", "cppc", "onoff", CISCO_C225),
    _r("ami", "CbsCpuSmtCtrl", "smt", "onoff", CISCO_C225),
    _r("ami", "CbsCmnCpuCpb", "boost", "onoff", CISCO_C225),
    _r("ami", "CbsDfCmnAcpiSratL3Numa", "l3_as_numa", "onoff", CISCO_C225),
    _r("cisco", "MemoryMappedIOAbove4GB", "above_4g", "onoff", CISCO_C225),
    _r("cisco", "SrIov", "sriov", "onoff", CISCO_C225),
    # AMI/OpenBMC CBS token names from the issue's list (amd-perftune reads them)
    _r("ami", "CbsCmnGnbSmuDfCstatesRs", "df_cstates", "onoff", ISSUE_27, observed=False),
    _r("ami", "CbsCmnDeterminismEnable", "determinism", "determinism", ISSUE_27, observed=False),
    # NVIDIA DGX H100 (AMI Aptio BIOS, Intel Xeon)
    _r("ami", "PciePort10bitTag", "ten_bit_tags", "onoff", DGX_H100),
    _r("ami", "SRIOVEnable", "sriov", "onoff", DGX_H100),
    _r("ami", "VTdSupport", "iommu", "onoff", DGX_H100),
    _r("ami", "TurboMode", "boost", "onoff", DGX_H100),
    _r("ami", "NumaEn", "numa", "onoff", DGX_H100),
    _r("ami", "PackageCState", "package_cstate", "raw", DGX_H100),
    # DMTF's public mockup (generic names)
    _r("dmtf", "ProcTurboMode", "boost", "onoff", DMTF_RACKMOUNT),
    _r("dmtf", "ProcHyperthreading", "smt", "onoff", DMTF_RACKMOUNT),
    _r(
        "dmtf",
        "PowerProfile",
        "power_profile",
        "table",
        DMTF_RACKMOUNT,
        {"MaxPerf": "max-performance"},
    ),
)

VENDOR_OF_MANUFACTURER: tuple[tuple[str, str], ...] = (
    ("hpe", "hpe"),
    ("hewlett", "hpe"),
    ("dell", "dell"),
    ("lenovo", "lenovo"),
    ("supermicro", "supermicro"),
    ("cisco", "cisco"),
)
"""ComputerSystem.Manufacturer (lower-case substring) -> vendor family; rows of other families then don't apply
(HPE and Dell both use `WorkloadProfile`, with different values). `ami`, `cisco` CBS and `dmtf` rows apply to
any vendor whose BMC uses those names (AMI Aptio tokens appear under many brands)."""
GENERIC_VENDORS = frozenset({"ami", "dmtf"})
