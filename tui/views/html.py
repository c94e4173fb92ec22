"""`--html FILE`: one self-contained, offline HTML report of a snapshot (no script, no fetch, no external font).

Header, the action plan, the decode roofline (an SVG bar), the pictures (PCIe/NUMA tree and GPU x GPU paths as
SVG, the GPU/NUMA table), findings by probe with excerpts of the raw output behind them, and the diff against an
older snapshot when one is given. Severity is always an icon and a word (colour only adds; print-friendly).
Pure: a Snapshot in, a str out; no Textual, no rich. Every text from a target is escaped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

from gpuaudit.probes.core.judge.plan import build_plan, fix_commands
from gpuaudit.probes.core.models import AuditRun, CommandRecord, Finding, ProbeResult, Severity
from gpuaudit.probes.core.version import __version__
from gpuaudit.snapshots.diff import SnapshotDiff
from gpuaudit.snapshots.schema import Snapshot
from gpuaudit.tui.views import pictures as P
from gpuaudit.tui.views.render import SEV_ICON, SEV_WORD, evidence_row

SEV_COLOUR = {
    "critical": "#b2182b",
    "warning": "#b35806",
    "unknown": "#5e3c99",
    "info": "#2166ac",
    "ok": "#1b7837",
    "n/a": "#6b6b6b",
}
"""Colour-blind-aware (ColorBrewer diverging hues); never the only signal: icon + word go with it."""
PATH_COLOUR = {
    "X": "#ffffff",
    "NODE": "#fee8c8",
    "SYS": "#fdbb84",
    "PHB": "#fee8c8",
    "PXB": "#e0f3db",
    "PIX": "#ccebc5",
}
EXCERPT_LINES = 12
CSS = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;max-width:1100px;padding:1em;
color:#1a1a1a;background:#fff}
h1{font-size:1.5em;margin:.2em 0}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
h3{margin:1.2em 0 .4em}
.note{background:#fff3cd;border:1px solid #e0c36a;padding:.4em .7em;border-radius:4px}
.meta{color:#555}.meta td{padding:0 1em 0 0}
.sev{font-weight:700;white-space:nowrap;padding:0 .3em;border-radius:3px;color:#fff}
.counts span{margin-right:1em}
table.grid{border-collapse:collapse;margin:.5em 0}table.grid td,table.grid th{border:1px solid #ccc;
padding:.2em .5em;text-align:left;vertical-align:top}
.finding{border-left:4px solid #ccc;padding:.2em .8em;margin:.6em 0}
.finding p{margin:.2em 0}.finding .id{font-family:monospace;color:#444}
pre{background:#f6f6f6;border:1px solid #ddd;padding:.5em;overflow-x:auto;font-size:12.5px;line-height:1.3;
white-space:pre}
pre mark{background:#ffe08a}
code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.95em}
details summary{cursor:pointer;color:#333}
.step{margin:.8em 0}.step h3{margin:.2em 0}
svg text{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
.diff-add{color:#1b7837}.diff-del{color:#b2182b}
@media print{details{display:block}details>summary{display:none}}
"""


def html_report(
    snapshot: Snapshot, *, old: Snapshot | None = None, diff: SnapshotDiff | None = None
) -> str:
    """The whole report; `old` and `diff` add the "What changed" section."""
    run = snapshot.to_run()
    title = f"gpuaudit-tui report: {_targets_line(snapshot)}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # no script, no fetch: the policy says so to the browser too
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">",
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>",
        _header(snapshot, run),
        _plan(run),
        _roofline(snapshot),
        _pictures(run),
        _probes(run),
    ]
    if diff is not None:
        parts.append(_diff(diff, old))
    parts.append(
        f'<footer class="meta"><hr>gpuaudit-tui {escape(__version__)}: read-only audit; this file loads '
        "nothing from the network and runs no script.</footer></body></html>"
    )
    return "\n".join(parts) + "\n"


# --- header ----------------------------------------------------------------------------------------------


def _targets_line(snapshot: Snapshot) -> str:
    out = []
    for t in snapshot.targets:
        st = snapshot.target_states.get(t.role)
        host = f" [{st.hostname}]" if st is not None and st.hostname else ""
        out.append(f"{t.label}{host}")
    return " + ".join(out) or "no target"


