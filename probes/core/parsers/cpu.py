"""Parsers for CPU identity, cpufreq and cpuidle outputs (owner: the power probe).

Public API:

* `parse_lscpu(text) -> dict[str, str]`          `lscpu -J` (JSON, nested) or text `lscpu` -> "Field" -> value
* `cpu_identity(fields) -> CpuIdentity`          vendor, family, model, sockets, NUMA nodes from those fields
* `parse_cpupower_frequency_info(text) -> CpuFreqInfo`
* `parse_cpupower_idle_info(text) -> CpuIdleInfo`
* `parse_grep_h(text) -> dict[str, list[str]]`   re-exported from `parsers.system` (PCI paths keep their colons)
* `idle_states_from_sysfs(pairs) -> dict[int, list[IdleState]]`  cpuN/cpuidle/stateM/* files -> per CPU
* `is_deep_cstate(name, latency_us, cpu_vendor) -> bool`  THE definition of a deep C-state (power and firmware)

Pure; they never raise on odd input (unknown lines are skipped, missing values stay None).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

# the command lines shared by the power and firmware probes are declared in lines.py (no parser loads to declare them)
from gpuaudit.probes.core.parsers.lines import CPU_DIR, SYS_CPPC_CMD, SYS_CPUIDLE_CMD
from gpuaudit.probes.core.parsers.system import parse_grep_h
from gpuaudit.probes.core.parsing import parse_once

__all__ = [
    "DEEP_LATENCY_US",
    "LSCPU_CMD",
    "SYS_CPPC_CMD",
    "SYS_CPUIDLE_CMD",
    "CPU_DIR",
    "CpuIdleInfo",
    "IdleState",
    "cpu_identity",
    "cstate_number",
    "idle_states_from_sysfs",
    "is_deep_cstate",
    "parse_cpupower_frequency_info",
    "parse_cpupower_idle_info",
    "parse_grep_h",
    "parse_lscpu",
]

LSCPU_CMD = "lscpu -J"


def _walk_lscpu_json(items: list[dict[str, Any]], out: dict[str, str]) -> None:
    for it in items:
        if not isinstance(it, dict):
            continue
        name = str(it.get("field", "")).strip().rstrip(":")
        data = it.get("data")
        if name and data is not None:
            out.setdefault(name, str(data).strip())
        children = it.get("children")
        if isinstance(children, list):
            _walk_lscpu_json(children, out)


@parse_once
def parse_lscpu(text: str) -> dict[str, str]:
    """`lscpu -J` or text `lscpu` -> {"Vendor ID": "AuthenticAMD", "CPU family": "25", ...}.

        Vendor ID:                AuthenticAMD
          Model name:             AMD EPYC 9374F 32-Core Processor
            CPU family:           25
    -> {"Vendor ID": "AuthenticAMD", "Model name": "AMD EPYC 9374F 32-Core Processor", "CPU family": "25"}

    JSON form: {"lscpu": [{"field": "Vendor ID:", "data": "AuthenticAMD", "children": [...]}, ...]}.
    Text: indentation (new util-linux) is ignored; wrapped continuation lines (Flags) are skipped.
    """
    stripped = (text or "").strip()
    out: dict[str, str] = {}
    if stripped.startswith("{"):
        try:
            doc = json.loads(stripped)
        except ValueError:
            return {}
        items = doc.get("lscpu") if isinstance(doc, dict) else None
        if isinstance(items, list):
            _walk_lscpu_json(items, out)
        return out
    last_key, value_col = "", 0
    for line in stripped.splitlines():
        m = re.match(r"^\s*([A-Za-z][^:]{0,60}?):\s+(.*)$", line)
        if m and not line.startswith(" " * 20):
            last_key, value_col = m.group(1).strip(), m.start(2)
            out.setdefault(last_key, m.group(2).strip())
        elif last_key == "Flags" and line.startswith(" " * 20) and value_col:
            # terminal-wrapped Flags: the wrap falls mid-word at a fixed column
            out["Flags"] += line[value_col:].rstrip()
    return out


@dataclass(frozen=True)
class CpuIdentity:
    """The CPU's identity and layout: vendor, family, model, sockets, NUMA nodes, CPUs, hypervisor."""

    vendor: str | None = None
    """"AMD", "Intel", "ARM", or the raw vendor id."""
    family: int | None = None
    model: int | None = None
    model_name: str | None = None
    sockets: int | None = None
    numa_nodes: int | None = None
    cpus: int | None = None
    threads_per_core: int | None = None
    has_cppc_flag: bool | None = None
    """`cppc` in the Flags line (AMD): the CPU supports CPPC; the BIOS must still expose _CPC."""
    hypervisor: str | None = None
    """"KVM", "Microsoft"... when this is a virtual machine (firmware knobs then belong to the hypervisor host)."""


def _int(v: str | None) -> int | None:
    if v is None:
        return None
    m = re.match(r"\s*(0x[0-9a-fA-F]+|\d+)", v)
    if not m:
        return None
    return int(m.group(1), 16) if m.group(1).startswith("0x") else int(m.group(1))


