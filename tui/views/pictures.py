"""Pictures of the machine, as data: the PCIe/NUMA tree, the GPU x GPU path matrix, the GPU/NUMA/cpuset map and
the roofline bar. Built from a run's facts (plain dicts: old snapshots too); the TUI draws them as text
(tui/widgets/pictures.py), the HTML report as SVG (tui/views/html.py).

Pure: no Textual. Never a colour alone: every mark has a symbol or a word (NO_COLOR and colour-blind safe).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpuaudit.probes.core.models import AuditRun, Finding, Severity

GEN_OF_SPEED = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
P2P_MARK = {"OK": "✓", "NS": "✗", "CNS": "✗", "GNS": "✗", "TNS": "✗", "NS_": "✗"}
"""nvidia-smi topo -p2p r: OK supported; NS / CNS (chipset) / GNS (GPU) / TNS (topology) not supported."""
PATH_WORDS = {
    "X": "self",
    "NV": "NVLink",
    "PIX": "one PCIe switch",
    "PXB": "several PCIe switches",
    "PHB": "a host bridge (CPU)",
    "NODE": "host bridges of one NUMA node",
    "SYS": "across NUMA nodes (socket link)",
}


# --- the PCIe / NUMA tree --------------------------------------------------------------------------------


@dataclass
class TreeNode:
    bdf: str
    kind: str
    """"GPU", "root port", "switch", "bridge"."""
    label: str
    now: str | None = None
    """The link as it runs now, "Gen1 x16"."""
    capable: str | None = None
    """What the link can do, "Gen5 x16"."""
    degraded: bool = False
    """Runs below what it can do, and not for the idle reason below: ▼."""
    idle: bool = False
    """An idle GPU (utilisation under 50%) whose link only dropped speed: NVIDIA GPUs train down to Gen1 at idle
    and back up under load (pcie.link_current_under_load judges only busy GPUs): said "idle Gen1 x16", never ▼."""
    mrrs: int | None = None
    mps: int | None = None
    findings: list[tuple[Severity, str]] = field(default_factory=list)
    children: list[TreeNode] = field(default_factory=list)

    @property
    def worst(self) -> Severity | None:
        return max((s for s, _ in self.findings), key=lambda s: s.rank, default=None)


@dataclass
class NumaBranch:
    node: str
    """NUMA node id, or "?" when sysfs did not say."""
    cpus: str = ""
    roots: list[TreeNode] = field(default_factory=list)


def _facts(run: AuditRun, probe_id: str, role: str = "host") -> Mapping[str, Any]:
    p = run.probe(probe_id)
    return (p.facts.get(role) or {}) if p is not None else {}


def _gen(speed: object) -> int | None:
    try:
        return GEN_OF_SPEED.get(float(str(speed).split()[0]))
    except (TypeError, ValueError, IndexError):
        return None


def _link(gen: int | None, width: object) -> str | None:
    if gen is None and width in (None, ""):
        return None
    return f"Gen{gen if gen is not None else '?'} x{width if width not in (None, '') else '?'}"


def _short_bdf(bdf: str) -> str:
    return bdf[5:] if re.match(r"^0000:", bdf) else bdf


def pcie_tree(run: AuditRun, role: str = "host") -> list[NumaBranch]:
    """Socket/NUMA node -> root port -> switches -> GPUs, with each link's now/capable and MaxReadReq.

    Empty when the pcie probe found no GPU path (no GPU, or no lspci)."""
    f = _facts(run, "pcie", role)
    gpus: list[str] = list(f.get("gpu_bdfs") or [])
    if not gpus:
        return []
    devices = {d.get("bdf"): d for d in f.get("devices") or []}
    sysfs = {s.get("bdf"): s.get("values") or {} for s in f.get("sysfs") or []}
    smi = {s.get("bus_id", "").replace("00000000:", "0000:").lower(): s for s in f.get("smi") or []}
    now = f.get("link_now") or {}
    numa_gpu = _facts(run, "numa", role).get("gpu_numa") or {}
    marks = _finding_marks(run, role)
    index = {bdf: str(s.get("index")) for bdf, s in smi.items()}
    nodes: dict[str, TreeNode] = {}

    def node_for(bdf: str, kind: str) -> TreeNode:
        if bdf in nodes:
            return nodes[bdf]
        d = devices.get(bdf) or {}
        cap = _link(_gen(d.get("lnkcap_speed")), d.get("lnkcap_width"))
        ln = now.get(bdf) or {}
        cur = None
        slow, narrow = bool(ln.get("speed_downgraded")), bool(ln.get("width_downgraded"))
        util = ln.get("util")
        idle = (
            kind == "GPU" and slow and not narrow and isinstance(util, (int, float)) and util < 50
        )
        if kind == "GPU":
            s = smi.get(bdf) or {}
            cap = cap or _link(s.get("gen_gpumax"), s.get("width_max"))
            gen = ln.get("gen_cur") or _gen(ln.get("lnksta_speed"))
            cur = _link(gen, ln.get("width_cur") or ln.get("lnksta_width"))
        label = f"GPU{index[bdf]}" if kind == "GPU" and bdf in index else kind
        n = TreeNode(
            bdf=bdf,
            kind=kind,
            label=label,
            now=cur,
            capable=cap,
            degraded=(slow or narrow) and not idle,
            idle=idle,
            mrrs=d.get("devctl_mrrs"),
            mps=d.get("devctl_mps"),
            findings=sorted(
                marks.get(bdf, []) + (marks.get("*gpu", []) if kind == "GPU" else []),
                key=lambda m: (not m[1].startswith("pcie."), -m[0].rank),
            ),
        )
        nodes[bdf] = n
        return n

    branches: dict[str, NumaBranch] = {}
    for g in gpus:
        path = list(
            (f.get("parents") or {}).get(g) or []
        )  # immediate upstream first, root port last
        numa = numa_gpu.get(g, sysfs.get(g, {}).get("numa_node"))
        key = "?" if numa in (None, "", "-1", -1) else str(numa)
        branch = branches.setdefault(key, NumaBranch(key, _node_cpus(run, key, role)))
        child = node_for(g, "GPU")
        for i, up in enumerate(path):
            kind = "root port" if i == len(path) - 1 else _bridge_kind(devices.get(up) or {})
            parent = node_for(up, kind)
            if child not in parent.children:
                parent.children.append(child)
            child = parent
        if child not in branch.roots:
            branch.roots.append(child)
    return [branches[k] for k in sorted(branches, key=lambda k: (k == "?", k.zfill(4)))]


def _bridge_kind(d: Mapping[str, Any]) -> str:
    t = (d.get("port_type") or "").lower()
    return "switch" if "switch" in t or "upstream" in t or "downstream" in t else "bridge"


def _node_cpus(run: AuditRun, node: str, role: str) -> str:
    for n in _facts(run, "numa", role).get("nodes") or []:
        if str(n.get("id")) == node:
            return cpu_ranges(n.get("cpus") or [])
    return ""


def cpu_ranges(cpus: Sequence[int]) -> str:
    """[0,1,2,3,8] -> "0-3,8"."""
    out: list[str] = []
    for c in sorted(set(int(x) for x in cpus)):
        if out and "-" in out[-1] and int(out[-1].split("-")[1]) == c - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{c}"
        elif out and "-" not in out[-1] and int(out[-1]) == c - 1:
            out[-1] = f"{out[-1]}-{c}"
        else:
            out.append(str(c))
    return ",".join(out)


def _finding_marks(run: AuditRun, role: str) -> dict[str, list[tuple[Severity, str]]]:
    """BDF -> (severity, id) of the warning-or-worse findings whose observation names that device."""
    out: dict[str, list[tuple[Severity, str]]] = {}
    for f in run.findings:
        if f.severity.rank < Severity.WARNING.rank or (f.targets and role not in f.targets):
            continue
        bdfs = set(re.findall(r"\b[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]\b", f.observed))
        if not bdfs and f.probe == "pcie" and "GPU" in f.observed:
            bdfs = {"*gpu"}  # "MaxReadReq 512 B on 8 GPUs": every GPU
        for bdf in bdfs:
            out.setdefault(bdf, [])
            if (f.severity, f.id) not in out[bdf]:
                out[bdf].append((f.severity, f.id))
    return out


def tree_lines(branches: Sequence[NumaBranch]) -> list[tuple[str, TreeNode | None]]:
    """One text line per node, with box-drawing guides; the node (for its marks) or None for a NUMA header."""
    lines: list[tuple[str, TreeNode | None]] = []
    for b in branches:
        head = f"NUMA node {b.node}" if b.node != "?" else "NUMA node unknown"
        lines.append((head + (f"  cpus {b.cpus}" if b.cpus else ""), None))
        for i, root in enumerate(b.roots):
            _walk(root, "", i == len(b.roots) - 1, lines)
    return lines


def _walk(n: TreeNode, prefix: str, last: bool, lines: list[tuple[str, TreeNode | None]]) -> None:
    lines.append((prefix + ("└─ " if last else "├─ ") + node_text(n), n))
    for i, c in enumerate(n.children):
        _walk(c, prefix + ("   " if last else "│  "), i == len(n.children) - 1, lines)


def node_text(n: TreeNode) -> str:
    parts = [
        f"{n.label} {_short_bdf(n.bdf)}" if n.kind == "GPU" else f"{_short_bdf(n.bdf)} {n.kind}"
    ]
    if n.kind == "GPU" and (n.now or n.capable):
        arrow = " ▼" if n.degraded else ""
        state = "idle" if n.idle else "now"  # "idle Gen1 x16": the link as it runs at idle
        parts.append(f"{state} {n.now or '?'} / can {n.capable or '?'}{arrow}")
    elif n.capable:
        parts.append(n.capable)
    if n.mrrs:
        parts.append(f"MRRS {n.mrrs}")
    return "  ".join(parts)


# --- the GPU x GPU path matrix ---------------------------------------------------------------------------


@dataclass
class PathMatrix:
    gpus: list[str]
    numa: list[str]
    path: list[list[str]]
    """path[i][j]: nvidia-smi topo -m's connection ("X" on the diagonal)."""
    p2p: list[list[str]]
    """p2p[i][j]: the P2P read status (OK, NS, CNS, ...) or "" when not read."""

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for i, row in enumerate(self.path):
            for j, cell in enumerate(row):
                if i < j:
                    out[cell] = out.get(cell, 0) + 1
        return out


