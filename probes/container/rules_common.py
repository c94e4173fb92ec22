"""Helpers shared by the container rules: finding builder, reasons, sizes, config matching."""

from __future__ import annotations

from gpuaudit.probes.container.commands import PROBE_ID
from gpuaudit.probes.container.facts import ContainerFacts, CtConfig
from gpuaudit.probes.core.models import Finding, Role
from gpuaudit.probes.core.spec import finding, problem_text

GIB = 1024**3


def _mk(slug: str, severity: str, title: str, *, targets: tuple[Role, ...] = ("host",), observed: str = "",
        expected: str = "", why: str = "", fix: str = "", evidence: list[tuple[Role, str]] | None = None) -> Finding:
    return finding(PROBE_ID, slug, severity, title, targets=targets, observed=observed, expected=expected, why=why,
                   fix=fix, evidence=evidence or [])


def _why(f: ContainerFacts, *cids: str) -> str:
    return problem_text(f.problems, *cids)


def _na_no_container(slug: str, title: str, evidence: list[tuple[Role, str]] | None = None) -> Finding:
    return _mk(slug, "ok", f"{title}: not applicable", observed="not applicable: no container target", evidence=evidence)


def _gib(n: int | None) -> str:
    if n is None:
        return "unknown"
    return f"{n / GIB:.0f} GiB" if n >= GIB else f"{n / 1024**2:.0f} MiB"


def match_config(host: ContainerFacts, ctr: ContainerFacts | None) -> tuple[CtConfig | None, str]:
    """Which host config belongs to the container target: cgroup id, then hostname, then the only GPU container."""
    configs = host.configs or {}
    if ctr is not None:
        if ctr.cgroup_lxc_id and ctr.cgroup_lxc_id in configs:
            return configs[ctr.cgroup_lxc_id], f"CT {ctr.cgroup_lxc_id} (from the container's /proc/self/cgroup)"
        if ctr.hostname:
            hits = [c for c in configs.values() if (c.hostname or "").lower() == ctr.hostname.lower()]
            if len(hits) == 1:
                return hits[0], f"CT {hits[0].vmid} (hostname {ctr.hostname})"
    gpu = [c for c in configs.values() if c.has_nvidia]
    if len(gpu) == 1:
        return gpu[0], f"CT {gpu[0].vmid} (the only GPU container on the host)"
    return None, ""


def _scope(host: ContainerFacts, ctr: ContainerFacts | None) -> tuple[list[CtConfig], str]:
    """Configs the host-side checks judge: the matched one, else every GPU container on the host."""
    cfg, how = match_config(host, ctr)
    if cfg is not None:
        return [cfg], how
    gpu = [c for c in (host.configs or {}).values() if c.has_nvidia]
    return gpu, f"all {len(gpu)} GPU container config(s)" + (" (the container target could not be matched)" if ctr else "")


def _configs_unavailable(slug: str, title: str, host: ContainerFacts) -> Finding | None:
    if host.configs is None:
        return _mk(slug, "unknown", f"{title}: container configs not read", observed=_why(host, "pve_lxc_confs"),
                   evidence=[("host", "pve_lxc_confs")])
    if not host.is_pve:
        return _mk(slug, "ok", f"{title}: not applicable", observed="not applicable: not a Proxmox host (no /etc/pve/lxc)",
                   evidence=[("host", "pve_lxc_confs")])
    return None


def host_without_nvidia(host: ContainerFacts) -> str | None:
    """Why GPU passthrough checks don't apply (the host has no NVIDIA driver loaded), or None when they do.

    Only a positive reading counts: /proc/devices was read and lists no NVIDIA major, and no /dev/nvidia*
    node exists on the host. Unknown host facts keep the checks running (they then say unknown).
    """
    if host.majors is None or host.majors:
        return None
    if host.nodes is None or any(n.path.startswith("/dev/nvidia") for n in host.nodes):
        return None
    return "not applicable: the host has no NVIDIA driver loaded (no nvidia major in /proc/devices, no /dev/nvidia*)"