def sev_badge(sev: Severity) -> str:
    colour = SEV_COLOUR.get(sev.value, "#444")
    return f'<span class="sev" style="background:{colour}">{SEV_ICON[sev]} {SEV_WORD[sev]}</span>'


def _header(snapshot: Snapshot, run: AuditRun) -> str:
    counts: dict[Severity, int] = {}
    for f in run.findings:
        counts[f.severity] = counts.get(f.severity, 0) + 1
    rows = [
        ("targets", _targets_line(snapshot)),
        ("recorded", f"{snapshot.created_at:%Y-%m-%d %H:%M} UTC ({snapshot.mode})"),
        ("tool", f"gpuaudit-tui {snapshot.tool_version} (report by {__version__})"),
    ]
    for role, st in snapshot.target_states.items():
        if st.state == "failed":
            rows.append((f"{role} failed", st.reason or "unreachable"))
    count_html = " ".join(
        f"<span>{sev_badge(s)} {n}</span>"
        for s, n in sorted(counts.items(), key=lambda kv: -kv[0].rank)
    )
    note = f'<p class="note">{escape(snapshot.note)}</p>' if snapshot.note else ""
    meta = "".join(f"<tr><td>{escape(k)}</td><td>{escape(v)}</td></tr>" for k, v in rows)
    return (
        f"<header><h1>gpuaudit-tui report</h1>{note}"
        f'<table class="meta">{meta}</table><p class="counts">{count_html}</p></header>'
    )


# --- the plan --------------------------------------------------------------------------------------------


def _plan(run: AuditRun) -> str:
    steps = build_plan(run)
    out = ['<section id="plan"><h2>Action plan</h2>']
    if not steps:
        out.append("<p>Nothing at warning or worse: no step to take.</p>")
    for s in steps:
        ids = ", ".join(f"<code>{escape(f.id)}</code>" for f in s.findings)
        cmds = fix_commands(s.fix)
        fix = (
            "<pre>" + escape("\n".join(cmds)) + "</pre>"
            if cmds
            else f"<p>{escape(s.fix)}</p>"
            if s.fix
            else ""
        )
        out.append(
            f'<div class="step"><h3>{s.rank}. {sev_badge(s.severity)} {escape(s.title)}</h3>'
            f"<p>{ids}</p>{fix}</div>"
        )
    out.append("</section>")
    return "\n".join(out)


# --- roofline --------------------------------------------------------------------------------------------


def _roofline(snapshot: Snapshot) -> str:
    rf = snapshot.roofline or {}
    out = ['<section id="roofline"><h2>Decode roofline</h2>']
    if rf.get("strip"):
        out.append(f"<p><b>{escape(str(rf['strip']))}</b></p>")
    bar = P.roofline_bar(rf)
    if bar is None:
        missing = "; ".join(str(m) for m in rf.get("missing") or []) or "no bound could be computed"
        out.append(f"<p>No decode bounds: {escape(missing)}.</p></section>")
        return "\n".join(out)
    out.append(roofline_svg(bar))
    rows = "".join(
        f"<tr><td>{escape(P.BAR_WORDS[k])}</td><td>{bar.bounds[k]:.1f} tok/s</td>"
        f"<td>{_pct(bar.measured, bar.bounds[k])}</td></tr>"
        for k in P.BAR_BOUNDS
        if k in bar.bounds
    )
    out.append(
        '<table class="grid"><tr><th>bound</th><th>tok/s</th><th>measured / bound</th></tr>'
        f"{rows}</table>"
    )
    if rf.get("inputs"):
        inputs = "".join(
            f"<tr><td>{escape(str(k))}</td><td>{escape(str(v))}</td></tr>"
            for k, v in rf["inputs"].items()
        )
        out.append(
            f'<details><summary>inputs</summary><table class="grid">{inputs}</table></details>'
        )
    out.append("</section>")
    return "\n".join(out)


def _pct(measured: float | None, bound: float) -> str:
    return f"{measured / bound:.0%}" if measured else "not measured"


