"""Typed facts of the pcie probe: lspci device blocks, nvidia-smi link rows, sysfs link/AER values, the GPU paths."""

from __future__ import annotations

from gpuaudit.probes.core.record import Record


class PciDev(Record, frozen=True):
    bdf: str
    description: str = ""
    port_type: str | None = None
    is_gpu: bool = False
    devcap_mps: int | None = None
    devctl_mps: int | None = None
    devctl_mrrs: int | None = None
    lnkcap_speed: float | None = None
    lnkcap_width: int | None = None
    aspm_ctl: str | None = None
    acs_ctl: dict[str, bool] | None = None
    tag10_req_cap: bool | None = None
    tag10_req_en: bool | None = None
    relaxed_ordering: bool | None = None
    ue_status: list[str] | None = None
    """AER UESta bits set; None = no UESta line read (no AER capability or access denied)."""
    ce_status: list[str] | None = None
    access_denied: bool = False
    lines: dict[str, int] = {}
    """Field -> the 0-based line of lspci_vvv's output it was read from (the evidence jump lands there)."""


class SmiLink(Record, frozen=True):
    """nvidia-smi's PCIe row of one GPU; the current (volatile) values are in `PcieFacts.link_now`."""

    index: str
    bus_id: str
    util: float | None = None
    gen_cur: int | None = None
    gen_gpumax: int | None = None
    gen_hostmax: int | None = None
    width_cur: int | None = None
    width_max: int | None = None


class LinkNow(Record, frozen=True):
    """What a link does right now (changes with load and power state on an unchanged machine: a volatile fact)."""

    util: float | None = None
    gen_cur: int | None = None
    width_cur: int | None = None
    lnksta_speed: float | None = None
    lnksta_width: int | None = None
    speed_downgraded: bool = False
    width_downgraded: bool = False
    sysfs: dict[str, str] = {}
    """current_link_speed / current_link_width from sysfs."""


class SysPci(Record, frozen=True):
    bdf: str
    upstream: str | None = None
    values: dict[str, str] = {}
    upstream_values: dict[str, str] = {}


class PcieFacts(Record, frozen=True):
    devices: list[PciDev] = []
    gpu_bdfs: list[str] = []
    """GPU functions (display/3D class) from lspci, sysfs or nvidia-smi, normalised BDFs."""
    parents: dict[str, list[str]] = {}
    """GPU BDF -> upstream bridges from its parent up to the root port."""
    tree_source: str | None = None
    """Where `parents` came from: "lspci -tv", "lspci -vvv bus numbers" or "sysfs upstream port"."""
    smi: list[SmiLink] = []
    """Stable per-GPU maxima (util, gen_cur and width_cur are None here: see link_now)."""
    link_now: dict[str, LinkNow] = {}
    """BDF -> the link's current state (volatile)."""
    sysfs: list[SysPci] = []
    aspm_policy: str | None = None
    cmdline: str | None = None
    problems: dict[str, str] = {}

    def gpu_devs(self) -> list[PciDev]:
        return [d for d in self.devices if d.is_gpu]

    def smi_rows(self) -> list[SmiLink]:
        """nvidia-smi rows with their current values put back (what the load check judges)."""
        return [
            s.model_copy(update={k: getattr(now, k) for k in ("util", "gen_cur", "width_cur")})
            if (now := self.link_now.get(s.bus_id)) is not None
            else s
            for s in self.smi
        ]

    def by_bdf(self) -> dict[str, PciDev]:
        return {d.bdf: d for d in self.devices}
