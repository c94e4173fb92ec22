"""Driver knowledge the rules use: GPU architectures, minimum branches, Xid classes, name helpers."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from gpuaudit.probes.core.judge.checks import Ctx
from gpuaudit.probes.core.models import Role
from gpuaudit.probes.core.parsing import version_tuple
from gpuaudit.probes.driver.facts import DriverFacts, GpuState

_XML_ARCH = {
    "ada lovelace": "Ada",
    "blackwell": "Blackwell",
    "hopper": "Hopper",
    "ampere": "Ampere",
    "turing": "Turing",
    "volta": "Volta",
    "pascal": "Pascal",
    "maxwell": "Maxwell",
    "kepler": "Kepler",
}


def gpu_arch(
    compute_cap: str | None, name: str | None, architecture: str | None = None
) -> str | None:
    """Architecture from compute capability (preferred), the XML's product_architecture, or the product name."""
    if not compute_cap and architecture and (arch := _XML_ARCH.get(architecture.strip().lower())):
        return arch
    cc = version_tuple(compute_cap or "")
    if cc:
        major, minor = cc[0], (cc[1] if len(cc) > 1 else 0)
        if major in (10, 11, 12):
            return "Blackwell"
        return {
            9: "Hopper",
            7: "Turing" if minor >= 5 else "Volta",
            6: "Pascal",
            5: "Maxwell",
            3: "Kepler",
        }.get(major) or (("Ada" if minor >= 9 else "Ampere") if major == 8 else None)
    n = (name or "").upper()
    if re.search(r"BLAC|RTX 50\d0|\bB[12]00\b|GB[23]00|RTX PRO \d+", n):
        return "Blackwell"
    if re.search(r"H100|H200|H20\b|H800|GH200", n):
        return "Hopper"
    if re.search(r"RTX 40\d0|L40|\bL4\b|L20|RTX \d000 ADA", n):
        return "Ada"
    if re.search(r"A100|A30|A40|A10\b|A16|A2\b|RTX 30\d0|RTX A\d000", n):
        return "Ampere"
    if re.search(r"RTX 20\d0|T4\b|QUADRO RTX|TITAN RTX", n):
        return "Turing"
    if re.search(r"V100|TITAN V", n):
        return "Volta"
    # older boards, named in the product name only (drivers before R510 cannot query compute_cap)
    if re.search(r"GTX 10\d0|TITAN XP|QUADRO P\d|TESLA P\d|\bP100\b|\bP40\b|\bP4\b", n):
        return "Pascal"
    if re.search(r"GTX 9\d0|GTX 750|TITAN X\b|QUADRO M\d|TESLA M\d", n):
        return "Maxwell"
    if re.search(r"GTX 6\d0|GTX 7[0-8]0|TITAN (?:BLACK|Z)\b|QUADRO K\d|TESLA K\d", n):
        return "Kepler"
    return None


# First driver branch that supports the architecture: CUDA 12.8 / R570 for Blackwell [PT-27, LLMD-5],
# CUDA 11.8 / R520 for Hopper and Ada.
MIN_BRANCH = {
    "Blackwell": (570, "CUDA 12.8"),
    "Hopper": (520, "CUDA 11.8"),
    "Ada": (520, "CUDA 11.8"),
}
MAX_BRANCH = {"Kepler": 470, "Maxwell": 580, "Pascal": 580, "Volta": 580}
"""The last driver branch that supports the architecture: R470 for Kepler (a legacy branch); R580 for Maxwell,
Pascal and Volta (NVIDIA: R580 is the last branch for them; CUDA 13 dropped them)."""
TURING_PLUS = {"Turing", "Ampere", "Ada", "Hopper", "Blackwell"}
DATACENTER = re.compile(
    r"A100|A30\b|A40\b|A10\b|A16|A2\b|H100|H200|H20\b|H800|GH200|B200|B100|GB200|L40|L4\b|L20|"
    r"V100|P100|T4\b|TESLA",
    re.I,
)
XID_CRIT = {
    79: "GPU fallen off the bus",
    48: "double-bit ECC error",
    95: "uncontained ECC error",
    64: "row-remap/page-retirement failure",
    119: "GSP RPC timeout",
    120: "GSP error",
    74: "NVLink error",
    154: "recovery action changed (reset/reboot required)",
}
XID_WARN = {
    63: "row remap / page retirement recorded",
    92: "high single-bit ECC rate",
    94: "contained ECC error",
    61: "internal micro-controller warning",
    62: "internal micro-controller halt",
}
XID_APP = {
    13: "graphics engine exception",
    31: "MMU fault",
    43: "channel reset (app fault)",
    45: "preemptive clean-up after another error or app kill",
}
XID_RECURRING = 5


def short_name(name: str) -> str:
    """ "NVIDIA RTX PRO 6000 Blackwell Server Edition" / "NVIDIA RTX PRO 6000 Blac..." -> "RTX PRO 6000"."""
    n = re.sub(r"^NVIDIA\s+", "", name.strip())
    n = re.sub(r"\s+\S*\.\.\.$", "", n)
    n = re.sub(r"\s+Blackwell\b.*$", "", n)
    return n


def enabled(v: str | None) -> bool | None:
    if v is None:
        return None
    low = v.strip().lower()
    return (
        True
        if low in ("enabled", "on", "yes")
        else False
        if low in ("disabled", "off", "no")
        else None
    )


def gpu_list(gpus: list[GpuState], pred: Callable[[GpuState], object]) -> str:
    return ", ".join(f"GPU{g.index}" for g in gpus if pred(g))


def fleet(gpus: list[GpuState]) -> str:
    names = Counter(short_name(g.name) for g in gpus)
    return ", ".join(f"{n}× {name}" for name, n in names.items())


def no_gpu_reason(ctx: Ctx, role: Role | None = None) -> str:
    """Why no GPU was listed on the judged (or the given) target: the nvidia-smi error, else the framework's
    reading of the GPU sources (never the facts' problems directly)."""
    f: DriverFacts = ctx.of(role) if role else ctx.f
    if f.smi_error:
        return f"nvidia-smi: {f.smi_error}"
    return (
        ctx.problem("smi_q_xml", role)
        or ctx.problem("smi_query_driver", role)
        or ctx.problem("smi_table", role)
        or "no GPU rows in nvidia-smi output"
    )


def archs(f: DriverFacts) -> set[str]:
    return {a for g in f.gpus if (a := gpu_arch(g.compute_cap, g.name, g.architecture))}


def host_version(h: DriverFacts) -> str | None:
    return (
        h.module_version or h.smi_driver_version or (h.gpus[0].driver_version if h.gpus else None)
    )


def is_compat(path: str) -> bool:
    return "/compat/" in path