def path_matrix(run: AuditRun, role: str = "host") -> PathMatrix | None:
    f = _facts(run, "nccl", role)
    topo: Mapping[str, str] = f.get("topo") or {}
    n = int(f.get("gpu_count") or 0)
    if not topo or n < 2:
        return None
    p2p: Mapping[str, str] = f.get("p2p_read") or {}
    numa = [str(x) for x in (f.get("gpu_numa") or [])] + ["?"] * n

    def cell(table: Mapping[str, str], i: int, j: int) -> str:
        return table.get(f"{min(i, j)}-{max(i, j)}", "")

    return PathMatrix(
        gpus=[f"GPU{i}" for i in range(n)],
        numa=numa[:n],
        path=[["X" if i == j else cell(topo, i, j) or "?" for j in range(n)] for i in range(n)],
        p2p=[["" if i == j else cell(p2p, i, j) for j in range(n)] for i in range(n)],
    )


def p2p_mark(status: str) -> str:
    return P2P_MARK.get(status, "✓" if status == "OK" else ("?" if not status else "✗"))


def matrix_lines(m: PathMatrix, width: int = 80) -> list[str]:
    """`nvidia-smi topo -m` with P2P marks: "NODE✓", "SYS ✗"; narrower cells when the GPUs do not fit."""
    n = len(m.gpus)
    cell_w = 6 if 7 + n * 6 <= width else 4
    short = cell_w == 4

    def name(p: str) -> str:
        if not short:
            return p[:4]
        return {"NODE": "ND", "SYS": "SY", "PIX": "PX", "PXB": "PB", "PHB": "PH"}.get(p, p[:2])

    head = "      " + "".join(
        (g if not short else g.replace("GPU", "")).rjust(cell_w) for g in m.gpus
    )
    lines = [head + "  NUMA"]
    for i, g in enumerate(m.gpus):
        row = "".join(
            (name(m.path[i][j]) + (p2p_mark(m.p2p[i][j]) if i != j else " ")).rjust(cell_w)
            for j in range(n)
        )
        lines.append(f"{g:<6}{row}  {m.numa[i]}")
    return lines


