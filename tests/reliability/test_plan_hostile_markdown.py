"""--plan carries no live Markdown/HTML from a target (issue 29): a hostile stderr, hostname or observed value
renders as text: no image, no raw HTML, no link (rendered with markdown-it, CommonMark + GFM tables/strikethrough)."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpuaudit.probes.core.judge.plan import build_plan, plan_markdown
from gpuaudit.snapshots import store
from markdown_it import MarkdownIt

REPO = Path(__file__).resolve().parents[2]
HOSTILE = [
    "![pixel](http://10.200.0.9/track.png)",
    "<img src=x onerror=alert(1)>",
    "[click here](javascript:alert(1))",
    "<script>alert(1)</script>",
    "<http://10.200.0.9/autolink>",
    "| a | b |\n|---|---|",
    "# Heading **bold** ~~gone~~",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_target_text_renders_inert(text):
    snap = store.load(REPO / "snapshots/examples/case-study-before.json")
    run = snap.to_run()
    findings = [
        f.model_copy(update={"observed": text, "title": text}) if i < 3 else f
        for i, f in enumerate(run.findings)
    ]
    states = {r: s.model_copy(update={"reason": text}) for r, s in run.target_states.items()}
    run = run.model_copy(update={"findings": findings, "target_states": states})
    md = plan_markdown(build_plan(run), run)
    html = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(md)
    for element in ("<img", "<script", "<a ", "<table", "<del>", "<strong>bold"):
        assert element not in html, (element, text)
    assert html.count("<h1>") == 1  # the plan's own title only
