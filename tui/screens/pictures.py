"""PicturesScreen: the machine drawn (PCIe/NUMA tree, GPU x GPU paths, GPU/NUMA/cpuset, roofline bar).

`v` opens it from the dashboard (tree first) and from a drill-down on the picture of that probe's data.
"""

from __future__ import annotations

from gpuaudit.tui.widgets.pictures import Picture
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, TabbedContent, TabPane

TABS = (
    ("tree", "PCIe tree"),
    ("matrix", "GPU paths"),
    ("numa", "GPU/NUMA"),
    ("gpus", "Per GPU"),
    ("roofline", "Roofline"),
)
PROBE_TAB = {
    "pcie": "tree",
    "nccl": "matrix",
    "nvlink": "matrix",
    "numa": "numa",
    "driver": "gpus",
    "power": "gpus",
    "python": "roofline",
}
"""The picture of each probe's data (`v` in its drill-down)."""


class PicturesScreen(Screen[None]):
    BINDINGS = [
        Binding("escape,q,v", "app.pop_screen", "Back"),
        Binding("left,h", "tab(-1)", "Prev", show=False),
        Binding("right,l", "tab(1)", "Next", show=False),
        Binding("j", "scroll_by(1)", "Down", show=False),
        Binding("k", "scroll_by(-1)", "Up", show=False),
        Binding("g", "top", "Top", show=False),
        Binding("G", "bottom", "Bottom", show=False),
    ]

    def __init__(self, tab: str = "tree") -> None:
        super().__init__(id="pictures")
        self.first = tab if tab in dict(TABS) else "tree"

    def compose(self) -> ComposeResult:
        with TabbedContent(initial=f"pic-{self.first}"):
            for kind, title in TABS:
                with TabPane(title, id=f"pic-{kind}"):
                    yield Picture(kind, id=f"picture-{kind}")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        # styles set here, not in DEFAULT_CSS: a Screen's scoped DEFAULT_CSS blanked the whole screen
        self.query_one(TabbedContent).styles.height = "1fr"
        for pane in self.query(TabPane):
            pane.styles.height = "1fr"
            pane.styles.padding = 0
            pane.styles.overflow_y = "auto"
            pane.styles.overflow_x = "auto"

    def _scroller(self) -> TabPane:
        return self.query_one(f"#{self.query_one(TabbedContent).active}", TabPane)

    def action_tab(self, step: int) -> None:
        tabs = self.query_one(TabbedContent)
        ids = [f"pic-{k}" for k, _ in TABS]
        tabs.active = ids[(ids.index(tabs.active) + step) % len(ids)]

    def action_scroll_by(self, step: int) -> None:
        self._scroller().scroll_relative(y=step, animate=False)

    def action_top(self) -> None:
        self._scroller().scroll_home(animate=False)

    def action_bottom(self) -> None:
        self._scroller().scroll_end(animate=False)