def roofline_svg(bar: P.RooflineBar, width: int = 720) -> str:
    left, right, y = 10, width - 60, 30
    scale = (right - left) / bar.top

    def x(v: float) -> float:
        return float(round(left + v * scale, 1))

    parts = [
        f'<svg role="img" aria-label="decode roofline bar" width="{width}" height="90" '
        f'viewBox="0 0 {width} 90" xmlns="http://www.w3.org/2000/svg">',
        f'<rect x="{left}" y="{y}" width="{right - left}" height="18" fill="#eee" stroke="#999"/>',
    ]
    if bar.measured:
        parts.append(
            f'<rect x="{left}" y="{y}" width="{x(bar.measured) - left}" height="18" fill="#2166ac"/>'
            f'<text x="{left}" y="{y - 8}">measured {bar.measured:.1f} tok/s</text>'
        )
    for i, k in enumerate(sorted(bar.bounds, key=lambda k: bar.bounds[k])):
        v = bar.bounds[k]
        parts.append(
            f'<line x1="{x(v)}" y1="{y - 4}" x2="{x(v)}" y2="{y + 22}" stroke="#b35806" '
            f'stroke-width="2"/><text x="{x(v)}" y="{y + 36 + 14 * (i % 2)}" text-anchor="middle">'
            f"{escape(P.BAR_WORDS[k])} {v:.0f}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


# --- pictures --------------------------------------------------------------------------------------------


def _pictures(run: AuditRun) -> str:
    out = ['<section id="pictures"><h2>The machine</h2>']
    branches = P.pcie_tree(run)
    out.append("<h3>PCIe / NUMA tree</h3>")
    if branches:
        out.append(tree_svg(branches))
        out.append(
            "<p class=meta>now / capable: the link's generation and width as it runs and as it can "
            "(idle: the GPU is idle, where a Gen1 link is normal; ▼: below what it can otherwise); "
            "MRRS: MaxReadReq in bytes; a badge marks a finding on that device.</p>"
        )
    else:
        out.append("<p>No PCIe path to a GPU in this audit.</p>")
    m = P.path_matrix(run)
    out.append("<h3>GPU x GPU paths</h3>")
    out.append(matrix_svg(m) if m is not None else "<p>No GPU x GPU paths read.</p>")
    if m is not None:
        out.append(f"<p class=meta>{escape(P.matrix_legend(m))}</p>")
    gpus, cpuset = P.gpu_placement(run)
    if gpus:
        rows = "".join(
            f"<tr><td>{escape(g.gpu)}</td><td>{escape(g.bdf)}</td><td>{escape(g.numa)}</td>"
            f"<td>{escape(g.local_cpus)}</td></tr>"
            for g in gpus
        )
        out.append(
            '<h3>GPU / NUMA / cpuset</h3><table class="grid"><tr><th>GPU</th><th>PCI</th>'
            f"<th>NUMA node</th><th>local CPUs</th></tr>{rows}</table>"
            f"<p>container cpuset: {escape(cpuset or 'not read')}</p>"
        )
    rows = P.gpu_strip(run)
    if rows:
        body = "".join(
            f"<tr><td>{escape(r.gpu)}</td><td>{escape(r.bdf)}</td>"
            f"<td>{escape(r.link)}{' ▼' if r.degraded else ''}</td><td>{escape(r.mrrs)}</td>"
            f"<td>{escape(r.power)}</td><td>{escape(r.ecc)}</td><td>{escape(r.reasons)}</td></tr>"
            for r in rows
        )
        out.append(
            '<h3>Per GPU</h3><table class="grid"><tr><th>GPU</th><th>PCI</th><th>link now/can</th>'
            "<th>MRRS</th><th>power limit</th><th>ECC</th><th>clock events</th></tr>"
            f"{body}</table>"
        )
    out.append("</section>")
    return "\n".join(out)


def tree_svg(branches: Sequence[P.NumaBranch]) -> str:
    row_h, indent = 24, 28
    rows: list[tuple[int, str, P.TreeNode | None]] = []

    def walk(n: P.TreeNode, depth: int) -> None:
        rows.append((depth, P.node_text(n), n))
        for c in n.children:
            walk(c, depth + 1)

    for b in branches:
        rows.append((0, f"NUMA node {b.node}" + (f"  cpus {b.cpus}" if b.cpus else ""), None))
        for r in b.roots:
            walk(r, 1)
    width = max(600, max(d * indent + 8 * (len(t) + 30) for d, t, _ in rows))
    height = row_h * len(rows) + 8
    parts = [
        f'<svg role="img" aria-label="PCIe and NUMA tree" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">'
    ]
    parents: dict[int, int] = {}
    for i, (depth, text, node) in enumerate(rows):
        y = 4 + i * row_h
        x = 4 + depth * indent
        if depth > 0 and depth - 1 in parents:
            px = 4 + (depth - 1) * indent + 10
            parts.append(
                f'<path d="M{px} {parents[depth - 1] + 20} V{y + 10} H{x}" fill="none" stroke="#888"/>'
            )
        parents[depth] = y
        fill = "#f2f2f2" if node is None else "#e8f0fa" if node.kind == "GPU" else "#fafafa"
        stroke = "#b35806" if node is not None and node.degraded else "#999"
        box_w = 8 * len(text) + 12
        parts.append(
            f'<rect x="{x}" y="{y}" width="{box_w}" height="20" rx="3" fill="{fill}" '
            f'stroke="{stroke}"/><text x="{x + 6}" y="{y + 14}">{escape(text)}</text>'
        )
        bx: float = x + box_w + 6
        for sev, fid in node.findings if node is not None else []:
            label = f"{SEV_ICON[sev]} {fid}"
            w = 7.5 * len(label) + 8
            parts.append(
                f'<rect x="{bx}" y="{y + 2}" width="{w}" height="16" rx="3" '
                f'fill="{SEV_COLOUR.get(sev.value, "#444")}"/>'
                f'<text x="{bx + 4}" y="{y + 14}" fill="#fff">{escape(label)}</text>'
            )
            bx += w + 4
    parts.append("</svg>")
    return "".join(parts)


def matrix_svg(m: P.PathMatrix) -> str:
    n = len(m.gpus)
    cell, head = 58, 60
    width = head + n * cell + 60
    height = head + n * cell // 2 + 10
    ch = cell // 2
    parts = [
        f'<svg role="img" aria-label="GPU to GPU path matrix" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">'
    ]
    for j, g in enumerate(m.gpus):
        parts.append(
            f'<text x="{head + j * cell + cell / 2}" y="{head - 10}" text-anchor="middle">{g}</text>'
        )
    parts.append(f'<text x="{head + n * cell + 8}" y="{head - 10}">NUMA</text>')
    for i, g in enumerate(m.gpus):
        y = head + i * ch
        parts.append(f'<text x="4" y="{y + ch - 10}">{g}</text>')
        for j in range(n):
            path = m.path[i][j]
            mark = "" if i == j else P.p2p_mark(m.p2p[i][j])
            fill = PATH_COLOUR.get(path, "#dceefb" if path.startswith("NV") else "#f0f0f0")
            parts.append(
                f'<rect x="{head + j * cell}" y="{y}" width="{cell}" height="{ch}" fill="{fill}" '
                f'stroke="#bbb"/><text x="{head + j * cell + cell / 2}" y="{y + ch - 10}" '
                f'text-anchor="middle">{escape(path)}{mark}</text>'
            )
        parts.append(
            f'<text x="{head + n * cell + 8}" y="{y + ch - 10}">{escape(m.numa[i])}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


# --- findings by probe -----------------------------------------------------------------------------------


def _probes(run: AuditRun) -> str:
    out = ['<section id="findings"><h2>Findings by probe</h2>']
    for p in run.probes:
        out.append(_probe(p, run))
    out.append("</section>")
    return "\n".join(out)


def _probe(p: ProbeResult, run: AuditRun) -> str:
    findings = sorted(p.findings, key=lambda f: -f.severity.rank)
    loud = [f for f in findings if f.severity.rank > Severity.OK.rank]
    quiet = [f for f in findings if f.severity.rank <= Severity.OK.rank]
    head = f'<h3 id="probe-{escape(p.probe_id)}">{escape(p.title)}</h3>'
    summary = f"<p>{escape(p.summary)}</p>" if p.summary else ""
    status = f"<p>probe {escape(p.status)}: {escape(p.error)}</p>" if p.error else ""
    body = "".join(_finding(f, run) for f in loud)
    if quiet:
        body += (
            f"<details><summary>{len(quiet)} check(s) ok or not applicable</summary>"
            + "".join(_finding(f, run, excerpts=False) for f in quiet)
            + "</details>"
        )
    return head + summary + status + body


def _finding(f: Finding, run: AuditRun, excerpts: bool = True) -> str:
    colour = SEV_COLOUR.get(f.severity.value, "#444")
    rows = [
        f"<p>{sev_badge(f.severity)} <b>{escape(f.title)}</b> "
        f'<span class="id">{escape(f.id)}</span>'
        + (f" · on {escape(', '.join(f.targets))}" if f.targets else "")
        + (f" · fix by {escape(f.owner)}" if f.owner else "")
        + "</p>"
    ]
    if f.observed:
        rows.append(f"<p>observed: {escape(f.observed)}</p>")
    if f.expected:
        rows.append(f"<p>expected: {escape(f.expected)}</p>")
    if f.fix and f.severity.rank >= Severity.WARNING.rank:
        rows.append(f"<p>fix: <code>{escape(f.fix)}</code></p>")
    if excerpts:
        rows += [_excerpt(rec, f) for rec in _evidence(run, f)]
    return f'<div class="finding" style="border-color:{colour}">{"".join(rows)}</div>'


def _evidence(run: AuditRun, f: Finding) -> Iterable[CommandRecord]:
    seen = set()
    for ref in f.evidence[:3]:
        for p in run.probes:
            for r in p.records:
                if r.target == ref.target and r.command_id == ref.command_id and ref not in seen:
                    seen.add(ref)
                    yield r


def _excerpt(rec: CommandRecord, f: Finding) -> str:
    text = rec.stdout or rec.stderr or rec.error or ""
    lines = text.split("\n")
    row = evidence_row(text, f) if text else None
    start = max(0, (row or 0) - EXCERPT_LINES // 2)
    window = lines[start : start + EXCERPT_LINES]
    body = "\n".join(
        f"<mark>{escape(line)}</mark>" if start + i == row else escape(line)
        for i, line in enumerate(window)
    )
    status = "exit " + (str(rec.exit_status) if rec.exit_status is not None else "none")
    more = (
        f" (lines {start + 1}-{start + len(window)} of {len(lines)})"
        if len(lines) > len(window)
        else ""
    )
    return (
        f"<details><summary>{escape(rec.target)}: <code>{escape(rec.command)}</code> · {status}{more}"
        f"</summary><pre>{body}</pre></details>"
    )


# --- diff ------------------------------------------------------------------------------------------------


def _diff(diff: SnapshotDiff, old: Snapshot | None) -> str:
    out = ['<section id="diff"><h2>What changed</h2>']
    a = diff.old.name or diff.old.created_at
    b = diff.new.name or diff.new.created_at
    out.append(f"<p>from <b>{escape(str(a))}</b> to <b>{escape(str(b))}</b></p>")
    if diff.roofline is not None and (diff.roofline.old_strip or diff.roofline.new_strip):
        out.append(
            f"<p>roofline: {escape(diff.roofline.old_strip or '-')} → "
            f"{escape(diff.roofline.new_strip or '-')}</p>"
        )
    for t in diff.targets:
        out.append(f"<p>target {escape(t.role)}: {escape(str(t.old))} → {escape(str(t.new))}</p>")
    rows = []
    for p in diff.probes:
        for fc in p.findings:
            old_sev = fc.old_severity.value if fc.old_severity else "-"
            new_sev = fc.new_severity.value if fc.new_severity else "-"
            rows.append(
                f"<tr><td>{escape(p.title)}</td><td><code>{escape(fc.id)}</code></td>"
                f"<td>{escape(fc.kind)}</td><td>{escape(old_sev)} → {escape(new_sev)}</td>"
                f"<td>{escape(fc.old_observed)} → {escape(fc.new_observed)}</td></tr>"
            )
    if rows:
        out.append(
            '<table class="grid"><tr><th>probe</th><th>check</th><th>change</th><th>severity</th>'
            f"<th>observed</th></tr>{''.join(rows)}</table>"
        )
    facts = sum(len(p.facts) for p in diff.probes)
    if facts:
        out.append(f"<details><summary>{facts} fact change(s)</summary><table class='grid'>")
        for p in diff.probes:
            for fc in p.facts[:200]:
                out.append(
                    f"<tr><td>{escape(p.probe_id)}</td><td>{escape(fc.role)}</td>"
                    f"<td><code>{escape(fc.path)}</code></td>"
                    f'<td class="diff-del">{escape(_short(fc.old))}</td>'
                    f'<td class="diff-add">{escape(_short(fc.new))}</td></tr>'
                )
        out.append("</table></details>")
    if not rows and not facts:
        out.append("<p>No finding or fact changed.</p>")
    out.append("</section>")
    return "\n".join(out)


def _short(value: object, limit: int = 160) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
