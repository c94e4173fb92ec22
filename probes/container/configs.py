"""Pure helpers over the container facts: which host config is the container's, what its allow-list lets in."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuaudit.probes.container.facts import ContainerFacts, CtConfig
from gpuaudit.probes.core.judge.checks import Ctx, source_problem
from gpuaudit.probes.core.models import Role

GIB = 1024**3
NVIDIACTL_MINOR = 255


def gib(n: int | None) -> str:
    if n is None:
        return "unknown"
    return f"{n / GIB:.0f} GiB" if n >= GIB else f"{n / 1024**2:.0f} MiB"


def why_unusable(ctx: Ctx, command_id: str, role: Role) -> str:
    """Why an optional source gave no data on a target ("not collected", "needs root ...", a parse problem)."""
    facts = ctx.of(role)
    return source_problem(ctx.outputs.get(role, {}).get(command_id), facts) or "no data"


def match_config(host: ContainerFacts, ctr: ContainerFacts | None) -> tuple[CtConfig | None, str]:
    """Which host config belongs to the container target: cgroup id, then hostname, then the only GPU container."""
    configs = host.configs or {}
    if ctr is not None:
        if ctr.cgroup_lxc_id and ctr.cgroup_lxc_id in configs:
            return configs[
                ctr.cgroup_lxc_id
            ], f"CT {ctr.cgroup_lxc_id} (from the container's /proc/self/cgroup)"
        if ctr.hostname:
            hits = [
                c for c in configs.values() if (c.hostname or "").lower() == ctr.hostname.lower()
            ]
            if len(hits) == 1:
                return hits[0], f"CT {hits[0].vmid} (hostname {ctr.hostname})"
    gpu = [c for c in configs.values() if c.has_nvidia]
    if len(gpu) == 1:
        return gpu[0], f"CT {gpu[0].vmid} (the only GPU container on the host)"
    return None, ""


def scope(host: ContainerFacts, ctr: ContainerFacts | None) -> tuple[list[CtConfig], str]:
    """Configs the host-side checks judge: the matched one, else every GPU container on the host."""
    cfg, how = match_config(host, ctr)
    if cfg is not None:
        return [cfg], how
    gpu = [c for c in (host.configs or {}).values() if c.has_nvidia]
    return gpu, f"all {len(gpu)} GPU container config(s)" + (
        " (the container target could not be matched)" if ctr else ""
    )


def host_majors_text(host: ContainerFacts) -> str:
    return ", ".join(
        f"{n} {m}" for n, m in sorted((host.majors or {}).items(), key=lambda kv: kv[1])
    )


@dataclass
class Coverage:
    """Problems of one config's device allow-list against the host's devices, by severity."""

    critical: list[str] = field(default_factory=list)
    warning: list[str] = field(default_factory=list)
    info: list[str] = field(default_factory=list)


def _passed_gpu_minors(cfg: CtConfig, host: ContainerFacts) -> set[int]:
    """GPU minors the container should reach: those its config passes, else every nvidiaN on the host."""
    return cfg.gpu_minors or {
        n.minor
        for p, n in host.char_nodes().items()
        if p[len("/dev/nvidia") :].isdigit() and n.minor is not None
    }


def coverage(cfg: CtConfig, host: ContainerFacts) -> Coverage:
    """What the allow-list of one config misses, minor by minor (`c 195:0` does not let nvidiactl 195:255 in)."""
    out = Coverage()
    v2 = [r for r in cfg.rules if not r.v1]
    if any(r.type == "a" for r in v2):
        out.info.append(
            "allow-list contains 'a' (every device allowed): passes trivially, a security choice"
        )
    if any(r.v1 for r in cfg.rules) and not v2:
        out.critical.append(
            "only legacy lxc.cgroup.devices.allow (cgroup v1) rules, ignored on a cgroup v2 host"
        )
    host_nodes = host.char_nodes()
    dev_numbers = {
        (n.major, n.minor) for p in cfg.dev_paths if (n := host_nodes.get(p)) is not None
    }

    def allowed(major: int, minor: int | None) -> bool:
        return (
            any(r.covers(major, minor) for r in v2)
            or (major, minor) in dev_numbers
            or (minor is None and any(m == major for m, _ in dev_numbers))
        )

    listed = ", ".join(r.label() for r in v2) or "none"
    majors = host.majors or {}
    frontend = majors.get("nvidia-frontend", 195)
    wanted: list[tuple[str, int, int | None, list[str]]] = [
        ("nvidiactl", frontend, NVIDIACTL_MINOR, out.critical)
    ]
    wanted += [
        (f"nvidia{m}", frontend, m, out.critical) for m in sorted(_passed_gpu_minors(cfg, host))
    ]
    if (uvm := majors.get("nvidia-uvm")) is not None:
        wanted.append(("nvidia-uvm", uvm, 0, out.critical))
    else:
        out.warning.append(
            "nvidia-uvm is not in the host's /proc/devices (module not loaded): its major cannot be checked"
        )
    if (caps := majors.get("nvidia-caps")) is not None:
        wanted.append(("nvidia-caps", caps, None, out.warning))
    for name, major, minor, bucket in wanted:
        if not allowed(major, minor):
            bucket.append(
                f"{name} {major}:{'*' if minor is None else minor} not allowed (allow-list: {listed})"
            )
    return out
