"""Verdicts on detection, privilege, the cgroup device allow-list, majors and device nodes (pure, over facts)."""

from __future__ import annotations

import re

from gpuaudit.probes.container.configs import (
    coverage,
    host_majors_text,
    match_config,
    scope,
    why_unusable,
)
from gpuaudit.probes.container.facts import ContainerFacts, CtConfig, Node
from gpuaudit.probes.core.judge.checks import Ctx, Verdict, critical, info, ok, unknown, warning


def _pair(ctx: Ctx) -> tuple[ContainerFacts, ContainerFacts | None]:
    return ctx.of("host"), ctx.of("container")


def detect(ctx: Ctx) -> Verdict:
    host, ctr = _pair(ctx)
    parts = []
    if host.configs is not None and host.is_pve:
        gpu_cts = sorted(c.vmid for c in host.configs.values() if c.has_nvidia)
        parts.append(
            f"host: Proxmox, {len(host.configs)} LXC config(s), GPU passthrough in "
            f"{', '.join('CT ' + v for v in gpu_cts) or 'none'}"
        )
    if ctr is not None:
        cfg, how = match_config(host, ctr)
        parts.append(
            f"container: {ctr.kind or 'unknown kind'}"
            + (f", hostname {ctr.hostname}" if ctr.hostname else "")
            + (f", matched {how}" if cfg else "")
        )
    return info("; ".join(parts), evidence=(("container", "virt"),) if ctr is not None else ())


def not_lxc(ctx: Ctx) -> str | None:
    """LXC-only checks don't apply to a container known to be something else (Docker, say)."""
    ctr = ctx.of("container")
    kind = ctr.kind if ctr is not None else None
    return f"{kind} container, not LXC" if kind and kind != "lxc" else None


def lxc_privilege(ctx: Ctx) -> Verdict:
    host, ctr = _pair(ctx)
    assert ctr is not None  # a cross-target check runs only with both targets
    cfg, how = match_config(host, ctr)
    parts = (
        [f"config {how}: {'unprivileged' if cfg.unprivileged else 'privileged'}"]
        if cfg is not None
        else []
    )
    if ctr.uid_map_unprivileged is not None:
        parts.append(
            "container uid_map: "
            + ("mapped (unprivileged)" if ctr.uid_map_unprivileged else "0 -> 0 (privileged)")
        )
    return info("; ".join(parts) or "uid_map read, no mapping line")


def _config_applies(ctx: Ctx) -> str | None:
    host: ContainerFacts = ctx.f
    if host.is_pve is False:
        return "not a Proxmox host (no /etc/pve/lxc)"
    if not scope(host, ctx.of("container"))[0]:
        return "no container config passes NVIDIA devices"
    return None


def device_cgroup_applies(ctx: Ctx) -> str | None:
    return not_lxc(ctx) or _config_applies(ctx)


_CGROUP_WHY = (
    "CUDA needs nvidiactl (195:255), the GPU's nvidiaN (195:N) and nvidia-uvm; the uvm and caps majors are "
    "assigned dynamically at module load, so an allow-list must match this host's /proc/devices, minor by minor "
    "where it names minors."
)
_CGROUP_FIX = (
    "Allow every NVIDIA major from the host's /proc/devices (lxc.cgroup2.devices.allow: c <major>:* rwm), "
    "or use PVE 8.1+ devN: /dev/nvidia0 ... /dev/nvidia-uvm entries, which create the rule for you."
)


