"""The pcie pane's key-facts line."""

from __future__ import annotations

from gpuaudit.probes.core.spec import FactsByTarget
from gpuaudit.probes.pcie.facts import PcieFacts
from gpuaudit.probes.pcie.parse import GEN_BY_SPEED


def summarize(facts: FactsByTarget) -> str:
    h: PcieFacts | None = facts.get("host")
    if h is None:
        return ""
    parts = []
    gpus = h.gpu_devs()
    n = len(h.gpu_bdfs)
    label = f"{n} GPU{'s' if n != 1 else ''}"
    if h.smi:
        gens = sorted({s.gen_gpumax for s in h.smi if s.gen_gpumax})
        widths = sorted({s.width_max for s in h.smi if s.width_max})
        parts.append(
            f"{label} "
            + "/".join(f"Gen{g}" for g in gens)
            + " "
            + "/".join(f"x{w}" for w in widths)
        )
    elif gpus:
        gens = sorted({GEN_BY_SPEED.get(d.lnkcap_speed or 0, 0) for d in gpus} - {0})
        parts.append(f"{label} " + "/".join(f"Gen{g}" for g in gens))
    elif n:
        parts.append(label)
    mrrs = sorted({d.devctl_mrrs for d in gpus if d.devctl_mrrs})
    if mrrs:
        parts.append("MRRS " + "/".join(map(str, mrrs)))
    elif problem := h.problems.get("lspci_vvv"):
        parts.append("MRRS ? (needs root)" if "root" in problem else "MRRS ?")
    return " · ".join(p.strip() for p in parts)