def cpu_identity(fields: dict[str, str]) -> CpuIdentity:
    """Fields from `parse_lscpu` -> CpuIdentity ("AuthenticAMD" -> "AMD", "GenuineIntel" -> "Intel")."""
    raw = fields.get("Vendor ID")
    vendor = {"AuthenticAMD": "AMD", "GenuineIntel": "Intel", "ARM": "ARM"}.get(raw or "", raw)
    flags = fields.get("Flags")
    return CpuIdentity(
        vendor=vendor,
        family=_int(fields.get("CPU family")),
        model=_int(fields.get("Model")),
        model_name=fields.get("Model name"),
        sockets=_int(fields.get("Socket(s)")),
        numa_nodes=_int(fields.get("NUMA node(s)")),
        cpus=_int(fields.get("CPU(s)")),
        threads_per_core=_int(fields.get("Thread(s) per core")),
        has_cppc_flag=(" cppc" in f" {flags} ") if flags else None,
        hypervisor=fields.get("Hypervisor vendor")
        or ("unknown hypervisor" if flags and " hypervisor " in f" {flags} " else None),
    )


@dataclass(frozen=True)
class CpuFreqInfo:
    """`cpupower frequency-info`: the scaling driver, governors, hardware and policy limits, boost, P-states."""

    driver: str | None = None
    """None when cpupower says "no or unknown cpufreq driver"."""
    governor: str | None = None
    governors: tuple[str, ...] = ()
    hw_min_mhz: float | None = None
    hw_max_mhz: float | None = None
    boost_supported: bool | None = None
    boost_active: bool | None = None
    pstates_mhz: tuple[int, ...] = ()
    policy_min_mhz: float | None = None
    policy_max_mhz: float | None = None
    """"current policy: frequency should be within 1.20 GHz and 1.32 GHz." (the scaling_min/max_freq)."""
    empty: bool = False


def _mhz(text: str) -> float | None:
    m = re.match(r"\s*([0-9.]+)\s*(GHz|MHz)", text)
    if not m:
        return None
    return float(m.group(1)) * (1000 if m.group(2) == "GHz" else 1)


@parse_once
def parse_cpupower_frequency_info(text: str) -> CpuFreqInfo:
    """`cpupower frequency-info` -> CpuFreqInfo.

        analyzing CPU 0:
          driver: acpi-cpufreq
          hardware limits: 1.50 GHz - 2.80 GHz
          current policy: frequency should be within 1.50 GHz and 2.80 GHz.
                          The governor "performance" may decide which speed to use
    -> CpuFreqInfo(driver="acpi-cpufreq", governor="performance", hw_min_mhz=1500, hw_max_mhz=2800,
                   policy_min_mhz=1500, policy_max_mhz=2800, ...)
    """
    if not (text or "").strip():
        return CpuFreqInfo(empty=True)
    driver = governor = None
    governors: tuple[str, ...] = ()
    lo = hi = pol_lo = pol_hi = None
    sup = act = None
    pstates: list[int] = []
    lines = text.splitlines()
    for i, raw in enumerate(lines):
        line = raw.strip()
        if line.startswith("driver:"):
            driver = line.split(":", 1)[1].strip() or None
        elif line.startswith("hardware limits:"):
            parts = line.split(":", 1)[1].split(" - ")
            if len(parts) == 2:
                lo, hi = _mhz(parts[0]), _mhz(parts[1])
        elif line.startswith("available cpufreq governors:"):
            val = line.split(":", 1)[1].strip()
            # an e-mail client may wrap the list onto the next line
            if (
                i + 1 < len(lines)
                and lines[i + 1]
                and not lines[i + 1].startswith(" ")
                and ":" not in lines[i + 1]
            ):
                val += " " + lines[i + 1].strip()
            governors = tuple(g for g in val.split() if val != "Not Available")
        elif m := re.search(r"frequency should be within (.+?) and (.+?)\.?$", line):
            pol_lo, pol_hi = _mhz(m.group(1)), _mhz(m.group(2))
        elif m := re.search(r'The governor "([^"]+)"', line):
            governor = m.group(1)
        elif line.startswith("Supported:"):
            sup = line.split(":", 1)[1].strip() == "yes"
        elif line.startswith("Active:"):
            act = line.split(":", 1)[1].strip() == "yes"
        elif m := re.match(r"Pstate-P\d+:\s*(\d+)MHz", line):
            pstates.append(int(m.group(1)))
    return CpuFreqInfo(
        driver=driver,
        governor=governor,
        governors=governors,
        hw_min_mhz=lo,
        hw_max_mhz=hi,
        boost_supported=sup,
        boost_active=act,
        pstates_mhz=tuple(pstates),
        policy_min_mhz=pol_lo,
        policy_max_mhz=pol_hi,
    )


@dataclass(frozen=True)
class IdleState:
    """One idle state (C-state) of a CPU: latency, whether disabled, usage."""

    index: int
    name: str
    latency_us: int | None = None
    disabled: bool | None = None
    usage: int | None = None
    description: str | None = None