def device_cgroup(ctx: Ctx) -> Verdict:
    host: ContainerFacts = ctx.f
    configs, how = scope(host, ctx.of("container"))
    crit: list[str] = []
    warn: list[str] = []
    notes: list[str] = []
    for cfg in configs:
        cov = coverage(cfg, host)
        crit += [f"CT {cfg.vmid}: {x}" for x in cov.critical]
        warn += [f"CT {cfg.vmid}: {x}" for x in cov.warning]
        notes += [f"CT {cfg.vmid}: {x}" for x in cov.info]
    host_m = f" — host /proc/devices: {host_majors_text(host)}"
    if crit:
        return critical(
            "; ".join(crit + warn) + host_m,
            "every NVIDIA device the container uses allowed",
            variant="allow_list_blocks_nvidia",
        )
    if warn:
        return warning(
            "; ".join(warn) + host_m,
            "every NVIDIA major allowed",
            variant="allow_list_incomplete_caps",
        )
    if notes:
        return info(
            "; ".join(notes) + f" ({how})",
            variant="container_allows_all_devices",
        )
    allowed = "; ".join(
        f"CT {c.vmid}: {', '.join(r.label() for r in c.rules if not r.v1) or 'devN entries'}"
        for c in configs
    )
    return ok(f"{how}: allowed {allowed}{host_m}")


def _expected_major(path: str, majors: dict[str, int]) -> int | None:
    name = path.rsplit("/", 1)[-1]
    if name.startswith("nvidia-uvm"):
        return majors.get("nvidia-uvm")
    if path.startswith("/dev/nvidia-caps/"):
        return majors.get("nvidia-caps")
    if re.fullmatch(r"nvidia(\d+|ctl|-modeset)", name):
        return majors.get("nvidia-frontend", 195)
    return None


def _stale_nodes(ctr: ContainerFacts, majors: dict[str, int]) -> list[str]:
    """Container device nodes whose major is not the host's current one (stale mknod / copied nodes)."""
    return [
        f"container {n.path} is {n.major}:{n.minor}, host {n.path.rsplit('/', 1)[-1]} major is {want}"
        for n in ctr.char_nodes().values()
        if n.major is not None
        and (want := _expected_major(n.path, majors)) is not None
        and n.major != want
    ]


def _stale_rules(host: ContainerFacts, configs: list[CtConfig]) -> tuple[list[str], list[str]]:
    """Hard-coded allow-list majors that name no host device: critical when a needed device is then blocked."""
    crit: list[str] = []
    warn: list[str] = []
    majors = host.majors or {}
    for cfg in configs:
        blocked = bool(coverage(cfg, host).critical)
        for r in cfg.rules:
            if r.type == "c" and r.major is not None and r.major not in (host.all_majors or []):
                (crit if blocked else warn).append(
                    f"CT {cfg.vmid} allows c {r.major}:* but no host device has major {r.major} "
                    f"(host: nvidia-uvm {majors.get('nvidia-uvm', '?')}, nvidia-caps {majors.get('nvidia-caps', '?')})"
                )
    return crit, warn


_MAJOR_WHY = (
    "nvidia-uvm and nvidia-caps majors are dynamic: a rule or node written for another boot or driver "
    "(511 vs 510, 236 vs 235) silently stops matching and CUDA then fails to initialise in the container."
)
_MAJOR_FIX = "Re-derive the majors from the host's /proc/devices (or switch to devN: entries) and restart the container."


def device_major_match(ctx: Ctx) -> Verdict:
    host, ctr = _pair(ctx)
    assert ctr is not None
    lxc_configs = (
        scope(host, ctr)[0] if host.configs and not not_lxc(ctx) else []
    )  # a Docker target has no LXC config
    rule_crit, rule_warn = _stale_rules(host, lxc_configs)
    crit = _stale_nodes(ctr, host.majors or {}) + rule_crit
    expected = f"host majors: {host_majors_text(host)}"
    if crit:
        return critical(
            "; ".join(crit + rule_warn),
            expected,
            variant="container_device_majors_do_not",
        )
    if rule_warn:
        return warning(
            "; ".join(rule_warn),
            expected,
            variant="stale_device_major_container_allow",
        )
    if host.configs is None and not_lxc(ctx) is None:
        return unknown(
            f"host container configs: {why_unusable(ctx, 'pve_lxc_confs', 'host')} "
            f"(container nodes match host /proc/devices: {host_majors_text(host)})",
            evidence=(("host", "pve_lxc_confs"),),
        )
    used = sorted({n.major for n in ctr.char_nodes().values() if n.major is not None})
    return ok(
        f"host /proc/devices: {host_majors_text(host)}; container nodes use majors {', '.join(map(str, used)) or 'none'}",
        variant="container_device_majors_match_host",
        evidence=(("host", "pve_lxc_confs"),),
    )


