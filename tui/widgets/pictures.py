"""The pictures (tui/views/pictures.py) as Textual widgets: plain Statics of rich Text, scrollable, readable at
80x24. Severity is an icon and a word next to the node it concerns; colour only adds to it (NO_COLOR safe)."""

from __future__ import annotations

from gpuaudit.probes.core.models import AuditRun
from gpuaudit.tui.views import pictures as P
from gpuaudit.tui.views.render import PLAIN, SEV_ICON, Palette
from gpuaudit.tui.views.roofline_view import roofline_of
from rich.text import Text
from textual.widgets import Static

EMPTY = {
    "tree": "No PCIe path to a GPU in this audit (no GPU found, or lspci not readable: see the pcie probe).",
    "matrix": "No GPU x GPU paths (fewer than 2 GPUs, or nvidia-smi topo -m not readable: see the nccl probe).",
    "numa": "No GPU NUMA placement (see the numa probe).",
    "roofline": "No decode bounds (see p: what the roofline is missing).",
    "gpus": "No GPU rows (nvidia-smi not readable: see the driver probe).",
}


def tree_text(run: AuditRun, palette: Palette = PLAIN) -> Text:
    lines = P.tree_lines(P.pcie_tree(run))
    if not lines:
        return Text(EMPTY["tree"])
    out = Text()
    for line, node in lines:
        if node is None:
            out.append(line + "\n", style="bold")
            continue
        style = "bold" if node.kind == "GPU" else ""
        out.append(line, style=style)
        for sev, fid in node.findings[:2]:
            out.append(f"  {SEV_ICON[sev]} {fid.split('.', 1)[-1]}", style=palette.get(sev, ""))
        if len(node.findings) > 2:
            out.append(f" +{len(node.findings) - 2}")
        out.append("\n")
    out.append(
        "▼ below what it can · idle: GPU idle (Gen1 then is normal) · MRRS MaxReadReq\n", "dim"
    )
    out.append("▲ warning ✖ critical: a finding on that device (its check id)", "dim")
    return out


def matrix_text(run: AuditRun, width: int = 80) -> Text:
    m = P.path_matrix(run)
    if m is None:
        return Text(EMPTY["matrix"])
    out = Text()
    lines = P.matrix_lines(m, width)
    out.append(lines[0] + "\n", style="bold")
    for line in lines[1:]:
        out.append(line[:6], style="bold")
        out.append(line[6:] + "\n")
    for part in P.matrix_legend(m).split("; "):
        out.append(part + "\n", style="dim")
    return out


def numa_text(run: AuditRun) -> Text:
    gpus, cpuset = P.gpu_placement(run)
    if not gpus:
        return Text(EMPTY["numa"])
    out = Text()
    by_node: dict[str, list[P.GpuPlacement]] = {}
    for g in gpus:
        by_node.setdefault(g.numa, []).append(g)
    for node, gs in sorted(by_node.items()):
        out.append(f"NUMA node {node}", style="bold")
        out.append(f"  local CPUs {gs[0].local_cpus or '?'}\n")
        out.append("  " + "  ".join(g.gpu for g in gs) + "\n")
    out.append("container cpuset: ", style="bold")
    out.append(
        f"{cpuset}\n" if cpuset else "not read (no container, or cgroup cpuset not readable)\n"
    )
    return out


def strip_text(run: AuditRun) -> Text:
    rows = P.gpu_strip(run)
    if not rows:
        return Text(EMPTY["gpus"])
    lines = P.strip_lines(rows)
    out = Text(lines[0] + "\n", style="bold")
    for line in lines[1:]:
        out.append(line + "\n")
    out.append("▼ below what it can · idle: normal at idle · clock events: active reasons", "dim")
    return out


def roofline_text(run: AuditRun, width: int = 70) -> Text:
    bar = P.roofline_bar(roofline_of(run).model_dump())
    if bar is None:
        return Text(EMPTY["roofline"])
    lines = P.bar_lines(bar, max(20, width - 4))
    out = Text()
    out.append(lines[0] + "\n")
    out.append(lines[1] + "\n", style="dim")
    out.append(lines[2].replace(" · bounds ", "\nbounds ") + "\n")
    out.append("█ measured decode speed · │ a bound (tok/s)\n", "dim")
    out.append("how far this machine runs from its physical limits (p: every input)", "dim")
    return out


class Picture(Static):
    """One picture; `kind` is tree, matrix, numa, gpus or roofline. Redraws when the app's run changes."""

    DEFAULT_CSS = """
    Picture { width: auto; min-width: 100%; height: auto; padding: 0 1; }
    """

    def __init__(self, kind: str, **kw: str) -> None:
        super().__init__("", **kw)  # type: ignore[arg-type]
        self.kind = kind

    def on_mount(self) -> None:
        self.watch(self.app, "audit_run", self._redraw, init=True)

    def _redraw(self, run: AuditRun) -> None:
        palette = getattr(self.app, "palette", PLAIN)
        width = self.app.size.width
        self.update(
            {
                "tree": lambda: tree_text(run, palette),
                "matrix": lambda: matrix_text(run, width),
                "numa": lambda: numa_text(run),
                "gpus": lambda: strip_text(run),
                "roofline": lambda: roofline_text(run, width),
            }[self.kind]()
        )