@dataclass(frozen=True)
class CpuIdleInfo:
    """`cpupower idle-info`: the cpuidle driver, governor and one CPU's states."""

    driver: str | None = None
    governor: str | None = None
    cpu: int | None = None
    states: tuple[IdleState, ...] = ()


@parse_once
def parse_cpupower_idle_info(text: str) -> CpuIdleInfo:
    """`cpupower idle-info` -> CpuIdleInfo.

        CPUidle driver: acpi_idle
        Available idle states: POLL C1 C2
        C2:
        Flags/Description: ACPI IOPORT 0x414
        Latency: 400
    -> CpuIdleInfo(driver="acpi_idle", states=(..., IdleState(2, "C2", latency_us=400, ...)))

    Disabled states print "(DISABLED)" after their name ("C2 (DISABLED) :").
    """
    driver = governor = None
    cpu = None
    states: list[dict[str, Any]] = []
    for raw in (text or "").splitlines():
        line = raw.strip()
        if line.startswith("CPUidle driver:"):
            driver = line.split(":", 1)[1].strip()
        elif line.startswith("CPUidle governor:"):
            governor = line.split(":", 1)[1].strip()
        elif m := re.match(r"analyzing CPU (\d+)", line):
            cpu = int(m.group(1))
        elif m := re.match(r"^([A-Za-z0-9_-]+)(\s*\(DISABLED\))?\s*:$", line):
            states.append({"index": len(states), "name": m.group(1), "disabled": bool(m.group(2))})
        elif states and line.startswith("Latency:"):
            states[-1]["latency_us"] = _int(line.split(":", 1)[1])
        elif states and line.startswith("Usage:"):
            states[-1]["usage"] = _int(line.split(":", 1)[1])
        elif states and line.startswith("Flags/Description:"):
            states[-1]["description"] = line.split(":", 1)[1].strip()
    return CpuIdleInfo(
        driver=driver, governor=governor, cpu=cpu, states=tuple(IdleState(**s) for s in states)
    )


_STATE_FILE = re.compile(r"/cpu(\d+)/cpuidle/state(\d+)/(name|latency|disable|usage|desc)$")


def idle_states_from_sysfs(files: dict[str, list[str]]) -> dict[int, list[IdleState]]:
    """`parse_grep_h` output over cpuN/cpuidle/stateM/{name,latency,disable,usage} -> {cpu: [IdleState]}."""
    acc: dict[int, dict[int, dict[str, Any]]] = {}
    for path, vals in files.items():
        m = _STATE_FILE.search(path)
        if not m or not vals:
            continue
        cpu, idx, key = int(m.group(1)), int(m.group(2)), m.group(3)
        st = acc.setdefault(cpu, {}).setdefault(idx, {"index": idx, "name": f"state{idx}"})
        v = vals[0]
        if key == "name":
            st["name"] = v
        elif key == "latency":
            st["latency_us"] = _int(v)
        elif key == "disable":
            st["disabled"] = v.strip() not in ("0", "")
        elif key == "usage":
            st["usage"] = _int(v)
        elif key == "desc":
            st["description"] = v
    return {cpu: [IdleState(**acc[cpu][i]) for i in sorted(acc[cpu])] for cpu in sorted(acc)}


# --------------------------------------------------------------------------------------------------
# What counts as a deep C-state: one definition for power.cpu_cstates and firmware.cstate_exposure.

DEEP_LATENCY_US = 50
"""Exit latency (µs) from which a state of unknown depth counts as deep (Intel and unknown vendors)."""

_AMD_VENDORS = ("AMD", "AuthenticAMD", "Hygon", "HygonGenuine")


def cstate_number(name: str) -> int | None:
    """The C-state depth a cpuidle state name gives: "C2" -> 2, "C1E" -> 1, "C6S"/"C10" -> 6/10,
    "C2_ACPI" -> 2 (intel_idle's ACPI-sourced states), "POLL" -> 0; None for a name without a C-number."""
    n = name.strip().upper()
    if n == "POLL":
        return 0
    m = re.match(r"C(\d+)", n)
    return int(m.group(1)) if m else None


def is_deep_cstate(name: str, latency_us: int | None, cpu_vendor: str | None) -> bool:
    """Whether an idle state is deep (its exit costs the next host-side step), whatever latency ACPI reports.

    * AMD (and Hygon): every state deeper than C1, i.e. C2 (`ACPI IOPORT`, the core's CC6 entry) and beyond,
      is deep. ACPI _CST latencies on EPYC are firmware guesses (30, 100, 400 µs are all seen for the same C2),
      so the name decides; an unnamed state falls back to the latency.
    * Intel and any other vendor: C3 and deeper by name (C3, C6, C7s, C8, C10), or an exit latency of at least
      DEEP_LATENCY_US (catches ACPI states such as C2_ACPI mapped onto C6); C1/C1E are shallow.
    * POLL is never deep.
    """
    num = cstate_number(name)
    if num == 0:
        return False
    if cpu_vendor in _AMD_VENDORS and num is not None:
        return num >= 2
    if num is not None and num >= 3:
        return True
    return (latency_us or 0) >= DEEP_LATENCY_US