def _wanted_gpus(host: ContainerFacts, ctr: ContainerFacts) -> tuple[set[int], str]:
    cfg, how = match_config(host, ctr) if host.configs else (None, "")
    if cfg is not None and cfg.gpu_minors:
        return cfg.gpu_minors, f"passed by {how}"
    return (
        {
            int(p[len("/dev/nvidia") :])
            for p in host.char_nodes()
            if p[len("/dev/nvidia") :].isdigit()
        },
        "present on the host",
    )


def _missing(path: str, ctr: ContainerFacts) -> str:
    return (
        f"{path} (an empty placeholder file, not a device)" if path in ctr.placeholders() else path
    )


def _closed_nodes(
    host: ContainerFacts, ctr: ContainerFacts, nodes: dict[str, Node]
) -> list[str] | None:
    """Nodes an unprivileged container cannot open (not o+rw), or None when the container is privileged/unknown."""
    cfg = match_config(host, ctr)[0] if host.configs else None
    unpriv = (
        ctr.uid_map_unprivileged
        if ctr.uid_map_unprivileged is not None
        else (cfg.unprivileged if cfg else None)
    )
    if not unpriv:
        return None
    return [
        p for p, n in nodes.items() if not p.startswith("/dev/nvidia-caps") and n.mode[7:9] != "rw"
    ]


def _host_lacks(host: ContainerFacts, ctr: ContainerFacts) -> list[str]:
    """Nodes the container's config passes that the host itself does not have (an optional mount then skips them)."""
    cfg = match_config(host, ctr)[0] if host.configs else None
    have = host.char_nodes()
    return [
        p
        for p in (cfg.nvidia_paths if cfg else [])
        if p not in have and not p.startswith("/dev/nvidia-caps")
    ]


def device_nodes(ctx: Ctx) -> Verdict:
    host, ctr = _pair(ctx)
    assert ctr is not None
    have = ctr.char_nodes()
    want, src = _wanted_gpus(host, ctr)
    crit = [
        _missing(p, ctr)
        for p in ("/dev/nvidiactl", "/dev/nvidia-uvm", *(f"/dev/nvidia{i}" for i in sorted(want)))
        if p not in have
    ]
    seen = ", ".join(sorted(have)) or "no /dev/nvidia* device nodes"
    placeholders = ctr.placeholders()
    obs = (
        f"container has {seen}"
        + (f"; placeholder files (not devices): {', '.join(placeholders)}" if placeholders else "")
        + f"; expected nvidiactl, nvidia-uvm and nvidia{{{','.join(map(str, sorted(want)))}}} ({src})"
    )
    if lacking := _host_lacks(host, ctr):
        obs += f"; the host itself lacks {', '.join(lacking)} (an optional mount skipped it at container start)"
    if crit:
        short = ", ".join(p.split(" ")[0] for p in crit[:4]) + ("..." if len(crit) > 4 else "")
        return critical(
            f"missing in container: {', '.join(crit)}; {obs}",
            "nvidiactl, nvidia-uvm and every passed nvidiaN as character devices inside the container",
            variant="container_lacks",
            short=short,
        )
    if closed := _closed_nodes(host, ctr, have):
        return warning(
            f"{', '.join(closed)} not rw for others in an unprivileged container",
            "crw-rw-rw- (0666) on the host, or a gid mapping for the nodes' group",
            variant="unprivileged_container_device_nodes_not",
        )
    if "/dev/nvidia-uvm-tools" not in have:
        return info(
            obs,
            variant="container_lacks_nvidia_uvm_tools",
        )
    return ok(obs, variant="container_has_every_nvidia_device")
