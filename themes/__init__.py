"""Themes and stylesheets of the Textual app (look, not logic).

Severity colours follow the Okabe-Ito palette (distinguishable with the common colour-vision
deficiencies) and are never the only cue: every severity is also written as an icon and a word.
"""

from __future__ import annotations

from pathlib import Path

from textual.theme import Theme

HERE = Path(__file__).resolve().parent
STYLESHEETS: list[Path] = [HERE / "base.tcss", HERE / "panes.tcss", HERE / "drilldown.tcss"]

# Our own theme variables; also the fallback when a built-in Textual theme is chosen.
STATUS_DEFAULTS: dict[str, str] = {
    "status-crit": "#E8662A",
    "status-warn": "#E6A600",
    "status-info": "#56B4E9",
    "status-ok": "#1BAE84",
    "status-unknown": "#CC79A7",
    "status-running": "#56B4E9",
}

THEMES: dict[str, Theme] = {
    t.name: t
    for t in (
        Theme(
            name="gpuaudit-dark",
            primary="#56B4E9",
            secondary="#CC79A7",
            accent="#E6A600",
            warning="#E6A600",
            error="#E8662A",
            success="#1BAE84",
            foreground="#E4E4E4",
            background="#14161A",
            surface="#1C1F24",
            panel="#262A31",
            dark=True,
            variables=dict(STATUS_DEFAULTS),
        ),
        Theme(
            name="gpuaudit-light",
            primary="#0072B2",
            secondary="#A4497F",
            accent="#9A6200",
            warning="#9A6200",
            error="#B84A00",
            success="#00785A",
            foreground="#1A1A1A",
            background="#FAFAF7",
            surface="#F0F0EA",
            panel="#E2E2DA",
            dark=False,
            variables={
                "status-crit": "#B84A00",
                "status-warn": "#8A5A00",
                "status-info": "#0072B2",
                "status-ok": "#00785A",
                "status-unknown": "#A4497F",
                "status-running": "#0072B2",
            },
        ),
        Theme(
            name="gpuaudit-high-contrast",
            primary="#FFFFFF",
            secondary="#FFD700",
            accent="#FFD700",
            warning="#FFD700",
            error="#FF6B4A",
            success="#4DFFB8",
            foreground="#FFFFFF",
            background="#000000",
            surface="#000000",
            panel="#1A1A1A",
            dark=True,
            luminosity_spread=0.25,
            text_alpha=1.0,
            variables={
                "status-crit": "#FF6B4A",
                "status-warn": "#FFD700",
                "status-info": "#7FD4FF",
                "status-ok": "#4DFFB8",
                "status-unknown": "#FF9CF0",
                "status-running": "#FFFFFF",
            },
        ),
    )
}
DEFAULT_THEME = "gpuaudit-dark"
