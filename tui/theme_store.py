"""Remembers the chosen theme in the platformdirs user config dir (a tiny JSON file)."""

from __future__ import annotations

import json
from pathlib import Path


def default_path() -> Path:
    import platformdirs

    return platformdirs.user_config_path("gpuaudit-tui") / "settings.json"


class ThemeStore:
    """load() -> the saved theme name or None; save(name) writes it (failures never crash the UI)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_path()

    def load(self) -> str | None:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return None
        name = data.get("theme") if isinstance(data, dict) else None
        return name if isinstance(name, str) else None

    def save(self, name: str) -> bool:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            data = {}
            try:
                data = json.loads(self.path.read_text())
            except (OSError, ValueError):
                pass
            if not isinstance(data, dict):
                data = {}
            data["theme"] = name
            self.path.write_text(json.dumps(data, indent=1) + "\n")
            return True
        except OSError:
            return False