def matrix_legend(m: PathMatrix) -> str:
    words = [f"{k} {PATH_WORDS.get(k, k)}" for k in sorted(m.counts())]
    return "; ".join(words) + "; ✓ P2P read OK, ✗ not supported, ? not read"


# --- GPU / NUMA / cpuset ---------------------------------------------------------------------------------


@dataclass
class GpuPlacement:
    gpu: str
    bdf: str
    numa: str
    local_cpus: str


def gpu_placement(run: AuditRun) -> tuple[list[GpuPlacement], str | None]:
    """Each GPU's NUMA node and local CPUs, and the container's cpuset (None when not read)."""
    f = _facts(run, "numa", "host")
    out = [
        GpuPlacement(
            gpu=f"GPU{g.get('index')}",
            bdf=str(g.get("bus_id") or ""),
            numa=str(g.get("numa_node") if g.get("numa_node") is not None else "?"),
            local_cpus=cpu_ranges(g.get("local_cpus") or []),
        )
        for g in f.get("gpus") or []
    ]
    cf = _facts(run, "numa", "container")
    cpuset = cf.get("cpuset_cpus") or f.get("cpuset_cpus")
    return out, (cpu_ranges(cpuset) if isinstance(cpuset, list) else cpuset)


# --- the per-GPU strip -----------------------------------------------------------------------------------


@dataclass
class GpuStrip:
    gpu: str
    bdf: str
    link: str
    degraded: bool
    mrrs: str
    power: str
    reasons: str
    ecc: str


def _bdf(bus_id: object) -> str:
    text = str(bus_id or "").lower()
    return "0000:" + text[9:] if text.startswith("00000000:") else text


