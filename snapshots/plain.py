"""Plain snapshot documents (dicts, no models): where the store is and where a document's records are.

Kept free of pydantic and the models so that readers of saved files (`fleet DIR`) start quickly; store.py and
compact.py re-export these names.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

ENV_DIR = "GPUAUDIT_SNAPSHOT_DIR"


def default_dir() -> Path:
    """$GPUAUDIT_SNAPSHOT_DIR, else the platformdirs user data dir's snapshots/."""
    env = os.environ.get(ENV_DIR)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return platformdirs.user_data_path("gpuaudit-tui") / "snapshots"


def is_packed(doc: Mapping[str, Any]) -> bool:
    """True for a stored (schema 3) document: records at the top level."""
    return isinstance(doc.get("records"), list)


def records_of(doc: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Every record dict of a plain document: stored shape once each, expanded shape once per probe."""
    if is_packed(doc):
        yield from (r for r in doc["records"] if isinstance(r, Mapping))
        return
    for probe in doc.get("probes") or []:
        if isinstance(probe, Mapping):
            yield from (r for r in probe.get("records") or [] if isinstance(r, Mapping))