def gpu_strip(run: AuditRun, role: str = "host") -> list[GpuStrip]:
    """One row per GPU: link now/capable, MaxReadReq, power limit, clock-event reasons, ECC."""
    tree = {n.bdf: n for b in pcie_tree(run, role) for n in _nodes(b.roots) if n.kind == "GPU"}
    power = {str(g.get("index")): g for g in _facts(run, "power", role).get("gpus") or []}
    readings = {
        str(g.get("index")): g for g in _facts(run, "power", role).get("gpu_readings") or []
    }
    out = []
    for g in _facts(run, "driver", role).get("gpus") or []:
        idx, bdf = str(g.get("index")), _bdf(g.get("bus_id"))
        node = tree.get(bdf)
        pw, rd = power.get(idx) or {}, readings.get(idx) or {}
        limit = pw.get("enforced_w")
        reasons = rd.get("active_reasons")
        ecc = g.get("ecc_mode")
        out.append(
            GpuStrip(
                gpu=f"GPU{idx}",
                bdf=_short_bdf(bdf),
                link=(
                    f"{node.now or '?'}{' idle' if node.idle else ''}/{node.capable or '?'}"
                    if node is not None
                    else "?"
                ),
                degraded=bool(node is not None and node.degraded),
                mrrs=str(node.mrrs) if node is not None and node.mrrs else "?",
                power=f"{limit:.0f}/{pw.get('max_w') or 0:.0f} W" if limit else "?",
                reasons=(", ".join(reasons) or "none") if isinstance(reasons, list) and rd else "?",
                ecc=(
                    f"{ecc}, {g.get('ecc_uncorrected') or 0} uncorr."
                    if ecc not in (None, "", "N/A")
                    else str(ecc or "?")
                ),
            )
        )
    return out


def _nodes(nodes: Sequence[TreeNode]) -> list[TreeNode]:
    out: list[TreeNode] = []
    for n in nodes:
        out.append(n)
        out.extend(_nodes(n.children))
    return out


def strip_lines(rows: Sequence[GpuStrip]) -> list[str]:
    head = f"{'GPU':<5} {'link now/can':<22} {'MRRS':>5}  {'power':<11} {'ECC':<17} clock events"
    lines = [head]
    for r in rows:
        link = r.link + (" ▼" if r.degraded else "")
        lines.append(f"{r.gpu:<5} {link:<22} {r.mrrs:>5}  {r.power:<11} {r.ecc:<17} {r.reasons}")
    return lines


# --- the roofline bar ------------------------------------------------------------------------------------


@dataclass
class RooflineBar:
    measured: float | None
    bounds: dict[str, float]
    top: float


BAR_BOUNDS = ("comm_aware", "tp_aware_eta", "tp_aware", "naive")
BAR_WORDS = {
    "comm_aware": "all-reduce",
    "tp_aware_eta": "TP η0.8",
    "tp_aware": "TP η1",
    "naive": "naive",
}


def roofline_bar(roofline: Mapping[str, Any] | None) -> RooflineBar | None:
    if not roofline or not roofline.get("bounds"):
        return None
    bounds = {k: float(v) for k, v in roofline["bounds"].items() if k in BAR_BOUNDS and v}
    if not bounds:
        return None
    measured = roofline.get("measured_tok_s")
    top = max([*bounds.values(), float(measured or 0)])
    return RooflineBar(float(measured) if measured else None, bounds, top)


def bar_lines(bar: RooflineBar, width: int = 60) -> list[str]:
    """A scale from 0 to the highest bound: █ measured, │ each bound, labels under it."""
    w = max(20, width)
    cells = ["░"] * w

    def pos(v: float) -> int:
        return min(w - 1, int(round(v / bar.top * (w - 1))))

    filled = pos(bar.measured) if bar.measured else -1
    for i in range(filled + 1):
        cells[i] = "█"
    for v in bar.bounds.values():
        cells[pos(v)] = "│"
    lines = ["".join(cells)]
    label = [" "] * (w + 12)
    for k in sorted(bar.bounds, key=lambda k: bar.bounds[k]):
        text = f"{bar.bounds[k]:.0f}"
        start = pos(bar.bounds[k])
        if all(c == " " for c in label[start : start + len(text) + 1]):
            label[start : start + len(text)] = text
    lines.append("".join(label).rstrip())
    meas = f"measured {bar.measured:.1f} tok/s" if bar.measured else "measured: not read"
    bounds = ", ".join(f"{BAR_WORDS[k]} {bar.bounds[k]:.0f}" for k in BAR_BOUNDS if k in bar.bounds)
    lines.append(f"{meas} · bounds {bounds} tok/s")
    return lines


def findings_for(run: AuditRun, ids: Sequence[str]) -> list[Finding]:
    return [f for f in run.findings if f.id in ids]
